package f16

import (
	"math"
	"testing"
)

// Every binary16 pattern widens and narrows back to itself (NaNs to a NaN).
func TestF16RoundTripAll(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := F16(i)
		f := h.Float32()
		back := FromFloat32(f)
		if f != f {
			if back.Float32() == back.Float32() {
				t.Fatalf("%#04x: NaN lost", i)
			}
			continue
		}
		if back != h {
			t.Fatalf("%#04x -> %v -> %#04x", i, f, back)
		}
	}
}

// Hand-checked values: 1, the largest finite 65504, the smallest subnormal 2^-24, ties to even.
func TestF16Known(t *testing.T) {
	cases := []struct {
		f    float64
		want F16
	}{
		{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65520, 0x7c00}, {0x1p-24, 0x0001},
		{0x1p-25, 0x0000}, {1 + 0x1p-11, 0x3c00} /* tie -> even */, {1 + 3*0x1p-11, 0x3c02},
		{math.Inf(-1), 0xfc00}, {0x1p-14, 0x0400},
	}
	for _, c := range cases {
		if got := FromFloat64(c.f); got != c.want {
			t.Errorf("FromFloat64(%v) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
}

func TestBF16(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		b := BF16(i)
		f := b.Float32()
		if f != f {
			continue
		}
		if BF16FromFloat32(f) != b || BF16FromFloat64(float64(f)) != b {
			t.Fatalf("%#04x round trip", i)
		}
	}
	if BF16FromFloat32(1+0x1p-8) != 0x3f80 || BF16FromFloat32(1+3*0x1p-8) != 0x3f82 {
		t.Fatal("ties to even")
	}
	// single rounding from f64 versus double rounding through f32
	for _, f := range []float64{1 + 0x1p-8 + 0x1p-30, 3.14159, -1e-40, 1e38} {
		want := BF16FromFloat32(float32(f))
		got := BF16FromFloat64(f)
		if d := int(got) - int(want); d < -1 || d > 1 {
			t.Errorf("%v: %#x vs %#x", f, got, want)
		}
	}
}
