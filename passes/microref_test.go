package passes

import (
	"math"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestMicroReference checks the contract reference on a call worked out by hand: a 2×3 tile of a 3×4
// microkernel, kc = 2, ldc = 5, alpha = 2, beta = 0.5, a bias and ReLU; elements outside the tile keep
// their values; beta = 0 does not read C (NaN there stays out); malformed calls are errors.
func TestMicroReference(t *testing.T) {
	call := MicroCall{Elem: ir.F32, MR: 3, NR: 4, KC: 2, M: 2, N: 3, LDC: 5,
		// A panel: (i, p) at p·3 + i; rows 0, 1 used (row 2 zero, as the contract's packing leaves it)
		A: []float64{1, 2, 0, 3, -1, 0},
		// B panel: (p, j) at p·4 + j
		B:     []float64{1, 0, 2, 9, -1, 1, 0, 9},
		C:     []float64{10, 20, 30, 7, 7, 40, 50, 60},
		Bias:  []float64{1, -100, 0.5},
		Alpha: 2, Beta: 0.5, EP: 3,
	}
	// Σ_p A(i,p)·B(p,j): row 0: (1·1 + 3·-1, 1·0 + 3·1, 1·2 + 3·0) = (-2, 3, 2)
	//                   row 1: (2·1 + -1·-1, 0 + -1·1, 2·2 + 0) = (3, -1, 4)
	// 2·s + 0.5·C + bias, then ReLU:
	//   row 0: (-4+5+1, 6+10-100, 4+15+0.5) = (2, -84→0, 19.5)
	//   row 1: (6+20+1, -2+25-100, 8+30+0.5) = (27, -77→0, 38.5)
	want := []float64{2, 0, 19.5, 7, 7, 27, 0, 38.5}
	for _, mode := range []ir.Mode{ir.Storage, ir.Exact} {
		got, err := MicroReference(call, mode)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("mode %d: C = %v, want %v", mode, got, want)
			}
		}
	}
	nan := call
	nan.C = []float64{math.NaN(), math.NaN(), math.NaN(), 7, 7, math.NaN(), math.NaN(), math.NaN()}
	nan.Beta, nan.EP = 0, 0
	got, err := MicroReference(nan, ir.Storage)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []float64{-4, 6, 4, 7, 7, 6, -2, 8} {
		if got[i] != w {
			t.Fatalf("beta = 0: C = %v, want element %d = %v (C not read)", got, i, w)
		}
	}
	for _, bad := range []MicroCall{
		{Elem: ir.F16, MR: 1, NR: 1, M: 1, N: 1, LDC: 1},
		{Elem: ir.F32, MR: 2, NR: 2, M: 3, N: 1, LDC: 1},
		{Elem: ir.F32, MR: 2, NR: 2, M: 1, N: 1, LDC: 1, EP: 1},
	} {
		if _, err := MicroReference(bad, ir.Storage); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
