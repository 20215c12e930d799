//go:build amd64 && !purego

package mk

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kgen-dev/kgen/codegen/amd64/emu"
)

// unitRoundoff returns u for T.
func unitRoundoff[T float]() float64 {
	var z T
	if _, ok := any(z).(float32); ok {
		return 0x1p-24
	}
	return 0x1p-53
}

// tiny returns a few times the smallest normal of T (covers FTZ-like effects).
func tiny[T float]() float64 {
	var z T
	if _, ok := any(z).(float32); ok {
		return 1e-37
	}
	return 1e-306
}

// problem is one microkernel call: packed panels, C with stride ldc, bias.
type problem[T float] struct {
	mr, nr, kc, m, n, ldc int
	alpha, beta           T
	ep                    int
	a, b, c0, bias        []T
}

// sentinel fills C outside the m×n tile; it must come back unchanged.
const sentinel = -12345.5

func newProblem[T float](rng *rand.Rand, mr, nr, kc, m, n, ldc int) *problem[T] {
	p := &problem[T]{mr: mr, nr: nr, kc: kc, m: m, n: n, ldc: ldc}
	p.a = make([]T, max(kc, 1)*mr)
	p.b = make([]T, max(kc, 1)*nr)
	for q := 0; q < kc; q++ {
		for i := 0; i < m; i++ { // rows past the edge stay zero (contract)
			p.a[q*mr+i] = T(rng.Float64()*2 - 1)
		}
		for j := 0; j < n; j++ {
			p.b[q*nr+j] = T(rng.Float64()*2 - 1)
		}
	}
	p.c0 = make([]T, (m-1)*ldc+n)
	for i := range p.c0 {
		p.c0[i] = sentinel
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			p.c0[i*ldc+j] = T(rng.Float64()*2 - 1)
		}
	}
	p.bias = make([]T, n)
	for j := range p.bias {
		p.bias[j] = T(rng.Float64()*2 - 1)
	}
	p.alpha = T(rng.Float64()*4 - 2)
	p.beta = T(rng.Float64()*4 - 2)
	return p
}

func (p *problem[T]) String() string {
	return fmt.Sprintf("kc=%d m=%d n=%d ldc=%d alpha=%v beta=%v ep=%d", p.kc, p.m, p.n, p.ldc, p.alpha, p.beta, p.ep)
}

// run calls k on a fresh copy of C (or on c if not nil) and returns it.
func (p *problem[T]) run(k kernel[T], c, bias []T) []T {
	if c == nil {
		c = append([]T(nil), p.c0...)
	}
	if bias == nil {
		bias = p.bias
	}
	var bp *T
	if len(bias) > 0 {
		bp = &bias[0]
	}
	if k.bind != nil {
		k.bind(emu.Slice("a", p.a), emu.Slice("b", p.b), emu.Slice("c", c), emu.Slice("bias", bias))
	}
	k.fn(p.kc, &p.a[0], &p.b[0], &c[0], p.ldc, p.m, p.n, p.alpha, p.beta, bp, p.ep)
	return c
}

// check compares got with a float64 reference (verify) and reports the
// first differences on t.
func (p *problem[T]) check(t *testing.T, name string, got []T) {
	t.Helper()
	bad := p.verify(name, got)
	for i, msg := range bad {
		if i == 5 {
			t.Errorf("%s %v: %d bad elements in all", name, p, len(bad))
			break
		}
		t.Error(msg)
	}
}

// verify compares got with a float64 reference; the tolerance is
// 2·(kc+4)·u·G + τ with G = |α|Σ|a||b| + |β||C₀| + |bias| (GEMM-NOTES §6).
// Elements of C outside the m×n tile must still hold the sentinel.
func (p *problem[T]) verify(name string, got []T) []string {
	u := unitRoundoff[T]()
	var bad []string
	for i := 0; i < p.m; i++ {
		for j := 0; j < p.n; j++ {
			var acc, g float64
			for q := 0; q < p.kc; q++ {
				x, y := float64(p.a[q*p.mr+i]), float64(p.b[q*p.nr+j])
				acc += x * y
				g += math.Abs(x) * math.Abs(y)
			}
			v := float64(p.alpha) * acc
			g *= math.Abs(float64(p.alpha))
			if p.beta != 0 {
				c0 := float64(p.c0[i*p.ldc+j])
				v += float64(p.beta) * c0
				g += math.Abs(float64(p.beta) * c0)
			}
			if p.ep&1 != 0 {
				v += float64(p.bias[j])
				g += math.Abs(float64(p.bias[j]))
			}
			if p.ep&2 != 0 && v < 0 {
				v = 0
			}
			r := float64(got[i*p.ldc+j])
			ok := true
			switch {
			case math.IsNaN(v):
				ok = math.IsNaN(r)
			case math.IsInf(v, 0):
				ok = r == v
			default:
				ok = math.Abs(r-v) <= 2*float64(p.kc+4)*u*g+tiny[T]()
			}
			if !ok {
				bad = append(bad, fmt.Sprintf("%s %v: C[%d,%d] = %v, want %v", name, p, i, j, r, v))
			}
		}
	}
	for idx, x := range got {
		i, j := idx/p.ldc, idx%p.ldc
		if i < p.m && j < p.n {
			continue
		}
		if x != sentinel {
			bad = append(bad, fmt.Sprintf("%s %v: C[%d,%d] outside the tile was written: %v", name, p, i, j, x))
		}
	}
	return bad
}

var kcs = []int{0, 1, 2, 3, 4, 5, 7, 17, 64, 255, 1000}

func testDifferential[T float](t *testing.T, k kernel[T]) {
	rng := rand.New(rand.NewPCG(uint64(k.mr), uint64(k.nr)))
	for _, kc := range kcs {
		for trial := 0; trial < 24; trial++ {
			m, n := 1+rng.IntN(k.mr), 1+rng.IntN(k.nr)
			switch trial {
			case 0, 1, 2, 3:
				m, n = k.mr, k.nr // full tile, each ep
			case 4:
				m, n = 1, 1
			case 5:
				m, n = k.mr, 1
			case 6:
				m, n = 1, k.nr
			}
			ldc := n + 1 + rng.IntN(7)
			p := newProblem[T](rng, k.mr, k.nr, kc, m, n, ldc)
			p.ep = trial % 4
			switch trial % 3 {
			case 0: // beta == 0: C must not be read, NaN must not leak
				p.beta = 0
				if trial%2 == 0 {
					p.beta = T(math.Copysign(0, -1))
				}
				for i := 0; i < m; i++ {
					for j := 0; j < n; j++ {
						p.c0[i*ldc+j] = T(math.NaN())
					}
				}
			case 1:
				p.beta = 1
			}
			if trial == 7 {
				p.alpha = 1
			}
			p.check(t, k.name, p.run(k, nil, nil))
		}
	}
}

func TestDifferentialF32(t *testing.T) {
	for _, k := range f32Kernels {
		forModes(t, k.name, k.isa, func(t *testing.T, mode string) { testDifferential(t, k.in(t, mode)) })
	}
}

func TestDifferentialF64(t *testing.T) {
	for _, k := range f64Kernels {
		forModes(t, k.name, k.isa, func(t *testing.T, mode string) { testDifferential(t, k.in(t, mode)) })
	}
}

// testSpecial injects NaN and ±Inf into A, B, C and bias and checks that
// they propagate exactly as in the reference (NaN stays NaN through ReLU).
func testSpecial[T float](t *testing.T, k kernel[T]) {
	rng := rand.New(rand.NewPCG(7, uint64(k.nr)))
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1)}
	for trial := 0; trial < 200; trial++ {
		kc := kcs[rng.IntN(len(kcs))]
		m, n := 1+rng.IntN(k.mr), 1+rng.IntN(k.nr)
		p := newProblem[T](rng, k.mr, k.nr, kc, m, n, n+1+rng.IntN(3))
		p.ep = rng.IntN(4)
		if trial%4 == 0 {
			p.beta = 0
		}
		s := T(specials[rng.IntN(len(specials))])
		switch where := rng.IntN(4); {
		case where == 0 && kc > 0:
			p.a[rng.IntN(kc)*k.mr+rng.IntN(m)] = s
		case where == 1 && kc > 0:
			p.b[rng.IntN(kc)*k.nr+rng.IntN(n)] = s
		case where == 2:
			p.c0[rng.IntN(m)*p.ldc+rng.IntN(n)] = s
		default:
			p.bias[rng.IntN(n)] = s
		}
		p.check(t, k.name, p.run(k, nil, nil))
	}
}

func TestSpecialF32(t *testing.T) {
	for _, k := range f32Kernels {
		forModes(t, k.name, k.isa, func(t *testing.T, mode string) { testSpecial(t, k.in(t, mode)) })
	}
}

func TestSpecialF64(t *testing.T) {
	for _, k := range f64Kernels {
		forModes(t, k.name, k.isa, func(t *testing.T, mode string) { testSpecial(t, k.in(t, mode)) })
	}
}
