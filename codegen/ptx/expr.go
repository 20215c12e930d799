package ptx

import (
	"math"

	"github.com/kgen-dev/kgen/ir"
)

// Scalar expressions. Values live in registers of their compute type (f16 and bf16 compute in f32, as
// the IR defines; bool is a predicate). Arithmetic uses the IEEE round-to-nearest forms (add.rn,
// mul.rn, div.rn, sqrt.rn), which ptxas never contracts into fma: elementwise results equal the
// interpreter's storage-precision results bit for bit, except exp (math.go: ≤ 2 ulp).

// storageType is the PTX type a value of d occupies in memory.
func storageType(d ir.DType) Type {
	switch d {
	case ir.F64:
		return F64
	case ir.F32:
		return F32
	case ir.F16, ir.BF16:
		return B16
	case ir.I32:
		return S32
	}
	return 0
}

// computeType is the register type of a computed value of type d.
func computeType(d ir.DType) Type {
	switch d {
	case ir.F64:
		return F64
	case ir.F32, ir.F16, ir.BF16:
		return F32
	case ir.I32:
		return S32
	case ir.Bool:
		return Pred
	}
	return 0
}

func (l *lowerer) checkType(d ir.DType) {
	if computeType(d) == 0 {
		l.fail("values of type %s", d)
	}
}

// widen converts a value loaded in storage type into its compute type.
func (l *lowerer) widen(v Reg, d ir.DType) Reg {
	switch d {
	case ir.F16:
		return l.e.Cvt(F32, F16, "", v)
	case ir.BF16:
		// bf16 is the high half of an f32: shift it into place (cvt.f32.bf16 needs sm_90).
		w := l.e.Cvt(U32, U16, "", v)
		s := l.e.Bin("shl", B32, w, Imm(16))
		return l.e.Mov(F32, s)
	}
	l.checkType(d)
	return v
}

// narrow converts a computed value of type from into the storage type of to, rounding to nearest even.
func (l *lowerer) narrow(v Reg, from, to ir.DType) Reg {
	switch to {
	case ir.F16:
		return l.e.Cvt(F16, computeType(from), ".rn", v)
	case ir.BF16:
		src := v
		if from == ir.F64 {
			// Two roundings (f64 → f32 → bf16) could differ from one; no kernel stores f64 into bf16.
			l.fail("storing f64 into bf16")
		}
		return l.e.Cvt(BF16, F32, ".rn", src)
	}
	return l.conv(v, from, to)
}

// conv converts a computed value of type from into the compute register type of to (rounding as a
// store to "to" would: a conversion to f16 rounds to f16 and widens back).
func (l *lowerer) conv(v Reg, from, to ir.DType) Reg {
	if from == ir.Untyped {
		l.fail("an untyped value converted to %s", to)
	}
	l.checkType(from)
	l.checkType(to)
	ft, tt := computeType(from), computeType(to)
	switch {
	case to == ir.F16 || to == ir.BF16:
		if from == to {
			return v
		}
		return l.widen(l.narrow(v, from, to), to)
	case ft == tt:
		return v
	case ft == Pred:
		d := l.e.Reg(tt)
		one, zero := l.constOf(1, to), l.constOf(0, to)
		l.e.Emit(&Instr{Op: "selp", Types: []Type{tt}, Args: []Operand{d, one, zero, v}})
		return d
	case tt == Pred:
		return l.e.Setp("neu", ft, v, l.constOf(0, from))
	case tt == S32:
		return l.e.Cvt(S32, ft, ".rzi", v)
	case ft == S32 || (ft == F32 && tt == F64):
		if ft == F32 {
			return l.e.Cvt(tt, ft, "", v)
		}
		return l.e.Cvt(tt, ft, ".rn", v)
	}
	return l.e.Cvt(tt, ft, ".rn", v)
}

// constOf is the immediate c of type d.
func (l *lowerer) constOf(c float64, d ir.DType) Operand {
	switch computeType(d) {
	case F64:
		return FImm{V: c, T: F64}
	case F32:
		return FImm{V: c, T: F32}
	case S32:
		return Imm(int64(c))
	}
	l.fail("a constant of type %s", d)
	return nil
}

// valAs computes e converted to type t (a literal is made in t directly).
func (l *lowerer) valAs(e ir.Expr, t ir.DType) Reg {
	if c, ok := e.(*ir.Const); ok && c.T != ir.Bool && t != ir.Bool {
		return l.val(&ir.Const{Val: t.Round(c.Val), T: t})
	}
	return l.conv(l.val(e), e.Type(), t)
}

// val computes e into a register of its compute type.
func (l *lowerer) val(e ir.Expr) Reg {
	switch x := e.(type) {
	case *ir.Const:
		t := x.T
		if t == ir.Untyped {
			t = ir.F32
		}
		if t == ir.Bool {
			return l.e.Setp("ne", S32, l.e.Mov(S32, Imm(b2i(x.Val != 0))), Imm(0))
		}
		v := x.Val
		if t == ir.F16 || t == ir.BF16 {
			v = t.Round(v)
		}
		return l.e.Mov(computeType(t), l.constOf(v, t))
	case *ir.Load:
		return l.load(x)
	case *ir.DimVal:
		d, ok := l.dims[x.D]
		if !ok {
			l.fail("dim %s is not a parameter", x.D.Name)
		}
		return l.fromIndex(d, x.T)
	case *ir.VarVal:
		return l.fromIndex(l.ireg(ir.IVar{V: x.V}), x.T)
	case *ir.PlanVal:
		v, ok := l.plan[x.Name]
		if !ok {
			l.fail("plan value %s", x.Name)
		}
		return l.e.Mov(computeType(x.T), l.constOf(float64(v), x.T))
	case *ir.Local:
		r, ok := l.locals[x.L]
		if !ok {
			l.fail("local %%%s read before its declaration", x.L.Name)
		}
		return r
	case *ir.AccVal:
		if l.accCur == nil {
			l.fail("accumulator %%%s read outside its store", x.Acc.Name)
		}
		return *l.accCur
	case *ir.Cast:
		return l.valAs(x.X, x.T)
	case *ir.Unary:
		return l.unary(x)
	case *ir.Binary:
		return l.binary(x)
	case *ir.Select:
		return l.sel(x)
	}
	l.fail("expression %s", ir.FormatExpr(e))
	return Reg{}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// fromIndex converts a .s64 index value to type t.
func (l *lowerer) fromIndex(r Reg, t ir.DType) Reg {
	ct := computeType(t)
	switch ct {
	case S32:
		return l.e.Cvt(S32, S64, "", r)
	case F32, F64:
		v := l.e.Cvt(ct, S64, ".rn", r)
		return l.conv(v, ct2d(ct), t)
	}
	l.fail("an index used as %s", t)
	return Reg{}
}

func ct2d(t Type) ir.DType {
	if t == F64 {
		return ir.F64
	}
	return ir.F32
}

// pred computes a Bool expression into a predicate.
func (l *lowerer) pred(e ir.Expr) Reg {
	if e.Type() != ir.Bool {
		l.fail("condition %s is not a bool", ir.FormatExpr(e))
	}
	return l.val(e)
}

// operands computes x and y in the common compute type of the operation.
func (l *lowerer) operands(x, y ir.Expr, t ir.DType) (Reg, Reg) {
	return l.valAs(x, t), l.valAs(y, t)
}

func (l *lowerer) binary(b *ir.Binary) Reg {
	if b.Op.IsCompare() {
		t := b.X.Type()
		if t == ir.Untyped {
			t = b.Y.Type()
		}
		x, y := l.operands(b.X, b.Y, t)
		ct := computeType(t)
		cmp := map[ir.Op]string{ir.Lt: "lt", ir.Le: "le", ir.Gt: "gt", ir.Ge: "ge", ir.Eq: "eq", ir.Ne: "ne"}[b.Op]
		if b.Op == ir.Ne && ct != S32 {
			cmp = "neu" // Go's != is true when either side is NaN
		}
		return l.e.Setp(cmp, ct, x, y)
	}
	x, y := l.operands(b.X, b.Y, b.T)
	ct := computeType(b.T)
	if ct == Pred {
		l.fail("arithmetic %s on bools", b.Op)
	}
	if ct == S32 {
		switch b.Op {
		case ir.Add, ir.Sub:
			return l.e.Bin(map[ir.Op]string{ir.Add: "add", ir.Sub: "sub"}[b.Op], S32, x, y)
		case ir.Mul:
			return l.e.Bin("mul.lo", S32, x, y)
		case ir.Min, ir.Max:
			return l.e.Bin(map[ir.Op]string{ir.Min: "min", ir.Max: "max"}[b.Op], S32, x, y)
		case ir.Div:
			// The IR's integer division by zero is 0.
			q := l.e.Bin("div", S32, x, y)
			z := l.e.Setp("eq", S32, y, Imm(0))
			d := l.e.Reg(S32)
			l.e.Emit(&Instr{Op: "selp", Types: []Type{S32}, Args: []Operand{d, Imm(0), q, z}})
			return d
		}
		l.fail("integer operator %s", b.Op)
	}
	switch b.Op {
	case ir.Add:
		return l.e.Bin("add.rn", ct, x, y)
	case ir.Sub:
		return l.e.Bin("sub.rn", ct, x, y)
	case ir.Mul:
		return l.e.Bin("mul.rn", ct, x, y)
	case ir.Div:
		return l.e.Bin("div.rn", ct, x, y)
	case ir.Min, ir.Max:
		return l.minmax(b.Op == ir.Max, ct, x, y)
	}
	l.fail("operator %s", b.Op)
	return Reg{}
}

// minmax is min or max propagating NaN, as the IR defines it (min.NaN/max.NaN on f32; f64 has no
// such form, so a NaN operand is selected explicitly).
func (l *lowerer) minmax(isMax bool, ct Type, x, y Operand) Reg {
	op := "min"
	if isMax {
		op = "max"
	}
	if ct == F32 {
		return l.e.Bin(op+".NaN", F32, x, y)
	}
	m := l.e.Bin(op, ct, x, y)
	nan := l.e.Setp("nan", ct, x, y)
	d := l.e.Reg(ct)
	l.e.Emit(&Instr{Op: "selp", Types: []Type{ct}, Args: []Operand{d, FImm{V: math.NaN(), T: ct}, m, nan}})
	return d
}

func (l *lowerer) unary(u *ir.Unary) Reg {
	x := l.valAs(u.X, u.T)
	ct := computeType(u.T)
	if ct != F32 && ct != F64 {
		if u.Op == ir.Neg && ct == S32 {
			return l.e.Bin("sub", S32, Imm(0), x)
		}
		l.fail("%s of %s", u.Op, u.T)
	}
	switch u.Op {
	case ir.Neg:
		d := l.e.Reg(ct)
		l.e.Op("neg", ct, d, x)
		return d
	case ir.Abs:
		d := l.e.Reg(ct)
		l.e.Op("abs", ct, d, x)
		return d
	case ir.Sqrt:
		d := l.e.Reg(ct)
		l.e.Op("sqrt.rn", ct, d, x)
		return d
	case ir.Exp:
		return l.exp(x, ct)
	case ir.Tanh:
		return l.tanh(x, ct)
	case ir.Log:
		return l.log(x, ct)
	case ir.Relu:
		// max(x, 0), NaN stays NaN.
		return l.minmax(true, ct, x, FImm{V: 0, T: ct})
	case ir.Sigmoid:
		// 1 / (1 + exp(-x)), with the exp of math.go.
		n := l.e.Reg(ct)
		l.e.Op("neg", ct, n, x)
		ex := l.exp(n, ct)
		den := l.e.Bin("add.rn", ct, ex, FImm{V: 1, T: ct})
		return l.e.Bin("div.rn", ct, FImm{V: 1, T: ct}, den)
	}
	l.fail("the function %s (no accurate PTX expansion written yet)", u.Op)
	return Reg{}
}

// sel computes select(c, a, b) with a branch, so that only the chosen side is evaluated (a guarded
// load on the other side may be out of bounds).
func (l *lowerer) sel(s *ir.Select) Reg {
	t := s.Type()
	ct := computeType(t)
	p := l.pred(s.C)
	d := l.e.Reg(ct)
	els, end := l.e.NewLabel(), l.e.NewLabel()
	l.e.Bra(els, &p, true)
	l.e.Op("mov", ct, d, l.valAs(s.A, t))
	l.e.Bra(end, nil, false)
	l.e.Place(els)
	l.e.Op("mov", ct, d, l.valAs(s.B, t))
	l.e.Place(end)
	return d
}

// addr is the address of element Idx of t (flat offset for scratch buffers): base + offset·size, in
// the state space returned.
func (l *lowerer) addr(t *ir.Tensor, idx []ir.IExpr) (Addr, Space) {
	return l.elemAddr(t, l.flatOffset(t, idx))
}

// elemAddr is the address of flat element off of t.
func (l *lowerer) elemAddr(t *ir.Tensor, off ir.IExpr) (Addr, Space) {
	size := int64(t.Type.Size())
	off = l.prep(off)
	for _, a := range l.anchors[t] {
		if d, ok := l.prep(ir.ISub(off, a.off)).(ir.IConst); ok {
			return Addr{Base: a.reg, Off: int64(d.V) * size}, a.sp
		}
	}
	base, sp := l.base(t)
	o := l.iemit(off)
	if c, ok := o.(Imm); ok {
		return Addr{Base: base, Off: int64(c) * size}, sp
	}
	scaled := l.e.Bin("mul.lo", S64, o, Imm(size))
	a := l.e.Bin("add", S64, base, scaled)
	return Addr{Base: a}, sp
}

// anchor is an address computed ahead of an unrolled region (unguarded: address arithmetic reads no
// memory), from which elements at a constant distance are addressed as [reg+offset].
type anchor struct {
	off ir.IExpr // flat element offset, prepped
	reg Reg
	sp  Space
}

// addAnchor computes the address of flat element off of t into a register usable as an anchor until
// clearAnchors; it does nothing when an anchor at a constant distance exists.
func (l *lowerer) addAnchor(t *ir.Tensor, off ir.IExpr) {
	off = l.prep(off)
	for _, a := range l.anchors[t] {
		if _, ok := l.prep(ir.ISub(off, a.off)).(ir.IConst); ok {
			return
		}
	}
	a, sp := l.elemAddr(t, off)
	l.anchors[t] = append(l.anchors[t], anchor{off: off, reg: l.addrReg(a), sp: sp})
}

func (l *lowerer) clearAnchors() { l.anchors = map[*ir.Tensor][]anchor{} }

// flatOffset is the flat element offset of t[idx] (scratch buffers: the one index).
func (l *lowerer) flatOffset(t *ir.Tensor, idx []ir.IExpr) ir.IExpr {
	if t.Kind == ir.Scratch {
		if len(idx) != 1 {
			l.fail("scratch buffer %s indexed by %d indices", t.Name, len(idx))
		}
		return idx[0]
	}
	if len(idx) != len(t.Shape) {
		l.fail("%s indexed by %d indices, rank %d", t.Name, len(idx), len(t.Shape))
	}
	var off ir.IExpr = ir.IConst{V: 0}
	for d, ix := range idx {
		off = ir.IAdd(ir.IMul(off, ir.IDim{D: t.Shape[d]}), ix)
	}
	return off
}

// base is the base address register of a tensor and its state space.
func (l *lowerer) base(t *ir.Tensor) (Reg, Space) {
	if s, ok := l.shared[t]; ok {
		if off := l.sharedOff[t]; off != 0 {
			return l.e.Bin("add", S64, l.e.Mov(U64, s), Imm(off)), Shared
		}
		return l.e.Mov(U64, s), Shared
	}
	if t.Space == ir.Shared {
		l.fail("shared buffer %s used outside its allocation", t.Name)
	}
	r, ok := l.ptrs[t]
	if !ok {
		l.fail("tensor %s (%s, %s) is not a parameter or temporary of the kernel", t.Name, t.Kind, t.Space)
	}
	return r, Global
}

// load reads a tensor element (or a scalar parameter) as its compute type.
func (l *lowerer) load(x *ir.Load) Reg {
	if x.T.Kind == ir.Scalar {
		r, ok := l.scalars[x.T]
		if !ok {
			l.fail("scalar %s is not a parameter", x.T.Name)
		}
		return r
	}
	l.checkType(x.T.Type)
	a, sp := l.addr(x.T, x.Idx)
	return l.widen(l.e.Ld(sp, storageType(x.T.Type), a), x.T.Type)
}

// store writes v, rounded to t's type, to t[idx].
func (l *lowerer) store(t *ir.Tensor, idx []ir.IExpr, v ir.Expr) {
	if t.Kind == ir.Scalar || t.Kind == ir.In {
		l.fail("store into %s %s", t.Kind, t.Name)
	}
	l.checkType(t.Type)
	vt := v.Type()
	if vt == ir.Untyped {
		vt = t.Type
	}
	r := l.narrow(l.valAs(v, vt), vt, t.Type)
	a, sp := l.addr(t, idx)
	l.e.St(sp, storageType(t.Type), a, r)
}
