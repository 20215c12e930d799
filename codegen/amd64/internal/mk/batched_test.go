//go:build amd64 && !purego

package mk

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kgen-dev/kgen/codegen/amd64"
	"github.com/kgen-dev/kgen/codegen/amd64/emu"
)

// kernFuncUB is the batched unpacked contract of docs/MICROKERNEL.md ("Batched products").
type kernFuncUB[T float] func(kc int, a *T, ars, acs int, b *T, ldb int, c *T, ldc int, m, n int, alpha, beta T, bias *T, ep, cnt, sa, sb, sc int)

type kernelUB[T float] struct {
	name   string
	isa    string
	mr, nr int
	fn     kernFuncUB[T]
	bind   func(rs ...emu.Region)
}

func (k kernelUB[T]) in(t *testing.T, mode string) kernelUB[T] {
	if mode == "emulated" {
		k.fn, k.bind = emulate[kernFuncUB[T]](t, program(t), k.name)
	} else if !amd64.HostSupports(k.isa) {
		t.Skipf("CPU lacks %s", k.isa)
	}
	return k
}

// The tall-tile companions (amd64.TallName) have the unpacked signature.
var f32KernelsUT = []kernelU[float32]{{name: "sgemm14x32AVX512UT", isa: amd64.AVX512, mr: 14, nr: 16, fn: sgemm14x32AVX512UT}}
var f64KernelsUT = []kernelU[float64]{{name: "dgemm14x16AVX512UT", isa: amd64.AVX512, mr: 14, nr: 8, fn: dgemm14x16AVX512UT}}

var f32KernelsUB = []kernelUB[float32]{
	{name: "sgemm14x32AVX512UB", isa: amd64.AVX512, mr: 14, nr: 32, fn: sgemm14x32AVX512UB},
	{name: "sgemm6x16AVX2UB", isa: amd64.AVX2, mr: 6, nr: 16, fn: sgemm6x16AVX2UB},
}
var f64KernelsUB = []kernelUB[float64]{
	{name: "dgemm14x16AVX512UB", isa: amd64.AVX512, mr: 14, nr: 16, fn: dgemm14x16AVX512UB},
	{name: "dgemm6x8AVX2UB", isa: amd64.AVX2, mr: 6, nr: 8, fn: dgemm6x8AVX2UB},
}

// testTallU runs a tall-tile companion (k.mr: the unpacked tile's MR, k.nr: one vector of columns) on
// every row count MR < m ≤ 2·MR, the column counts 1, VL−1 and VL and k depths around the unroll, A
// row-major (acs = 1, its contract), each with a NaN or an infinity in the last row of A or in B, and
// the epilogue's cases (alpha 1, beta 0 over a C of NaN, bias, ReLU) against the float64 reference;
// C outside the m×n tile must keep its sentinel.
func testTallU[T float](t *testing.T, k kernelU[T]) {
	rng := rand.New(rand.NewPCG(13, uint64(k.mr*100+k.nr)))
	trial := 0
	for m := k.mr + 1; m <= 2*k.mr; m++ {
		for _, n := range []int{1, k.nr - 1, k.nr} {
			for _, kc := range []int{0, 1, 3, 4, 5, 8, 9, 13} {
				trial++
				p := newProblemU[T](rng, 2*k.mr, k.nr, kc, m, n, n+rng.IntN(3), n+rng.IntN(3), layoutRow)
				p.ep = trial % 4
				switch trial % 3 {
				case 0:
					p.beta = 0
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							p.c0[i*p.ldc+j] = T(math.NaN())
						}
					}
				case 1:
					p.alpha = 1
				}
				p.plantSpecial(rng, trial)
				p.check(t, k.name+" "+p.String(), p.runU(k, nil, nil, nil, nil))
			}
		}
	}
}

func TestTallU(t *testing.T) {
	for _, k := range f32KernelsUT {
		forModes(t, k.name, k.isa, func(t *testing.T, mode string) { testTallU(t, k.in(t, mode)) })
	}
	for _, k := range f64KernelsUT {
		forModes(t, k.name, k.isa, func(t *testing.T, mode string) { testTallU(t, k.in(t, mode)) })
	}
}

// testBatchedU runs a batched twin on cnt products laid out sa, sb, sc elements apart (each product's
// operands with NaN in their gaps, C with sentinels around its tile), of up to three row tiles and a
// part, in every A layout (row-major ones take the tall tiles where n fits a vector), with the
// epilogue's cases; each product is checked against its float64 reference, and must be bit for bit
// what the twin computes for it alone (cnt = 1).
func testBatchedU[T float](t *testing.T, k kernelUB[T]) {
	rng := rand.New(rand.NewPCG(17, uint64(k.mr*100+k.nr)))
	for trial := 0; trial < 120; trial++ {
		cnt := 1 + rng.IntN(4)
		m, n := 1+rng.IntN(3*k.mr+2), 1+rng.IntN(k.nr)
		if trial%4 == 0 {
			n = 1 + rng.IntN(max(1, k.nr/2)) // one vector of columns on the 2-vector tiles
		}
		kc := []int{0, 1, 3, 4, 5, 9, 17}[rng.IntN(7)]
		ldc, ldb := n+rng.IntN(3), n+rng.IntN(3)
		layout := trial % numLayouts
		ars, acs := layoutStrides(rng, layout, kc, m)
		ps := make([]*problemU[T], cnt)
		var sa, sb, sc int
		for q := range ps {
			ps[q] = newProblemUStrides[T](rng, m, k.nr, kc, m, n, ldc, ldb, layout, ars, acs)
			sa, sb, sc = max(sa, len(ps[q].ua)+rng.IntN(3)), max(sb, len(ps[q].ub)+rng.IntN(3)), max(sc, len(ps[q].c0)+rng.IntN(3))
		}
		alpha, beta, ep := ps[0].alpha, ps[0].beta, trial%4
		if trial%3 == 0 {
			beta = 0
		}
		if trial%5 == 1 {
			alpha = 1
		}
		nan, sent := T(math.NaN()), T(sentinel)
		a, b, c := make([]T, (cnt-1)*sa+len(ps[0].ua)), make([]T, (cnt-1)*sb+len(ps[0].ub)), make([]T, (cnt-1)*sc+len(ps[0].c0))
		for i := range a {
			a[i] = nan
		}
		for i := range b {
			b[i] = nan
		}
		for i := range c {
			c[i] = sent
		}
		for q, p := range ps {
			p.alpha, p.beta, p.ep, p.bias = alpha, beta, ep, ps[0].bias
			copy(a[q*sa:], p.ua)
			copy(b[q*sb:], p.ub)
			copy(c[q*sc:], p.c0)
		}
		bias := ps[0].bias
		run := func(a, b, c []T, cnt int) {
			if k.bind != nil {
				k.bind(emu.Slice("a", a), emu.Slice("b", b), emu.Slice("c", c), emu.Slice("bias", bias))
			}
			k.fn(kc, &a[0], ars, acs, &b[0], ldb, &c[0], ldc, m, n, alpha, beta, &bias[0], ep, cnt, sa, sb, sc)
		}
		run(a, b, c, cnt)
		for q, p := range ps {
			what := fmt.Sprintf("%s product %d of %d, %s", k.name, q, cnt, p)
			p.check(t, what, c[q*sc:q*sc+len(p.c0)])
			for i := len(p.c0); i < sc && q*sc+i < len(c); i++ {
				if c[q*sc+i] != sent {
					t.Fatalf("%s: C[%d] past the product's tile written", what, q*sc+i)
				}
			}
			alone := append([]T(nil), p.c0...)
			run(p.ua, p.ub, alone, 1)
			for i := range alone {
				if math.Float64bits(float64(alone[i])) != math.Float64bits(float64(c[q*sc+i])) && !(alone[i] != alone[i] && c[q*sc+i] != c[q*sc+i]) {
					t.Fatalf("%s: C[%d] = %v in the batch, %v alone", what, i, c[q*sc+i], alone[i])
				}
			}
		}
	}
}

func TestBatchedU(t *testing.T) {
	for _, k := range f32KernelsUB {
		forModes(t, k.name, k.isa, func(t *testing.T, mode string) { testBatchedU(t, k.in(t, mode)) })
	}
	for _, k := range f64KernelsUB {
		forModes(t, k.name, k.isa, func(t *testing.T, mode string) { testBatchedU(t, k.in(t, mode)) })
	}
}
