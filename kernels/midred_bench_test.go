package kernels

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/f16"
)

// BenchmarkStridedReduction times the strided reductions under every variant, interleaved call by call
// in one process (each b.Loop iteration calls the kernel once per variant), and reports the fastest call
// of each variant (ns/<variant>) and the ratio of the go variant's to each SIMD variant's (go/avx2,
// go/neon, ...). Interleaving and taking minima make the ratios stable on a shared, loaded machine,
// where sums of times swing by ±50% between runs.
//
//	GOMAXPROCS=1 go test -run '^$' -bench StridedReduction -benchtime 2s ./kernels
func BenchmarkStridedReduction(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 9))
	f32 := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = rng.Float32()*2 - 1
		}
		return s
	}
	type bench struct {
		name string
		run  func()
	}
	var benches []bench
	{
		m, n := 1024, 1024 // 4 MiB: from L3
		A, s := f32(m*n), make([]float32, n)
		benches = append(benches, bench{"colsum/1024x1024", func() { Colsum(m, n, A, s) }})
	}
	{
		m, n := 128, 256 // 128 KiB: L2
		A, s := f32(m*n), make([]float32, n)
		benches = append(benches, bench{"colsum/128x256", func() { Colsum(m, n, A, s) }})
	}
	{
		m, n, k := 8, 128, 1024
		A, O := f32(m*n*k), make([]float32, m*k)
		benches = append(benches, bench{"sum_mid/8x128x1024", func() { SumMid(m, n, k, A, O) }})
		benches = append(benches, bench{"max_mid/8x128x1024", func() { MaxMid(m, n, k, A, O) }})
		h := make([]f16.F16, len(A))
		for i, v := range A {
			h[i] = f16.FromFloat32(v)
		}
		ho := make([]f16.F16, m*k)
		benches = append(benches, bench{"hsum_mid/8x128x1024", func() { HsumMid(m, n, k, h, ho) }})
	}
	{
		m, n, k := 2048, 16, 16 // short rows: one slot call per 16 outputs
		A, O := f32(m*n*k), make([]float32, m*k)
		benches = append(benches, bench{"sum_mid/2048x16x16", func() { SumMid(m, n, k, A, O) }})
	}
	{
		nb, c := 256, 1024
		X, mu, vr := f32(nb*c), make([]float32, c), make([]float32, c)
		benches = append(benches, bench{"batch_stats/256x1024", func() { BatchStats(nb, c, X, mu, vr) }})
	}
	vs := Variants()
	defer Use("")
	for _, bc := range benches {
		b.Run(bc.name, func(b *testing.B) {
			spent := make([]time.Duration, len(vs))
			b.ResetTimer()
			for range b.N {
				for i, v := range vs {
					if err := Use(v); err != nil {
						b.Fatal(err)
					}
					t0 := time.Now()
					bc.run()
					if d := time.Since(t0); spent[i] == 0 || d < spent[i] {
						spent[i] = d
					}
				}
			}
			g := slices.Index(vs, "go")
			for i, v := range vs {
				b.ReportMetric(float64(spent[i].Nanoseconds()), "ns/"+v)
				if i != g && g >= 0 {
					b.ReportMetric(float64(spent[g])/float64(spent[i]), "go/"+v)
				}
			}
		})
	}
}
