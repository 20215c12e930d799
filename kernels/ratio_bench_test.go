package kernels

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/f16"
)

// BenchmarkVariantRatio times exported kernels under the two best variants of this CPU (avx512 and
// avx2 on an AVX-512 machine, neon and go on arm64), alternating them call by call, and reports each
// variant's fastest call and their ratio (second/best: above 1 when the best variant is faster). On a
// shared host the fastest of many interleaved calls is much steadier than a mean, which also counts the
// time the thread was descheduled. Operands fit in L2 (16 Ki elements) except transpose 1024², the
// 1 Mi-element f16 conversions and the 4096-wide skinny GEMMs (B is 64 MiB).
//
//	GOMAXPROCS=1 go test -run '^$' -bench VariantRatio -benchtime 400x ./kernels
func BenchmarkVariantRatio(b *testing.B) {
	vs := Variants()
	if len(vs) < 2 {
		b.Skip("one variant only")
	}
	best, next := vs[0], vs[1]
	defer Use("")
	rng := rand.New(rand.NewPCG(7, 8))
	const n, rows = 16 << 10, 64
	cols := n / rows
	x, y, X, Y := randSlice(n, rng), randSlice(n, rng), randSlice(n, rng), make([]float32, n)
	g, bt, xv, yv := randSlice(cols, rng), randSlice(cols, rng), randSlice(cols, rng), make([]float32, rows)
	r := []float32{0}
	const tn, cn = 1024, 1 << 20
	ta, tb := randSlice(tn*tn, rng), make([]float32, tn*tn)
	cf, ch := randSlice(cn, rng), randF16(cn, rng)
	cf2, ch2 := make([]float32, cn), make([]f16.F16, cn)
	sh, sf, sh2 := randF16(n, rng), make([]float32, n), make([]f16.F16, n)
	const sk = 4096 // skinny GEMMs: M ≤ 4 rows run through the rows kernels
	sA, sB, sC := randSlice(4*sk, rng), randSlice(sk*sk, rng), make([]float32, 4*sk)
	for _, k := range []struct {
		name string
		run  func() error
	}{
		{"sdot", func() error { return Sdot(n, x, y, r) }},
		{"saxpy", func() error { return Saxpy(n, x, y, 1.0001) }},
		{"sgemv", func() error { return Sgemv(rows, cols, X, xv, yv, 1, 0) }},
		{"softmax", func() error { return Softmax(rows, cols, X, Y) }},
		{"layernorm", func() error { return Layernorm(rows, cols, X, g, bt, Y, 1e-5) }},
		{"transpose_1024", func() error { return Transpose(tn, tn, ta, tb) }},
		{"cvt_f32_f16_L2", func() error { return CvtF32F16(n, x, sh2) }},
		{"cvt_f16_f32_L2", func() error { return CvtF16F32(n, sh, sf) }},
		{"cvt_f32_f16_1M", func() error { return CvtF32F16(cn, cf, ch2) }},
		{"cvt_f16_f32_1M", func() error { return CvtF16F32(cn, ch, cf2) }},
		{"sgemm_1x4096x4096", func() error { return Sgemm(1, sk, sk, sA[:sk], sB, sC[:sk], 1, 0) }},
		{"sgemm_4x4096x4096", func() error { return Sgemm(4, sk, sk, sA, sB, sC, 1, 0) }},
		{"sgemm_4x512x512", func() error { return Sgemm(4, 512, 512, sA[:4*512], sB[:512*512], sC[:4*512], 1, 0) }},
		{"sgemm_2x256x256", func() error { return Sgemm(2, 256, 256, sA[:2*256], sB[:256*256], sC[:2*256], 1, 0) }},
	} {
		b.Run(k.name, func(b *testing.B) {
			var mins [2]time.Duration
			b.ResetTimer()
			for range b.N {
				for i, v := range []string{best, next} {
					if err := Use(v); err != nil {
						b.Fatal(err)
					}
					s := time.Now()
					if err := k.run(); err != nil {
						b.Fatal(err)
					}
					if d := time.Since(s); mins[i] == 0 || d < mins[i] {
						mins[i] = d
					}
				}
			}
			b.ReportMetric(float64(mins[0].Nanoseconds()), best+"-min-ns")
			b.ReportMetric(float64(mins[1].Nanoseconds()), next+"-min-ns")
			b.ReportMetric(float64(mins[1])/float64(mins[0]), next+"/"+best)
		})
	}
}
