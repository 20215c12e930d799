package kernels

import (
	"math/rand"
	"testing"
)

// The let tensors of softmax and layernorm (row maxima, sums, means, variances) come from rt's scratch
// pool, so an inference loop calling them pays no allocation per call. testing.AllocsPerRun runs with
// GOMAXPROCS 1, where every loop runs inline (the worker pool's closure is not built).
func TestRowKernelsAllocateNothing(t *testing.T) {
	defer Use(Variant())
	r := rand.New(rand.NewSource(1))
	for _, v := range Variants() {
		if err := Use(v); err != nil {
			t.Fatal(err)
		}
		for _, sh := range [][2]int{{1, 1}, {7, 33}, {64, 1000}} {
			M, N := sh[0], sh[1]
			X, Y := make([]float32, M*N), make([]float32, M*N)
			gamma, beta := make([]float32, N), make([]float32, N)
			for i := range X {
				X[i] = r.Float32()*4 - 2
			}
			for j := range gamma {
				gamma[j], beta[j] = r.Float32(), r.Float32()
			}
			if n := testing.AllocsPerRun(20, func() {
				if err := Softmax(M, N, X, Y); err != nil {
					t.Fatal(err)
				}
			}); n != 0 {
				t.Errorf("%s: Softmax(%d, %d) makes %v allocations per call, want 0", v, M, N, n)
			}
			if n := testing.AllocsPerRun(20, func() {
				if err := Layernorm(M, N, X, gamma, beta, Y, 1e-5); err != nil {
					t.Fatal(err)
				}
			}); n != 0 {
				t.Errorf("%s: Layernorm(%d, %d) makes %v allocations per call, want 0", v, M, N, n)
			}
		}
	}
}
