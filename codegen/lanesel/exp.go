package lanesel

import "github.com/kgen-dev/kgen/ir"

// This file holds the math expansions of the lane instruction selection: each is a schedule of ISA
// steps over constants defined here, so every backend computes the same polynomial in the same order.
// Further functions (tanh, log, ...) go here the same way: a constant table, a schedule, and the steps
// they need added to an ISA interface.

// ExpF32 are the constants of the f32 exp, by index (ExpHi ... ExpBias): clamp bounds, log2(e), ln2
// split in two, the Cephes expf polynomial, 1 and the exponent bias. An ISA keeps them in registers or
// in a read-only table, one vector per constant.
var ExpF32 = []uint32{
	0x42b20000, // 89: exp overflows to +Inf above 88.72
	0xc2d00000, // -104: exp rounds to 0 below -103.97
	0x3fb8aa3b, // log2(e)
	0x3f318000, // ln2 hi = 0.693359375
	0xb95e8083, // ln2 lo = -2.12194440e-4
	0x39506967, // 1.9875691500e-4
	0x3ab743ce, // 1.3981999507e-3
	0x3c088908, // 8.3334519073e-3
	0x3d2aa9c1, // 4.1665795894e-2
	0x3e2aaaaa, // 1.6666665459e-1
	0x3f000000, // 5.0000001201e-1 (rounds to 0.5)
	0x3f800000, // 1
	127,        // exponent bias (int32)
}

// Indices into ExpF32.
const (
	ExpHi    = iota // upper clamp
	ExpLo           // lower clamp
	ExpLog2E        // log2(e)
	ExpLn2Hi        // ln2, high part (exact product with n)
	ExpLn2Lo        // ln2, low part
	ExpP0           // first polynomial coefficient; ExpP0+1 .. ExpP0+5 follow
	ExpOne   = ExpP0 + 6
	ExpBias  = ExpOne + 1
)

// ExpISA are the steps of the f32 exp schedule. c is an index into ExpF32; every fused step rounds
// once.
type ExpISA[R any] interface {
	// ClampExp emits x = max(min(x, c[ExpHi]), c[ExpLo]), keeping NaN lanes; it may use t as scratch.
	ClampExp(x, t R)
	// MulConst emits d = x·c.
	MulConst(d, x R, c int)
	// RoundEven rounds the lanes of x to integers, ties to even.
	RoundEven(x R)
	// SubMulConst emits x = x - n·c, fused.
	SubMulConst(x, n R, c int)
	// SetConst emits d = c.
	SetConst(d R, c int)
	// MulAddConst emits t·x + c, fused, into t or into the scratch u; it returns the registers then
	// holding the value and the scratch.
	MulAddConst(t, u, x R, c int) (R, R)
	// Mul emits t = t·x.
	Mul(t, x R)
	// MulAddX emits t·x + x, fused, into t or x, and returns which.
	MulAddX(t, x R) R
	// AddConst emits d = d + c.
	AddConst(d R, c int)
	// Scale2N emits d = t·2^n for the integral lanes n, scaling in two steps where the ISA has no
	// single instruction (2^(n/2)·2^(n-n/2), so that results down to the subnormals are right); u is
	// scratch.
	Scale2N(d, t, n, u R)
}

// exp replaces the f32 lanes of x by exp(x): n = round(x·log2e); r = x - n·ln2 (ln2 split in two, so
// the first product is exact); exp(r) by the Cephes expf polynomial p, as 1 + r + r²·p(r); times 2^n.
// NaN stays NaN (the clamps keep it), -Inf gives 0, +Inf gives +Inf. Error against
// float32(math.Exp(float64(x))): at most 1 ulp on [-87, 88] (TestVLoopExpULP of both backends).
func (d *Driver[R, O]) exp(x R) {
	e := d.ISA
	n, t, u := d.Alloc(), d.Alloc(), d.Alloc()
	e.ClampExp(x, t)
	e.MulConst(n, x, ExpLog2E)
	e.RoundEven(n)
	e.SubMulConst(x, n, ExpLn2Hi)
	e.SubMulConst(x, n, ExpLn2Lo)
	p, s := t, u
	e.SetConst(p, ExpP0)
	for c := ExpP0 + 1; c <= ExpP0+5; c++ {
		p, s = e.MulAddConst(p, s, x, c)
	}
	e.Mul(p, x)
	r := e.MulAddX(p, x)
	e.AddConst(r, ExpOne)
	e.Scale2N(x, r, n, s)
	d.Release(n)
	d.Release(t)
	d.Release(u)
}

// sigmoid replaces the f32 lanes of x by 1/(1 + exp(-x)) and returns the register holding the result
// (x is then released): exp's schedule, then one addition and one division, so the error is exp's
// (1 ulp) plus two roundings. NaN stays NaN; -Inf and x below -88.7 (exp(-x) overflows) give 0 where
// the exact value is a subnormal, +Inf gives 1.
func (d *Driver[R, O]) sigmoid(x R) R {
	e := d.ISA
	e.Unary(ir.Neg, x, x)
	d.exp(x)
	e.AddConst(x, ExpOne)
	one := d.Alloc()
	e.SetConst(one, ExpOne)
	e.BinOp(ir.Div, e.Src(x), one, one)
	d.Release(x)
	return one
}
