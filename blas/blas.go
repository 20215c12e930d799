// Package blas is a gonum BLAS implementation whose Sgemm and Dgemm run on kgen's generated GEMM
// kernels (package kernels: packed, register-blocked AVX2/AVX-512 microkernels on amd64, portable Go
// elsewhere). Every other routine is gonum's pure-Go implementation, embedded unchanged.
//
// To speed up gonum/mat (and anything else that goes through blas64 or blas32):
//
//	import (
//		kblas "github.com/kgen-dev/kgen/blas"
//		"gonum.org/v1/gonum/blas/blas32"
//		"gonum.org/v1/gonum/blas/blas64"
//	)
//
//	func init() {
//		blas64.Use(kblas.Implementation{}) // mat.Dense.Mul etc. now run on kgen's Dgemm
//		blas32.Use(kblas.Implementation{})
//	}
//
// Semantics are gonum's (and BLAS's): argument checks panic with the same messages as
// gonum.org/v1/gonum/blas/gonum.Implementation, beta == 0 means C is not read, alpha == 0 means A
// and B are not read. Results differ from gonum's in rounding only (a different summation order).
package blas

import (
	"fmt"

	"github.com/kgen-dev/kgen/kernels"
	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// Implementation implements gblas.Float32 and gblas.Float64 (and, through the embedded gonum
// implementation, the complex interfaces too). The zero value is ready to use.
type Implementation struct {
	gonum.Implementation
}

var (
	_ gblas.Float32 = Implementation{}
	_ gblas.Float64 = Implementation{}
)

// Sgemm computes
//
//	C = alpha * op(A) * op(B) + beta * C
//
// where op(X) is X or Xᵀ (ConjTrans is Trans for real matrices), op(A) is m×k, op(B) is k×n and
// C is m×n, all row-major with leading dimensions lda, ldb, ldc.
func (Implementation) Sgemm(tA, tB gblas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	// Argument validation is gonum's own: with alpha = 0 and beta = 1 gonum runs every check
	// (transposes, dims, leading dimensions, slice lengths, in its order and with its panic
	// messages) and then returns before touching any data.
	gonum.Implementation{}.Sgemm(tA, tB, m, n, k, 0, a, lda, b, ldb, 1, c, ldc)
	gemm(&sgemmKernels, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Dgemm computes
//
//	C = alpha * op(A) * op(B) + beta * C
//
// where op(X) is X or Xᵀ (ConjTrans is Trans for real matrices), op(A) is m×k, op(B) is k×n and
// C is m×n, all row-major with leading dimensions lda, ldb, ldc.
func (Implementation) Dgemm(tA, tB gblas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	gonum.Implementation{}.Dgemm(tA, tB, m, n, k, 0, a, lda, b, ldb, 1, c, ldc) // validation only, see Sgemm
	gemm(&dgemmKernels, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// kernel is a kgen GEMM kernel with its dims in (m, n, k) order; a, b, c are contiguous.
type kernel[T float32 | float64] func(m, n, k int, a, b, c []T, alpha, beta T) error

// [aTrans][bTrans]. The generated functions take their dims in first-appearance order in
// kernels.kdsl: (M, K, N) for A: [M, K], (K, M, N) for A: [K, M].
var sgemmKernels = [2][2]kernel[float32]{
	{
		func(m, n, k int, a, b, c []float32, alpha, beta float32) error {
			return kernels.Sgemm(m, k, n, a, b, c, alpha, beta)
		},
		func(m, n, k int, a, b, c []float32, alpha, beta float32) error {
			return kernels.SgemmNt(m, k, n, a, b, c, alpha, beta)
		},
	},
	{
		func(m, n, k int, a, b, c []float32, alpha, beta float32) error {
			return kernels.SgemmTn(k, m, n, a, b, c, alpha, beta)
		},
		func(m, n, k int, a, b, c []float32, alpha, beta float32) error {
			return kernels.SgemmTt(k, m, n, a, b, c, alpha, beta)
		},
	},
}

var dgemmKernels = [2][2]kernel[float64]{
	{
		func(m, n, k int, a, b, c []float64, alpha, beta float64) error {
			return kernels.Dgemm(m, k, n, a, b, c, alpha, beta)
		},
		func(m, n, k int, a, b, c []float64, alpha, beta float64) error {
			return kernels.DgemmNt(m, k, n, a, b, c, alpha, beta)
		},
	},
	{
		func(m, n, k int, a, b, c []float64, alpha, beta float64) error {
			return kernels.DgemmTn(k, m, n, a, b, c, alpha, beta)
		},
		func(m, n, k int, a, b, c []float64, alpha, beta float64) error {
			return kernels.DgemmTt(k, m, n, a, b, c, alpha, beta)
		},
	},
}

// gemm runs on arguments that have already passed gonum's checks.
func gemm[T float32 | float64](kern *[2][2]kernel[T], tA, tB gblas.Transpose, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if alpha == 0 || k == 0 {
		// C = beta*C: A and B are not read (reference BLAS; gonum agrees for finite A and B).
		if beta == 1 {
			return
		}
		for i := 0; i < m; i++ {
			row := c[i*ldc : i*ldc+n]
			if beta == 0 {
				clear(row)
				continue
			}
			for j := range row {
				row[j] *= beta
			}
		}
		return
	}

	aTrans := tA != gblas.NoTrans // validated: Trans or ConjTrans
	bTrans := tB != gblas.NoTrans
	aRows, aCols := m, k
	if aTrans {
		aRows, aCols = k, m
	}
	bRows, bCols := k, n
	if bTrans {
		bRows, bCols = n, k
	}
	ac := contiguous(a, aRows, aCols, lda, true)
	bc := contiguous(b, bRows, bCols, ldb, true)
	// beta == 0: C is not read, so a scratch C needs no copy in.
	cc := contiguous(c, m, n, ldc, beta != 0)

	if err := kern[b2i(aTrans)][b2i(bTrans)](m, n, k, ac, bc, cc, alpha, beta); err != nil {
		// Unreachable: the lengths are exact by construction.
		panic(fmt.Sprintf("kgen/blas: internal error: %v", err))
	}

	if !isContiguous(m, n, ldc) {
		for i := 0; i < m; i++ {
			copy(c[i*ldc:i*ldc+n], cc[i*n:(i+1)*n])
		}
	}
}

func isContiguous(rows, cols, ld int) bool { return ld == cols || rows == 1 }

// contiguous returns the rows×cols matrix stored in x with row stride ld as a row-major slice of
// length rows*cols: x itself (sub-sliced) when the rows are adjacent, otherwise a new copy (or,
// when fill is false, a new zeroed buffer). O(rows·cols), against O(m·n·k) for the product.
func contiguous[T float32 | float64](x []T, rows, cols, ld int, fill bool) []T {
	if isContiguous(rows, cols, ld) {
		return x[: rows*cols : rows*cols]
	}
	dst := make([]T, rows*cols)
	if fill {
		for i := 0; i < rows; i++ {
			copy(dst[i*cols:(i+1)*cols], x[i*ld:i*ld+cols])
		}
	}
	return dst
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
