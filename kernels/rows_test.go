//go:build linux

package kernels

import (
	"math"
	"testing"
)

// checkRows runs a variant's rows kernel (the slot's Rows with alpha 1, beta 0 and no epilogue, so the
// kernel writes C directly) on every small shape, with A in row and column order, the operands ending
// at a guard page, and C's padding poisoned with NaN (it must stay untouched). Small integer values
// keep every sum exact, so the results must equal the definition exactly.
func checkRows[T float32 | float64](t *testing.T, v string, rows func(kc int, a []T, ars, acs int, b []T, ldb int, c []T, ldc, m, n int, alpha, beta T, bias []T, ep int)) {
	for m := 1; m <= 9; m++ { // 5…9: the assembly kernels run groups of at most 4 rows
		for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 31, 33} {
			for _, kc := range []int{0, 1, 3, 4, 5, 8, 9} {
				for _, colA := range []bool{false, true} {
					ars, acs := kc+2, 1
					if colA {
						ars, acs = 1, m+1
					}
					ldb, ldc := n+3, n+1
					na := 1
					if kc > 0 {
						na = (m-1)*ars + (kc-1)*acs + 1
					}
					nb := 1
					if kc > 0 {
						nb = (kc-1)*ldb + n
					}
					a, freeA := guarded[T](t, na)
					b, freeB := guarded[T](t, nb)
					c, freeC := guarded[T](t, (m-1)*ldc+n)
					for i := range a {
						a[i] = T(i%7 - 3)
					}
					for i := range b {
						b[i] = T(i%5 - 2)
					}
					for i := range c {
						c[i] = T(math.NaN())
					}
					rows(kc, a, ars, acs, b, ldb, c, ldc, m, n, 1, 0, nil, 0)
					for i := 0; i < m; i++ {
						for j := 0; j < ldc && i*ldc+j < len(c); j++ {
							got := c[i*ldc+j]
							if j >= n {
								if got == got {
									t.Fatalf("%s: rows m %d n %d kc %d colA %v: padding c[%d*ldc+%d] written (%v)", v, m, n, kc, colA, i, j, got)
								}
								continue
							}
							var want T
							for p := 0; p < kc; p++ {
								want += a[i*ars+p*acs] * b[p*ldb+j]
							}
							if got != want {
								t.Fatalf("%s: rows m %d n %d kc %d colA %v: c[%d*ldc+%d] = %v, want %v", v, m, n, kc, colA, i, j, got, want)
							}
						}
					}
					freeA()
					freeB()
					freeC()
				}
			}
		}
	}
}

func TestRowsKernels(t *testing.T) {
	defer Use("")
	for _, v := range Variants() {
		if err := Use(v); err != nil {
			t.Fatal(err)
		}
		checkRows(t, v, sgemmSlot.Rows)
		checkRows(t, v, dgemmSlot.Rows)
	}
}

// The rows version splits N into blocks whose width depends on M (passes.rowsWidth: RowsNB for one
// or two rows, a page of B for three and four): every variant's Sgemm and Dgemm of 1…4 rows against
// the definition, at widths around one and several blocks (1024 f32 / 512 f64 columns, RowsNB 2048
// or the lock's) with a partial last block, and alpha, beta applied once. Small integer values keep
// the sums exact.
func TestRowsBlockWidths(t *testing.T) {
	defer Use("")
	for _, v := range Variants() {
		if err := Use(v); err != nil {
			t.Fatal(err)
		}
		for m := 1; m <= 4; m++ {
			for _, n := range []int{511, 513, 1023, 1025, 2500, 4097} {
				for _, k := range []int{1, 7, 33} {
					a, b := make([]float64, m*k), make([]float64, k*n)
					for i := range a {
						a[i] = float64((i*7)%5 - 2)
					}
					for i := range b {
						b[i] = float64((i*3)%7 - 3)
					}
					want := make([]float64, m*n)
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							var s float64
							for p := 0; p < k; p++ {
								s += a[i*k+p] * b[p*n+j]
							}
							want[i*n+j] = 2*s - 3*float64(i+j%3)
						}
					}
					c64 := make([]float64, m*n)
					c32 := make([]float32, m*n)
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							c64[i*n+j], c32[i*n+j] = float64(i+j%3), float32(i+j%3)
						}
					}
					a32, b32 := make([]float32, len(a)), make([]float32, len(b))
					for i := range a {
						a32[i] = float32(a[i])
					}
					for i := range b {
						b32[i] = float32(b[i])
					}
					if err := Dgemm(m, k, n, a, b, c64, 2, -3); err != nil {
						t.Fatal(err)
					}
					if err := Sgemm(m, k, n, a32, b32, c32, 2, -3); err != nil {
						t.Fatal(err)
					}
					for i := range want {
						if c64[i] != want[i] || float64(c32[i]) != want[i] {
							t.Fatalf("%s m=%d n=%d k=%d: C[%d] = %v (f64), %v (f32), want %v", v, m, n, k, i, c64[i], c32[i], want[i])
						}
					}
				}
			}
		}
	}
}
