package ir

import (
	"math"

	"github.com/kgen-dev/kgen/f16"
)

// DType is an element type. f16 and bf16 are storage types: arithmetic on them happens in f32, and a
// value is rounded to 16 bits only when it is stored or explicitly cast.
type DType uint8

const (
	Invalid DType = iota
	F64
	F32
	F16
	BF16
	I32
	I8
	Bool
	// Untyped is the type of a literal (or a dim used as a value) before context gives it one.
	Untyped
)

var dtypeNames = [...]string{"invalid", "f64", "f32", "f16", "bf16", "i32", "i8", "bool", "untyped"}

func (d DType) String() string { return dtypeNames[d] }

// ParseDType maps a kdsl type name to a DType (Invalid if unknown).
func ParseDType(s string) DType {
	for i, n := range dtypeNames[:Bool] {
		if n == s && i != 0 {
			return DType(i)
		}
	}
	return Invalid
}

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return d == F64 || d == F32 || d == F16 || d == BF16 }

// IsInt reports whether d is an integer type.
func (d DType) IsInt() bool { return d == I32 || d == I8 }

// Size is the storage size in bytes.
func (d DType) Size() int {
	switch d {
	case F64:
		return 8
	case F32, I32:
		return 4
	case F16, BF16:
		return 2
	case I8, Bool:
		return 1
	}
	return 0
}

// Compute is the type arithmetic on d happens in: f16 and bf16 compute in f32.
func (d DType) Compute() DType {
	if d == F16 || d == BF16 {
		return F32
	}
	return d
}

// Unit is the unit roundoff u of d (0 for exact types).
func (d DType) Unit() float64 {
	switch d {
	case F64:
		return 0x1p-53
	case F32:
		return 0x1p-24
	case F16:
		return 0x1p-11
	case BF16:
		return 0x1p-8
	}
	return 0
}

// TF32Unit is the unit roundoff of tf32 (NVIDIA's 19-bit format: f32's sign and 8-bit exponent, a 10-bit
// mantissa), which a tf32 MMA (`precision tf32`) rounds its f32 inputs to.
const TF32Unit = 0x1p-11

// RoundTF32Value rounds the f32 value x to tf32 as PTX's cvt.rna.tf32.f32 does: to nearest, ties away
// from zero, the 13 low mantissa bits cleared. NaN and ±Inf stay as they are; a value beyond tf32's largest
// finite one rounds to ±Inf, as IEEE rounding does.
func RoundTF32Value(x float64) float64 {
	b := math.Float32bits(float32(x))
	if b&0x7f800000 == 0x7f800000 { // Inf or NaN
		return float64(math.Float32frombits(b))
	}
	// adding half of the dropped unit to the magnitude bits and truncating rounds ties away from zero;
	// a carry out of the mantissa steps the exponent, to Inf past the largest finite value
	b = (b + 0x1000) &^ 0x1fff
	return float64(math.Float32frombits(b))
}

// rank orders float types by width for implicit widening.
func (d DType) rank() int {
	switch d {
	case F64:
		return 4
	case F32:
		return 3
	case F16, BF16:
		return 2
	}
	return 0
}

// Widens reports whether a value of type from converts to type to without loss (so implicitly).
func Widens(from, to DType) bool {
	if from == to || from == Untyped {
		return true
	}
	if from.IsFloat() && to.IsFloat() {
		if from == F16 || from == BF16 {
			return to == F32 || to == F64
		}
		return from.rank() < to.rank()
	}
	return from == I8 && to == I32
}

// Round rounds v to the values representable in d (integers wrap as in Go). It is the interpreter's
// model of storing a value.
func (d DType) Round(v float64) float64 {
	switch d {
	case F32:
		return float64(float32(v))
	case F16:
		return float64(f16.FromFloat64(v).Float32())
	case BF16:
		return float64(f16.BF16FromFloat64(v).Float32())
	case I32:
		return float64(int32(toInt(v)))
	case I8:
		return float64(int8(toInt(v)))
	case Bool:
		if v != 0 {
			return 1
		}
		return 0
	}
	return v
}

// toInt converts like a Go conversion from float to int64, with NaN and out-of-range values going to 0.
func toInt(v float64) int64 {
	if v != v || math.IsInf(v, 0) || math.Abs(v) > 1<<62 {
		return 0
	}
	return int64(v)
}
