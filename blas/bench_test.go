package blas

import (
	"fmt"
	"math/rand/v2"
	"testing"

	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/blas/testblas"
)

// Side by side, per size: this implementation (kgen) and gonum's pure-Go one, n×n×n, no transposes.
//
//	go test -run '^$' -bench 'gemm/256' ./blas
//	go test -run '^$' -bench 'gemm/1024' -benchtime 3x ./blas

var benchSizes = []int{256, 1024}

func reportGFLOPs(b *testing.B, n int) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/s/1e9, "GFLOP/s")
	}
}

func BenchmarkDgemm(b *testing.B) {
	impls := []struct {
		name string
		impl testblas.Dgemmer
	}{{"kgen", Implementation{}}, {"gonum", gonum.Implementation{}}}
	for _, n := range benchSizes {
		for _, im := range impls {
			b.Run(fmt.Sprintf("%d/%s", n, im.name), func(b *testing.B) {
				testblas.DgemmBenchmark(b, im.impl, n, n, n, gblas.NoTrans, gblas.NoTrans)
				reportGFLOPs(b, n)
			})
		}
	}
}

func BenchmarkSgemm(b *testing.B) {
	impls := []struct {
		name string
		impl gblas.Float32
	}{{"kgen", Implementation{}}, {"gonum", gonum.Implementation{}}}
	for _, n := range benchSizes {
		for _, im := range impls {
			b.Run(fmt.Sprintf("%d/%s", n, im.name), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 1))
				x := make([]float32, 3*n*n)
				for i := range x {
					x[i] = rng.Float32()
				}
				a, bb, c := x[:n*n], x[n*n:2*n*n], x[2*n*n:]
				b.ResetTimer()
				for range b.N {
					im.impl.Sgemm(gblas.NoTrans, gblas.NoTrans, n, n, n, 3, a, n, bb, n, 1, c, n)
				}
				reportGFLOPs(b, n)
			})
		}
	}
}
