package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kgen-dev/kgen/f16"
)

// Benchmarks of f16 storage: hgemm 512 and the two conversion kernels at 1<<20 elements under every
// variant (the go variant converts in scalar Go), plus hgemm on the best variant with its f16 vector
// loops cleared ("<variant>-goconv": the assembly microkernel with Go conversions, as before the f16
// loops existed), and the two ways of packing an f16 A panel. docs/PERF.md has the command and figures.

func randF16(n int, rng *rand.Rand) []f16.F16 {
	s := make([]f16.F16, n)
	for i := range s {
		s[i] = f16.FromFloat32(rng.Float32()*2 - 1)
	}
	return s
}

func BenchmarkF16Hgemm(b *testing.B) {
	const n = 512
	rng := rand.New(rand.NewPCG(1, 2))
	A, B, C := randF16(n*n, rng), randF16(n*n, rng), make([]f16.F16, n*n)
	run := func(b *testing.B) {
		b.ResetTimer()
		for range b.N {
			if err := Hgemm(n, n, n, A, B, C); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(2*n*n*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	}
	defer Use("")
	for _, v := range Variants() {
		b.Run(fmt.Sprintf("%s/%d", v, n), func(b *testing.B) {
			Use(v)
			run(b)
		})
	}
	if best := Variants()[0]; best != "go" {
		b.Run(fmt.Sprintf("%s-goconv/%d", best, n), func(b *testing.B) {
			Use(best)
			vloop_hgemm_0, vloop_cvtF16F32 = nil, nil
			run(b)
		})
	}
}

func BenchmarkF16Cvt(b *testing.B) {
	const n = 1 << 20
	rng := rand.New(rand.NewPCG(3, 4))
	h, f := randF16(n, rng), make([]float32, n)
	for i := range f {
		f[i] = rng.Float32()*2 - 1
	}
	h2 := make([]f16.F16, n)
	defer Use("")
	for _, v := range Variants() {
		b.Run("f32_f16/"+v, func(b *testing.B) {
			Use(v)
			b.ResetTimer()
			for range b.N {
				CvtF32F16(n, f, h2)
			}
			b.ReportMetric(6*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
		b.Run("f16_f32/"+v, func(b *testing.B) {
			Use(v)
			b.ResetTimer()
			for range b.N {
				CvtF16F32(n, h, f)
			}
			b.ReportMetric(6*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkF16PackA packs an MR×KC panel of an f16 A (rows contiguous, scattered with stride MR into
// the panel) the two ways: widening element by element in the scatter loop ("scalar", the old code),
// or widening each run with cvtF16F32 into a buffer and scattering that ("chunked", the generated code).
func BenchmarkF16PackA(b *testing.B) {
	const mr, kc, rows, lda = 6, 512, 96, 1024
	rng := rand.New(rand.NewPCG(5, 6))
	A := randF16(rows*lda, rng)
	dst := make([]float32, rows*kc)
	buf := make([]float32, rows*kc)
	defer Use("")
	for _, v := range Variants() {
		b.Run("scalar/"+v, func(b *testing.B) {
			Use(v)
			b.ResetTimer()
			for range b.N {
				for p0 := 0; p0 < rows; p0 += mr {
					d := dst[p0*kc : (p0+mr)*kc]
					for q := range mr {
						for pk, x := range A[(p0+q)*lda:][:kc] {
							d[pk*mr+q] = x.Float32()
						}
					}
				}
			}
			b.ReportMetric(rows*kc*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
		b.Run("chunked/"+v, func(b *testing.B) {
			Use(v)
			b.ResetTimer()
			for range b.N {
				for p0 := 0; p0 < rows; p0 += mr {
					d := dst[p0*kc : (p0+mr)*kc]
					for q := range mr {
						run := buf[(p0+q)*kc : (p0+q)*kc+kc]
						cvtF16F32(run, A[(p0+q)*lda:][:kc])
						for pk, x := range run {
							d[pk*mr+q] = x
						}
					}
				}
			}
			b.ReportMetric(rows*kc*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
	}
}
