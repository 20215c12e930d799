package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkTranspose measures B = Aᵀ (f32) through every variant and a naive double loop, on a square
// matrix whose operands (4 MiB each) stream from L3/memory and a tall one (16 MiB each). GB/s counts the
// bytes read and written (8·M·N). The kernel's outer block loop runs on the worker pool: run with
// GOMAXPROCS=1 for one core.
//
//	GOMAXPROCS=1 go test -run '^$' -bench Transpose -benchtime 2s ./kernels
func BenchmarkTranspose(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	defer Use("")
	for _, sh := range [][2]int{{1024, 1024}, {4096, 1024}} {
		m, n := sh[0], sh[1]
		a, out := randSlice(m*n, rng), make([]float32, m*n)
		bytes := 8 * float64(m*n)
		run := func(b *testing.B, f func()) {
			b.SetBytes(int64(bytes))
			b.ResetTimer()
			for range b.N {
				f()
			}
			b.ReportMetric(float64(b.N)*bytes/b.Elapsed().Seconds()/1e9, "GB/s")
		}
		for _, v := range Variants() {
			b.Run(fmt.Sprintf("%dx%d/%s", m, n, v), func(b *testing.B) {
				if err := Use(v); err != nil {
					b.Fatal(err)
				}
				run(b, func() { Transpose(m, n, a, out) })
			})
		}
		b.Run(fmt.Sprintf("%dx%d/naive", m, n), func(b *testing.B) {
			run(b, func() {
				for i := 0; i < m; i++ {
					row := a[i*n : i*n+n]
					for j, x := range row {
						out[j*m+i] = x
					}
				}
			})
		})
	}
}
