package passes

import "github.com/kgen-dev/kgen/ir"

// Interchange moves a reduction outside the loop of an output index along which its operand is
// contiguous, when the reduction itself walks a strided axis: `O[i, k] = sum(j: A[i, j, k])`, column sums
// `s[j] = sum(i: A[i, j])`, max/min, means, reductions of elementwise bodies. Lowered, such a statement
// reduces j innermost with A strided along it, which no vector loop can read; interchanged, it becomes
//
//	for k in block:                 dst[k] = identity
//	for j (step U):  for k in block: dst[k] = (((dst[k] op e(j)) op e(j+1)) … op e(j+U-1))
//	for j (rest):    for k in block: dst[k] = dst[k] op e(j)
//	for k in block:                 O[i, k] = post(dst[k])     (when post is not dst itself)
//
// whose k loops are unit-stride elementwise loops: the vectorize pass makes them Vector loops and the
// SIMD backends run them through vector-loop slots (codegen.VLoop) without any new contract.
//
// Matched: a serial unit-step loop over an output index k whose body is a sequence of statement
// groups, each either a store or `var acc = c; for j1 … for jn { acc = acc op e }; O[…] = post(acc)`
// (op +, max or min; e reads no local; post reads no other local). A reduction group is interchanged
// when every load of e that depends on k is unit-stride along k (at least one is) and some load of e
// is strided along jn: exactly the case where vectorizing the reduction loop cannot work and
// vectorizing k can. A `vectorize` or `unroll` directive naming jn keeps that loop innermost, as the
// schedule asks. Other groups keep their loops (the loop over k is split between the groups: every
// tensor one group writes is touched by the others only at the index it is written at, which is
// unit-stride in k, so running the groups one after the other computes the same values).
//
// dst is the output itself when it has the accumulator's type, its index is unit-stride in k and the
// group does not read it (partial results stored there are exactly the accumulator's values); else a
// scratch row of the accumulator's type (f16 outputs, `+=` outputs read in post, widened accumulators).
//
// A full-range k loop is blocked: it keeps its variable but steps by a block of KB outputs (KB·size of
// the accumulator = a quarter of L1), and the groups run on each block with a fresh index, so that the
// block of partial results stays in cache while j walks the rows; that loop still writes disjoint
// outputs per iteration, so the parallel pass may pick it as the statement loop it is. The innermost
// reduction loop is unrolled by U (up to 8, while the update reads at most maxStreams arrays), so that
// dst is loaded and stored once per U rows.
//
// Guarantees: every output element is computed from the same values by the same operations in the same
// order (identity, then j ascending), every intermediate rounded to the accumulator's type as before:
// the interpreted result is bit-identical.
func Interchange(f *ir.Func, c *Context) (bool, error) {
	changed := false
	n := funcNamer(f)
	var walk func(body []ir.Node) []ir.Node
	walk = func(body []ir.Node) []ir.Node {
		var out []ir.Node
		for _, node := range body {
			switch x := node.(type) {
			case *ir.Nest:
				x.Body = walk(x.Body)
			case *ir.Alloc:
				x.Body = walk(x.Body)
			case *ir.If:
				x.Then, x.Else = walk(x.Then), walk(x.Else)
			case *ir.Loop:
				if nodes := interchange(x, c, n); nodes != nil {
					out = append(out, nodes...)
					changed = true
					continue
				}
				x.Body = walk(x.Body)
			}
			out = append(out, node)
		}
		return out
	}
	f.Body = walk(f.Body)
	return changed, nil
}

// maxStreams bounds the arrays one interchanged update loop reads and writes (the unroll factor U is
// lowered until it fits): every SIMD backend's vector loops keep one pointer register per array, and
// amd64 has nine for them.
const maxStreams = 9

// redGroup is one statement's code in the body of the loop over k.
type redGroup struct {
	decl  *ir.Decl   // nil for a plain store
	loops []*ir.Loop // reduction loops, outermost first
	op    ir.Op
	bin   *ir.Binary // the update's value: acc op e
	store *ir.Store
	swap  bool // interchange
}

func (g *redGroup) e() ir.Expr { return g.bin.Y }

// redGroups splits a loop body into statement groups; nil if it is not such a sequence.
func redGroups(body []ir.Node, k *ir.Var) []*redGroup {
	var out []*redGroup
	for i := 0; i < len(body); {
		switch x := body[i].(type) {
		case *ir.Store:
			if hasLocal(x.Value) {
				return nil
			}
			out = append(out, &redGroup{store: x})
			i++
		case *ir.Decl:
			if i+2 >= len(body) {
				return nil
			}
			g := reductionGroup(x, body[i+1], body[i+2], k)
			if g == nil {
				return nil
			}
			out = append(out, g)
			i += 3
		default:
			return nil
		}
	}
	return out
}

// reductionGroup matches `var acc = c; for j1 … for jn { acc = acc op e }; O[…] = post(acc)`.
func reductionGroup(d *ir.Decl, loop, st ir.Node, k *ir.Var) *redGroup {
	g := &redGroup{decl: d}
	if _, ok := d.Init.(*ir.Const); !ok || (d.L.T != ir.F32 && d.L.T != ir.F64) {
		return nil
	}
	node := loop
	for {
		l, ok := node.(*ir.Loop)
		if !ok {
			break
		}
		if l.Kind != ir.Serial || !unitStep(l) || len(l.Body) != 1 || usesVar(l.Lo, k) || usesVar(l.Hi, k) {
			return nil
		}
		g.loops = append(g.loops, l)
		node = l.Body[0]
	}
	upd, ok := node.(*ir.Assign)
	if !ok || len(g.loops) == 0 || upd.L != d.L {
		return nil
	}
	b, ok := upd.Value.(*ir.Binary)
	if !ok || (b.Op != ir.Add && b.Op != ir.Max && b.Op != ir.Min) || b.T != d.L.T {
		return nil
	}
	if x, ok := b.X.(*ir.Local); !ok || x.L != d.L || hasLocal(b.Y) {
		return nil
	}
	g.op, g.bin = b.Op, b
	s, ok := st.(*ir.Store)
	if !ok {
		return nil
	}
	other := false
	ir.Walk(s.Value, func(x ir.Expr) {
		if l, ok := x.(*ir.Local); ok && l.L != d.L {
			other = true
		}
	})
	if other {
		return nil
	}
	g.store = s
	return g
}

// qualifies reports whether interchanging g makes its update a unit-stride loop over k where its
// reduction loop is strided (see Interchange).
func (g *redGroup) qualifies(k *ir.Var, c *Context) bool {
	if g.decl == nil {
		return false
	}
	jn := g.loops[len(g.loops)-1].Var
	for _, d := range []string{"vectorize", "unroll"} {
		if _, named := c.sizes(d, jn.Name); named {
			return false
		}
	}
	red := map[*ir.Var]bool{k: true}
	for _, l := range g.loops {
		red[l.Var] = true
	}
	alongK, strided, ok := false, false, true
	ir.Walk(g.e(), func(x ir.Expr) {
		switch x := x.(type) {
		case *ir.VarVal:
			ok = ok && !red[x.V] // an index as a value: not a vector-loop operand
		case *ir.Load:
			switch ir.Stride(x.Idx, k) {
			case 1:
				alongK = true
			case -1:
				ok = false
			}
			if ir.Stride(x.Idx, jn) == -1 {
				strided = true
			}
		}
	})
	return ok && alongK && strided
}

// direct reports whether g's partial results can live in its output (see Interchange).
func (g *redGroup) direct(k *ir.Var) bool {
	s := g.store
	if s.T.Type != g.decl.L.T || s.T.Kind == ir.Scratch || ir.Stride(s.Idx, k) != 1 {
		return false
	}
	reads := false
	for _, e := range []ir.Expr{g.e(), s.Value} {
		ir.Walk(e, func(x ir.Expr) {
			if l, ok := x.(*ir.Load); ok && l.T == s.T {
				reads = true
			}
		})
	}
	return !reads
}

// separable reports whether the groups may run one after the other over k: every tensor a group writes
// is touched by the other groups only at the index it is written at, unit-stride in k.
func separable(gs []*redGroup, k *ir.Var) bool {
	if len(gs) == 1 {
		return true
	}
	for _, g := range gs {
		w := g.store
		if ir.Stride(w.Idx, k) != 1 {
			return false
		}
		for _, h := range gs {
			if h == g {
				continue
			}
			ok := true
			check := func(t *ir.Tensor, idx []ir.IExpr) {
				if t == w.T && !sameIndex(idx, w.Idx) {
					ok = false
				}
			}
			check(h.store.T, h.store.Idx)
			exprs := []ir.Expr{h.store.Value}
			if h.decl != nil {
				exprs = append(exprs, h.e())
			}
			for _, e := range exprs {
				ir.Walk(e, func(x ir.Expr) {
					if l, isLoad := x.(*ir.Load); isLoad {
						check(l.T, l.Idx)
					}
				})
			}
			if !ok {
				return false
			}
		}
	}
	return true
}

func sameIndex(a, b []ir.IExpr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].String() != b[i].String() {
			return false
		}
	}
	return true
}

// interchange rewrites loop l (see Interchange); nil when it does not apply.
func interchange(l *ir.Loop, c *Context, n namer) []ir.Node {
	if l.Kind != ir.Serial || !unitStep(l) {
		return nil
	}
	k := l.Var
	gs := redGroups(l.Body, k)
	if gs == nil || !separable(gs, k) {
		return nil
	}
	any := false
	for _, g := range gs {
		g.swap = g.qualifies(k, c)
		any = any || g.swap
	}
	if !any {
		return nil
	}
	lo, isConst := l.Lo.(ir.IConst)
	_, isDim := l.Hi.(ir.IDim)
	if isConst && lo.V == 0 && isDim {
		// Blocked: l keeps k and steps by KB; the groups run on [k, min(k+KB, hi)) with a fresh index.
		kb := 1 << 30
		for _, g := range gs {
			if g.swap {
				kb = min(kb, max(1, c.Machine.L1.Size/4/g.decl.L.T.Size()))
			}
		}
		kk := &ir.Var{Name: n.name(k.Name)}
		r := span{v: kk, lo: ir.IVar{V: k}, hi: ir.IMin(ir.IAdd(ir.IVar{V: k}, ir.IConst{V: kb}), l.Hi), block: kb, base: k}
		var body []ir.Node
		for _, g := range gs {
			body = append(body, g.code(r, k, n)...)
		}
		return []ir.Node{&ir.Loop{Var: k, Lo: l.Lo, Hi: l.Hi, Step: ir.IConst{V: kb}, Kind: ir.Serial, Body: body}}
	}
	// Already bounded (a tile of k): the groups run on l's range with k itself; scratch rows span k's dim.
	if k.Range == nil {
		return nil
	}
	r := span{v: k, lo: l.Lo, hi: l.Hi}
	var out []ir.Node
	for _, g := range gs {
		out = append(out, g.code(r, k, n)...)
	}
	return out
}

// span is the range of outputs the groups run on: v over [lo, hi). A blocked span (block > 0) is a block
// of at most block outputs starting at base, whose scratch rows hold one block.
type span struct {
	v      *ir.Var
	lo, hi ir.IExpr
	block  int
	base   *ir.Var
}

func (r span) loop(body ...ir.Node) *ir.Loop {
	return &ir.Loop{Var: r.v, Lo: r.lo, Hi: r.hi, Step: ir.IConst{V: 1}, Kind: ir.Serial, Body: body}
}

// code is g's nodes over r, k renamed to r's index.
func (g *redGroup) code(r span, k *ir.Var, n namer) []ir.Node {
	toV := map[*ir.Var]ir.IExpr{k: ir.IVar{V: r.v}}
	if !g.swap {
		var body []ir.Node
		if g.decl != nil {
			body = []ir.Node{g.decl, g.loops[0]}
		}
		body = append(body, g.store)
		if r.v != k {
			substNodes(body, toV)
		}
		return []ir.Node{r.loop(body...)}
	}
	acc := g.decl.L
	at := acc.T
	oIdx := substIdx(g.store.Idx, toV)
	var dst *ir.Tensor
	var dIdx []ir.IExpr
	var alloc *ir.Alloc
	if g.direct(k) {
		dst, dIdx = g.store.T, oIdx
	} else {
		size, off := ir.IExpr(ir.IDim{D: k.Range}), ir.IExpr(ir.IVar{V: r.v})
		if r.block > 0 {
			size, off = ir.IConst{V: r.block}, ir.ISub(ir.IVar{V: r.v}, ir.IVar{V: r.base})
		}
		dst = &ir.Tensor{Name: n.name(acc.Name + "row"), Type: at, Kind: ir.Scratch, Space: ir.Global, Size: size}
		dIdx = []ir.IExpr{off}
		alloc = &ir.Alloc{T: dst}
	}
	load := func() ir.Expr { return &ir.Load{T: dst, Idx: append([]ir.IExpr(nil), dIdx...)} }
	store := func(v ir.Expr) *ir.Store {
		return &ir.Store{T: dst, Idx: append([]ir.IExpr(nil), dIdx...), Value: v}
	}
	var out []ir.Node
	out = append(out, r.loop(store(g.decl.Init)))

	// The update, innermost reduction loop unrolled by u with the rows in ascending order.
	e := ir.SubstVars(g.e(), toV)
	jl := g.loops[len(g.loops)-1]
	jn := jl.Var
	u := unrollFor(e, jn)
	step := func(j ir.IExpr, u int) *ir.Loop {
		v := load()
		for i := range u {
			v = &ir.Binary{Op: g.op, X: v, Y: ir.SubstVars(e, map[*ir.Var]ir.IExpr{jn: ir.IAdd(j, ir.IConst{V: i})}), T: g.bin.T}
		}
		return r.loop(store(v))
	}
	var inner []ir.Node
	if u > 1 {
		end := splitEnd(jl, u)
		jr := &ir.Var{Name: n.name(jn.Name + "r")}
		inner = []ir.Node{
			&ir.Loop{Var: jn, Lo: jl.Lo, Hi: end, Step: ir.IConst{V: u}, Kind: ir.Serial, Body: []ir.Node{step(ir.IVar{V: jn}, u)}},
			&ir.Loop{Var: jr, Lo: end, Hi: jl.Hi, Step: ir.IConst{V: 1}, Kind: ir.Serial, Body: []ir.Node{step(ir.IVar{V: jr}, 1)}},
		}
	} else {
		jl.Body = []ir.Node{step(ir.IVar{V: jn}, 1)}
		inner = []ir.Node{jl}
	}
	for i := len(g.loops) - 2; i >= 0; i-- {
		g.loops[i].Body = inner
		inner = []ir.Node{g.loops[i]}
	}
	out = append(out, inner...)

	// The outputs, unless they already are dst.
	post := ir.SubstVars(g.store.Value, toV)
	if x, ok := post.(*ir.Local); !(ok && x.L == acc && dst == g.store.T) {
		post = ir.Rewrite(post, func(x ir.Expr) ir.Expr {
			if l, ok := x.(*ir.Local); ok && l.L == acc {
				return load()
			}
			return x
		})
		out = append(out, r.loop(&ir.Store{T: g.store.T, Idx: oIdx, Value: post}))
	}
	if alloc != nil {
		alloc.Body = out
		return []ir.Node{alloc}
	}
	return out
}

// unrollFor is the unroll factor of an update reading e at rows jn..jn+u-1: the largest of 8, 4, 2, 1
// for which the update touches at most maxStreams arrays (dst, the loads that depend on jn once per
// row, the others once).
func unrollFor(e ir.Expr, jn *ir.Var) int {
	perRow, fixed := map[string]bool{}, map[string]bool{}
	ir.Walk(e, func(x ir.Expr) {
		if l, ok := x.(*ir.Load); ok && l.T.Kind != ir.Scalar {
			key := ir.FormatExpr(l)
			if ir.Stride(l.Idx, jn) != 0 {
				perRow[key] = true
			} else {
				fixed[key] = true
			}
		}
	})
	for _, u := range []int{8, 4, 2} {
		if 1+len(fixed)+u*len(perRow) <= maxStreams {
			return u
		}
	}
	return 1
}

func substIdx(idx []ir.IExpr, m map[*ir.Var]ir.IExpr) []ir.IExpr {
	out := make([]ir.IExpr, len(idx))
	for i, e := range idx {
		out[i] = ir.SubstIExpr(e, m)
	}
	return out
}

func usesVar(e ir.IExpr, v *ir.Var) bool {
	found := false
	ir.IVars(e, func(w *ir.Var) { found = found || w == v })
	return found
}

func hasLocal(e ir.Expr) bool {
	found := false
	ir.Walk(e, func(x ir.Expr) {
		if _, ok := x.(*ir.Local); ok {
			found = true
		}
	})
	return found
}
