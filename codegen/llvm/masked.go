package llvm

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
	lir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// Masked vector edges.
//
// The vectorize pass follows each Vector loop over [lo, end) (end = lo + ⌊(hi−lo)/W⌋·W) with a serial
// remainder loop over [end, hi): the same body with a fresh variable and fresh locals (for a reduction
// after the combine of the partial accumulators). When the Vector loop's body runs as <W x T>
// operations, the remainder runs instead as one more group of W lanes under the mask lane < hi − end
// (when hi > end): loads with unit stride are llvm.masked.load with a zero passthrough (no byte past
// the tensor is read: masked-off lanes are not accessed), stores llvm.masked.store (nothing is written
// for masked-off lanes), and a reduction's update keeps the accumulator's old value in masked-off
// lanes (a select), so remainder element end+k joins lane k's partial accumulator before the combine.
// That reassociates a sum (the Vector loop's partial accumulators already do: within the same bound)
// and leaves a max or min exact but for the sign of a zero result, the amd64 AVX-512 routines'
// contract for their opmasked last group. Loads that do not move with the loop variable are plain
// scalar loads, as in the remainder (which reads them at least once when hi > end).
//
// The remainder is recognised, not assumed: the next node of the list (after the combine for a
// reduction) must be a serial unit-step loop starting at the Vector loop's end, whose end is the
// split point of [lo, its hi) for W, with the Vector loop's body up to the renaming of the variable
// and of the body's locals (sameLanes). Anything else keeps the scalar remainder loop.

// remainderAt returns the index in body of the remainder loop of the Vector loop body[i], or -1.
func (g *fn) remainderAt(body []ir.Node, i int) int {
	l := body[i].(*ir.Loop)
	j := i + 1
	if l.Reduce != nil {
		if a, ok := at(body, j).(*ir.Assign); !ok || a.L != l.Reduce.Acc {
			return -1
		}
		j++
	}
	rem, ok := at(body, j).(*ir.Loop)
	if !ok || rem.Kind != ir.Serial || rem.Reduce != nil {
		return -1
	}
	if s, ok := rem.Step.(ir.IConst); !ok || s.V != 1 || g.keyOf(rem.Lo) != g.keyOf(l.Hi) {
		return -1
	}
	w := ir.IConst{V: l.Width}
	split := ir.IAdd(l.Lo, ir.IMul(ir.IDiv(ir.ISub(rem.Hi, l.Lo), w), w))
	if ir.Simplify(split).String() != ir.Simplify(l.Hi).String() {
		return -1
	}
	if !sameLanes(l, rem) {
		return -1
	}
	return j
}

func at(body []ir.Node, i int) ir.Node {
	if i < len(body) {
		return body[i]
	}
	return nil
}

// sameLanes reports whether rem's body is l's body with l's variable renamed to rem's and the locals
// declared in the body renamed (the reduction's accumulator is the same local in both).
func sameLanes(l, rem *ir.Loop) bool {
	if len(l.Body) != len(rem.Body) {
		return false
	}
	c := &lanesEq{a: l.Var, b: rem.Var, locals: map[*ir.LocalVar]*ir.LocalVar{}}
	for i, n := range l.Body {
		switch x := n.(type) {
		case *ir.Decl:
			y, ok := rem.Body[i].(*ir.Decl)
			if !ok || x.L.T != y.L.T || !c.expr(x.Init, y.Init) {
				return false
			}
			c.locals[x.L] = y.L
		case *ir.Assign:
			y, ok := rem.Body[i].(*ir.Assign)
			if !ok || !c.local(x.L, y.L) || !c.expr(x.Value, y.Value) {
				return false
			}
		case *ir.Store:
			y, ok := rem.Body[i].(*ir.Store)
			if !ok || x.T != y.T || !c.idx(x.Idx, y.Idx) || !c.expr(x.Value, y.Value) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// lanesEq compares two straight-line bodies up to renaming variable a to b and the locals in locals.
type lanesEq struct {
	a, b   *ir.Var
	locals map[*ir.LocalVar]*ir.LocalVar
}

func (c *lanesEq) local(x, y *ir.LocalVar) bool {
	if r, ok := c.locals[x]; ok {
		return r == y
	}
	return x == y
}

func (c *lanesEq) v(x, y *ir.Var) bool { return x == y && x != c.a || x == c.a && y == c.b }

func (c *lanesEq) idx(xs, ys []ir.IExpr) bool {
	if len(xs) != len(ys) {
		return false
	}
	for i := range xs {
		if !c.iexpr(xs[i], ys[i]) {
			return false
		}
	}
	return true
}

func (c *lanesEq) iexpr(x, y ir.IExpr) bool {
	switch x := x.(type) {
	case ir.IConst, ir.IDim, ir.ISym:
		return x == y
	case ir.IVar:
		yv, ok := y.(ir.IVar)
		return ok && c.v(x.V, yv.V)
	case ir.IBin:
		yb, ok := y.(ir.IBin)
		return ok && x.Op == yb.Op && c.iexpr(x.X, yb.X) && c.iexpr(x.Y, yb.Y)
	}
	return false
}

func (c *lanesEq) expr(x, y ir.Expr) bool {
	switch x := x.(type) {
	case *ir.Const:
		yc, ok := y.(*ir.Const)
		return ok && *x == *yc || ok && x.T == yc.T && x.Val != x.Val && yc.Val != yc.Val
	case *ir.Load:
		yl, ok := y.(*ir.Load)
		return ok && x.T == yl.T && c.idx(x.Idx, yl.Idx)
	case *ir.DimVal:
		yd, ok := y.(*ir.DimVal)
		return ok && *x == *yd
	case *ir.VarVal:
		yv, ok := y.(*ir.VarVal)
		return ok && x.T == yv.T && c.v(x.V, yv.V)
	case *ir.PlanVal:
		yp, ok := y.(*ir.PlanVal)
		return ok && *x == *yp
	case *ir.Local:
		yl, ok := y.(*ir.Local)
		return ok && c.local(x.L, yl.L)
	case *ir.Unary:
		yu, ok := y.(*ir.Unary)
		return ok && x.Op == yu.Op && x.T == yu.T && c.expr(x.X, yu.X)
	case *ir.Binary:
		yb, ok := y.(*ir.Binary)
		return ok && x.Op == yb.Op && x.T == yb.T && c.expr(x.X, yb.X) && c.expr(x.Y, yb.Y)
	case *ir.Select:
		ys, ok := y.(*ir.Select)
		return ok && c.expr(x.C, ys.C) && c.expr(x.A, ys.A) && c.expr(x.B, ys.B)
	case *ir.Cast:
		yc, ok := y.(*ir.Cast)
		return ok && x.T == yc.T && c.expr(x.X, yc.X)
	}
	return false
}

// maskedTail emits the remainder tail of Vector loop l, which ends at end, as one masked group (see the
// top of the file) and reports true; false means it emitted nothing (the body does not run as a masked
// group) and the remainder loop must be emitted. acc is the reduction's vector accumulator.
func (g *fn) maskedTail(l *ir.Loop, end value.Value, tail *ir.Loop, acc *lir.InstAlloca) (bool, error) {
	m := g.mark()
	hi, err := g.iexpr(tail.Hi)
	if err != nil {
		return false, err
	}
	n := g.cur.NewSub(hi, end)
	run, join := g.block("tail."+l.Var.Name), g.block("tailend."+l.Var.Name)
	g.cur.NewCondBr(g.cur.NewICmp(enum.IPredSGT, n, i64(0)), run, join)
	g.cur = run
	g.cur.NewStore(end, g.counter(l.Var))
	g.cse = nil
	w := uint64(l.Width)
	lanes := make([]constant.Constant, w)
	for k := range lanes {
		lanes[k] = i64(int64(k))
	}
	vt := types.NewVector(w, types.I64)
	mask := g.cur.NewICmp(enum.IPredSLT, constant.NewVector(vt, lanes...), g.splatN(n, w))
	done, err := g.vectorBody(l, acc, mask)
	if err != nil {
		return false, err
	}
	if !done {
		g.rollback(m)
		return false, nil
	}
	g.cur.NewBr(join)
	g.cur = join
	return true, nil
}

// maskedLoad loads a <W x T> group at p (a pointer to the vector type) under the vector loop's mask,
// masked-off lanes zero.
func (g *fn) maskedLoad(p value.Value, vt *types.VectorType, align int) value.Value {
	pt := types.NewPointer(vt)
	f := g.m.declare(fmt.Sprintf("llvm.masked.load.%s.p0%s", suffix(vt), suffix(vt)), vt,
		pt, types.I32, g.vec.mask.Type(), vt)
	return g.cur.NewCall(f, p, constant.NewInt(types.I32, int64(align)), g.vec.mask, constant.NewZeroInitializer(vt))
}

// maskedStore stores the lanes of v that the vector loop's mask selects to the group at p.
func (g *fn) maskedStore(v, p value.Value, align int) {
	vt := v.Type()
	f := g.m.declare(fmt.Sprintf("llvm.masked.store.%s.p0%s", suffix(vt), suffix(vt)), types.Void,
		vt, types.NewPointer(vt), types.I32, g.vec.mask.Type())
	g.cur.NewCall(f, v, p, constant.NewInt(types.I32, int64(align)), g.vec.mask)
}
