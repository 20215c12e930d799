package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// TestElementwiseSplit runs the strip-mined one-dimensional kernels (passes.stripVector: Gelu, Saxpy)
// on one worker and on two, on every variant, at lengths around the SIMD groups, the 256-element chunk
// grain and the split thresholds (gelu from 17476 elements, saxpy from 131072): the two results must
// be equal bit for bit (each element takes the same code path; only the worker differs), and gelu
// within 1e-5 of a float64 reference. Where a variant has a vector loop, the goroutines that run it
// are counted: one below the threshold, two from four times it.
func TestElementwiseSplit(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer Use("")
	rng := rand.New(rand.NewPCG(59, 61))
	for _, v := range Variants() {
		if err := Use(v); err != nil {
			t.Fatal(err)
		}
		var ids goroutines
		note := ids.note
		gelu0, saxpy0 := vloop_gelu_0, vloop_saxpy_0
		if gelu0 != nil {
			vloop_gelu_0 = func(lo, hi int, t0 []float32, o0 int, t1 []float32, o1 int, c0, c1, c2 float32) int {
				note()
				return gelu0(lo, hi, t0, o0, t1, o1, c0, c1, c2)
			}
		}
		if saxpy0 != nil {
			vloop_saxpy_0 = func(lo, hi int, t0 []float32, o0 int, t1 []float32, o1 int, c0 float32) int {
				note()
				return saxpy0(lo, hi, t0, o0, t1, o1, c0)
			}
		}
		for _, n := range []int{1, 3, 4, 5, 255, 256, 257, 4099, 17475, 70001, 131071, 4 * 131072, 4*131072 + 13} {
			x, y := randSlice(n, rng), randSlice(n, rng)
			var got [2][2][]float32 // [workers-1][kernel]
			var split [2][2]int     // goroutines that ran the vector loop
			for w := 1; w <= 2; w++ {
				runtime.GOMAXPROCS(w)
				g := make([]float32, n)
				ids.reset()
				noErr(t, Gelu(n, x, g))
				split[w-1][0] = ids.count()
				s := slices.Clone(y)
				ids.reset()
				noErr(t, Saxpy(n, x, s, -0.75))
				split[w-1][1] = ids.count()
				got[w-1] = [2][]float32{g, s}
			}
			for k, name := range []string{"gelu", "saxpy"} {
				for i := range n {
					if math.Float32bits(got[0][k][i]) != math.Float32bits(got[1][k][i]) {
						t.Fatalf("%s %s n=%d: element %d is %v on one worker and %v on two", v, name, n, i, got[0][k][i], got[1][k][i])
					}
				}
			}
			for i := range n {
				xi := float64(x[i])
				want := xi / (1 + math.Exp(-1.5957691216*(xi+0.044715*xi*xi*xi)))
				if math.Abs(float64(got[0][0][i])-want) > 1e-5*max(1, math.Abs(want)) {
					t.Fatalf("%s gelu n=%d: element %d is %v, want %v", v, n, i, got[0][0][i], want)
				}
			}
			for k, threshold := range []int{17476, 131072} {
				if (k == 0 && gelu0 == nil) || (k == 1 && saxpy0 == nil) || n < 1024 {
					continue
				}
				want := 0
				switch {
				case n < threshold:
					want = 1
				case n >= 4*threshold:
					want = 2
				}
				if split[0][k] != 1 || (want > 0 && split[1][k] != want) {
					t.Errorf("%s %s n=%d: the vector loop ran on %d goroutines on one worker and %d on two, want 1 and %d", v, []string{"gelu", "saxpy"}[k], n, split[0][k], split[1][k], want)
				}
			}
		}
		vloop_gelu_0, vloop_saxpy_0 = gelu0, saxpy0
	}
}

// BenchmarkElementwiseSplit times Gelu and Saxpy from 2^14 to 2^20 elements, one call per op: with
// -cpu 1,2 it shows where the strip-mined loop's second worker pays (docs/PERF.md, "Session 13").
//
//	go test -run '^$' -bench ElementwiseSplit -cpu 1,2 -count 6 ./kernels
func BenchmarkElementwiseSplit(b *testing.B) {
	rng := rand.New(rand.NewPCG(63, 65))
	for _, n := range []int{1 << 14, 1 << 15, 1 << 16, 1 << 17, 1 << 18, 1 << 20} {
		x, y, z := randSlice(n, rng), randSlice(n, rng), make([]float32, n)
		b.Run(fmt.Sprintf("gelu/%d", n), func(b *testing.B) {
			b.ResetTimer()
			for range b.N {
				noErr(b, Gelu(n, x, z))
			}
		})
		b.Run(fmt.Sprintf("saxpy/%d", n), func(b *testing.B) {
			b.ResetTimer()
			for range b.N {
				noErr(b, Saxpy(n, x, y, 0.5))
			}
		})
	}
}

// noErr fails tb on a kernel's error (vloop_*_test.go's must is per architecture).
func noErr(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}
