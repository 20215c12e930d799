package blas

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/blas/testblas"
	"gonum.org/v1/gonum/mat"
)

// gonum's own Dgemm test cases, all four transpose combinations.
func TestDgemmGonumSuite(t *testing.T) {
	testblas.TestDgemm(t, Implementation{})
}

var transposes = []gblas.Transpose{gblas.NoTrans, gblas.Trans, gblas.ConjTrans}

type gemmFunc[T float32 | float64] func(tA, tB gblas.Transpose, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int)

func TestSgemmMatchesGonum(t *testing.T) {
	testGemmMatchesGonum(t, Implementation{}.Sgemm, gonum.Implementation{}.Sgemm, 1e-5)
}

func TestDgemmMatchesGonum(t *testing.T) {
	testGemmMatchesGonum(t, Implementation{}.Dgemm, gonum.Implementation{}.Dgemm, 1e-13)
}

// testGemmMatchesGonum compares got with gonum's pure-Go want over every transpose pair, the sizes
// {0,1,2,3,5,17,33,70}³, padded and unpadded leading dimensions, and alpha/beta including 0 and 1.
// Beyond the values it checks that A and B are not written, that C's padding is not written, and
// that C is not read when beta == 0 (it is prefilled with NaN then).
func testGemmMatchesGonum[T float32 | float64](t *testing.T, got, want gemmFunc[T], eps float64) {
	sizes := []int{0, 1, 2, 3, 5, 17, 33, 70}
	scalars := []T{0, 1, -1, 0.5, 2.25}
	rng := rand.New(rand.NewPCG(1, 2))
	pad := T(-12345) // sentinel in the gaps between rows
	fails := 0
	for _, tA := range transposes {
		for _, tB := range transposes {
			for _, m := range sizes {
				for _, n := range sizes {
					for _, k := range sizes {
						// Every (alpha, beta) pair on the small shapes, a random one on the rest.
						pairs := [][2]T{{scalars[rng.IntN(len(scalars))], scalars[rng.IntN(len(scalars))]}}
						if m*n*k <= 27 {
							pairs = pairs[:0]
							for _, al := range scalars {
								for _, be := range scalars {
									pairs = append(pairs, [2]T{al, be})
								}
							}
						}
						for _, ab := range pairs {
							alpha, beta := ab[0], ab[1]
							aRows, aCols := m, k
							if tA != gblas.NoTrans {
								aRows, aCols = k, m
							}
							bRows, bCols := k, n
							if tB != gblas.NoTrans {
								bRows, bCols = n, k
							}
							// Padding: none, or 1..7 extra columns, chosen per operand.
							lda := max(1, aCols) + rng.IntN(2)*(1+rng.IntN(7))
							ldb := max(1, bCols) + rng.IntN(2)*(1+rng.IntN(7))
							ldc := max(1, n) + rng.IntN(2)*(1+rng.IntN(7))
							a := randMat[T](rng, aRows, aCols, lda, pad)
							b := randMat[T](rng, bRows, bCols, ldb, pad)
							c := randMat[T](rng, m, n, ldc, pad)
							if beta == 0 {
								for i := 0; i < m; i++ {
									for j := 0; j < n; j++ {
										c[i*ldc+j] = T(math.NaN())
									}
								}
							}
							a0, b0 := clone(a), clone(b)
							cGot, cWant := clone(c), clone(c)
							got(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, cGot, ldc)
							want(tA, tB, m, n, k, alpha, a0, lda, b0, ldb, beta, cWant, ldc)

							name := fmt.Sprintf("tA=%c tB=%c m=%d n=%d k=%d alpha=%v beta=%v lda=%d ldb=%d ldc=%d",
								tA, tB, m, n, k, alpha, beta, lda, ldb, ldc)
							if !equal(a, a0) || !equal(b, b0) {
								t.Errorf("%s: A or B was written", name)
								fails++
							}
							for i := range cGot {
								row, col := i/ldc, i%ldc
								inside := row < m && col < n
								g, w := float64(cGot[i]), float64(cWant[i])
								if !inside {
									if g != float64(pad) {
										t.Errorf("%s: C padding [%d] written: %v", name, i, g)
										fails++
										break
									}
									continue
								}
								// Bound on the rounding difference: entries in [-1, 1], |alpha|,|beta| ≤ 2.25.
								tol := eps * float64(k+2) * 8
								if math.IsNaN(g) || math.Abs(g-w) > tol {
									t.Errorf("%s: C[%d,%d] = %v, gonum %v", name, row, col, g, w)
									fails++
									break
								}
							}
							if fails > 20 {
								t.Fatal("too many failures")
							}
						}
					}
				}
			}
		}
	}
}

// randMat returns a rows×cols matrix with row stride ld, its entries in [-1, 1), every element not in
// the matrix (the padding after each row's cols; the tail of the last row is not allocated) set to pad.
func randMat[T float32 | float64](rng *rand.Rand, rows, cols, ld int, pad T) []T {
	if rows == 0 {
		return nil
	}
	x := make([]T, (rows-1)*ld+cols)
	for i := range x {
		if i%ld < cols {
			x[i] = T(2*rng.Float64() - 1)
		} else {
			x[i] = pad
		}
	}
	return x
}

func clone[T any](x []T) []T { return append([]T(nil), x...) }

func equal[T float32 | float64](x, y []T) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] && !(x[i] != x[i] && y[i] != y[i]) {
			return false
		}
	}
	return true
}

// The panics (which check fires first, and its message) are gonum's.
func TestGemmPanicsMatchGonum(t *testing.T) {
	type args struct {
		tA, tB        gblas.Transpose
		m, n, k       int
		lda, ldb, ldc int
		la, lb, lc    int
		desc          string
	}
	N, T := gblas.NoTrans, gblas.Trans
	cases := []args{
		{gblas.Transpose('X'), N, 2, 2, 2, 2, 2, 2, 4, 4, 4, "bad tA"},
		{N, gblas.Transpose(0), 2, 2, 2, 2, 2, 2, 4, 4, 4, "bad tB"},
		{N, N, -1, 2, 2, 2, 2, 2, 4, 4, 4, "m < 0"},
		{N, N, 2, -1, 2, 2, 2, 2, 4, 4, 4, "n < 0"},
		{N, N, 2, 2, -1, 2, 2, 2, 4, 4, 4, "k < 0"},
		{N, N, 2, 3, 4, 3, 3, 3, 8, 12, 6, "lda < k"},
		{T, N, 2, 3, 4, 1, 3, 3, 8, 12, 6, "lda < m (trans)"},
		{N, N, 2, 3, 4, 4, 2, 3, 8, 12, 6, "ldb < n"},
		{N, T, 2, 3, 4, 4, 3, 3, 8, 12, 6, "ldb < k (trans)"},
		{N, N, 2, 3, 4, 4, 3, 2, 8, 12, 6, "ldc < n"},
		{N, N, 0, 0, 0, 0, 1, 1, 0, 0, 0, "lda < 1"},
		{N, N, 2, 3, 4, 4, 3, 3, 7, 12, 6, "short a"},
		{T, N, 2, 3, 4, 2, 3, 3, 7, 12, 6, "short a (trans)"},
		{N, N, 2, 3, 4, 4, 3, 3, 8, 11, 6, "short b"},
		{N, T, 2, 3, 4, 4, 4, 3, 8, 11, 6, "short b (trans)"},
		{N, N, 2, 3, 4, 4, 3, 3, 8, 12, 5, "short c"},
		{N, N, 2, 3, 4, 4, 3, 5, 8, 12, 7, "short c (padded)"},
		{N, N, 2, 3, 0, 1, 3, 3, 1, 0, 5, "short c, k = 0"},
		{N, N, 0, 3, 4, 4, 3, 3, 0, 0, 0, "m = 0, no panic"},
		{N, N, 2, 3, 4, 6, 5, 4, 10, 18, 7, "padded, no panic"},
	}
	catch := func(f func()) (msg any) {
		defer func() { msg = recover() }()
		f()
		return nil
	}
	for _, c := range cases {
		gotS := catch(func() {
			Implementation{}.Sgemm(c.tA, c.tB, c.m, c.n, c.k, 1, make([]float32, c.la), c.lda, make([]float32, c.lb), c.ldb, 0, make([]float32, c.lc), c.ldc)
		})
		wantS := catch(func() {
			gonum.Implementation{}.Sgemm(c.tA, c.tB, c.m, c.n, c.k, 1, make([]float32, c.la), c.lda, make([]float32, c.lb), c.ldb, 0, make([]float32, c.lc), c.ldc)
		})
		gotD := catch(func() {
			Implementation{}.Dgemm(c.tA, c.tB, c.m, c.n, c.k, 1, make([]float64, c.la), c.lda, make([]float64, c.lb), c.ldb, 0, make([]float64, c.lc), c.ldc)
		})
		wantD := catch(func() {
			gonum.Implementation{}.Dgemm(c.tA, c.tB, c.m, c.n, c.k, 1, make([]float64, c.la), c.lda, make([]float64, c.lb), c.ldb, 0, make([]float64, c.lc), c.ldc)
		})
		if gotS != wantS || gotD != wantD {
			t.Errorf("%s: panics Sgemm %v, Dgemm %v; gonum %v, %v", c.desc, gotS, gotD, wantS, wantD)
		}
		noPanic := c.desc == "m = 0, no panic" || c.desc == "padded, no panic"
		if (wantD == nil) != noPanic {
			t.Errorf("%s: test case is wrong: gonum panics with %v", c.desc, wantD)
		}
	}
}

// gonum/mat runs on this implementation after blas64.Use, with the same results, through plain,
// transposed and sliced (stride > cols) operands.
func TestMatDenseMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	randDense := func(r, c int) *mat.Dense {
		d := make([]float64, r*c)
		for i := range d {
			d[i] = 2*rng.Float64() - 1
		}
		return mat.NewDense(r, c, d)
	}
	big := randDense(90, 80)
	type prod struct {
		name string
		a, b mat.Matrix
	}
	prods := []prod{
		{"NN", randDense(37, 50), randDense(50, 41)},
		{"TN", randDense(50, 37).T(), randDense(50, 41)},
		{"NT", randDense(37, 50), randDense(41, 50).T()},
		{"TT", randDense(50, 37).T(), randDense(41, 50).T()},
		{"sliced", big.Slice(3, 40, 5, 55), big.Slice(10, 60, 20, 61)},
		{"sliced T", big.Slice(3, 53, 5, 42).T(), big.Slice(10, 51, 20, 70).T()},
	}
	var want []*mat.Dense
	for _, p := range prods {
		var c mat.Dense
		c.Mul(p.a, p.b)
		want = append(want, &c)
	}
	prev := blas64.Implementation()
	blas64.Use(Implementation{})
	defer blas64.Use(prev)
	for i, p := range prods {
		var c mat.Dense
		c.Mul(p.a, p.b)
		if !mat.EqualApprox(&c, want[i], 1e-12) {
			t.Errorf("%s: Dense.Mul differs from gonum's by more than 1e-12", p.name)
		}
		// Into a view of a larger matrix: ldc > n.
		r, cc := want[i].Dims()
		dst := mat.NewDense(r+2, cc+3, nil).Slice(1, r+1, 2, cc+2).(*mat.Dense)
		dst.Mul(p.a, p.b)
		if !mat.EqualApprox(dst, want[i], 1e-12) {
			t.Errorf("%s: Dense.Mul into a slice differs from gonum's", p.name)
		}
	}
	if _, ok := blas64.Implementation().(Implementation); !ok {
		t.Error("blas64.Use did not install Implementation")
	}
}
