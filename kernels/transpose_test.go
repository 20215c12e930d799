package kernels

import (
	"math/rand/v2"
	"testing"
)

// tileShapes are the rows×cols of the transpose tiles tested directly: every edge of the 8×8 (AVX2
// f32), 4×4 and 2×2 register blocks, and a few whole-block shapes.
func tileShapes() [][2]int {
	var out [][2]int
	for r := 1; r <= 18; r++ {
		for c := 1; c <= 18; c++ {
			out = append(out, [2]int{r, c})
		}
	}
	return append(out, [2]int{32, 32}, [2]int{33, 31}, [2]int{16, 40}, [2]int{41, 9})
}

// testTransposeSlot runs a transpose slot's routine under every variant on every tile shape, with tight
// and padded strides: each element must land at dst[c*ldd+r], and the padding between the tile's
// destination runs must stay untouched.
func testTransposeSlot[T float32 | float64](t *testing.T, name string, slot func() (string, func(int, int, []T, int, []T, int))) {
	defer Use("")
	rng := rand.New(rand.NewPCG(5, 6))
	for _, v := range Variants() {
		if err := Use(v); err != nil {
			t.Fatal(err)
		}
		if got, _ := slot(); got != v {
			t.Fatalf("%s: variant %s installed %q in the slot", name, v, got)
		}
		_, f := slot()
		for _, sh := range tileShapes() {
			rows, cols := sh[0], sh[1]
			for _, pad := range [][2]int{{0, 0}, {3, 5}, {1, 0}, {0, 7}} {
				lds, ldd := cols+pad[0], rows+pad[1]
				src := make([]T, (rows-1)*lds+cols)
				for i := range src {
					src[i] = T(rng.IntN(1 << 20))
				}
				dst := make([]T, (cols-1)*ldd+rows)
				const sentinel = -7
				for i := range dst {
					dst[i] = sentinel
				}
				f(rows, cols, src, lds, dst, ldd)
				for i := range dst {
					c, r := i/ldd, i%ldd
					want := T(sentinel)
					if r < rows {
						want = src[r*lds+c]
					}
					if dst[i] != want {
						t.Fatalf("%s, variant %s, %d×%d lds %d ldd %d: dst[%d] (c %d, r %d) = %v, want %v", name, v, rows, cols, lds, ldd, i, c, r, dst[i], want)
					}
				}
			}
		}
	}
}

func TestTransposeSlot32(t *testing.T) {
	testTransposeSlot(t, "transpose", func() (string, func(int, int, []float32, int, []float32, int)) {
		return transposeSlot.Name, transposeSlot.T
	})
}

func TestTransposeSlot64(t *testing.T) {
	testTransposeSlot(t, "dtranspose", func() (string, func(int, int, []float64, int, []float64, int)) {
		return dtransposeSlot.Name, dtransposeSlot.T
	})
}

// TestTransposeSlotBadBounds: a routine given slices shorter than the tile (or a negative stride) must
// not touch memory from assembly; the adapter runs the portable routine, which panics like a Go bounds
// check. Empty tiles do nothing.
func TestTransposeSlotBadBounds(t *testing.T) {
	defer Use("")
	for _, v := range Variants() {
		Use(v)
		src, dst := make([]float32, 64), make([]float32, 64)
		transposeSlot.T(0, 8, src, 8, dst, 8)
		transposeSlot.T(8, 0, src, 8, dst, 8)
		transposeSlot.T(-1, 8, src, 8, dst, 8)
		for _, c := range []struct{ rows, cols, lds, ldd, ns, nd int }{
			{8, 8, 8, 8, 63, 64}, {8, 8, 8, 8, 64, 63}, {8, 8, 9, 8, 64, 64}, {8, 8, 8, 9, 64, 64},
			{8, 8, -8, 8, 64, 64}, {2, 8, 1 << 62, 8, 64, 64},
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("variant %s, %+v: no panic", v, c)
					}
				}()
				transposeSlot.T(c.rows, c.cols, src[:c.ns], c.lds, dst[:c.nd], c.ldd)
			}()
		}
		for i := range dst {
			if dst[i] != 0 {
				t.Fatalf("variant %s: empty or failed tiles wrote dst[%d]", v, i)
			}
		}
	}
}

// TestTransposeKernelShapes checks Transpose and Dtranspose against a naive loop on shapes around the
// 32×32 (f32) and 16×16 (f64) blocks, under every variant.
func TestTransposeKernelShapes(t *testing.T) {
	defer Use("")
	rng := rand.New(rand.NewPCG(1, 2))
	for _, v := range Variants() {
		Use(v)
		for _, sh := range [][2]int{{1, 1}, {1, 100}, {100, 1}, {31, 33}, {64, 64}, {65, 97}, {130, 7}, {257, 129}} {
			m, n := sh[0], sh[1]
			a := make([]float32, m*n)
			ad := make([]float64, m*n)
			for i := range a {
				a[i] = rng.Float32()
				ad[i] = rng.Float64()
			}
			b, bd := make([]float32, n*m), make([]float64, n*m)
			if err := Transpose(m, n, a, b); err != nil {
				t.Fatal(err)
			}
			if err := Dtranspose(m, n, ad, bd); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					if b[j*m+i] != a[i*n+j] || bd[j*m+i] != ad[i*n+j] {
						t.Fatalf("variant %s, %d×%d: element (%d, %d) wrong", v, m, n, i, j)
					}
				}
			}
		}
	}
}
