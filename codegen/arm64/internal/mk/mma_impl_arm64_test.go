//go:build !purego

package mk

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/passes"
	"github.com/kgen-dev/kgen/target"
)

// TestMicrokernelsImplementMMA: each register-tile shape the MMA table lists for arm64
// (target.MMAShapes "arm64:neon") has a generated microkernel of that tile, and the microkernel
// computes what the IR says the MMA computes — the reference is the microkernel contract written as MMA
// nodes and expanded by passes.MMALower, interpreted in Exact mode (passes.MicroReference) — within
// the FMA bound of check, on random edge tiles, kc, epilogues and betas (the padding rows and columns of
// the panels hold NaN: neither side may read them).
func TestMicrokernelsImplementMMA(t *testing.T) {
	shapes := target.MMAShapes("arm64:neon")
	if len(shapes) < 2 {
		t.Fatalf("only %d arm64 MMA shapes in the table", len(shapes))
	}
	for _, s := range shapes {
		name := fmt.Sprintf("arm64:neon %dx%d %s", s.M, s.N, s.In)
		found := false
		switch s.In {
		case ir.F32:
			for _, k := range kernels32 {
				if k.mr == s.M && k.nr == s.N {
					found = true
					implementsMMA(t, k, ir.F32)
				}
			}
		case ir.F64:
			for _, k := range kernels64 {
				if k.mr == s.M && k.nr == s.N {
					found = true
					implementsMMA(t, k, ir.F64)
				}
			}
		}
		if !found {
			t.Errorf("%s: the MMA table lists it, but no generated microkernel has that tile", name)
		}
	}
}

func implementsMMA[T float](t *testing.T, k kernel[T], elem ir.DType) {
	rng := rand.New(rand.NewSource(int64(k.mr*100 + k.nr)))
	u, tiny := precision[T]()
	f64 := func(s []T) []float64 {
		out := make([]float64, len(s))
		for i, v := range s {
			out[i] = float64(v)
		}
		return out
	}
	for trial := 0; trial < 24; trial++ {
		p := newProblem[T](rng, k.mr, k.nr)
		call := passes.MicroCall{Elem: elem, MR: k.mr, NR: k.nr, KC: p.kc, M: p.m, N: p.n, LDC: p.ldc,
			A: f64(p.a[:p.kc*k.mr]), B: f64(p.b[:p.kc*k.nr]), C: f64(p.c0), Bias: f64(p.bias),
			Alpha: float64(p.alpha), Beta: float64(p.beta), EP: p.ep}
		want, err := passes.MicroReference(call, ir.Exact)
		if err != nil {
			t.Fatal(err)
		}
		_, g := p.reference() // the error scale only
		c := append([]T(nil), p.c0...)
		p.run(k.fn, c)
		tol := 2 * float64(p.kc+3) * u
		for idx := range c {
			i, j := idx/p.ldc, idx%p.ldc
			got, w := float64(c[idx]), want[idx]
			ok := got == w
			if i < p.m && j < p.n {
				switch {
				case math.IsNaN(w):
					ok = math.IsNaN(got)
				case math.IsInf(w, 0):
					ok = got == w
				default:
					ok = math.Abs(got-w) <= tol*g[i*p.n+j]+4*tiny
				}
			}
			if !ok {
				t.Fatalf("%s %v: C[%d][%d] = %v, the MMA expansion gives %v", k.name, p, i, j, got, w)
			}
		}
	}
}
