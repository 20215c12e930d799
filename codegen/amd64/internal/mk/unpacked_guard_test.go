//go:build amd64 && !purego && linux

package mk

import (
	"math/rand/v2"
	"testing"
)

// testGuardU runs every shape m×n, for row-major and transposed A, ldb = n
// and n+3, kc in {1, 5, 17} (and 0), with each of A, B, C and bias ending
// exactly at a PROT_NONE page (and, in a second pass, starting right after
// one). A's last element is A(m-1, kc-1), B's is B(kc-1, n-1): a read of a
// row of A past m, of a column of B past n, or of a k step past kc faults.
func testGuardU[T float](t *testing.T, k kernelU[T]) {
	ga, gb, gc, gbias := newGuarded(t, 4), newGuarded(t, 4), newGuarded(t, 4), newGuarded(t, 1)
	rng := rand.New(rand.NewPCG(3, 5))
	for m := 1; m <= k.mr; m++ {
		for n := 1; n <= k.nr; n++ {
			for _, layout := range []int{layoutRow, layoutTrans} {
				for _, ldb := range []int{n, n + 3} {
					for _, kc := range []int{0, 1, 5, 17} {
						p := newProblemU[T](rng, k.mr, k.nr, kc, m, n, n, ldb, layout)
						p.ep = 3
						if kc == 5 {
							p.beta = 0
						}
						for _, atEnd := range []bool{true, false} {
							place := guardedAtStart[T]
							if atEnd {
								place = guardedAtEnd[T]
							}
							a, b := place(ga, len(p.ua)), place(gb, len(p.ub))
							c, bias := place(gc, len(p.c0)), place(gbias, n)
							copy(a, p.ua)
							copy(b, p.ub)
							copy(c, p.c0)
							copy(bias, p.bias)
							p.check(t, k.name+" "+p.String(), p.runU(k, a, b, c, bias))
						}
					}
				}
			}
		}
	}
}

func TestGuardPageUF32(t *testing.T) {
	for _, k := range f32KernelsU {
		forModes(t, k.name, k.isa, func(t *testing.T, mode string) { testGuardU(t, k.in(t, mode)) })
	}
}

func TestGuardPageUF64(t *testing.T) {
	for _, k := range f64KernelsU {
		forModes(t, k.name, k.isa, func(t *testing.T, mode string) { testGuardU(t, k.in(t, mode)) })
	}
}
