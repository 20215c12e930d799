//go:build linux

package kernels

import (
	"math"
	"testing"

	"github.com/kgen-dev/kgen/kgentest"
)

// guarded returns n elements of T that end exactly where a PROT_NONE page begins, so that a read or
// write past the end faults; release frees the mapping.
func guarded[T float32 | float64](t *testing.T, n int) (s []T, release func()) {
	t.Helper()
	return kgentest.Guarded[T](n, true)
}

// checkPackD runs the variant's packD against the definition on every small panel shape, with both
// operands ending at a guard page and the destination's zero columns pre-poisoned with NaN.
func checkPackD[T float32 | float64](t *testing.T, v string, packD func(dst, src []T, ld, w, panel, depth int)) {
	for _, panel := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 14, 16, 17, 32} {
		for w := 1; w <= panel; w++ {
			for _, depth := range []int{1, 2, 3, 4, 5, 7, 8, 9, 17, 33} {
				for _, pad := range []int{0, 3} {
					ld := depth + pad
					src, freeSrc := guarded[T](t, (w-1)*ld+depth)
					for i := range src {
						src[i] = T(i + 1)
					}
					dst, freeDst := guarded[T](t, panel*depth)
					for i := range dst {
						dst[i] = T(math.NaN())
					}
					packD(dst, src, ld, w, panel, depth)
					for p := 0; p < depth; p++ {
						for q := 0; q < panel; q++ {
							want := T(0)
							if q < w {
								want = src[q*ld+p]
							}
							if got := dst[p*panel+q]; got != want {
								t.Fatalf("%s: packD panel %d w %d depth %d ld %d: dst[%d*panel+%d] = %v, want %v",
									v, panel, w, depth, ld, p, q, got, want)
							}
						}
					}
					freeSrc()
					freeDst()
				}
			}
		}
	}
}

// checkPackPB runs the variant's packPB (all the panels of a block, row by row) against the definition.
func checkPackPB[T float32 | float64](t *testing.T, v string, packPB func(dst, src []T, ld, n, panel, depth int)) {
	for _, panel := range []int{1, 3, 6, 8, 14, 16, 17, 32} {
		for _, n := range []int{1, 2, panel - 1, panel, panel + 1, 3*panel + 5, 40} {
			if n < 1 {
				continue
			}
			np := (n + panel - 1) / panel
			for _, depth := range []int{1, 2, 7, 8, 9, 17, 33} { // packPB copies 8 rows at a time
				for _, pad := range []int{0, 5} {
					ld := n + pad
					src, freeSrc := guarded[T](t, (depth-1)*ld+n)
					for i := range src {
						src[i] = T(i + 1)
					}
					dst, freeDst := guarded[T](t, np*panel*depth)
					for i := range dst {
						dst[i] = T(math.NaN())
					}
					packPB(dst, src, ld, n, panel, depth)
					for p := 0; p < np; p++ {
						for d := 0; d < depth; d++ {
							for q := 0; q < panel; q++ {
								want := T(0)
								if c := p*panel + q; c < n {
									want = src[d*ld+c]
								}
								if got := dst[p*panel*depth+d*panel+q]; got != want {
									t.Fatalf("%s: packPB panel %d n %d depth %d ld %d: panel %d row %d col %d = %v, want %v",
										v, panel, n, depth, ld, p, d, q, got, want)
								}
							}
						}
					}
					freeSrc()
					freeDst()
				}
			}
		}
	}
}

func TestPackRoutines(t *testing.T) {
	defer Use("")
	for _, v := range Variants() {
		if err := Use(v); err != nil {
			t.Fatal(err)
		}
		checkPackD(t, v, packD32)
		checkPackD(t, v, packD64)
		checkPackPB(t, v, packPB32)
		checkPackPB(t, v, packPB64)
	}
}
