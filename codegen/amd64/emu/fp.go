package emu

import "math"

// Floating point as the hardware does it with the default MXCSR (round to
// nearest even, no DAZ, no FTZ, exceptions masked). Operands are named by
// Intel's order: s1 is the first source (Go's second-to-last operand), s2
// the second (Go's first). Every product is converted explicitly before it
// is added so that the Go compiler cannot fuse it into an FMA.

const (
	qnan32 uint32 = 0xFFC00000         // the default NaN of an invalid operation
	qnan64 uint64 = 0xFFF8000000000000 // same, f64
)

func f32bits(x float32) uint32     { return math.Float32bits(x) }
func f32frombits(b uint32) float32 { return math.Float32frombits(b) }
func f64bits(x float64) uint64     { return math.Float64bits(x) }
func f64frombits(b uint64) float64 { return math.Float64frombits(b) }

func nan32(x uint32) bool     { return x&0x7FFFFFFF > 0x7F800000 }
func nan64(x uint64) bool     { return x&0x7FFFFFFFFFFFFFFF > 0x7FF0000000000000 }
func quiet32(x uint32) uint32 { return x | 0x00400000 }
func quiet64(x uint64) uint64 { return x | 0x0008000000000000 }

// nan2 returns the NaN result of a two-source operation (at least one source is NaN):
// the first source's NaN if it is one, else the second's, quieted.
func nan2_32(s1, s2 uint32) uint32 {
	if nan32(s1) {
		return quiet32(s1)
	}
	return quiet32(s2)
}

func nan2_64(s1, s2 uint64) uint64 {
	if nan64(s1) {
		return quiet64(s1)
	}
	return quiet64(s2)
}

// res32 maps a NaN produced from non-NaN operands (an invalid operation) to the default NaN.
func res32(r float32) uint32 {
	b := f32bits(r)
	if nan32(b) {
		return qnan32
	}
	return b
}

func res64(r float64) uint64 {
	b := f64bits(r)
	if nan64(b) {
		return qnan64
	}
	return b
}

func add32(s1, s2 uint32) uint32 {
	if nan32(s1) || nan32(s2) {
		return nan2_32(s1, s2)
	}
	return res32(f32frombits(s1) + f32frombits(s2))
}

func sub32(s1, s2 uint32) uint32 {
	if nan32(s1) || nan32(s2) {
		return nan2_32(s1, s2)
	}
	return res32(f32frombits(s1) - f32frombits(s2))
}

func mul32(s1, s2 uint32) uint32 {
	if nan32(s1) || nan32(s2) {
		return nan2_32(s1, s2)
	}
	return res32(f32frombits(s1) * f32frombits(s2))
}

func div32(s1, s2 uint32) uint32 {
	if nan32(s1) || nan32(s2) {
		return nan2_32(s1, s2)
	}
	return res32(f32frombits(s1) / f32frombits(s2))
}

func add64(s1, s2 uint64) uint64 {
	if nan64(s1) || nan64(s2) {
		return nan2_64(s1, s2)
	}
	return res64(f64frombits(s1) + f64frombits(s2))
}

func sub64(s1, s2 uint64) uint64 {
	if nan64(s1) || nan64(s2) {
		return nan2_64(s1, s2)
	}
	return res64(f64frombits(s1) - f64frombits(s2))
}

func mul64(s1, s2 uint64) uint64 {
	if nan64(s1) || nan64(s2) {
		return nan2_64(s1, s2)
	}
	return res64(f64frombits(s1) * f64frombits(s2))
}

func div64(s1, s2 uint64) uint64 {
	if nan64(s1) || nan64(s2) {
		return nan2_64(s1, s2)
	}
	return res64(f64frombits(s1) / f64frombits(s2))
}

// max and min: the second source if either is NaN (not quieted) or both are zero.
func max32(s1, s2 uint32) uint32 {
	if nan32(s1) || nan32(s2) {
		return s2
	}
	if f32frombits(s1) > f32frombits(s2) {
		return s1
	}
	return s2
}

func min32(s1, s2 uint32) uint32 {
	if nan32(s1) || nan32(s2) {
		return s2
	}
	if f32frombits(s1) < f32frombits(s2) {
		return s1
	}
	return s2
}

func max64(s1, s2 uint64) uint64 {
	if nan64(s1) || nan64(s2) {
		return s2
	}
	if f64frombits(s1) > f64frombits(s2) {
		return s1
	}
	return s2
}

func min64(s1, s2 uint64) uint64 {
	if nan64(s1) || nan64(s2) {
		return s2
	}
	if f64frombits(s1) < f64frombits(s2) {
		return s1
	}
	return s2
}

// fma32 returns a*b+c rounded once, with the NaN of the first NaN operand in
// instruction operand order o1, o2, o3 (a, b, c are given separately as the
// mathematical roles depend on the 132/213/231 form). negProd negates a*b.
func fmaNaN32(o1, o2, o3 uint32) uint32 {
	switch {
	case nan32(o1):
		return quiet32(o1)
	case nan32(o2):
		return quiet32(o2)
	}
	return quiet32(o3)
}

func fmaNaN64(o1, o2, o3 uint64) uint64 {
	switch {
	case nan64(o1):
		return quiet64(o1)
	case nan64(o2):
		return quiet64(o2)
	}
	return quiet64(o3)
}

// exactFMA32 computes a*b+c for non-NaN float32 operands with one rounding.
// The product of two float32 is exact in float64; the sum s = fl64(p+c) has
// the exact error e (TwoSum). float32(s) differs from the correctly rounded
// result only when s lies exactly halfway between two float32 and e != 0:
// then the sign of e decides.
func exactFMA32(a, b, c float32) uint32 {
	p := float64(a) * float64(b)
	cc := float64(c)
	s := p + cc
	if math.IsInf(p, 0) || math.IsInf(cc, 0) || math.IsNaN(s) {
		return res32(float32(s))
	}
	bb := s - p
	e := (p - (s - bb)) + (cc - bb)
	r := float32(s)
	if e == 0 {
		return f32bits(r)
	}
	sb := f64bits(s)
	if as := math.Abs(s); as >= 0x1p-126 && as < 0x1p127 && sb&0x1FFFFFFF != 0x10000000 {
		return f32bits(r) // not a float32 midpoint (normal range)
	}
	rf := float64(r)
	if math.IsInf(rf, 0) {
		rf = math.Copysign(0x1p128, rf)
	}
	if rf == s {
		return f32bits(r)
	}
	var other float64
	if rf < s {
		other = float64(math.Nextafter32(r, float32(math.Inf(1))))
	} else {
		other = float64(math.Nextafter32(r, float32(math.Inf(-1))))
	}
	if math.IsInf(other, 0) {
		other = math.Copysign(0x1p128, other)
	}
	mid := rf + (other-rf)/2
	if mid != s {
		return f32bits(r)
	}
	// s is a midpoint: the exact value lies on the side of e.
	lo, hi := rf, other
	if lo > hi {
		lo, hi = hi, lo
	}
	pick := lo
	if e > 0 {
		pick = hi
	}
	if math.Abs(pick) >= 0x1p128 {
		return f32bits(float32(math.Copysign(math.Inf(1), pick)))
	}
	return f32bits(float32(pick))
}

// fmaLane32 is one lane of an FMA: sign*(a*b) + c (c negated when negC), rounded once;
// o1..o3 are the instruction's operands in Intel order for NaN selection.
func fmaLane32(o1, o2, o3 uint32, a, b, c uint32, negProd, negC bool) uint32 {
	if nan32(o1) || nan32(o2) || nan32(o3) {
		return fmaNaN32(o1, o2, o3)
	}
	if negProd {
		a ^= 0x80000000
	}
	if negC {
		c ^= 0x80000000
	}
	return exactFMA32(f32frombits(a), f32frombits(b), f32frombits(c))
}

func fmaLane64(o1, o2, o3 uint64, a, b, c uint64, negProd, negC bool) uint64 {
	if nan64(o1) || nan64(o2) || nan64(o3) {
		return fmaNaN64(o1, o2, o3)
	}
	if negProd {
		a ^= 1 << 63
	}
	if negC {
		c ^= 1 << 63
	}
	return res64(math.FMA(f64frombits(a), f64frombits(b), f64frombits(c)))
}

// cmpPred evaluates VCMPPS/PD predicate imm&15 on s1, s2 (bit 4 only changes signaling).
func cmpPred(imm int, s1, s2 float64, unord bool) bool {
	switch imm & 15 {
	case 0:
		return !unord && s1 == s2
	case 1:
		return !unord && s1 < s2
	case 2:
		return !unord && s1 <= s2
	case 3:
		return unord
	case 4:
		return unord || s1 != s2
	case 5:
		return unord || !(s1 < s2)
	case 6:
		return unord || !(s1 <= s2)
	case 7:
		return !unord
	case 8:
		return unord || s1 == s2
	case 9:
		return unord || s1 < s2
	case 10:
		return unord || s1 <= s2
	case 11:
		return false
	case 12:
		return !unord && s1 != s2
	case 13:
		return !unord && s1 >= s2
	case 14:
		return !unord && s1 > s2
	}
	return true
}

// roundMode returns the rounding mode of a ROUND/CVTPS2PH immediate:
// 0 nearest even, 1 down, 2 up, 3 toward zero (bit 2 selects MXCSR.RC = nearest).
func roundMode(imm int64) int {
	if imm&4 != 0 {
		return 0
	}
	return int(imm & 3)
}

func roundInt(x float64, mode int) float64 {
	switch mode {
	case 0:
		return math.RoundToEven(x)
	case 1:
		return math.Floor(x)
	case 2:
		return math.Ceil(x)
	}
	return math.Trunc(x)
}

func round32(x uint32, mode int) uint32 {
	if nan32(x) {
		return quiet32(x)
	}
	return f32bits(float32(roundInt(float64(f32frombits(x)), mode)))
}

// cvtps2dq converts with rounding mode; NaN and out-of-range give 0x80000000.
func cvtps2dq(x uint32, mode int) uint32 {
	if nan32(x) {
		return 0x80000000
	}
	r := roundInt(float64(f32frombits(x)), mode)
	if r >= 0x1p31 || r < -0x1p31 {
		return 0x80000000
	}
	return uint32(int32(r))
}

// h2f converts an IEEE half to float32 exactly (SNaN quieted, payload kept).
func h2f(h uint16) uint32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1F
	man := uint32(h) & 0x3FF
	switch {
	case exp == 0x1F:
		if man == 0 {
			return sign | 0x7F800000
		}
		return sign | 0x7FC00000 | man<<13
	case exp == 0:
		if man == 0 {
			return sign
		}
		// subnormal: man * 2^-24
		return sign | f32bits(float32(man)*0x1p-24)
	}
	return sign | (exp+112)<<23 | man<<13
}

// f2h converts float32 to half with rounding mode (0 RNE, 1 down, 2 up, 3 zero).
func f2h(x uint32, mode int) uint16 {
	sign := uint16(x>>16) & 0x8000
	if nan32(x) {
		return sign | 0x7E00 | uint16(x>>13)&0x3FF
	}
	ax := x & 0x7FFFFFFF
	if ax == 0x7F800000 {
		return sign | 0x7C00
	}
	neg := sign != 0
	v := float64(f32frombits(ax)) // exact magnitude
	// Scale so that the half's last place is 1: for normal halves ulp = 2^(e-10), subnormals 2^-24.
	e := math.Ilogb(v)
	if v == 0 {
		return sign
	}
	if e < -14 {
		e = -14
	}
	ulp := math.Ldexp(1, e-10)
	q := v / ulp // exact (power of two scaling)
	var n float64
	switch mode {
	case 0:
		n = math.RoundToEven(q)
	case 3:
		n = math.Trunc(q)
	case 1: // toward -inf: magnitude up if negative
		if neg {
			n = math.Ceil(q)
		} else {
			n = math.Floor(q)
		}
	case 2:
		if neg {
			n = math.Floor(q)
		} else {
			n = math.Ceil(q)
		}
	}
	r := n * ulp
	if r >= 65536 { // overflow: infinity, or the largest finite value when rounding toward zero
		if mode == 0 || (mode == 1 && neg) || (mode == 2 && !neg) {
			return sign | 0x7C00
		}
		return sign | 0x7BFF
	}
	if r == 0 {
		return sign
	}
	re := math.Ilogb(r)
	if re < -14 { // subnormal
		return sign | uint16(r*0x1p24)
	}
	man := uint16((r/math.Ldexp(1, re) - 1) * 1024)
	return sign | uint16(re+15)<<10 | man
}
