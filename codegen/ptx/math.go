package ptx

import (
	"math"
	"math/big"
)

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

// tanh(x). f32 computes in f64 and rounds once: |x| < 2^-12 gives x (the error x³/3 is below half an
// f32 ulp), otherwise 1 − 2/(exp(2|x|) + 1) with the f64 exp above, whose cancellation costs at most
// 2^12 f64 ulps, far below an f32 ulp: within 1 ulp of tanh(x). f64: below 1/4 the odd Taylor
// polynomial to x^25 (remainder below 2^-66 relative), else the same formula (cancellation ≤ 4×):
// within 8 ulp (TestTanhAccuracy). Sign by copysign (tanh(−0) = −0); NaN stays NaN; ±Inf gives ±1.
func (l *lowerer) tanh(x Reg, t Type) Reg {
	e := l.e
	xd := x
	if t == F32 {
		xd = e.Cvt(F64, F32, "", x)
	}
	imm := func(v float64) FImm { return FImm{V: v, T: F64} }
	ax := e.Reg(F64)
	e.Op("abs", F64, ax, xd)
	two := e.Bin("mul.rn", F64, ax, imm(2))
	ex := l.exp(two, F64)
	den := e.Bin("add.rn", F64, ex, imm(1))
	q := e.Bin("div.rn", F64, imm(2), den)
	big := e.Bin("sub.rn", F64, imm(1), q)
	small := ax
	cut := 0x1p-12
	if t == F64 {
		cut = 0.25
		// The odd Taylor polynomial of tanh to x^25, in x² by Horner, times x.
		x2 := e.Bin("mul.rn", F64, ax, ax)
		cs := tanhCoeffs(13)
		p := e.Mov(F64, imm(cs[len(cs)-1]))
		for i := len(cs) - 2; i >= 0; i-- {
			q := e.Reg(F64)
			e.Op("fma.rn", F64, q, p, x2, imm(cs[i]))
			p = q
		}
		small = e.Bin("mul.rn", F64, p, ax)
	}
	isSmall := e.Setp("lt", F64, ax, imm(cut))
	r := e.Reg(F64)
	e.Emit(&Instr{Op: "selp", Types: []Type{F64}, Args: []Operand{r, small, big, isSmall}})
	d := e.Reg(F64)
	e.Op("copysign", F64, d, xd, r)
	if t == F32 {
		return e.Cvt(F32, F64, ".rn", d)
	}
	return d
}

// tanhCoeffs returns the first n coefficients of tanh's Taylor series, c[i] of x^(2i+1):
// 2^(2k)·(2^(2k)−1)·B_(2k)/(2k)! with k = i+1, from exact Bernoulli numbers (Akiyama–Tanigawa).
func tanhCoeffs(n int) []float64 {
	m := 2 * n
	a := make([]*big.Rat, m+1)
	bern := make([]*big.Rat, m+1)
	for j := 0; j <= m; j++ {
		a[j] = big.NewRat(1, int64(j+1))
		for k := j; k >= 1; k-- {
			d := new(big.Rat).Sub(a[k-1], a[k])
			a[k-1] = d.Mul(d, big.NewRat(int64(k), 1))
		}
		bern[j] = new(big.Rat).Set(a[0]) // B_j (with B_1 = +1/2, unused)
	}
	out := make([]float64, n)
	fact := big.NewInt(1)
	for k := 1; k <= n; k++ {
		fact.Mul(fact, big.NewInt(int64(2*k-1)))
		fact.Mul(fact, big.NewInt(int64(2*k)))
		p := new(big.Int).Lsh(big.NewInt(1), uint(2*k))
		q := new(big.Int).Sub(p, big.NewInt(1))
		c := new(big.Rat).SetInt(new(big.Int).Mul(p, q))
		c.Mul(c, bern[2*k])
		c.Quo(c, new(big.Rat).SetInt(fact))
		out[k-1], _ = c.Float64()
	}
	return out
}

// log(x). f32 computes in f64 and rounds once (within 1 ulp); f64: x = m·2^e with m in [√½, √2)
// (subnormals scaled by 2^54 first), log m = 2·atanh(s) = s·(2 + 2s²/3 + 2s⁴/5 + … + 2s²²/23) with
// s = (m−1)/(m+1), |s| ≤ 0.1716 (series remainder below 2^-64 relative; m−1 is exact), plus e·ln2 in a
// two-part constant: within 4 ulp (TestLogAccuracy). log(0) = −Inf, log(x<0) = NaN, log(+Inf) = +Inf,
// NaN stays NaN.
func (l *lowerer) log(x Reg, t Type) Reg {
	e := l.e
	xd := x
	if t == F32 {
		xd = e.Cvt(F64, F32, "", x)
	}
	imm := func(v float64) FImm { return FImm{V: v, T: F64} }
	sub := e.Setp("lt", F64, xd, imm(0x1p-1022))
	scaled := e.Bin("mul.rn", F64, xd, imm(0x1p54))
	xs := e.Reg(F64)
	e.Emit(&Instr{Op: "selp", Types: []Type{F64}, Args: []Operand{xs, scaled, xd, sub}})
	adj := e.Reg(S64)
	e.Emit(&Instr{Op: "selp", Types: []Type{S64}, Args: []Operand{adj, Imm(-54), Imm(0), sub}})
	bits := e.Mov(B64, xs)
	ex := e.Bin("shr", S64, bits, Imm(52))
	ex = e.Bin("and", B64, ex, Imm(0x7ff))
	ex = e.Bin("sub", S64, ex, Imm(1023))
	ex = e.Bin("add", S64, ex, adj)
	mb := e.Bin("and", B64, bits, Imm(0x000fffffffffffff))
	mb = e.Bin("or", B64, mb, Imm(0x3ff0000000000000))
	m := e.Mov(F64, mb)
	big := e.Setp("gt", F64, m, imm(math.Sqrt2))
	half := e.Bin("mul.rn", F64, m, imm(0.5))
	mm := e.Reg(F64)
	e.Emit(&Instr{Op: "selp", Types: []Type{F64}, Args: []Operand{mm, half, m, big}})
	inc := e.Reg(S64)
	e.Emit(&Instr{Op: "selp", Types: []Type{S64}, Args: []Operand{inc, Imm(1), Imm(0), big}})
	ex = e.Bin("add", S64, ex, inc)
	num := e.Bin("sub.rn", F64, mm, imm(1))
	den := e.Bin("add.rn", F64, mm, imm(1))
	s := e.Bin("div.rn", F64, num, den)
	z := e.Bin("mul.rn", F64, s, s)
	p := e.Mov(F64, imm(2.0/23))
	for k := 10; k >= 0; k-- {
		q := e.Reg(F64)
		e.Op("fma.rn", F64, q, p, z, imm(2.0/float64(2*k+1)))
		p = q
	}
	lm := e.Bin("mul.rn", F64, s, p)
	ef := e.Cvt(F64, S64, ".rn", ex)
	lo := e.Reg(F64)
	e.Op("fma.rn", F64, lo, ef, imm(exp64.ln2lo), lm)
	r := e.Reg(F64)
	e.Op("fma.rn", F64, r, ef, imm(exp64.ln2hi), lo)
	// special arguments
	zero := e.Setp("eq", F64, xd, imm(0))
	e.Emit(&Instr{Op: "selp", Types: []Type{F64}, Args: []Operand{r, imm(math.Inf(-1)), r, zero}})
	inf := e.Setp("eq", F64, xd, imm(math.Inf(1)))
	e.Emit(&Instr{Op: "selp", Types: []Type{F64}, Args: []Operand{r, xd, r, inf}})
	bad := e.Setp("ltu", F64, xd, imm(0)) // negative or NaN
	e.Emit(&Instr{Op: "selp", Types: []Type{F64}, Args: []Operand{r, imm(math.NaN()), r, bad}})
	if t == F32 {
		return e.Cvt(F32, F64, ".rn", r)
	}
	return r
}
