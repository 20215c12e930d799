package passes

import (
	"github.com/kgen-dev/kgen/ir"
)

// MicroToMMA writes each Micro (the CPU microkernel call, docs/MICROKERNEL.md) as the MMA nodes it is an
// instance of: AccDecl of an MR×NR thread-scope tile; one MMA over the KC block whose operands are the
// packed panels (Panel layouts: element (i, p) of Ã at AOff + p·MR + i) or the views' loads (strided
// layouts); AccStore of the contract's epilogue as an expression of the accumulator,
//
//	v = Alpha·acc; v = Beta == 0 ? v : v + Beta·C; v = EP&1 ? v + Bias[BiasOff + j] : v; EP&2 ? relu(v) : v
//
// into C at COff + i·LDC + j. A Micro whose view operands are not plain loads (a conversion) or whose
// operands have different types stays. Not in any pipeline: it states the microkernel contract in MMA
// terms, so that a backend's microkernel is one implementation of the MMA and the MMA expansion
// (MMALower) the reference it is tested against.
func MicroToMMA(f *ir.Func, c *Context) (bool, error) {
	n := funcNamer(f)
	changed := false
	f.Body = ir.RewriteNodes(f.Body, func(node ir.Node) []ir.Node {
		u, ok := node.(*ir.Micro)
		if !ok {
			return []ir.Node{node}
		}
		nodes := microMMA(u, n)
		if nodes == nil {
			return []ir.Node{node}
		}
		changed = true
		return nodes
	})
	return changed, nil
}

// microOperand is a Micro operand as an MMA operand: the packed panel, or the view's load.
func microOperand(t *ir.Tensor, off, width, kc ir.IExpr, v *ir.View, isB bool) (ir.Operand, bool) {
	if t != nil {
		l := &ir.Panel{Width: width, Depth: kc}
		if isB {
			l.ByCol = true
		}
		return ir.Operand{T: t, Off: off, Layout: l}, true
	}
	ld, ok := v.Value.(*ir.Load)
	if !ok {
		return ir.Operand{}, false
	}
	r, c := &ir.Var{Name: "r"}, &ir.Var{Name: "c"}
	// A: (i, p) is the view at (Base0 + i, K0 + p); B: (p, j) at (Base0 + j, K0 + p)
	x, k := r, c
	if isB {
		x, k = c, r
	}
	sub := map[*ir.Var]ir.IExpr{v.P: ir.IAdd(v.Base0, ir.IVar{V: x}), v.D: ir.IAdd(v.K0, ir.IVar{V: k})}
	op, ok := ir.LoadOperand(ir.SubstVars(ld, sub).(*ir.Load), r, c)
	return op, ok
}

func microMMA(u *ir.Micro, n namer) []ir.Node {
	a, okA := microOperand(u.A, u.AOff, u.MR, u.KC, u.AView, false)
	b, okB := microOperand(u.B, u.BOff, u.NR, u.KC, u.BView, true)
	if !okA || !okB || a.T.Type != b.T.Type || !ir.Widens(a.T.Type, u.Elem) {
		return nil
	}
	acc := &ir.Accum{Name: n.name("acc"), T: u.Elem, M: u.MR, N: u.NR, Scope: ir.ScopeThread}
	mma := &ir.MMA{Acc: acc, In: a.T.Type, K: u.KC, A: a, B: b, ValidM: u.M, ValidN: u.N}

	i, j := &ir.Var{Name: n.name("ui")}, &ir.Var{Name: n.name("uj")}
	t := u.Elem
	i32 := func(v float64) ir.Expr { return &ir.Const{Val: v, T: ir.I32} }
	bin := func(op ir.Op, x, y ir.Expr, t ir.DType) ir.Expr { return &ir.Binary{Op: op, X: x, Y: y, T: t} }
	cAt := ir.IAdd(u.COff, ir.IAdd(ir.IMul(ir.IVar{V: i}, u.LDC), ir.IVar{V: j}))
	cIdx := flatIndex(u.C, ir.Simplify(cAt))
	v := bin(ir.Mul, u.Alpha, &ir.AccVal{Acc: acc}, t)
	v = &ir.Select{C: bin(ir.Eq, u.Beta, &ir.Const{Val: 0, T: t}, ir.Bool), A: v,
		B: bin(ir.Add, v, bin(ir.Mul, u.Beta, &ir.Load{T: u.C, Idx: cIdx}, t), t)}
	if u.Bias != nil {
		// EP & 1: EP − 2·(EP / 2) == 1 (EP is 0..3)
		odd := bin(ir.Eq, bin(ir.Sub, u.EP, bin(ir.Mul, bin(ir.Div, u.EP, i32(2), ir.I32), i32(2), ir.I32), ir.I32), i32(1), ir.Bool)
		bias := &ir.Load{T: u.Bias, Idx: flatIndex(u.Bias, ir.IAdd(u.BiasOff, ir.IVar{V: j}))}
		v = &ir.Select{C: odd, A: bin(ir.Add, v, bias, t), B: v}
	}
	v = &ir.Select{C: bin(ir.Ge, u.EP, i32(2), ir.Bool), A: &ir.Unary{Op: ir.Relu, X: v, T: t}, B: v}
	store := &ir.AccStore{Acc: acc, I: i, J: j, M: u.M, N: u.N, Out: u.C, Idx: cIdx, Value: v}
	return []ir.Node{&ir.AccDecl{Acc: acc}, mma, store}
}
