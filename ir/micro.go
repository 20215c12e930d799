package ir

// FlatIndex is the index list of flat element offset off in t (row-major): the offset itself for a
// scratch buffer, else (off / stride_d) mod dim_d per dimension (no mod on the first, so an offset
// past the end still fails the bounds check), each simplified.
func FlatIndex(t *Tensor, off IExpr) []IExpr {
	idx := flatIndex(t, off)
	if t.Kind != Scratch {
		for d, x := range idx {
			idx[d] = Simplify(x)
		}
	}
	return idx
}

// flatIndex is FlatIndex without simplifying: off appears in it as it is, so flatOffset can take it back.
func flatIndex(t *Tensor, off IExpr) []IExpr {
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
		idx[d] = x
		stride = IMul(stride, IDim{D: t.Shape[d]})
	}
	return idx
}

// flatOffset is the offset off of an index list that flatIndex(t, off) built, false for any other list.
func flatOffset(t *Tensor, idx []IExpr) (IExpr, bool) {
	if len(idx) == 0 {
		return nil, false
	}
	off := idx[0]
	if t.Kind != Scratch && len(t.Shape) > 1 {
		b, ok := idx[0].(IBin)
		if !ok || b.Op != '/' {
			return nil, false
		}
		off = b.X
	}
	want := flatIndex(t, off)
	if len(want) != len(idx) {
		return nil, false
	}
	for d := range want {
		if want[d] != idx[d] {
			return nil, false
		}
	}
	return off, true
}

// SameIExpr reports whether a and b are the same index expression once simplified.
func SameIExpr(a, b IExpr) bool { return a == b || Simplify(a) == Simplify(b) }

// operandType is the element type an operand yields: its tensor's, or its view's value's.
func operandType(o Operand) (DType, bool) {
	if o.View != nil {
		return o.View.Value.Type(), true
	}
	if o.T == nil || o.Off == nil || o.Layout == nil {
		return Untyped, false
	}
	return o.T.Type, true
}

// AsMMA writes the microkernel call u as the MMA nodes it is an instance of (docs/MICROKERNEL.md in MMA
// terms): AccDecl of an MR×NR thread-scope tile; one MMA (Slot u.Slot) over the KC block on u's operands
// as they are (Panel or Strided layouts, or Views before packing); AccStore of the contract's epilogue
// as an expression of the accumulator,
//
//	v = Alpha·acc; v = Beta == 0 ? v : v + Beta·C; v = EP&1 ? v + Bias[BiasOff + j] : v; EP&2 ? relu(v) : v
//
// into C at COff + i·LDC + j (C is not read when Beta is 0; the index lists are those of the flat
// offsets, not simplified, so that BindMicro reads COff, LDC and BiasOff back). name gives fresh names
// (the accumulator and the store's indices). Nil when u's operands have different types or a type that
// does not widen to Elem, and for a batched Micro (ir.MicroBatched). The portable Go microkernel is emitted from these nodes (codegen/golang), the
// CPU pipelines' tensorize emits them for every GEMM tile (passes.BindMicro binds them back), and
// passes.MicroToMMA uses them to state the contract in the IR.
func (u *Micro) AsMMA(name func(base string) string) []Node { return u.asMMA(name, false) }

// AsMMASimplified is AsMMA with the index lists of C and the bias simplified (FlatIndex of the simplified
// offset): the form code is generated from (passes.MicroToMMA), which BindMicro does not read back.
func (u *Micro) AsMMASimplified(name func(base string) string) []Node { return u.asMMA(name, true) }

// Unbatched returns the loops a batched Micro (u.Batch not nil, strided operands) stands for, its products'
// row tiles in the order the kernel computes them, each a Micro of one tile:
//
//	for q = 0 .. Count { for i = 0 .. M step MR { u at A.Off + q·AStride + i·ars, B.Off + q·BStride,
//	    COff + q·CStride + i·LDC, m = min(MR, M − i) } }
//
// name gives the loop variables fresh names. Nil for a Micro that is not batched.
func (u *Micro) Unbatched(name func(base string) string) *Loop {
	b := u.Batch
	sa, ok := u.A.Layout.(*Strided)
	if b == nil || !ok {
		return nil
	}
	q, i := &Var{Name: name("q")}, &Var{Name: name("qi")}
	t := *u
	t.Batch = nil
	t.A.Off = IAdd(u.A.Off, IAdd(IMul(IVar{V: q}, b.AStride), IMul(IVar{V: i}, sa.RowStride)))
	t.B.Off = IAdd(u.B.Off, IMul(IVar{V: q}, b.BStride))
	t.COff = IAdd(u.COff, IAdd(IMul(IVar{V: q}, b.CStride), IMul(IVar{V: i}, u.LDC)))
	t.M = IMin(u.MR, ISub(u.M, IVar{V: i}))
	rows := &Loop{Var: i, Lo: IConst{V: 0}, Hi: u.M, Step: u.MR, Body: []Node{&t}}
	return &Loop{Var: q, Lo: IConst{V: 0}, Hi: b.Count, Step: IConst{V: 1}, Body: []Node{rows}}
}

func (u *Micro) asMMA(name func(base string) string, simplified bool) []Node {
	if u.Batch != nil {
		return nil // a batch is a loop of products, no one MMA
	}
	index := flatIndex
	if simplified {
		index = func(t *Tensor, off IExpr) []IExpr { return FlatIndex(t, off) }
	}
	ta, okA := operandType(u.A)
	tb, okB := operandType(u.B)
	if !okA || !okB || ta != tb || !Widens(ta, u.Elem) {
		return nil
	}
	acc := &Accum{Name: name("acc"), T: u.Elem, M: u.MR, N: u.NR, Scope: ScopeThread}
	mma := &MMA{Acc: acc, In: ta, K: u.KC, A: u.A, B: u.B, ValidM: u.M, ValidN: u.N, Slot: u.Slot}

	i, j := &Var{Name: name("ui")}, &Var{Name: name("uj")}
	t := u.Elem
	bin := func(op Op, x, y Expr, t DType) Expr { return &Binary{Op: op, X: x, Y: y, T: t} }
	cAt := IAdd(u.COff, IAdd(IMul(IVar{V: i}, u.LDC), IVar{V: j}))
	if simplified {
		cAt = Simplify(cAt)
	}
	cIdx := index(u.C, cAt)
	// Beta varies with the K block (the caller's beta in the first, 1 after), so it is no scaled-output
	// factor of the beta rule (those use no index): the select says "C not read when Beta is 0" itself.
	v := bin(Mul, u.Alpha, &AccVal{Acc: acc}, t)
	v = &Select{C: bin(Eq, u.Beta, &Const{Val: 0, T: t}, Bool), A: v,
		B: bin(Add, v, bin(Mul, u.Beta, &Load{T: u.C, Idx: cIdx}, t), t)}
	if u.Bias != nil {
		bias := &Load{T: u.Bias, Idx: index(u.Bias, IAdd(u.BiasOff, IVar{V: j}))}
		v = &Select{C: epBit(u.EP, 1), A: bin(Add, v, bias, t), B: v}
	}
	v = &Select{C: epBit(u.EP, 2), A: &Unary{Op: Relu, X: v, T: t}, B: v}
	store := &AccStore{Acc: acc, I: i, J: j, M: u.M, N: u.N, Out: u.C, Idx: cIdx, Value: v}
	return []Node{&AccDecl{Acc: acc}, mma, store}
}

// epBit is the test of bit 1 (EP − 2·(EP / 2) == 1) or bit 2 (EP ≥ 2) of the epilogue bits (0..3).
func epBit(ep Expr, bit int) Expr {
	i32 := func(v float64) Expr { return &Const{Val: v, T: I32} }
	bin := func(op Op, x, y Expr, t DType) Expr { return &Binary{Op: op, X: x, Y: y, T: t} }
	if bit == 2 {
		return bin(Ge, ep, i32(2), Bool)
	}
	return bin(Eq, bin(Sub, ep, bin(Mul, bin(Div, ep, i32(2), I32), i32(2), I32), I32), i32(1), Bool)
}

// BindMicro is AsMMA read backwards: the microkernel call whose MMA form the triple decl, m, s is, false
// when it is no such form. It matches the triple against the microkernel contract (docs/MICROKERNEL.md):
// a thread-scope register tile of an f32/f64 accumulator declared, updated by one MMA of a slot (not
// tf32, no valid depth, valid rows and columns the store's) on operands of one type that a Micro reads
// (in memory of the accumulator's type, or views), and stored once as exactly the contract's epilogue
// (alpha·acc, the beta select reading C at the store's element, the bias bit, the ReLU bit) at a flat
// offset COff + i·LDC + j of C. bind(u.AsMMA(name)) is u, field for field.
func BindMicro(decl *AccDecl, m *MMA, s *AccStore) (*Micro, bool) {
	a := decl.Acc
	if m.Acc != a || s.Acc != a || a.Scope != ScopeThread || a.Layout != nil || (a.T != F32 && a.T != F64) {
		return nil, false
	}
	if m.Slot == "" || m.TF32 || m.ValidK != nil || m.ValidM == nil || m.ValidN == nil || s.M != m.ValidM || s.N != m.ValidN {
		return nil, false
	}
	for _, o := range []Operand{m.A, m.B} {
		t, ok := operandType(o)
		if !ok || t != m.In || (o.View == nil && t != a.T) || (o.View != nil && o.T != nil) {
			return nil, false
		}
	}
	u := &Micro{Slot: m.Slot, Elem: a.T, MR: a.M, NR: a.N, KC: m.K, A: m.A, B: m.B, C: s.Out, M: m.ValidM, N: m.ValidN}
	off, ok := flatOffset(s.Out, s.Idx)
	if !ok {
		return nil, false
	}
	if u.COff, u.LDC, ok = rowOffset(off, s.I, s.J); !ok {
		return nil, false
	}
	// ReLU bit: EP&2 ? relu(v) : v
	relu, ok := s.Value.(*Select)
	if !ok {
		return nil, false
	}
	r, ok := relu.A.(*Unary)
	if !ok || r.Op != Relu || r.X != relu.B || r.T != a.T {
		return nil, false
	}
	ge, ok := relu.C.(*Binary)
	if !ok || ge.X.Type() != I32 || !isEPBit(relu.C, ge.X, 2) {
		return nil, false
	}
	u.EP = ge.X
	v := relu.B
	// bias bit: EP&1 ? v + Bias[BiasOff + j] : v
	if sel, ok := v.(*Select); ok && isEPBit(sel.C, u.EP, 1) {
		add, ok := sel.A.(*Binary)
		if !ok || add.Op != Add || add.X != sel.B || add.T != a.T {
			return nil, false
		}
		l, ok := add.Y.(*Load)
		if !ok || l.T.Type != a.T {
			return nil, false
		}
		off, ok := flatOffset(l.T, l.Idx)
		if !ok {
			return nil, false
		}
		if u.BiasOff, ok = plusVar(off, s.J); !ok {
			return nil, false
		}
		u.Bias, v = l.T, sel.B
	}
	// beta: Beta == 0 ? v : v + Beta·C[the stored element]
	sel, ok := v.(*Select)
	if !ok {
		return nil, false
	}
	eq, ok1 := sel.C.(*Binary)
	add, ok2 := sel.B.(*Binary)
	if !ok1 || !ok2 || eq.Op != Eq || !isConstOf(eq.Y, 0, a.T) || add.Op != Add || add.X != sel.A || add.T != a.T {
		return nil, false
	}
	mul, ok := add.Y.(*Binary)
	if !ok || mul.Op != Mul || mul.X != eq.X || mul.T != a.T {
		return nil, false
	}
	if l, ok := mul.Y.(*Load); !ok || l.T != s.Out || !sameIExprs(l.Idx, s.Idx) {
		return nil, false
	}
	u.Beta = eq.X
	// alpha·acc
	am, ok := sel.A.(*Binary)
	if !ok || am.Op != Mul || am.T != a.T {
		return nil, false
	}
	if av, ok := am.Y.(*AccVal); !ok || av.Acc != a {
		return nil, false
	}
	u.Alpha = am.X
	if uses := exprUsesVar(u.Alpha, s.I, s.J) || exprUsesVar(u.Beta, s.I, s.J) || exprUsesVar(u.EP, s.I, s.J); uses {
		return nil, false
	}
	return u, true
}

// rowOffset reads off = COff + i·LDC + j (as AsMMA builds it, constants folded) back.
func rowOffset(off IExpr, i, j *Var) (coff, ldc IExpr, ok bool) {
	coff = IConst{V: 0}
	row := off
	if b, isAdd := off.(IBin); isAdd && b.Op == '+' && b.Y != (IVar{V: j}) {
		coff, row = b.X, b.Y
	}
	rest, ok := plusVar(row, j)
	if !ok || iexprUses(coff, i, j) {
		return nil, nil, false
	}
	switch r := rest.(type) {
	case IVar:
		if r.V == i {
			return coff, IConst{V: 1}, true
		}
	case IBin:
		if r.Op == '*' && r.X == (IVar{V: i}) && !iexprUses(r.Y, i, j) {
			return coff, r.Y, true
		}
	}
	return nil, nil, false
}

// plusVar reads e = x + v (IAdd(x, v): x is 0 when e is v alone) back.
func plusVar(e IExpr, v *Var) (IExpr, bool) {
	if e == (IVar{V: v}) {
		return IConst{V: 0}, true
	}
	b, ok := e.(IBin)
	if !ok || b.Op != '+' || b.Y != (IVar{V: v}) || iexprUses(b.X, v) {
		return nil, false
	}
	return b.X, true
}

func iexprUses(e IExpr, vs ...*Var) bool {
	found := false
	IVars(e, func(w *Var) {
		for _, v := range vs {
			found = found || w == v
		}
	})
	return found
}

// exprUsesVar reports whether e reads one of vs (an index of a load, or its value).
func exprUsesVar(e Expr, vs ...*Var) bool {
	found := false
	Walk(e, func(x Expr) {
		switch x := x.(type) {
		case *Load:
			for _, ix := range x.Idx {
				found = found || iexprUses(ix, vs...)
			}
		case *VarVal:
			for _, v := range vs {
				found = found || x.V == v
			}
		}
	})
	return found
}

func sameIExprs(a, b []IExpr) bool {
	if len(a) != len(b) {
		return false
	}
	for d := range a {
		if a[d] != b[d] {
			return false
		}
	}
	return true
}

// isEPBit reports whether c is epBit(ep, bit) on this very ep.
func isEPBit(c, ep Expr, bit int) bool {
	op := func(e Expr, o Op) (*Binary, bool) {
		b, ok := e.(*Binary)
		return b, ok && b.Op == o && (b.T == I32 || b.T == Bool)
	}
	if bit == 2 {
		b, ok := op(c, Ge)
		return ok && b.X == ep && isConstOf(b.Y, 2, I32)
	}
	eq, ok := op(c, Eq)
	if !ok || !isConstOf(eq.Y, 1, I32) {
		return false
	}
	sub, ok := op(eq.X, Sub)
	if !ok || sub.X != ep {
		return false
	}
	mul, ok := op(sub.Y, Mul)
	if !ok || !isConstOf(mul.Y, 2, I32) {
		return false
	}
	div, ok := op(mul.X, Div)
	return ok && div.X == ep && isConstOf(div.Y, 2, I32)
}

func isConstOf(e Expr, v float64, t DType) bool {
	c, ok := e.(*Const)
	return ok && c.Val == v && c.T == t
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
