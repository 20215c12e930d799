package llvm

import (
	"math"

	"github.com/kgen-dev/kgen/ir"
	lir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// Vector loops as <W x T> operations.
//
// The body of a Vector loop (ir/vector.go: its lanes independent, straight-line Decl, Assign, Store and
// the reduction update) runs once per group of W lanes on vectors: a load whose index moves with unit
// stride along the loop variable is one <W x T> load at the group's start, a load that does not move
// is a scalar broadcast where it meets a vector, the body's locals are vector SSA values, the loop
// variable used as a number is <v, v+1, ...>, a store with unit stride is one <W x T> store. Anything
// else (a gather, a scatter, integer or bool values, a register tile emitted as scalars) makes
// vectorBody roll back, and the loop runs lane by lane (which LLVM's loop vectoriser may still widen).
//
// W is the IR's lane count, which the vectorize pass takes from the target's vector width
// (target.Machine.VecBytes: 32 bytes for x86-64, 64 with kgen gen -host on an AVX-512 machine), so one
// group is one machine vector; the remainder loop the pass puts after the vector loop (the last N mod W
// iterations) runs as one more group under a mask (masked.go).
//
// A reduction's W partial accumulators Parts[0..W-1] are the lanes of one <W x T> accumulator (an
// alloca that mem2reg makes a vector phi): loaded from the parts before the loop, updated once per
// group, written back to the parts after it, where the IR's own combine tree follows. Lane k thus adds
// exactly the elements the IR gives it, in the IR's order: no reassociation beyond the vectorize pass's
// (no fast-math flag, no llvm.vector.reduce), so the results are the lane-by-lane code's bit for bit.

// vloop is the vector loop being emitted.
type vloop struct {
	l    *ir.Loop
	w    uint64
	base value.Value                  // the loop variable at the group's first lane
	own  map[*ir.LocalVar]value.Value // the body's locals, as vectors
	acc  *lir.InstAlloca              // a reduction's vector accumulator (vecAccInit)
	mask value.Value                  // <W x i1>: the lanes a masked tail group runs (masked.go), or nil
}

// notVector is the error of a lane body that vectorBody cannot emit as vectors.
type notVector struct{ why string }

func (e notVector) Error() string { return "not vectorisable: " + e.why }

// vectorBody emits the body of a Vector loop as <W x T> operations; false means it emitted nothing
// and the loop runs lane by lane instead (ir.ExpandLanes). acc is the reduction's vector accumulator
// (vecAccInit), nil for an elementwise loop; mask, when not nil, the lanes that run (masked.go).
func (g *fn) vectorBody(l *ir.Loop, acc *lir.InstAlloca, mask value.Value) (bool, error) {
	if l.Width < 2 || l.Width > 64 || g.vec != nil || (l.Reduce != nil && acc == nil) {
		return false, nil
	}
	m := g.mark()
	base, err := g.iexpr(ir.IVar{V: l.Var})
	if err != nil {
		return false, err
	}
	g.vec = &vloop{l: l, w: uint64(l.Width), base: base, own: map[*ir.LocalVar]value.Value{}, acc: acc, mask: mask}
	err = g.vecNodes(l)
	g.vec = nil
	if _, ok := err.(notVector); ok {
		g.rollback(m)
		return false, nil
	}
	return err == nil, err
}

// Vector loops are unrolled: a main loop runs vecUnroll groups per iteration (each group's body
// emitted once, the loop variable stored for it), while at least that many remain; the loop itself
// then runs the groups left over. A reduction's main loop keeps one vector accumulator per group
// (the extra ones start at the operation's identity: -0 for +, ∓Inf for max/min) and folds them
// pairwise into the first after it, so the dependency chain of each accumulator is a quarter as long:
// a sum is then reassociated across vecUnroll·W lanes, as the assembly backends' U accumulators do
// (the slot contract; a max or min is exact but for the sign of a zero result).
const (
	vecUnrollReduce = 4 // groups per main-loop iteration of a reduction
	vecUnrollElem   = 2 // of an elementwise loop
)

// vecUnrolled emits the unrolled main loop of Vector loop l in front of the loop itself, advancing its
// counter; it emits nothing when the body does not vectorise (the loop then runs lane by lane).
func (g *fn) vecUnrolled(l *ir.Loop, hi value.Value, acc *lir.InstAlloca) error {
	u := vecUnrollElem
	if l.Reduce != nil {
		u = vecUnrollReduce
	}
	if l.Width < 2 || l.Width > 64 || g.vec != nil || (l.Reduce != nil && acc == nil) {
		return nil
	}
	m := g.mark()
	accs := []*lir.InstAlloca{acc}
	if acc != nil {
		id := map[ir.Op]float64{ir.Add: math.Copysign(0, -1), ir.Max: math.Inf(-1), ir.Min: math.Inf(1)}
		v, ok := id[l.Reduce.Op]
		if !ok {
			return nil
		}
		for k := 1; k < u; k++ {
			a := g.entry.NewAlloca(acc.ElemType)
			g.cur.NewStore(g.splat(acc.ElemType, v), a)
			accs = append(accs, a)
		}
	}
	ctr := g.counter(l.Var)
	w := int64(l.Width)
	head, body, exit := g.block("head.u."+l.Var.Name), g.block("body.u."+l.Var.Name), g.block("exit.u."+l.Var.Name)
	g.cur.NewBr(head)
	g.cur = head
	v := g.cur.NewLoad(types.I64, ctr)
	g.cur.NewCondBr(g.cur.NewICmp(enum.IPredSLT, g.cur.NewAdd(v, i64(int64(u-1)*w)), hi), body, exit)
	g.cur = body
	for k := 0; k < u; k++ {
		if k > 0 {
			g.cur.NewStore(g.cur.NewAdd(v, i64(int64(k)*w)), ctr)
			g.cse = nil
		}
		a := acc
		if acc != nil {
			a = accs[k]
		}
		done, err := g.vectorBody(l, a, nil)
		if err != nil {
			return err
		}
		if !done {
			g.rollback(m)
			return nil
		}
	}
	g.cur.NewStore(g.cur.NewAdd(v, i64(int64(u)*w)), ctr)
	g.cse = nil
	g.cur.NewBr(head)
	g.cur = exit
	if acc != nil {
		t := l.Reduce.Acc.T.Compute()
		vals := make([]value.Value, u)
		for k, a := range accs {
			vals[k] = g.cur.NewLoad(a.ElemType, a)
		}
		for len(vals) > 1 { // neighbours first, as ir.LaneTree
			var next []value.Value
			for k := 0; k+1 < len(vals); k += 2 {
				r, err := g.binary(l.Reduce.Op, t, vals[k], vals[k+1])
				if err != nil {
					return err
				}
				next = append(next, r)
			}
			vals = next
		}
		g.cur.NewStore(vals[0], acc)
	}
	return nil
}

// vecAccInit emits, before a float reduction Vector loop, its vector accumulator: an alloca holding the
// partial accumulators as lanes. It returns nil (emitting nothing) for other loops.
func (g *fn) vecAccInit(l *ir.Loop) *lir.InstAlloca {
	if l.Kind != ir.Vector || l.Reduce == nil || l.Width < 2 || l.Width > 64 || g.vec != nil {
		return nil
	}
	t := l.Reduce.Acc.T.Compute()
	if !t.IsFloat() || len(l.Reduce.Parts) != l.Width {
		return nil
	}
	vt := types.NewVector(uint64(l.Width), valueType(t))
	acc := g.entry.NewAlloca(vt)
	var v value.Value = constant.NewUndef(vt)
	for k, p := range l.Reduce.Parts {
		v = g.cur.NewInsertElement(v, g.cur.NewLoad(valueType(t), g.local(p)), constant.NewInt(types.I32, int64(k)))
	}
	g.cur.NewStore(v, acc)
	return acc
}

// vecAccFinish writes the lanes of a reduction's vector accumulator back to its partial accumulators
// (after the loop: the IR's combine of the parts follows).
func (g *fn) vecAccFinish(r *ir.LaneReduce, acc *lir.InstAlloca) {
	v := g.cur.NewLoad(acc.ElemType, acc)
	for k, p := range r.Parts {
		g.cur.NewStore(g.cur.NewExtractElement(v, constant.NewInt(types.I32, int64(k))), g.local(p))
	}
}

func (g *fn) vecNodes(l *ir.Loop) error { return g.vecList(l.Body, true) }

// vecList emits a statement list of the vector body: the body itself (top), or a branch of an If whose
// condition is the same on every lane (a scalar branch around vector code; only Decl, Store and If
// inside, so every local the code after the If reads has one value).
func (g *fn) vecList(body []ir.Node, top bool) error {
	l := g.vec.l
	for i, n := range body {
		switch x := n.(type) {
		case *ir.If:
			if err := g.vecIf(x); err != nil {
				return err
			}
		case *ir.Decl:
			v, err := g.vecValue(x.Init, x.L.T.Compute())
			if err != nil {
				return err
			}
			g.vec.own[x.L] = v
		case *ir.Assign:
			if !top {
				return notVector{"assignment in a branch"}
			}
			if r := l.Reduce; r != nil && x.L == r.Acc && i == len(body)-1 {
				return g.vecReduce(r, x)
			}
			v, err := g.vecValue(x.Value, x.L.T.Compute())
			if err != nil {
				return err
			}
			g.vec.own[x.L] = v
		case *ir.Store:
			if !x.T.Type.IsFloat() {
				return notVector{"store to a " + x.T.Type.String() + " tensor"}
			}
			if !g.unitStride(x.T, x.Idx) {
				return notVector{"scatter"}
			}
			v, err := g.vecValue(x.Value, x.T.Type)
			if err != nil {
				return err
			}
			p, err := g.vecAddr(x.T, x.Idx)
			if err != nil {
				return err
			}
			if _, reg := g.regs[x.T]; reg && g.vec.mask != nil {
				// masked-off lanes of a register tile keep their values
				v = g.cur.NewSelect(g.vec.mask, g.encode(v, x.T.Type), g.cur.NewLoad(types.NewVector(g.vec.w, storageType(x.T.Type)), p))
				g.cur.NewStore(v, p)
				continue
			}
			if g.vec.mask != nil {
				g.maskedStore(g.encode(v, x.T.Type), p, x.T.Type.Size())
				continue
			}
			st := g.cur.NewStore(g.encode(v, x.T.Type), p)
			st.Align = lir.Align(x.T.Type.Size())
		default:
			return notVector{"lane body node"}
		}
	}
	return nil
}

// vecIf emits an If in a vector body whose condition does not depend on the lane: a branch on the
// scalar condition, each side's statements as vectors; the locals declared in a side end with it.
func (g *fn) vecIf(n *ir.If) error {
	uniform := true
	ir.Walk(n.Cond, func(x ir.Expr) {
		switch x := x.(type) {
		case *ir.Load:
			uniform = uniform && !g.uses(x.Idx)
		case *ir.VarVal:
			uniform = uniform && x.V != g.vec.l.Var
		case *ir.Local:
			_, own := g.vec.own[x.L]
			uniform = uniform && !own
		}
	})
	if !uniform {
		return notVector{"condition varying across lanes"}
	}
	c, err := g.expr(n.Cond)
	if err != nil {
		return err
	}
	if _, vec := c.Type().(*types.VectorType); vec {
		return notVector{"vector condition"}
	}
	c = g.conv(c, n.Cond.Type(), ir.Bool)
	then, els, join := g.block("vthen"), g.block("velse"), g.block("vendif")
	g.cur.NewCondBr(c, then, els)
	for _, side := range []struct {
		b    *lir.Block
		body []ir.Node
	}{{then, n.Then}, {els, n.Else}} {
		g.cur = side.b
		own := make(map[*ir.LocalVar]value.Value, len(g.vec.own))
		for k, v := range g.vec.own {
			own[k] = v
		}
		if err := g.vecList(side.body, false); err != nil {
			return err
		}
		g.vec.own = own
		g.cur.NewBr(join)
	}
	g.cur = join
	return nil
}

// vecValue evaluates e as a vector of compute type t (broadcasting a uniform value).
func (g *fn) vecValue(e ir.Expr, t ir.DType) (value.Value, error) {
	if !e.Type().IsFloat() && e.Type() != ir.Untyped {
		return nil, notVector{"non-float value"}
	}
	v, err := g.expr(e)
	if err != nil {
		return nil, err
	}
	return g.broadcast(g.conv(v, e.Type(), t)), nil
}

// vecReduce emits the reduction update Acc = Acc op e on the vector accumulator.
func (g *fn) vecReduce(r *ir.LaneReduce, a *ir.Assign) error {
	t := r.Acc.T.Compute()
	upd := a.Value.(*ir.Binary) // VerifyFunc checked the form
	e, err := g.vecValue(upd.Y, t)
	if err != nil {
		return err
	}
	acc := g.vec.acc
	old := g.cur.NewLoad(acc.ElemType, acc)
	res, err := g.binary(r.Op, t, old, e)
	if err != nil {
		return err
	}
	if g.vec.mask != nil {
		res = g.cur.NewSelect(g.vec.mask, res, old)
	}
	g.cur.NewStore(res, acc)
	return nil
}

// uses reports whether an index list mentions the vector loop's variable.
func (g *fn) uses(idx []ir.IExpr) bool {
	found := false
	for _, ix := range idx {
		ir.IVars(ix, func(v *ir.Var) { found = found || v == g.vec.l.Var })
	}
	return found
}

// unitStride reports whether consecutive lanes access consecutive elements of t (a register tile's
// accesses are checked by regVector).
func (g *fn) unitStride(t *ir.Tensor, idx []ir.IExpr) bool {
	if _, reg := g.regs[t]; reg {
		return true
	}
	if n := len(idx); n >= 2 && t.Kind != ir.Scratch {
		// (e / d, e % d) over the last dim d addresses element e of the row-major pair (addr).
		if e, ok := divMod(idx[n-2], idx[n-1], t.Shape[n-1]); ok {
			idx = append(append([]ir.IExpr{}, idx[:n-2]...), e)
		}
	}
	for i, ix := range idx {
		want := int64(0)
		if i == len(idx)-1 {
			want = 1
		}
		if s, ok := g.laneStride(ix); !ok || s != want {
			return false
		}
	}
	return len(idx) > 0
}

// laneStride is how much index e grows from one lane of the vector group to the next (ok false when it
// does not grow by a constant). Besides affine expressions (ir.Coefficient), a group at a constant
// position (a register tile's row, unrollRow) takes any index that is a constant on every lane, such
// as the (j / NR, j % NR) of a packed panel's micro-panels, checked lane by lane.
func (g *fn) laneStride(e ir.IExpr) (int64, bool) {
	v := g.vec.l.Var
	if !g.uses([]ir.IExpr{e}) {
		return 0, true
	}
	if base, ok := g.konst[v]; ok {
		var first, stride int64
		all := true
		for k := int64(0); k < int64(g.vec.w) && all; k++ {
			g.konst[v] = base + k
			x, ok := g.constIndex(e)
			switch {
			case !ok:
				all = false
			case k == 0:
				first = x
			case k == 1:
				stride = x - first
			case x != first+k*stride:
				g.konst[v] = base
				return 0, false
			}
		}
		g.konst[v] = base
		if all {
			return stride, true
		}
	}
	switch e := e.(type) {
	case ir.IVar:
		return 1, true // v itself: other variables do not use v
	case ir.IBin:
		return g.affineStep(e, g.laneStride)
	}
	return 0, false
}

// affineStep is how much e grows per unit step of a variable, given step, how much an operand grows:
// sums and differences add up, a product needs one constant factor; ok false otherwise.
func (g *fn) affineStep(e ir.IBin, step func(ir.IExpr) (int64, bool)) (int64, bool) {
	x, okx := step(e.X)
	y, oky := step(e.Y)
	if !okx || !oky {
		return 0, false
	}
	switch e.Op {
	case '+':
		return x + y, true
	case '-':
		return x - y, true
	case '*':
		if c, ok := g.constIndex(e.X); ok && x == 0 {
			return c * y, true
		}
		if c, ok := g.constIndex(e.Y); ok && y == 0 {
			return c * x, true
		}
	}
	return 0, false
}

// vecAddr is the address of the group's first lane's element, as a pointer to <W x storage>.
func (g *fn) vecAddr(t *ir.Tensor, idx []ir.IExpr) (value.Value, error) {
	if p, ok, err := g.regVector(t, idx); ok {
		return p, err
	}
	p, err := g.addr(t, idx)
	if err != nil {
		return nil, err
	}
	return g.cur.NewBitCast(p, types.NewPointer(types.NewVector(g.vec.w, storageType(t.Type)))), nil
}

// vecLoad loads t[idx] in a vector loop: a vector for a unit-stride index, a scalar for one that does
// not move with the loop variable.
func (g *fn) vecLoad(l *ir.Load) (value.Value, error) {
	if !g.uses(l.Idx) {
		p, err := g.addr(l.T, l.Idx)
		if err != nil {
			return nil, err
		}
		return g.decode(g.cur.NewLoad(storageType(l.T.Type), p), l.T.Type), nil
	}
	if !l.T.Type.IsFloat() || !g.unitStride(l.T, l.Idx) {
		return nil, notVector{"gather"}
	}
	p, err := g.vecAddr(l.T, l.Idx)
	if err != nil {
		return nil, err
	}
	vt := types.NewVector(g.vec.w, storageType(l.T.Type))
	if _, reg := g.regs[l.T]; !reg && g.vec.mask != nil {
		return g.decode(g.maskedLoad(p, vt, l.T.Type.Size()), l.T.Type), nil
	}
	ld := g.cur.NewLoad(vt, p)
	ld.Align = lir.Align(l.T.Type.Size())
	return g.decode(ld, l.T.Type), nil
}

// laneIndex is the loop variable of each lane, <v, v+1, ...>, as i64.
func (g *fn) laneIndex() value.Value {
	vt := types.NewVector(g.vec.w, types.I64)
	steps := make([]constant.Constant, g.vec.w)
	for k := range steps {
		steps[k] = i64(int64(k))
	}
	return g.cur.NewAdd(g.broadcast(g.vec.base), constant.NewVector(vt, steps...))
}

// broadcast splats a scalar to the vector loop's width (vectors and code outside vector loops pass
// through).
func (g *fn) broadcast(v value.Value) value.Value {
	if g.vec == nil {
		return v
	}
	if _, ok := v.Type().(*types.VectorType); ok {
		return v
	}
	return g.splatN(v, g.vec.w)
}

// splatN is a vector of w copies of scalar v.
func (g *fn) splatN(v value.Value, w uint64) value.Value {
	vt := types.NewVector(w, v.Type())
	ins := g.cur.NewInsertElement(constant.NewUndef(vt), v, constant.NewInt(types.I32, 0))
	return g.cur.NewShuffleVector(ins, constant.NewUndef(vt), constant.NewZeroInitializer(types.NewVector(w, types.I32)))
}

// unify broadcasts scalars among vs when any of them is a vector.
func (g *fn) unify(vs ...value.Value) []value.Value {
	if g.vec == nil {
		return vs
	}
	vec := false
	for _, v := range vs {
		_, ok := v.Type().(*types.VectorType)
		vec = vec || ok
	}
	if vec {
		for i, v := range vs {
			vs[i] = g.broadcast(v)
		}
	}
	return vs
}
