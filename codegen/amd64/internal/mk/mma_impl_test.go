//go:build amd64 && !purego

package mk

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/passes"
	"github.com/kgen-dev/kgen/target"
)

// TestMicrokernelsImplementMMA: each register-tile shape the MMA table lists for amd64
// (target.MMAShapes "amd64:avx2", "amd64:avx512") has a generated microkernel of that tile, and the
// microkernel computes what the IR says the MMA computes — the reference is the microkernel contract
// written as MMA nodes and expanded by passes.MMALower, interpreted in Exact mode
// (passes.MicroReference) — within the FMA-reordering bound 2·(kc+4)·u·G (GEMM-NOTES §6), on edge tiles,
// kc 0..33, every epilogue, and beta = 0 over NaN. The bf16 pair-panel shape has its own model test
// (TestBF16Model): its panels interleave K pairs, a layout the contract's Panel does not describe.
func TestMicrokernelsImplementMMA(t *testing.T) {
	checked := 0
	for _, key := range []string{"amd64:avx2", "amd64:avx512"} {
		isa := strings.TrimPrefix(key, "amd64:")
		for _, s := range target.MMAShapes(key) {
			if s.In == ir.BF16 {
				continue
			}
			name := fmt.Sprintf("%s %dx%d %s", key, s.M, s.N, s.In)
			found := false
			switch s.In {
			case ir.F32:
				for _, k := range f32Kernels {
					if k.isa == isa && k.mr == s.M && k.nr == s.N {
						found = true
						forModes(t, k.name, k.isa, func(t *testing.T, mode string) { implementsMMA(t, k.in(t, mode), ir.F32) })
					}
				}
			case ir.F64:
				for _, k := range f64Kernels {
					if k.isa == isa && k.mr == s.M && k.nr == s.N {
						found = true
						forModes(t, k.name, k.isa, func(t *testing.T, mode string) { implementsMMA(t, k.in(t, mode), ir.F64) })
					}
				}
			}
			if !found {
				t.Errorf("%s: the MMA table lists it, but no generated microkernel has that tile", name)
			}
			checked++
		}
	}
	if checked < 4 {
		t.Errorf("only %d amd64 MMA shapes in the table", checked)
	}
}

func implementsMMA[T float](t *testing.T, k kernel[T], elem ir.DType) {
	rng := rand.New(rand.NewPCG(uint64(k.mr), 7))
	u := unitRoundoff[T]()
	for _, kc := range []int{0, 1, 2, 7, 33} {
		for trial := 0; trial < 8; trial++ {
			m, n := 1+rng.IntN(k.mr), 1+rng.IntN(k.nr)
			switch trial {
			case 0, 1:
				m, n = k.mr, k.nr
			case 2:
				m, n = 1, 1
			}
			ldc := n + rng.IntN(5)
			p := newProblem[T](rng, k.mr, k.nr, kc, m, n, ldc)
			p.ep = trial % 4
			if trial%3 == 0 {
				p.beta = 0
				for i := 0; i < m; i++ {
					for j := 0; j < n; j++ {
						p.c0[i*ldc+j] = T(math.NaN())
					}
				}
			}
			f64 := func(s []T) []float64 {
				out := make([]float64, len(s))
				for i, v := range s {
					out[i] = float64(v)
				}
				return out
			}
			call := passes.MicroCall{Elem: elem, MR: k.mr, NR: k.nr, KC: kc, M: m, N: n, LDC: ldc,
				A: f64(p.a[:kc*k.mr]), B: f64(p.b[:kc*k.nr]), C: f64(p.c0), Bias: f64(p.bias),
				Alpha: float64(p.alpha), Beta: float64(p.beta), EP: p.ep}
			want, err := passes.MicroReference(call, ir.Exact)
			if err != nil {
				t.Fatal(err)
			}
			got := p.run(k, nil, nil)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					g := math.Abs(float64(p.alpha)) * dotAbs(p, i, j)
					if p.beta != 0 {
						g += math.Abs(float64(p.beta) * float64(p.c0[i*ldc+j]))
					}
					if p.ep&1 != 0 {
						g += math.Abs(float64(p.bias[j]))
					}
					r, w := float64(got[i*ldc+j]), want[i*ldc+j]
					if !(math.Abs(r-w) <= 2*float64(kc+4)*u*g+tiny[T]()) {
						t.Fatalf("%s %v: C[%d,%d] = %v, the MMA expansion gives %v", k.name, p, i, j, r, w)
					}
				}
			}
			for idx, x := range got { // outside the tile: untouched
				if i, j := idx/ldc, idx%ldc; (i >= m || j >= n) && float64(x) != want[idx] {
					t.Fatalf("%s %v: C[%d,%d] outside the tile = %v, want %v", k.name, p, i, j, x, want[idx])
				}
			}
		}
	}
}

// dotAbs is Σ_p |A(i,p)|·|B(p,j)| over the packed panels of p.
func dotAbs[T float](p *problem[T], i, j int) float64 {
	s := 0.0
	for q := 0; q < p.kc; q++ {
		s += math.Abs(float64(p.a[q*p.mr+i])) * math.Abs(float64(p.b[q*p.nr+j]))
	}
	return s
}
