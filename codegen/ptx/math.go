package ptx

import "math"

// exp(x), accurate rather than ex2.approx (whose argument scaling x·log2(e) alone costs up to 2^-17
// relative error near the overflow threshold):
//
//	n = rint(x·log2 e), r = x − n·ln2 (Cody–Waite: ln2 split into a short high part and a low part,
//	each step one fma), exp(r) by its Taylor polynomial (Horner, fma), times 2^n built from exponent
//	bits in two halves 2^(n>>1)·2^(n−n>>1), so that results near the overflow threshold and in the
//	subnormal range are scaled without an intermediate overflow and rounded once.
//
// x is first clamped to [lo, hi] (beyond them the result is 0 or +Inf anyway) and a NaN argument is
// returned unchanged. Error bound (f32): |r| ≤ ln2/2, the degree-7 remainder is below 0.15 ulp, the
// reduction and Horner roundings at most about 1.5 ulp: within 2 ulp of exp(x) over the whole range.
// f64: degree 13, the same structure, within 2 ulp. TestExpAccuracy runs the emitted instructions in
// the test emulator on 40000 arguments per type and checks the bound (the worst seen is 1 ulp).
type expConsts struct {
	t              Type
	lo, hi         float64
	log2e          float64
	ln2hi, ln2lo   float64
	degree         int
	bias, mantBits int64
}

var (
	exp32 = expConsts{t: F32, lo: -104, hi: 89, log2e: math.Log2E,
		ln2hi: float64(math.Float32frombits(0x3f317200)), ln2lo: float64(math.Float32frombits(0x35bfbe8e)),
		degree: 7, bias: 127, mantBits: 23}
	exp64 = expConsts{t: F64, lo: -746, hi: 710, log2e: math.Log2E,
		ln2hi: math.Float64frombits(0x3fe62e42fee00000), ln2lo: math.Float64frombits(0x3dea39ef35793c76),
		degree: 13, bias: 1023, mantBits: 52}
)

// exp emits exp(x) for an f32 or f64 register.
func (l *lowerer) exp(x Reg, t Type) Reg {
	k := exp32
	it, bt := S32, B32
	if t == F64 {
		k, it, bt = exp64, S64, B64
	}
	e := l.e
	imm := func(v float64) FImm { return FImm{V: v, T: t} }
	xc := e.Bin("max", t, x, imm(k.lo))
	xc = e.Bin("min", t, xc, imm(k.hi))
	xl := e.Bin("mul.rn", t, xc, imm(k.log2e))
	n := e.Reg(t)
	e.Op("cvt.rni", t, n, xl).Types = []Type{t, t}
	nn := e.Reg(t)
	e.Op("neg", t, nn, n)
	r := e.Reg(t)
	e.Op("fma.rn", t, r, nn, imm(k.ln2hi), xc)
	r2 := e.Reg(t)
	e.Op("fma.rn", t, r2, nn, imm(k.ln2lo), r)
	// Taylor coefficients 1/i!, highest first.
	p := e.Mov(t, imm(1/factorial(k.degree)))
	for i := k.degree - 1; i >= 0; i-- {
		q := e.Reg(t)
		e.Op("fma.rn", t, q, p, r2, imm(1/factorial(i)))
		p = q
	}
	ni := e.Cvt(it, t, ".rzi", n)
	n1 := e.Bin("shr", it, ni, Imm(1))
	n2 := e.Bin("sub", it, ni, n1)
	scale := func(m Reg) Reg {
		b := e.Bin("add", it, m, Imm(k.bias))
		s := e.Bin("shl", bt, b, Imm(k.mantBits))
		return e.Mov(t, s)
	}
	y := e.Bin("mul.rn", t, p, scale(n1))
	y = e.Bin("mul.rn", t, y, scale(n2))
	nan := e.Setp("nan", t, x, x)
	d := e.Reg(t)
	e.Emit(&Instr{Op: "selp", Types: []Type{t}, Args: []Operand{d, x, y, nan}})
	return d
}

func factorial(n int) float64 {
	f := 1.0
	for i := 2; i <= n; i++ {
		f *= float64(i)
	}
	return f
}
