package kernels

import (
	"strings"
	"testing"
)

// The pooling kernels' windows are checked by the wrapper (issue 10, item 7): 2·(OH-1)+1 must be < H.
func TestPoolWindowBounds(t *testing.T) {
	I := make([]float32, 4*5)
	for i := range I {
		I[i] = float32(i)
	}
	O := make([]float32, 2*2)
	// H = 4, W = 5, OH = OW = 2: windows rows 0..3, columns 0..3.
	if err := Maxpool2(1, 1, 4, 5, 2, 2, I, O); err != nil {
		t.Fatal(err)
	}
	if want := []float32{6, 8, 16, 18}; !equal32(O, want) {
		t.Errorf("maxpool2 %v, want %v", O, want)
	}
	if err := Avgpool2(1, 1, 4, 5, 2, 2, I, O); err != nil {
		t.Fatal(err)
	}
	if want := []float32{3, 5, 13, 15}; !equal32(O, want) {
		t.Errorf("avgpool2 %v, want %v", O, want)
	}
	// OW = 3 needs W ≥ 6; OH = 3 needs H ≥ 6. Nothing is written on error.
	for _, tc := range []struct{ h, w, oh, ow int }{{4, 5, 2, 3}, {4, 5, 3, 2}} {
		in := make([]float32, tc.h*tc.w)
		out := make([]float32, tc.oh*tc.ow)
		for _, f := range []func(Nb, C, H, W, OH, OW int, I, O []float32) error{Maxpool2, Avgpool2} {
			err := f(1, 1, tc.h, tc.w, tc.oh, tc.ow, in, out)
			if err == nil || !strings.Contains(err.Error(), "reaches outside dim") {
				t.Errorf("%+v: got %v, want an out-of-range error", tc, err)
			}
			for _, v := range out {
				if v != 0 {
					t.Fatalf("%+v: output written on error", tc)
				}
			}
		}
	}
}

func equal32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
