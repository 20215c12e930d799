package kernels

import (
	"math"
	"testing"
)

// TestSigmoidEpilogueULP runs gemm_sigmoid as C = sigmoid(x) (M = K = 1, A = 1, B = x, alpha = 1,
// beta = 0 over NaN C) under every variant: its epilogue is a vector loop whose sigmoid the SIMD
// variants expand through exp (codegen/lanesel), 1/(1 + exp(-x)), and the Go code computes in float64.
// Within 3 ulp of float32(1/(1 + exp(-x))) for normal results, within 2^-126 below (exp(-x) overflows
// below -88.7: 0 where the exact value is subnormal), exact specials.
func TestSigmoidEpilogueULP(t *testing.T) {
	var xs []float32
	for x := float32(-110); x < 95; x += 0.0041 {
		xs = append(xs, x)
	}
	xs = append(xs, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), -88.72283, -88.72284, 1e-30, -1e-30)
	defer Use("")
	for _, v := range Variants() {
		if err := Use(v); err != nil {
			t.Fatal(err)
		}
		c := make([]float32, len(xs))
		for i := range c {
			c[i] = float32(math.NaN())
		}
		if err := GemmSigmoid(1, 1, len(xs), []float32{1}, xs, c, 1, 0); err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for i, x := range xs {
			want := float32(1 / (1 + math.Exp(-float64(x))))
			got := c[i]
			switch {
			case want != want:
				if got == got {
					t.Errorf("%s: sigmoid(%v) = %v, want NaN", v, x, got)
				}
				continue
			case want < 0x1p-126:
				if !(got >= 0 && got <= 0x1p-126) {
					t.Errorf("%s: sigmoid(%v) = %v, want %v", v, x, got, want)
				}
				continue
			}
			ulp := float64(math.Nextafter32(want, float32(math.Inf(1))) - want)
			e := math.Abs(float64(got)-float64(want)) / ulp
			worst = max(worst, e)
			if e > 3 {
				t.Errorf("%s: sigmoid(%v) = %v, want %v (%.1f ulp)", v, x, got, want, e)
			}
		}
		t.Logf("%s: worst %.2f ulp", v, worst)
	}
}
