//go:build amd64 && !purego && linux

package mk

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBF16GuardPage runs every edge shape m×n of the bf16 kernels, with kc odd and even, with the pair
// panels (exactly ⌈kc/2⌉·MR and ⌈kc/2⌉·NR words), C and bias each flush against a PROT_NONE page, at the
// end and at the start: a read past the last pair, or outside the m×n tile of C, or past bias[n-1],
// faults. The results are checked against the model too.
func TestBF16GuardPage(t *testing.T) {
	skipUnlessBF16(t)
	for _, k := range bf16Kernels {
		ga, gb, gc, gbias := newGuarded(t, 4), newGuarded(t, 4), newGuarded(t, 4), newGuarded(t, 1)
		rng := rand.New(rand.NewPCG(9, 10))
		for m := 1; m <= k.mr; m++ {
			for n := 1; n <= k.nr; n++ {
				for _, kc := range []int{1, 2, 5, 18} {
					ldc := n + (m+n)%3
					p := newBF16Problem(rng, k.mr, k.nr, kc, m, n, ldc, false)
					p.beta = 0
					for _, atEnd := range []bool{true, false} {
						place := guardedAtStart[float32]
						if atEnd {
							place = guardedAtEnd[float32]
						}
						af, bf := place(ga, len(p.a)), place(gb, len(p.b))
						c, bias := place(gc, len(p.c0)), place(gbias, n)
						for i, w := range p.a {
							af[i] = math.Float32frombits(w)
						}
						for i, w := range p.b {
							bf[i] = math.Float32frombits(w)
						}
						copy(c, p.c0)
						copy(bias, p.bias)
						a, b := words32(af), words32(bf)
						p.checkExact(t, k.name, p.run(k, a, b, c, bias))
					}
				}
			}
		}
	}
}
