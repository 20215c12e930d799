// Package f16 provides the 16-bit floating-point storage types of kdsl: IEEE binary16 (F16) and bfloat16
// (BF16). Generated kernels store f16/bf16 tensors as slices of these types and compute in float32,
// converting once when a value enters a register and once when a result is stored.
package f16

import "math"

// F16 is an IEEE 754 binary16 value, stored as its bit pattern.
type F16 uint16

// BF16 is a bfloat16 value (the top half of a float32), stored as its bit pattern.
type BF16 uint16

// Float32 widens h exactly.
func (h F16) Float32() float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN
		if man != 0 {
			return math.Float32frombits(sign | 0x7fc00000 | man<<13)
		}
		return math.Float32frombits(sign | 0x7f800000)
	case exp == 0:
		if man == 0 {
			return math.Float32frombits(sign)
		}
		// subnormal: man * 2^-24
		v := float32(man) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
}

// FromFloat32 rounds f to the nearest binary16 value, ties to even; overflow gives ±Inf and NaN stays NaN.
func FromFloat32(f float32) F16 { return FromFloat64(float64(f)) }

// FromFloat64 rounds f to the nearest binary16 value, ties to even (a single rounding from f64).
func FromFloat64(f float64) F16 {
	bits := math.Float64bits(f)
	sign := uint16(bits>>48) & 0x8000
	a := math.Abs(f)
	switch {
	case f != f:
		return F16(sign | 0x7e00)
	case a >= 65520: // rounds to Inf
		return F16(sign | 0x7c00)
	case a < 0x1p-25: // rounds to zero (exactly half of the smallest subnormal rounds to even = 0)
		return F16(sign)
	}
	e := math.Ilogb(a)
	if e < -14 { // subnormal: quantum 2^-24
		q := math.RoundToEven(a * (1 << 24))
		return F16(sign | uint16(q)) // q may reach 1024, which is the smallest normal's encoding
	}
	// normal: 10 fraction bits
	m := math.RoundToEven(math.Ldexp(a, 10-e)) // in [1024, 2048]
	if m == 2048 {
		m = 1024
		e++
	}
	if e > 15 {
		return F16(sign | 0x7c00)
	}
	return F16(sign | uint16(e+15)<<10 | uint16(m-1024))
}

// Float32 widens b exactly.
func (b BF16) Float32() float32 { return math.Float32frombits(uint32(b) << 16) }

// BF16FromFloat32 rounds f to the nearest bfloat16, ties to even; NaN stays a quiet NaN.
func BF16FromFloat32(f float32) BF16 {
	b := math.Float32bits(f)
	if f != f {
		return BF16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return BF16(b >> 16)
}

// BF16FromFloat64 rounds f to the nearest bfloat16 with a single rounding.
func BF16FromFloat64(f float64) BF16 {
	if f != f {
		return BF16(math.Float32bits(float32(f))>>16) | 0x40
	}
	a := math.Abs(f)
	sign := uint16(0)
	if math.Signbit(f) {
		sign = 0x8000
	}
	if a == 0 || math.IsInf(f, 0) {
		return BF16(math.Float32bits(float32(f)) >> 16)
	}
	e := math.Ilogb(a)
	if e < -126 {
		e = -126 // subnormal range: fixed quantum 2^-133
	}
	m := math.RoundToEven(math.Ldexp(a, 7-e))
	v := math.Ldexp(m, e-7)
	if v > math.MaxFloat32 {
		return BF16(sign | 0x7f80)
	}
	return BF16(math.Float32bits(float32(v))>>16) | BF16(sign)
}

// Slices

// ToFloat32 widens src into dst (len(dst) must be >= len(src)).
func ToFloat32(dst []float32, src []F16) {
	for i, h := range src {
		dst[i] = h.Float32()
	}
}

// FromFloat32s rounds src into dst.
func FromFloat32s(dst []F16, src []float32) {
	for i, f := range src {
		dst[i] = FromFloat32(f)
	}
}
