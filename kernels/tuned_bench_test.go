package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kgen-dev/kgen/f16"
)

// BenchmarkTuned runs GEMM kernels that kgen.lock may tune (sgemm, dgemm, bgemm, hgemm, the
// transposed sgemm_nt/sgemm_tt/dgemm_tt, sgemm_acc and the fused gemm_bias_relu, linear_residual and
// linear_gelu) on kgen
// tune's default shapes (M×N×K: small, past the small-problem cut-off, few rows, square, large) under
// the variant this machine selects. docs/PERF.md compares the package generated with the lock against
// the one generated without it, interleaved.
func BenchmarkTuned(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, s := range [][3]int{{64, 64, 64}, {100, 100, 100}, {128, 128, 128}, {4, 1024, 1024}, {16, 1024, 1024}, {256, 256, 256}, {768, 768, 768}, {1024, 1024, 1024}} {
		m, n, k := s[0], s[1], s[2]
		flops := 2 * float64(m) * float64(n) * float64(k)
		a32, b32, c32 := randSlice(m*k, rng), randSlice(k*n, rng), make([]float32, m*n)
		bias, res := randSlice(n, rng), randSlice(m*n, rng)
		a64, b64, c64 := make([]float64, m*k), make([]float64, k*n), make([]float64, m*n)
		abf, bbf := make([]f16.BF16, m*k), make([]f16.BF16, k*n)
		ah, bh, ch := randF16(m*k, rng), randF16(k*n, rng), make([]f16.F16, m*n)
		for i, v := range a32 {
			a64[i], abf[i] = float64(v), f16.BF16FromFloat64(float64(v))
		}
		for i, v := range b32 {
			b64[i], bbf[i] = float64(v), f16.BF16FromFloat64(float64(v))
		}
		for _, kern := range []struct {
			name string
			call func() error
		}{
			{"sgemm", func() error { return Sgemm(m, k, n, a32, b32, c32, 1, 0) }},
			{"dgemm", func() error { return Dgemm(m, k, n, a64, b64, c64, 1, 0) }},
			{"bgemm", func() error { return Bgemm(m, k, n, abf, bbf, c32, 1, 0) }},
			{"hgemm", func() error { return Hgemm(m, k, n, ah, bh, ch) }},
			{"sgemm_nt", func() error { return SgemmNt(m, k, n, a32, b32, c32, 1, 0) }},
			{"sgemm_tt", func() error { return SgemmTt(k, m, n, a32, b32, c32, 1, 0) }},
			{"dgemm_tt", func() error { return DgemmTt(k, m, n, a64, b64, c64, 1, 0) }},
			{"sgemm_acc", func() error { return SgemmAcc(m, k, n, a32, b32, c32) }},
			{"gemm_bias_relu", func() error { return GemmBiasRelu(m, k, n, a32, b32, bias, c32) }},
			{"linear_residual", func() error { return LinearResidual(m, k, n, a32, b32, bias, res, c32) }},
			{"linear_gelu", func() error { return LinearGelu(m, k, n, a32, b32, bias, c32) }},
		} {
			b.Run(fmt.Sprintf("%s/%dx%dx%d", kern.name, m, n, k), func(b *testing.B) {
				b.ResetTimer()
				for range b.N {
					if err := kern.call(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
