package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kgen-dev/kgen/f16"
)

// hadd and haxpy compute on f16 storage: through f32 (go, avx2, avx512, and neon without FEAT_FP16:
// FCVTL/FCVTN) or, on arm64 with FEAT_FP16, on .8H vectors directly (fp16Route reports which the
// current variant installed). hadd is bit-identical either way; haxpy's FP16 route rounds a*x+y once,
// the f32 route twice (docs/LANGUAGE.md).

// f16Specials are halves that probe the arithmetic: zeros, the smallest and largest subnormals and
// normals, neighbours of 1, the largest finite value, infinities, and NaNs (quiet and signalling, with
// payloads, both signs).
var f16Specials = []f16.F16{
	0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x83ff, 0x0400, 0x8400, 0x3c00, 0xbc00, 0x3bff, 0x3c01, 0xbc01,
	0x3555, 0x7bff, 0xfbff, 0x7bfe, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7d01, 0xfd01, 0x7fff, 0x7c01, 0x4000,
}

func isNaN16(h f16.F16) bool { return h&0x7c00 == 0x7c00 && h&0x3ff != 0 }

// ord maps halves to consecutive integers in numeric order (±0 both to 0, ±Inf next to ±65504).
func ord(h f16.F16) int {
	if h&0x8000 != 0 {
		return -int(h & 0x7fff)
	}
	return int(h)
}

// nanOK reports whether got is an acceptable result where the f32-route reference want is NaN:
// f16.FromFloat32's NaN sign|0x7e00, with want's sign unless several operands were NaN (which NaN an
// operation propagates then is not specified).
func nanOK(got, want f16.F16, nans int) bool {
	if got&0x7fff != 0x7e00 {
		return false
	}
	return nans > 1 || got == want
}

// TestHaddExact checks z = f16(x + y) bit for bit against the widen-add-round of package f16: every
// half against the specials, the specials against each other, and random pairs, at lengths and offsets
// that leave ragged ends for every part of the loops (.8H pairs, the .4H group, the Go remainder).
func TestHaddExact(t *testing.T) {
	var x, y []f16.F16
	for _, b := range f16Specials {
		for h := range 1 << 16 {
			x, y = append(x, f16.F16(h)), append(y, b)
		}
		for _, a := range f16Specials {
			x, y = append(x, a), append(y, b)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 1 << 16 {
		x, y = append(x, f16.F16(rng.IntN(1<<16))), append(y, f16.F16(rng.IntN(1<<16)))
	}
	x, y = append(x, 0x3c00, 0x4000, 0x4200), append(y, 0x3c00, 0x3c00, 0x3c00)
	check := func(v string, x, y []f16.F16) {
		z := make([]f16.F16, len(x)+1)
		z[len(x)] = 0x1234
		if err := Hadd(len(x), x, y, z[:len(x)]); err != nil {
			t.Fatal(err)
		}
		if z[len(x)] != 0x1234 {
			t.Fatalf("%s: n=%d: wrote past the end", v, len(x))
		}
		bad := 0
		for i := range x {
			want := f16.FromFloat32(x[i].Float32() + y[i].Float32())
			ok := z[i] == want
			if isNaN16(want) {
				nans := 0
				for _, h := range []f16.F16{x[i], y[i]} {
					if isNaN16(h) {
						nans++
					}
				}
				ok = nanOK(z[i], want, nans)
			}
			if !ok {
				if bad++; bad <= 10 {
					t.Errorf("%s (fp16 route %v): %#04x + %#04x = %#04x, want %#04x", v, fp16Route(), x[i], y[i], z[i], want)
				}
			}
		}
	}
	forVariants(t, func(v string) {
		t.Logf("%s: fp16 route %v", v, fp16Route())
		check(v, x, y)
		for off := range 9 {
			for n := 0; n <= 40; n++ {
				check(v, x[0x3c00+off:][:n], y[0x3c00+off:][:n])
			}
		}
	})
}

// fmaF16 is a*x+y rounded once to f16 (nearest even): a*x is exact in f64 (22 bits); TwoSum gives the
// exact sum as hi+lo, which is rounded to odd in 53 bits (hi with its last bit set when lo ≠ 0 and hi
// is even), and a value rounded to odd with 53 ≥ 11+2 bits rounds to the same f16 as the exact one.
func fmaF16(a, x, y f16.F16) f16.F16 {
	p := float64(a.Float32()) * float64(x.Float32())
	q := float64(y.Float32())
	hi := p + q
	bb := hi - p
	lo := (p - (hi - bb)) + (q - bb)
	if lo == lo && lo != 0 && math.Float64bits(hi)&1 == 0 {
		hi = math.Nextafter(hi, hi+lo)
	}
	return f16.FromFloat64(hi)
}

// TestHaxpyBound checks y = f16(a*x + y) for several a against every x (with random and special y).
// The f32 route computes want = f16.FromFloat32(a*x + y) (a*x is exact in f32, the sum rounded to f32
// and then to f16) and must match it bit for bit. The FP16 route (one FMLA .8H) rounds a*x+y once and
// must match fmaF16 bit for bit; since rounding to f32 moves the sum by at most half an f32 ulp, the
// double rounding can only cross one f16 rounding boundary, so both are within one step of each other in
// f16 order (ord; 65504 and Inf are neighbours: a sum just under 65520 is 65504 rounded once but rounds
// to 65520 in f32, which is Inf in f16). The test also checks that bound, and that the inputs contain
// cases where the two routes differ, so that the FP16 route is seen to be taken.
func TestHaxpyBound(t *testing.T) {
	as := []f16.F16{0x3c00, 0xbc00, 0x3c01, 0x3555, 0x4200, 0x2e66, 0x0001, 0x7bff, 0x0000, 0x7c00, 0x7e00}
	rng := rand.New(rand.NewPCG(8, 9))
	var x, y0 []f16.F16
	for h := range 1 << 16 {
		x = append(x, f16.F16(h))
		if h%16 == 0 {
			y0 = append(y0, f16Specials[rng.IntN(len(f16Specials))])
		} else {
			y0 = append(y0, f16.F16(rng.IntN(1<<16)))
		}
	}
	x, y0 = append(x, 0x3c00, 0x7bff, 0x7bff), append(y0, 0x1400, 0x7bff, 0x5000) // 65504+65504, 65504·65504
	forVariants(t, func(v string) {
		fp16 := fp16Route()
		t.Logf("%s: fp16 route %v", v, fp16)
		differ := 0
		for _, a := range as {
			y := append([]f16.F16(nil), y0...)
			if err := Haxpy(len(x), a, x, y); err != nil {
				t.Fatal(err)
			}
			bad := 0
			for i := range x {
				p := a.Float32() * x[i].Float32() // exact
				want := f16.FromFloat32(p + y0[i].Float32())
				once := fmaF16(a, x[i], y0[i])
				exp, got := want, y[i]
				if fp16 {
					exp = once
				}
				var ok bool
				if isNaN16(want) {
					nans := 0
					for _, h := range []f16.F16{a, x[i], y0[i]} {
						if isNaN16(h) {
							nans++
						}
					}
					ok = nanOK(got, want, nans)
				} else {
					ok = got == exp && abs(ord(got)-ord(want)) <= 1
					if once != want {
						differ++
					}
				}
				if !ok {
					if bad++; bad <= 10 {
						t.Errorf("%s (fp16 route %v): %#04x*%#04x+%#04x = %#04x, want %#04x (f32 route %#04x, rounded once %#04x)",
							v, fp16, a, x[i], y0[i], got, exp, want, once)
					}
				}
			}
		}
		if differ == 0 {
			t.Errorf("no input where rounding once differs from rounding through f32")
		}
		t.Logf("%s: %d inputs where the two routes differ (by one f16 step)", v, differ)
	})
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}
