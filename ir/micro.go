package ir

// FlatIndex is the index list of flat element offset off in t (row-major): the offset itself for a
// scratch buffer, else (off / stride_d) mod dim_d per dimension (no mod on the first, so an offset
// past the end still fails the bounds check).
func FlatIndex(t *Tensor, off IExpr) []IExpr {
	if t.Kind == Scratch {
		return []IExpr{off}
	}
	idx := make([]IExpr, len(t.Shape))
	stride := IExpr(IConst{V: 1})
	for d := len(t.Shape) - 1; d >= 0; d-- {
		x := IDiv(off, stride)
		if d > 0 {
			x = IMod(x, IDim{D: t.Shape[d]})
		}
		idx[d] = Simplify(x)
		stride = IMul(stride, IDim{D: t.Shape[d]})
	}
	return idx
}

// SameIExpr reports whether a and b are the same index expression once simplified.
func SameIExpr(a, b IExpr) bool { return a == b || Simplify(a) == Simplify(b) }

// mmaOperand is a Micro operand as an MMA operand: the operand in memory as it is, or the view's load
// read through its strided layout (false for a view that converts or computes).
func mmaOperand(o MicroOperand, isB bool) (Operand, bool) {
	if o.View == nil {
		return o.Operand, o.T != nil
	}
	v := o.View
	ld, ok := v.Value.(*Load)
	if !ok {
		return Operand{}, false
	}
	r, c := &Var{Name: "r"}, &Var{Name: "c"}
	// A: (i, p) is the view at (Base0 + i, K0 + p); B: (p, j) at (Base0 + j, K0 + p)
	x, k := r, c
	if isB {
		x, k = c, r
	}
	sub := map[*Var]IExpr{v.P: IAdd(v.Base0, IVar{V: x}), v.D: IAdd(v.K0, IVar{V: k})}
	return LoadOperand(SubstVars(ld, sub).(*Load), r, c)
}

// AsMMA writes the microkernel call u as the MMA nodes it is an instance of (docs/MICROKERNEL.md in MMA
// terms): AccDecl of an MR×NR thread-scope tile; one MMA over the KC block on u's operands as they are
// (Panel or Strided layouts) or, for a View, its load through a strided layout;
// AccStore of the contract's epilogue as an expression of the accumulator,
//
//	v = Alpha·acc; v = Beta == 0 ? v : v + Beta·C; v = EP&1 ? v + Bias[BiasOff + j] : v; EP&2 ? relu(v) : v
//
// into C at COff + i·LDC + j (C is not read when Beta is 0). name gives fresh names (the accumulator and the store's indices). Nil when u's view
// operands are not plain loads (a conversion) or its operands have different types. The portable Go
// microkernel is emitted from these nodes (codegen/golang), and passes.MicroToMMA uses them to state the
// contract in the IR.
func (u *Micro) AsMMA(name func(base string) string) []Node {
	a, okA := mmaOperand(u.A, false)
	b, okB := mmaOperand(u.B, true)
	if !okA || !okB || a.T.Type != b.T.Type || !Widens(a.T.Type, u.Elem) {
		return nil
	}
	acc := &Accum{Name: name("acc"), T: u.Elem, M: u.MR, N: u.NR, Scope: ScopeThread}
	mma := &MMA{Acc: acc, In: a.T.Type, K: u.KC, A: a, B: b, ValidM: u.M, ValidN: u.N}

	i, j := &Var{Name: name("ui")}, &Var{Name: name("uj")}
	t := u.Elem
	i32 := func(v float64) Expr { return &Const{Val: v, T: I32} }
	bin := func(op Op, x, y Expr, t DType) Expr { return &Binary{Op: op, X: x, Y: y, T: t} }
	cAt := IAdd(u.COff, IAdd(IMul(IVar{V: i}, u.LDC), IVar{V: j}))
	cIdx := FlatIndex(u.C, Simplify(cAt))
	// Beta varies with the K block (the caller's beta in the first, 1 after), so it is no scaled-output
	// factor of the beta rule (those use no index): the select says "C not read when Beta is 0" itself.
	v := bin(Mul, u.Alpha, &AccVal{Acc: acc}, t)
	v = &Select{C: bin(Eq, u.Beta, &Const{Val: 0, T: t}, Bool), A: v,
		B: bin(Add, v, bin(Mul, u.Beta, &Load{T: u.C, Idx: cIdx}, t), t)}
	if u.Bias != nil {
		// EP & 1: EP − 2·(EP / 2) == 1 (EP is 0..3)
		odd := bin(Eq, bin(Sub, u.EP, bin(Mul, bin(Div, u.EP, i32(2), I32), i32(2), I32), I32), i32(1), Bool)
		bias := &Load{T: u.Bias, Idx: FlatIndex(u.Bias, IAdd(u.BiasOff, IVar{V: j}))}
		v = &Select{C: odd, A: bin(Add, v, bias, t), B: v}
	}
	v = &Select{C: bin(Ge, u.EP, i32(2), Bool), A: &Unary{Op: Relu, X: v, T: t}, B: v}
	store := &AccStore{Acc: acc, I: i, J: j, M: u.M, N: u.N, Out: u.C, Idx: cIdx, Value: v}
	return []Node{&AccDecl{Acc: acc}, mma, store}
}

// MapIExprs returns o with f applied to its index expressions (offset and layout parameters, or the
// view's origin); o is not changed.
func (o MicroOperand) MapIExprs(f func(IExpr) IExpr) MicroOperand {
	if o.View != nil {
		v := *o.View
		v.Base0, v.K0 = f(v.Base0), f(v.K0)
		o.View = &v
		return o
	}
	if o.Off != nil {
		o.Off = f(o.Off)
	}
	switch l := o.Layout.(type) {
	case *Panel:
		o.Layout = &Panel{Width: f(l.Width), Depth: f(l.Depth), ByCol: l.ByCol}
	case *Strided:
		o.Layout = &Strided{RowStride: f(l.RowStride), ColStride: f(l.ColStride)}
	}
	return o
}
