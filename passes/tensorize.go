package passes

import (
	"fmt"
	"math"
	"slices"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/target"
)

// gemm is a statement recognised as out[b..., i, j] = relu?(alpha·Σ_k X(i,k)·Y(k,j) + beta·out[b..., i, j] + bias[j]).
type gemm struct {
	s           *ir.Stmt
	batch       []*ir.Var
	i, j, k     *ir.Var
	x, y        ir.Expr // operand elements, in terms of i, k (x) and k, j (y) and batch vars
	alpha, beta ir.Expr
	bias        *ir.Tensor
	relu        bool
	// narrow is set when the statement rounds the f32/f64 result to a narrower output type
	// (out = f16(Σ...)): the tiles accumulate into a scratch buffer of the element type, converted once
	// into the output after the K loop.
	narrow bool
	elem   ir.DType
	// epi is set for a statement out = E(inner) whose inner subexpression is the form above and E the rest:
	// any elementwise expression of it (all its occurrences), of loads (out only at the written element)
	// and scalars. The nest computes inner into sum, then one loop over the elements stores E.
	epi *epilogue
}

// epilogue is the part of a GEMM-like statement that the microkernel contract cannot apply.
type epilogue struct {
	inner string // ir.FormatExpr of the subexpression the microkernel computes
	// scratch: the sum lives in an M×N buffer of the element type (per batch point) because E reads
	// out's original value or out is narrower than the sum; else it lives in out, and E runs in place.
	scratch bool
}

// matchGemm recognises a GEMM-like contraction with an epilogue the microkernel contract can apply,
// else one whose epilogue splits into that contract and an elementwise rest (matchEpilogue).
func matchGemm(s *ir.Stmt) *gemm {
	if g := matchContract(s, s.Value, false); g != nil {
		return g
	}
	return matchEpilogue(s)
}

// matchContract matches out = v where v is the microkernel contract's form. With scratch, v is computed
// into a scratch buffer of the sum's type (not out), so out's type does not matter and v may not read
// out.
func matchContract(s *ir.Stmt, v ir.Expr, scratch bool) *gemm {
	if len(s.Vars) < 2 {
		return nil
	}
	g := &gemm{s: s, batch: s.Vars[:len(s.Vars)-2], i: s.Vars[len(s.Vars)-2], j: s.Vars[len(s.Vars)-1]}
	if c, ok := v.(*ir.Cast); ok && !scratch && c.T == s.Out.Type && (c.T == ir.F16 || c.T == ir.BF16) {
		g.narrow, v = true, c.X
	}
	if u, ok := v.(*ir.Unary); ok && u.Op == ir.Relu {
		g.relu, v = true, u.X
	}
	var terms []ir.Expr
	var flat func(e ir.Expr)
	flat = func(e ir.Expr) {
		if b, ok := e.(*ir.Binary); ok && b.Op == ir.Add {
			flat(b.X)
			flat(b.Y)
			return
		}
		terms = append(terms, e)
	}
	flat(v)
	var red *ir.Reduce
	for _, t := range terms {
		if r, alpha := reduceTerm(t); r != nil {
			if red != nil {
				return nil
			}
			red, g.alpha = r, alpha
			continue
		}
		if beta := cTerm(t, s); beta != nil {
			if g.beta != nil {
				return nil
			}
			g.beta = beta
			continue
		}
		if l, ok := t.(*ir.Load); ok && len(l.Idx) == 1 && g.bias == nil {
			if iv, ok := l.Idx[0].(ir.IVar); ok && iv.V == g.j && l.T.Kind != ir.Temp {
				g.bias = l.T
				continue
			}
		}
		return nil
	}
	if red == nil || red.Op != ir.Add || len(red.Vars) != 1 || red.Vars[0].Range == nil || (red.T != ir.F32 && red.T != ir.F64) {
		return nil
	}
	g.k, g.elem = red.Vars[0], red.T
	if (g.narrow || scratch) && g.beta != nil {
		return nil // a C term would need the narrow output widened first; not supported
	}
	if g.narrow && g.elem != ir.F32 {
		return nil
	}
	if (s.Out.Type != g.elem && !g.narrow && !scratch) || (g.bias != nil && g.bias.Type != g.elem) || s.Out.Kind == ir.Temp {
		return nil
	}
	mul, ok := red.X.(*ir.Binary)
	if !ok || mul.Op != ir.Mul {
		return nil
	}
	x, y := mul.X, mul.Y
	if uses(x, g.j) || uses(y, g.i) {
		x, y = y, x
	}
	if uses(x, g.j) || uses(y, g.i) || containsReduce(x) || containsReduce(y) {
		return nil
	}
	g.x, g.y = x, y
	if g.alpha == nil {
		g.alpha = &ir.Const{Val: 1, T: g.elem}
	}
	if g.beta == nil {
		g.beta = &ir.Const{Val: 0, T: g.elem}
	}
	if uses(g.alpha, nil) || uses(g.beta, nil) {
		return nil
	}
	return g
}

// matchEpilogue splits out = E(Σ) into the largest subexpression on the way from the root to a sum that
// the microkernel contract computes (at worst the sum itself) and the elementwise rest E: every
// occurrence of that subexpression becomes the running sum, and what is left may read out only at the
// element it writes (matchMMA's rule) and holds no other reduction. The sum lives in out when out has the
// sum's type and E does not read out (E then runs in place), else in a scratch buffer (whose contract
// part may then not read out: beta·out stays in E, where the beta pass versions it).
func matchEpilogue(s *ir.Stmt) *gemm {
	if len(s.Vars) < 2 || s.Out.Kind == ir.Temp || !readsOutAtElement(s, s.Value) {
		return nil
	}
	var path []ir.Expr
	var find func(e ir.Expr, up []ir.Expr) bool
	find = func(e ir.Expr, up []ir.Expr) bool {
		up = append(up, e)
		if _, ok := e.(*ir.Reduce); ok {
			path = up
			return true
		}
		found := false
		ir.Children(e, func(c ir.Expr) {
			if !found {
				found = find(c, up[:len(up):len(up)])
			}
		})
		return found
	}
	if !find(s.Value, nil) {
		return nil
	}
	for _, cand := range path[1:] {
		inner := ir.FormatExpr(cand)
		rest := replaceExpr(s.Value, inner, &ir.Const{Val: 0, T: cand.Type()})
		if containsReduce(rest) {
			continue
		}
		reads := false
		ir.Walk(rest, func(e ir.Expr) {
			if l, ok := e.(*ir.Load); ok && l.T == s.Out {
				reads = true
			}
		})
		scratch := reads || s.Out.Type != cand.Type()
		g := matchContract(s, cand, scratch)
		if g == nil || g.narrow || (scratch && (g.elem != ir.F32 && g.elem != s.Out.Type)) {
			continue
		}
		g.epi = &epilogue{inner: inner, scratch: scratch}
		return g
	}
	return nil
}

// replaceExpr replaces every subexpression of e that prints as text by with.
func replaceExpr(e ir.Expr, text string, with ir.Expr) ir.Expr {
	return ir.Rewrite(e, func(x ir.Expr) ir.Expr {
		if ir.FormatExpr(x) == text {
			return with
		}
		return x
	})
}

// readsOutAtElement reports whether every load of s.Out in e reads the element s writes.
func readsOutAtElement(s *ir.Stmt, e ir.Expr) bool {
	ok := true
	ir.Walk(e, func(e ir.Expr) {
		if l, isLoad := e.(*ir.Load); isLoad && l.T == s.Out {
			for d, ix := range l.Idx {
				if iv, isVar := ix.(ir.IVar); !isVar || iv.V != s.Vars[d] {
					ok = false
				}
			}
		}
	})
	return ok
}

// reduceTerm matches r, alpha·r or r·alpha where alpha mentions no index.
func reduceTerm(t ir.Expr) (*ir.Reduce, ir.Expr) {
	if r, ok := t.(*ir.Reduce); ok {
		return r, nil
	}
	if b, ok := t.(*ir.Binary); ok && b.Op == ir.Mul {
		if r, ok := b.Y.(*ir.Reduce); ok && !containsReduce(b.X) {
			return r, b.X
		}
		if r, ok := b.X.(*ir.Reduce); ok && !containsReduce(b.Y) {
			return r, b.Y
		}
	}
	return nil, nil
}

// cTerm matches out[vars], beta·out[vars] or out[vars]·beta and returns beta.
func cTerm(t ir.Expr, s *ir.Stmt) ir.Expr {
	isOut := func(e ir.Expr) bool {
		l, ok := e.(*ir.Load)
		return ok && l.T == s.Out
	}
	if isOut(t) {
		return &ir.Const{Val: 1, T: s.Out.Type}
	}
	if b, ok := t.(*ir.Binary); ok && b.Op == ir.Mul {
		if isOut(b.Y) {
			return b.X
		}
		if isOut(b.X) {
			return b.Y
		}
	}
	return nil
}

// uses reports whether e mentions v (any index variable when v is nil).
func uses(e ir.Expr, v *ir.Var) bool {
	found := false
	ir.Walk(e, func(x ir.Expr) {
		switch x := x.(type) {
		case *ir.Load:
			for _, ix := range x.Idx {
				ir.IVars(ix, func(w *ir.Var) {
					if v == nil || w == v {
						found = true
					}
				})
			}
		case *ir.VarVal:
			if v == nil || x.V == v {
				found = true
			}
		}
	})
	return found
}

func containsReduce(e ir.Expr) bool {
	found := false
	ir.Walk(e, func(x ir.Expr) {
		if _, ok := x.(*ir.Reduce); ok {
			found = true
		}
	})
	return found
}

// Tensorize replaces the nest of every GEMM-like contraction by the BLIS loop structure around a
// microkernel tile (ir.Micro): jc over N by NC, pc over K by KC, ic over M by MC, jr by NR, ir by MR.
// The Micro's operands are Views of the source expressions (the pack pass stages them). Alpha is applied
// in every K block, beta only in the first (later blocks accumulate with beta = 1), the bias and ReLU
// epilogue only in the last; K = 0 still runs one block, so C = beta·C (+ bias) as the source says.
// Tile sizes are plan symbols (<slot>.MR ...) so a backend variant can pick its own register tile; the
// defaults come from tile directives (tile i MC MR, j NC NR, k KC) or the analytical model.
// Guarantees: same result as the source up to the order of the K summation (blocked by KC).
//
// A pure 2-D transpose copy (out[j, i] = X[i, j], same element type f32 or f64, no arithmetic) becomes
// cache-blocked loops around one ir.Transpose tile per block (transposeNest): the copy is exact.
func Tensorize(f *ir.Func, c *Context) (bool, error) {
	changed := false
	n := funcNamer(f)
	count := 0
	var body []ir.Node
	for _, node := range f.Body {
		body = append(body, node)
		nest, ok := node.(*ir.Nest)
		if !ok || len(nest.Stmts) != 1 {
			continue
		}
		slot := f.Kernel.Name
		if count > 0 {
			slot = fmt.Sprintf("%s%d", f.Kernel.Name, count)
		}
		if t := matchTranspose(nest.Stmts[0]); t != nil {
			count++
			transposePlan(f, c, t, slot)
			body[len(body)-1] = &ir.Nest{Stmts: nest.Stmts, Body: transposeNest(t, slot, n)}
			changed = true
			continue
		}
		g := matchGemm(nest.Stmts[0])
		if g == nil {
			continue
		}
		count++
		defaultPlan(f, c, g, slot)
		gemmBody, epi := blisNest(g, slot, n)
		body[len(body)-1] = &ir.Nest{Stmts: nest.Stmts, Body: gemmBody}
		if epi != nil {
			// an in-place epilogue is a nest of its own: parallel then runs its rows on the workers
			body = append(body, &ir.Nest{Stmts: nest.Stmts, Body: epi})
		}
		changed = true
	}
	f.Body = body
	return changed, nil
}

// defaultPlan sets the plan symbols of a slot: the register tile from the target table (the portable
// variant's for the defaults, each native variant's for its own plan), the cache blocks from the
// analytical model on the target's caches, and tile directives over them (tile i MC MR, j NC NR, k KC):
// the untargeted and `for go` ones over the defaults, the target's own `for` block over its variants'.
// A native variant's blocks that no directive fixes are marked Host: the generated package sizes them
// at init from the caches of the machine it runs on.
func defaultPlan(f *ir.Func, c *Context, g *gemm, slot string) {
	port := c.Machine.Portable()
	mr, nr := port.Variants[0].Tile(g.elem.Size())
	set := func(plan map[string]int, b target.Blocks, dirs []*ir.Directive) (fixed map[string]bool) {
		fixed = map[string]bool{}
		if s, ok := sizesIn(dirs, "tile", g.i.Name); ok {
			b.MC, fixed["MC"] = s[0], true
			if len(s) > 1 {
				b.MR = s[1]
			}
		}
		if s, ok := sizesIn(dirs, "tile", g.j.Name); ok {
			b.NC, fixed["NC"] = s[0], true
			if len(s) > 1 {
				b.NR = s[1]
			}
		}
		if s, ok := sizesIn(dirs, "tile", g.k.Name); ok {
			b.KC, fixed["KC"] = s[0], true
		}
		plan[slot+".MR"], plan[slot+".NR"] = b.MR, b.NR
		plan[slot+".MC"], plan[slot+".KC"], plan[slot+".NC"] = b.MC, b.KC, b.NC
		return fixed
	}
	set(f.Plan, target.GemmBlocks(port, mr, nr, g.elem.Size()), c.Portable)
	// the thresholds that choose among the versions pack and parallel make (one set per slot)
	kn := port.Knobs
	f.Plan[slot+".SmallWork"], f.Plan[slot+".RowsMax"], f.Plan[slot+".RowsNB"] = kn.SmallGemmWork, kn.RowsMax, kn.RowsNB
	f.Plan[slot+".RowBlocks"], f.Plan[slot+".SmallDeep"] = kn.RowBlocks, kn.SmallDeepWork
	// Workers is a run-time symbol: generated code reads the worker count at each call (rt.Workers());
	// the plan's value is what the interpreter uses (tests set others).
	f.Plan[slot+".Workers"] = 1
	for _, v := range c.Machine.Native() {
		size := g.elem.Size()
		if v.Pairs {
			if !bf16Operands(g) {
				continue
			}
			size = 2 // pair panels: blocks for 2-byte elements, half an f32 panel
		}
		mr, nr := v.Tile(size)
		if mr == 0 {
			continue
		}
		pv := ir.PlanVariant{Name: v.Name, Plan: map[string]int{}}
		if v.SmallDeepWork > 0 {
			pv.Plan[slot+".SmallDeep"] = deepWorkFor(v.SmallDeepWork, g.elem.Size())
		}
		fixed := set(pv.Plan, target.GemmBlocks(c.Machine.WithVariant(v), mr, nr, size), c.own())
		for _, b := range []string{"MC", "KC", "NC"} {
			if !fixed[b] {
				pv.Host = append(pv.Host, slot+"."+b)
			}
		}
		pv.Tuned = tunedPlan(c.Tuned[v.Name], slot)
		addVariantPlan(f, pv)
	}
}

// deepWorkFor is a variant's SmallDeepWork, given for 4-byte elements, for a GEMM of elem-byte elements.
// The unpacked version wins while A and B (2·n²·elem bytes at n³) stay near the L2, so the cube's side
// scales as √(4/elem) and its work as (4/elem)^1.5: 448³ for f32, 317³ for f64. On the Zen 5 the
// whole-K unpacked version ran sgemm 320–448³ 5–13% faster than the packed nest and 512³ level or worse,
// dgemm 320³ 1–3% faster and 384³ 4–9% slower, one core and two: the f64 crossover lies between 320³
// and 384³, and 317³ keeps on the safe side of it (docs/PERF.md, session 16).
func deepWorkFor(work, elem int) int {
	return int(math.Round(float64(work) * math.Pow(4/float64(elem), 1.5)))
}

// TunedSymbols are the symbols of a GEMM slot that a lock may set per machine class: the run-time ones
// (the generated slot's fields that the loop nest reads at each call). The microkernel's own symbols
// (ir.KernelFields: tile, unroll, prefetch) are tuned too, but they select generated kernels (a class's
// kernel is generated beside the default one); tunedPlan carries both.
var TunedSymbols = []string{"MC", "KC", "NC", "SmallWork", "SmallDeep", "RowsMax", "RowsNB", "RowBlocks"}

// tunedPlan returns the values of slot's TunedSymbols in a variant's tuned plans (machine class →
// symbol → value), nil when there are none.
func tunedPlan(classes map[string]map[string]int, slot string) map[string]map[string]int {
	var out map[string]map[string]int
	for class, plan := range classes {
		for _, s := range slices.Concat(TunedSymbols, ir.KernelFields) {
			if v, ok := plan[slot+"."+s]; ok {
				if out == nil {
					out = map[string]map[string]int{}
				}
				if out[class] == nil {
					out[class] = map[string]int{}
				}
				out[class][slot+"."+s] = v
			}
		}
	}
	return out
}

// bf16Operands reports whether both operands of an f32 GEMM are loads of bf16 tensors: the GEMMs a
// pair-panel variant (target.Variant.Pairs) may run (codegen.PairPanels decides after packing; a slot it
// picks always has this plan).
func bf16Operands(g *gemm) bool {
	isBF16 := func(e ir.Expr) bool {
		if c, ok := e.(*ir.Cast); ok && c.T == ir.F32 {
			e = c.X
		}
		l, ok := e.(*ir.Load)
		return ok && l.T.Type == ir.BF16
	}
	return g.elem == ir.F32 && isBF16(g.x) && isBF16(g.y)
}

// addVariantPlan merges pv into f's plan of the variant of that name.
func addVariantPlan(f *ir.Func, pv ir.PlanVariant) {
	for i := range f.Variants {
		if f.Variants[i].Name == pv.Name {
			for k, v := range pv.Plan {
				f.Variants[i].Plan[k] = v
			}
			f.Variants[i].Host = append(f.Variants[i].Host, pv.Host...)
			for class, plan := range pv.Tuned {
				if f.Variants[i].Tuned == nil {
					f.Variants[i].Tuned = map[string]map[string]int{}
				}
				if f.Variants[i].Tuned[class] == nil {
					f.Variants[i].Tuned[class] = map[string]int{}
				}
				for k, v := range plan {
					f.Variants[i].Tuned[class][k] = v
				}
			}
			return
		}
	}
	f.Variants = append(f.Variants, pv)
}

func sym(slot, name string) ir.IExpr { return ir.ISym{Name: slot + "." + name} }

// blisNest builds the GEMM nest of g, and the nest of its epilogue when that runs in place on out (nil
// otherwise: a narrowing or scratch epilogue shares the scratch buffer's Alloc with the GEMM).
func blisNest(g *gemm, slot string, n namer) (gemmBody, epi []ir.Node) {
	out := g.s.Out
	batch := g.batch
	var wide *ir.Tensor
	if g.narrow || (g.epi != nil && g.epi.scratch) {
		// accumulate in the element type, one M×N tile per batch point
		wide = &ir.Tensor{Name: n.name("cwide"), Type: g.elem, Kind: ir.Scratch, Space: ir.Global,
			Size: ir.IMul(ir.IDim{D: g.i.Range}, ir.IDim{D: g.j.Range})}
		out, batch = wide, nil
	}
	dimM, dimN, dimK := ir.IDim{D: g.i.Range}, ir.IDim{D: g.j.Range}, ir.IDim{D: g.k.Range}
	jc := &ir.Var{Name: n.name("jc")}
	pc := &ir.Var{Name: n.name("pc")}
	ic := &ir.Var{Name: n.name("ic")}
	jr := &ir.Var{Name: n.name("jr")}
	irr := &ir.Var{Name: n.name("ir")}
	one := ir.IConst{V: 1}
	nc := ir.IMin(sym(slot, "NC"), ir.ISub(dimN, ir.IVar{V: jc}))
	kc := ir.IMin(sym(slot, "KC"), ir.ISub(dimK, ir.IVar{V: pc}))
	mc := ir.IMin(sym(slot, "MC"), ir.ISub(dimM, ir.IVar{V: ic}))
	row := ir.IAdd(ir.IVar{V: ic}, ir.IVar{V: irr})
	col := ir.IAdd(ir.IVar{V: jc}, ir.IVar{V: jr})
	// flat offset of out[batch..., row, col]
	var off ir.IExpr = ir.IConst{V: 0}
	for d, v := range batch {
		off = ir.IAdd(ir.IMul(off, ir.IDim{D: out.Shape[d]}), ir.IVar{V: v})
	}
	off = ir.IAdd(ir.IMul(ir.IAdd(ir.IMul(off, dimM), row), dimN), col)
	i32 := func(v float64) ir.Expr { return &ir.Const{Val: v, T: ir.I32} }
	ep := 0
	if g.bias != nil {
		ep |= 1
	}
	if g.relu {
		ep |= 2
	}
	first := &ir.Binary{Op: ir.Eq, X: &ir.VarVal{V: pc, T: ir.I32}, Y: i32(0), T: ir.Bool}
	// the last K block: pc + KC >= K
	last := &ir.Binary{Op: ir.Ge, X: &ir.VarVal{V: pc, T: ir.I32},
		Y: &ir.Binary{Op: ir.Sub, X: &ir.DimVal{D: g.k.Range, T: ir.I32}, Y: &ir.PlanVal{Name: slot + ".KC", T: ir.I32}, T: ir.I32}, T: ir.Bool}
	pA, dA := &ir.Var{Name: n.name("pi")}, &ir.Var{Name: n.name("pk")}
	pB, dB := &ir.Var{Name: n.name("pj")}, &ir.Var{Name: n.name("pk")}
	micro := &ir.Micro{
		Slot: slot, Elem: g.elem,
		MR: sym(slot, "MR"), NR: sym(slot, "NR"), KC: kc,
		A: ir.MicroOperand{View: &ir.View{P: pA, D: dA, Value: ir.SubstVars(g.x, map[*ir.Var]ir.IExpr{g.i: ir.IVar{V: pA}, g.k: ir.IVar{V: dA}}), Base0: row, K0: ir.IVar{V: pc}}},
		B: ir.MicroOperand{View: &ir.View{P: pB, D: dB, Value: ir.SubstVars(g.y, map[*ir.Var]ir.IExpr{g.j: ir.IVar{V: pB}, g.k: ir.IVar{V: dB}}), Base0: col, K0: ir.IVar{V: pc}}},
		C: out, COff: off, LDC: dimN,
		M:     ir.IMin(sym(slot, "MR"), ir.ISub(mc, ir.IVar{V: irr})),
		N:     ir.IMin(sym(slot, "NR"), ir.ISub(nc, ir.IVar{V: jr})),
		Alpha: g.alpha,
		Beta:  &ir.Select{C: first, A: g.beta, B: &ir.Const{Val: 1, T: g.elem}},
		EP:    ir.FoldSelects(&ir.Select{C: last, A: i32(float64(ep)), B: i32(0)}), // no epilogue: 0
	}
	if g.bias != nil {
		micro.Bias, micro.BiasOff = g.bias, col
	}
	loop := func(v *ir.Var, hi, step ir.IExpr, body ...ir.Node) *ir.Loop {
		return &ir.Loop{Var: v, Lo: ir.IConst{V: 0}, Hi: hi, Step: step, Body: body}
	}
	// the tile as the MMA triple it is an instance of (bindmicro binds it back to the microkernel)
	tile := micro.AsMMA(n.name)
	if tile == nil {
		tile = []ir.Node{micro} // operands of two types: no MMA form, the microkernel call as it is
	}
	nest := loop(jc, dimN, sym(slot, "NC"),
		loop(pc, ir.IMax(dimK, one), sym(slot, "KC"),
			loop(ic, dimM, sym(slot, "MC"),
				loop(jr, nc, sym(slot, "NR"),
					loop(irr, mc, sym(slot, "MR"), tile...)))))
	var body []ir.Node = []ir.Node{nest}
	if wide != nil || g.epi != nil {
		// once per element, after the K loop: out[batch..., i, j] = E(sum), where the sum is
		// wide[i*N + j] (a narrowing store's E is the rounding) or out[batch..., i, j] itself. The loop
		// runs over the statement's own i and j, which the nest above no longer binds.
		i2, j2 := g.i, g.j
		var sum ir.Expr = &ir.Load{T: g.s.Out, Idx: ivars(g.s.Vars)}
		if wide != nil {
			sum = &ir.Load{T: wide, Idx: []ir.IExpr{ir.IAdd(ir.IMul(ir.IVar{V: i2}, dimN), ir.IVar{V: j2})}}
		}
		var value ir.Expr = &ir.Cast{X: sum, T: g.s.Out.Type}
		if g.epi != nil {
			value = replaceExpr(g.s.Value, g.epi.inner, sum)
		}
		if g.narrow {
			// the conversion loop of a plain narrowing store keeps its own variables
			i2, j2 = &ir.Var{Name: n.name("ci"), Range: g.i.Range}, &ir.Var{Name: n.name("cj"), Range: g.j.Range}
			value = ir.SubstVars(value, map[*ir.Var]ir.IExpr{g.i: ir.IVar{V: i2}, g.j: ir.IVar{V: j2}})
		}
		idx := ivars(g.batch)
		idx = append(idx, ir.IVar{V: i2}, ir.IVar{V: j2})
		store := &ir.Store{T: g.s.Out, Idx: idx, Value: value}
		ep := fullLoop(i2, []ir.Node{fullLoop(j2, []ir.Node{store})})
		if wide != nil {
			body = []ir.Node{&ir.Alloc{T: wide, Body: []ir.Node{nest, ep}}}
		} else {
			epi = []ir.Node{ep}
		}
	}
	batchLoops := func(body []ir.Node) []ir.Node {
		for d := len(g.batch) - 1; d >= 0; d-- {
			body = []ir.Node{fullLoop(g.batch[d], body)}
		}
		return body
	}
	if epi != nil {
		epi = batchLoops(epi) // the statement's batch loops again, around the epilogue
	}
	return batchLoops(body), epi
}

// transposeStmt is a statement recognised as out[j, i] = src[i, j]: a pure 2-D transpose copy.
type transposeStmt struct {
	s    *ir.Stmt
	src  *ir.Tensor
	i, j *ir.Var // i indexes src's rows (out's columns), j src's columns (out's rows)
	elem ir.DType
}

// matchTranspose recognises out[j, i] = src[i, j] where src is a 2-D parameter (not a temporary, not
// out itself) of out's element type, f32 or f64, loaded without any conversion or arithmetic.
func matchTranspose(s *ir.Stmt) *transposeStmt {
	if len(s.Vars) != 2 || len(s.Out.Shape) != 2 || s.Out.Kind == ir.Temp {
		return nil
	}
	l, ok := s.Value.(*ir.Load)
	if !ok || l.T == s.Out || l.T.Kind == ir.Temp || l.T.Kind == ir.Scalar || len(l.T.Shape) != 2 || len(l.Idx) != 2 {
		return nil
	}
	if l.T.Type != s.Out.Type || (l.T.Type != ir.F32 && l.T.Type != ir.F64) {
		return nil
	}
	j, i := s.Vars[0], s.Vars[1]
	x0, ok0 := l.Idx[0].(ir.IVar)
	x1, ok1 := l.Idx[1].(ir.IVar)
	if !ok0 || !ok1 || x0.V != i || x1.V != j || i == j {
		return nil
	}
	return &transposeStmt{s: s, src: l.T, i: i, j: j, elem: l.T.Type}
}

// transposePlan sets the block sizes of a transpose slot: <slot>.RB source rows (the i index) by
// <slot>.CB source columns (j), from `tile i R, j C` when the directive names the indices (the tile pass
// then finds no point loop to split: the statement's loops are gone), else 128 bytes of a row each way:
// 32×32 f32, 16×16 f64. A tile then reads and writes whole 64-byte lines (two per tile row), its source
// and destination take 4 KiB each (8 KiB: a quarter of a 32 KiB L1, so the lines of the source rows
// survive while the tile's columns are written), and the sizes are multiples of the register tiles
// (8×8 and 4×4 on AVX2, 4×4 and 2×2 on NEON), so only the matrix edges take the edge paths.
func transposePlan(f *ir.Func, c *Context, t *transposeStmt, slot string) {
	b := 128 / t.elem.Size()
	rb, cb := b, b
	if s, ok := c.sizes("tile", t.i.Name); ok && s[0] > 0 {
		rb = s[0]
	}
	if s, ok := c.sizes("tile", t.j.Name); ok && s[0] > 0 {
		cb = s[0]
	}
	f.Plan[slot+".RB"], f.Plan[slot+".CB"] = rb, cb
}

// transposeNest is the blocked copy: the outer loop runs over blocks of destination rows (source columns
// jb), so that with the outer loop on the worker pool each worker writes one contiguous band of the
// output; the inner loop over blocks of source rows (ib); one Transpose per block, with the edge blocks
// cut to what is left of the matrix.
func transposeNest(t *transposeStmt, slot string, n namer) []ir.Node {
	dimI, dimJ := ir.IDim{D: t.i.Range}, ir.IDim{D: t.j.Range}
	ib := &ir.Var{Name: n.name(t.i.Name + "b")}
	jb := &ir.Var{Name: n.name(t.j.Name + "b")}
	lds, ldd := ir.IDim{D: t.src.Shape[1]}, ir.IDim{D: t.s.Out.Shape[1]}
	tr := &ir.Transpose{
		Slot: slot, Elem: t.elem,
		Src: t.src, SrcOff: ir.IAdd(ir.IMul(ir.IVar{V: ib}, lds), ir.IVar{V: jb}), LDS: lds,
		Dst: t.s.Out, DstOff: ir.IAdd(ir.IMul(ir.IVar{V: jb}, ldd), ir.IVar{V: ib}), LDD: ldd,
		Rows: ir.IMin(sym(slot, "RB"), ir.ISub(dimI, ir.IVar{V: ib})),
		Cols: ir.IMin(sym(slot, "CB"), ir.ISub(dimJ, ir.IVar{V: jb})),
	}
	inner := &ir.Loop{Var: ib, Lo: ir.IConst{V: 0}, Hi: dimI, Step: sym(slot, "RB"), Body: []ir.Node{tr}}
	return []ir.Node{&ir.Loop{Var: jb, Lo: ir.IConst{V: 0}, Hi: dimJ, Step: sym(slot, "CB"), Body: []ir.Node{inner}}}
}
