package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Benchmarks of the non-GEMM kernels whose vector loops run as SIMD assembly, each variant side by side
// (avx2 vs go on amd64): sizes that fit in L2 (64 KiB of operands) and ones that stream from memory
// (64 MiB). GB/s counts the bytes each call must move at least; GFLOP/s the arithmetic.
//
//	GOMAXPROCS=1 go test -run '^$' -bench 'VLoop' ./kernels
func BenchmarkVLoop(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	defer Use("")
	for _, size := range []struct {
		name string
		n    int // elements per operand
	}{{"L2", 16 << 10}, {"mem", 16 << 20}} {
		n := size.n
		x, y := randSlice(n, rng), randSlice(n, rng)
		rows := 64
		cols := n / rows
		X, Y := randSlice(n, rng), make([]float32, n)
		g, bt := randSlice(cols, rng), randSlice(cols, rng)
		xv, yv := randSlice(cols, rng), make([]float32, rows)
		r := []float32{0}
		kernels := []struct {
			name         string
			bytes, flops float64
			run          func()
		}{
			{"sdot", 8 * float64(n), 2 * float64(n), func() { Sdot(n, x, y, r) }},
			{"saxpy", 12 * float64(n), 2 * float64(n), func() { Saxpy(n, x, y, 1.0001) }},
			{"sgemv", 4 * float64(n), 2 * float64(n), func() { Sgemv(rows, cols, X, xv, yv, 1, 0) }},
			{"softmax", 8 * float64(n), 5 * float64(n), func() { Softmax(rows, cols, X, Y) }},
			{"layernorm", 8 * float64(n), 8 * float64(n), func() { Layernorm(rows, cols, X, g, bt, Y, 1e-5) }},
		}
		for _, k := range kernels {
			for _, v := range Variants() {
				b.Run(fmt.Sprintf("%s/%s/%s", k.name, size.name, v), func(b *testing.B) {
					if err := Use(v); err != nil {
						b.Fatal(err)
					}
					b.SetBytes(int64(k.bytes))
					b.ResetTimer()
					for range b.N {
						k.run()
					}
					s := b.Elapsed().Seconds()
					b.ReportMetric(float64(b.N)*k.bytes/s/1e9, "GB/s")
					b.ReportMetric(float64(b.N)*k.flops/s/1e9, "GFLOP/s")
				})
			}
		}
	}
}
