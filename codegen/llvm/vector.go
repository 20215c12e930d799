package llvm

import (
	"github.com/kgen-dev/kgen/ir"
	lir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// Vector loops as <W x T> operations.
//
// The body of a Vector loop (ir/vector.go: its lanes independent, straight-line Decl, Assign, Store and
// the reduction update) runs once per group of W lanes on vectors: a load whose index moves with unit
// stride along the loop variable is one <W x T> load at the group's start, a load that does not move
// is a scalar broadcast where it meets a vector, the body's locals are vector SSA values, the loop
// variable used as a number is <v, v+1, ...>, a store with unit stride is one <W x T> store, and the
// reduction update combines the partial accumulators Parts[0..W-1] as the lanes of one vector. Anything
// else (a gather, a scatter, integer or bool values, a register tile emitted as scalars) makes
// vectorBody roll back, and the loop runs lane by lane.
//
// Only reduction loops take this form: LLVM may not reassociate their floating-point sums itself, so
// the W partial accumulators must be vector lanes for the reduction to vectorise at all. Elementwise
// vector loops run lane by lane, which LLVM's loop vectoriser widens to the target's own vector width
// (8 or 16 floats with AVX2/AVX-512, where the IR's W is the model's 4): measured on softmax, that is
// faster than <4 x float> operations.

// vloop is the vector loop being emitted.
type vloop struct {
	l    *ir.Loop
	w    uint64
	base value.Value                  // the loop variable at the group's first lane
	own  map[*ir.LocalVar]value.Value // the body's locals, as vectors
}

// notVector is the error of a lane body that vectorBody cannot emit as vectors.
type notVector struct{ why string }

func (e notVector) Error() string { return "not vectorisable: " + e.why }

// vectorBody emits the body of a reduction Vector loop as <W x T> operations; false means it emitted
// nothing and the loop runs lane by lane instead (ir.ExpandLanes).
func (g *fn) vectorBody(l *ir.Loop) (bool, error) {
	if l.Reduce == nil || l.Width < 2 || l.Width > 64 || g.vec != nil {
		return false, nil
	}
	m := g.mark()
	base, err := g.iexpr(ir.IVar{V: l.Var})
	if err != nil {
		return false, err
	}
	g.vec = &vloop{l: l, w: uint64(l.Width), base: base, own: map[*ir.LocalVar]value.Value{}}
	err = g.vecNodes(l)
	g.vec = nil
	if _, ok := err.(notVector); ok {
		g.rollback(m)
		return false, nil
	}
	return err == nil, err
}

func (g *fn) vecNodes(l *ir.Loop) error {
	for i, n := range l.Body {
		switch x := n.(type) {
		case *ir.Decl:
			v, err := g.vecValue(x.Init, x.L.T.Compute())
			if err != nil {
				return err
			}
			g.vec.own[x.L] = v
		case *ir.Assign:
			if r := l.Reduce; r != nil && x.L == r.Acc && i == len(l.Body)-1 {
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
			st := g.cur.NewStore(g.encode(v, x.T.Type), p)
			st.Align = lir.Align(x.T.Type.Size())
		default:
			return notVector{"lane body node"}
		}
	}
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

// vecReduce emits the reduction update Acc = Acc op e on the partial accumulators as one vector.
func (g *fn) vecReduce(r *ir.LaneReduce, a *ir.Assign) error {
	t := r.Acc.T.Compute()
	if !t.IsFloat() {
		return notVector{"integer reduction"}
	}
	upd := a.Value.(*ir.Binary) // VerifyFunc checked the form
	e, err := g.vecValue(upd.Y, t)
	if err != nil {
		return err
	}
	b := g.cur
	vt := types.NewVector(g.vec.w, valueType(t))
	var parts value.Value = constant.NewUndef(vt)
	for k, p := range r.Parts {
		parts = b.NewInsertElement(parts, b.NewLoad(valueType(t), g.local(p)), constant.NewInt(types.I32, int64(k)))
	}
	res, err := g.binary(r.Op, t, parts, e)
	if err != nil {
		return err
	}
	for k, p := range r.Parts {
		b.NewStore(b.NewExtractElement(res, constant.NewInt(types.I32, int64(k))), g.local(p))
	}
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

// unitStride reports whether consecutive lanes access consecutive elements of t.
func (g *fn) unitStride(t *ir.Tensor, idx []ir.IExpr) bool {
	if _, reg := g.regs[t]; reg {
		return false
	}
	if t.Kind == ir.Scratch {
		return len(idx) == 1 && ir.Coefficient(idx[0], g.vec.l.Var) == 1
	}
	return ir.Stride(idx, g.vec.l.Var) == 1
}

// vecAddr is the address of the group's first lane's element, as a pointer to <W x storage>.
func (g *fn) vecAddr(t *ir.Tensor, idx []ir.IExpr) (value.Value, error) {
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
	ld := g.cur.NewLoad(types.NewVector(g.vec.w, storageType(l.T.Type)), p)
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
	vt := types.NewVector(g.vec.w, v.Type())
	ins := g.cur.NewInsertElement(constant.NewUndef(vt), v, constant.NewInt(types.I32, 0))
	return g.cur.NewShuffleVector(ins, constant.NewUndef(vt), constant.NewZeroInitializer(types.NewVector(g.vec.w, types.I32)))
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
