package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kgen-dev/kgen/f16"
)

// The f16 vector loops (codegen.VLoop with f16 storage: VCVTPH2PS/VCVTPS2PH on amd64, FCVTL/FCVTN on
// arm64) must give the f16 package's bits exactly, NaN included, under every variant.

// f16Inputs are f32 values that probe the narrowing: every f16 value, the midpoints between neighbours
// (ties to even) and their f32 neighbours, the overflow threshold, f32 subnormals, NaNs with payloads
// in every part of the mantissa and both signs, and random bit patterns.
func f16Inputs() []float32 {
	var in []float32
	for h := range 1 << 16 {
		in = append(in, f16.F16(h).Float32())
	}
	for h := range 0x7c00 { // positive finite halves and the one after
		a, b := float64(f16.F16(h).Float32()), float64(f16.F16(h+1).Float32())
		if h+1 == 0x7c00 {
			b = 65536 // the midpoint 65520 rounds to Inf
		}
		mid := float32((a + b) / 2)
		for _, v := range []float32{mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, float32(math.Inf(1)))} {
			in = append(in, v, -v)
		}
	}
	for _, bits := range []uint32{
		0x00000001, 0x00400000, 0x007fffff, 0x00800000, 0x33000000, 0x33000001, 0x32ffffff, 0x337fffff,
		0x387fc000, 0x387fe000, 0x38800000, 0x477fe000, 0x477fefff, 0x477ff000, 0x477fffff, 0x47800000,
		0x7f7fffff, 0x7f800000, 0x7f800001, 0x7fa00000, 0x7fbfffff, 0x7fc00000, 0x7fc00001, 0x7fc02000,
		0x7fd55555, 0x7fffffff, 0x7f802000, 0x7f801fff,
	} {
		in = append(in, math.Float32frombits(bits), math.Float32frombits(bits|0x80000000))
	}
	rng := rand.New(rand.NewPCG(7, 16))
	for range 1 << 16 {
		in = append(in, math.Float32frombits(rng.Uint32()))
	}
	return append(in, 1, 2, 3) // a ragged tail for the Go remainder
}

func forVariants(t *testing.T, f func(v string)) {
	t.Helper()
	defer Use("")
	for _, v := range Variants() {
		if err := Use(v); err != nil {
			t.Fatal(err)
		}
		f(v)
	}
}

func TestCvtF32F16Exact(t *testing.T) {
	in := f16Inputs()
	forVariants(t, func(v string) {
		out := make([]f16.F16, len(in))
		if err := CvtF32F16(len(in), in, out); err != nil {
			t.Fatal(err)
		}
		bad := 0
		for i, x := range in {
			if want := f16.FromFloat32(x); out[i] != want {
				if bad++; bad <= 10 {
					t.Errorf("%s: f16(%g = %#08x) = %#04x, want %#04x", v, x, math.Float32bits(x), out[i], want)
				}
			}
		}
	})
}

func TestCvtF16F32Exact(t *testing.T) {
	in := make([]f16.F16, 1<<16+3)
	for i := range in {
		in[i] = f16.F16(i)
	}
	forVariants(t, func(v string) {
		out := make([]float32, len(in))
		if err := CvtF16F32(len(in), in, out); err != nil {
			t.Fatal(err)
		}
		bad := 0
		for i, h := range in {
			if got, want := math.Float32bits(out[i]), math.Float32bits(h.Float32()); got != want {
				if bad++; bad <= 10 {
					t.Errorf("%s: f32(%#04x) = %#08x, want %#08x", v, uint16(h), got, want)
				}
			}
		}
	})
}

// TestCvtF16F32Pack checks the packing code's widening (cvtF16F32, through the variant's vector loop)
// on every half, at every length and offset around a vector.
func TestCvtF16F32Pack(t *testing.T) {
	src := make([]f16.F16, 1<<16)
	for i := range src {
		src[i] = f16.F16(i)
	}
	check := func(v string, s []f16.F16) {
		dst := make([]float32, len(s)+1)
		dst[len(s)] = 42
		cvtF16F32(dst, s)
		for i, h := range s {
			if got, want := math.Float32bits(dst[i]), math.Float32bits(h.Float32()); got != want {
				t.Fatalf("%s: len %d: dst[%d] = %#08x, want %#08x", v, len(s), i, got, want)
			}
		}
		if dst[len(s)] != 42 {
			t.Fatalf("%s: len %d: wrote past the end", v, len(s))
		}
	}
	forVariants(t, func(v string) {
		check(v, src)
		for off := range 9 {
			for n := 0; n <= 40; n++ {
				check(v, src[0x3c00+off:][:n])
			}
		}
	})
}

// TestHgemmNarrowingExact: with K = 1 every C element is one product of two halves, exact in f32, so C
// must be exactly f16.FromFloat32 of it (plus the sum's initial +0): ties, subnormal results, overflow to
// Inf, NaN (any NaN: which operand's NaN the product keeps is not specified).
func TestHgemmNarrowingExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const M, N = 67, 131
	A, B := make([]f16.F16, M), make([]f16.F16, N)
	for i := range A {
		A[i] = f16.F16(rng.IntN(1 << 16))
	}
	for j := range B {
		B[j] = f16.F16(rng.IntN(1 << 16))
	}
	A[0], B[0], B[1] = 0x7c00, 0x7e01, 0 // Inf, a NaN with payload, Inf·0
	forVariants(t, func(v string) {
		C := make([]f16.F16, M*N)
		if err := Hgemm(M, 1, N, A, B, C); err != nil {
			t.Fatal(err)
		}
		bad := 0
		for i := range M {
			for j := range N {
				p := A[i].Float32() * B[j].Float32()
				p += 0 // the sum starts at +0: a -0 product gives +0
				want := f16.FromFloat32(p)
				if got := C[i*N+j]; got != want && !(p != p && got&0x7fff > 0x7c00) {
					if bad++; bad <= 10 {
						t.Errorf("%s: C[%d,%d] = %#04x, want %#04x (%g)", v, i, j, got, want, p)
					}
				}
			}
		}
	})
}
