package run

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/kgen-dev/kgen/kernels"
)

// Kgen returns kgen's generated kernels.Sgemm/Dgemm with the given variant
// ("" for the best this CPU runs), labelled name.
func Kgen(name, variant string) (Lib, error) {
	if err := kernels.Use(variant); err != nil {
		return Lib{}, err
	}
	v := kernels.Variant()
	kernels.Use("")
	return Lib{
		Name:   name,
		Kernel: v,
		Detail: "kernels.Sgemm/Dgemm, variant " + v + " (kernels.Use); batches through kernels.Bmm (arguments checked once per batch)",
		Setup:  func() { kernels.Use(v) },
		S: func(m, k, n int, a, b, c []float32) {
			if err := kernels.Sgemm(m, k, n, a, b, c, 1, 0); err != nil {
				panic(err)
			}
		},
		D: func(m, k, n int, a, b, c []float64) {
			if err := kernels.Dgemm(m, k, n, a, b, c, 1, 0); err != nil {
				panic(err)
			}
		},
		// kgen's batched entry: C[p] = A[p]·B[p] for the whole batch in one call, the operands
		// back to back as SBatch passes them (the peers loop over their sgemm in C).
		SBatch: func(count, m, k, n int, a, b, c []float32) {
			if err := kernels.Bmm(count, m, k, n, a, b, c); err != nil {
				panic(err)
			}
		},
	}, nil
}

// Gonum returns gonum's pure-Go BLAS (blas/gonum.Implementation).
func Gonum() Lib {
	var g gonum.Implementation
	return Lib{
		Name:   "gonum",
		Kernel: "Go + SSE asm",
		Detail: "gonum.org/v1/gonum/blas/gonum v0.17.0 (Go loops, SSE assembly axpy/dot inner loops)",
		S: func(m, k, n int, a, b, c []float32) {
			g.Sgemm(blas.NoTrans, blas.NoTrans, m, n, k, 1, a, k, b, n, 0, c, n)
		},
		D: func(m, k, n int, a, b, c []float64) {
			g.Dgemm(blas.NoTrans, blas.NoTrans, m, n, k, 1, a, k, b, n, 0, c, n)
		},
	}
}
