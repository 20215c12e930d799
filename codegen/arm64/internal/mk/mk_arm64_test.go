//go:build !purego

package mk

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
	"unsafe"
)

type float interface{ ~float32 | ~float64 }

type kernFn[T float] func(kc int, a, b, c *T, ldc int, m, n int, alpha, beta T, bias *T, ep int)

type kernel[T float] struct {
	name   string
	mr, nr int
	fn     kernFn[T]
}

var (
	kernels32 = []kernel[float32]{
		{"sgemm8x12", 8, 12, sgemm8x12},
		{"sgemm4x16", 4, 16, sgemm4x16},
		{"sgemm4x20", 4, 20, sgemm4x20},
	}
	kernels64 = []kernel[float64]{
		{"dgemm6x8", 6, 8, dgemm6x8},
		{"dgemm8x6", 8, 6, dgemm8x6},
	}
	kcs = []int{0, 1, 2, 3, 5, 7, 17, 64, 255}
)

// unit roundoff and smallest normal of T.
func precision[T float]() (u, tiny float64) {
	var z T
	if unsafe.Sizeof(z) == 4 {
		return 0x1p-24, 0x1p-126
	}
	return 0x1p-53, 0x1p-1022
}

// problem is one microkernel call: packed panels, C with sentinels, bias.
type problem[T float] struct {
	mr, nr, kc, m, n, ldc int
	alpha, beta           T
	ep                    int
	a, b, c0, bias        []T
}

const sentinel = -12345.25

func newProblem[T float](rng *rand.Rand, mr, nr int) *problem[T] {
	p := &problem[T]{mr: mr, nr: nr}
	p.m, p.n = 1+rng.Intn(mr), 1+rng.Intn(nr)
	p.kc = kcs[rng.Intn(len(kcs))]
	p.ldc = p.n + 1 + rng.Intn(5)
	p.alpha = T([]float64{1, -1, 0.5, 2.25, rng.NormFloat64()}[rng.Intn(5)])
	p.beta = T([]float64{0, 0, 1, -0.75, rng.NormFloat64()}[rng.Intn(5)])
	p.ep = rng.Intn(4)
	rebuild(p, rng)
	p.bias = make([]T, nr+2)
	for j := range p.bias {
		p.bias[j] = T(rng.NormFloat64())
	}
	return p
}

// reference returns R[i][j] and the error scale G[i][j] (GEMM-NOTES §6), in float64.
func (p *problem[T]) reference() (r, g []float64) {
	r, g = make([]float64, p.m*p.n), make([]float64, p.m*p.n)
	for i := 0; i < p.m; i++ {
		for j := 0; j < p.n; j++ {
			var acc, abs float64
			for k := 0; k < p.kc; k++ {
				x, y := float64(p.a[k*p.mr+i]), float64(p.b[k*p.nr+j])
				acc += x * y
				abs += math.Abs(x * y)
			}
			v := float64(p.alpha) * acc
			gg := math.Abs(float64(p.alpha)) * abs
			if p.beta != 0 {
				c := float64(p.c0[i*p.ldc+j])
				v += float64(p.beta) * c
				gg += math.Abs(float64(p.beta) * c)
			}
			if p.ep&1 != 0 {
				v += float64(p.bias[j])
				gg += math.Abs(float64(p.bias[j]))
			}
			if p.ep&2 != 0 && v < 0 {
				v = 0
			}
			r[i*p.n+j], g[i*p.n+j] = v, gg
		}
	}
	return r, g
}

func (p *problem[T]) String() string {
	return fmt.Sprintf("kc=%d m=%d n=%d ldc=%d alpha=%v beta=%v ep=%d", p.kc, p.m, p.n, p.ldc, p.alpha, p.beta, p.ep)
}

func (p *problem[T]) run(fn kernFn[T], c []T) {
	fn(p.kc, &p.a[0], &p.b[0], &c[0], p.ldc, p.m, p.n, p.alpha, p.beta, &p.bias[0], p.ep)
}

// check compares c with the reference and checks that everything outside m×n is untouched.
func (p *problem[T]) check(t *testing.T, name string, c []T) {
	t.Helper()
	u, tiny := precision[T]()
	r, g := p.reference()
	tol := 2 * float64(p.kc+3) * u
	bad := 0
	for idx := range c {
		i, j := idx/p.ldc, idx%p.ldc
		got := float64(c[idx])
		if i >= p.m || j >= p.n {
			if got != sentinel {
				t.Errorf("%s %v: C[%d][%d] outside m×n changed to %v", name, p, i, j, got)
				bad++
			}
			continue
		}
		want := r[i*p.n+j]
		var ok bool
		switch {
		case math.IsNaN(want):
			ok = math.IsNaN(got)
		case math.IsInf(want, 0):
			ok = got == want
		default:
			ok = math.Abs(got-want) <= tol*g[i*p.n+j]+4*tiny
		}
		if !ok {
			t.Errorf("%s %v: C[%d][%d] = %v, want %v (tol %g)", name, p, i, j, got, want, tol*g[i*p.n+j])
			bad++
		}
		if bad > 10 {
			t.FailNow()
		}
	}
}

func differential[T float](t *testing.T, ks []kernel[T], seed int64, trials int) {
	for _, k := range ks {
		rng := rand.New(rand.NewSource(seed))
		for trial := 0; trial < trials; trial++ {
			p := newProblem[T](rng, k.mr, k.nr)
			if trial%5 == 0 { // full tiles often
				p.m, p.n, p.ldc = k.mr, k.nr, k.nr+1+rng.Intn(3)
				rebuild(p, rng)
			}
			c := append([]T(nil), p.c0...)
			p.run(k.fn, c)
			p.check(t, k.name, c)
		}
	}
}

// rebuild refills q's panels and C for its current m, n, kc, ldc, beta.
func rebuild[T float](q *problem[T], rng *rand.Rand) *problem[T] {
	q.a = make([]T, max(1, q.mr*q.kc))
	q.b = make([]T, max(1, q.nr*q.kc))
	for k := 0; k < q.kc; k++ {
		for i := 0; i < q.mr; i++ {
			v := T(rng.NormFloat64())
			if i >= q.m { // padding rows: the contract says zero; NaN checks the kernel discards them
				v = T(math.NaN())
			}
			q.a[k*q.mr+i] = v
		}
		for j := 0; j < q.nr; j++ {
			v := T(rng.NormFloat64())
			if j >= q.n {
				v = T(math.NaN())
			}
			q.b[k*q.nr+j] = v
		}
	}
	q.c0 = make([]T, (q.m+1)*q.ldc)
	for i := range q.c0 {
		q.c0[i] = sentinel
	}
	for i := 0; i < q.m; i++ {
		for j := 0; j < q.n; j++ {
			if q.beta == 0 {
				q.c0[i*q.ldc+j] = T(math.NaN())
			} else {
				q.c0[i*q.ldc+j] = T(rng.NormFloat64())
			}
		}
	}
	return q
}

func TestDifferentialF32(t *testing.T) { differential(t, kernels32, 1, 600) }
func TestDifferentialF64(t *testing.T) { differential(t, kernels64, 2, 600) }

// Every (m, n, kc, ep) combination with beta in {0, 1.5}.
func exhaustive[T float](t *testing.T, ks []kernel[T]) {
	rng := rand.New(rand.NewSource(3))
	for _, k := range ks {
		for m := 1; m <= k.mr; m++ {
			for n := 1; n <= k.nr; n++ {
				for _, kc := range []int{0, 1, 5, 17} {
					for ep := 0; ep < 4; ep++ {
						for _, beta := range []T{0, 1.5} {
							p := &problem[T]{mr: k.mr, nr: k.nr, m: m, n: n, kc: kc, ldc: n + 2, alpha: 1.25, beta: beta, ep: ep}
							p.bias = make([]T, k.nr)
							for j := range p.bias {
								p.bias[j] = T(rng.NormFloat64())
							}
							rebuild(p, rng)
							c := append([]T(nil), p.c0...)
							p.run(k.fn, c)
							p.check(t, k.name, c)
						}
					}
				}
			}
		}
	}
}

func TestAllShapesF32(t *testing.T) { exhaustive(t, kernels32) }
func TestAllShapesF64(t *testing.T) { exhaustive(t, kernels64) }

// NaN and Inf in A, B, C, alpha and bias propagate as in IEEE arithmetic; relu keeps NaN.
func special[T float](t *testing.T, ks []kernel[T]) {
	nan, inf := T(math.NaN()), T(math.Inf(1))
	for _, k := range ks {
		rng := rand.New(rand.NewSource(4))
		for trial := 0; trial < 200; trial++ {
			p := newProblem[T](rng, k.mr, k.nr)
			if trial%2 == 0 {
				p.m, p.n, p.ldc = k.mr, k.nr, k.nr+1
			}
			if p.kc == 0 {
				p.kc = 3
			}
			rebuild(p, rng)
			for s := 0; s < 3; s++ {
				v := []T{nan, inf, -inf}[rng.Intn(3)]
				switch rng.Intn(4) {
				case 0:
					p.a[rng.Intn(len(p.a))] = v
				case 1:
					p.b[rng.Intn(len(p.b))] = v
				case 2:
					p.c0[rng.Intn(p.m)*p.ldc+rng.Intn(p.n)] = v
				case 3:
					p.bias[rng.Intn(p.n)] = v
				}
			}
			if trial%7 == 0 {
				p.alpha = 0 // 0*Inf = NaN
			}
			c := append([]T(nil), p.c0...)
			p.run(k.fn, c)
			p.check(t, k.name, c)
		}
	}
}

func TestSpecialValuesF32(t *testing.T) { special(t, kernels32) }
func TestSpecialValuesF64(t *testing.T) { special(t, kernels64) }

func TestReluNaN(t *testing.T) {
	a := make([]float32, 8)
	b := make([]float32, 12)
	a[0], b[0] = float32(math.NaN()), 1
	a[1], b[1] = -1, 1
	c := make([]float32, 8*12)
	sgemm8x12(1, &a[0], &b[0], &c[0], 12, 8, 12, 1, 0, nil, 2)
	if !math.IsNaN(float64(c[0])) {
		t.Errorf("relu(NaN) = %v, want NaN", c[0])
	}
	if c[12+1] != 0 || math.Signbit(float64(c[12+1])) {
		t.Errorf("relu(-1) = %v, want +0", c[12+1])
	}
}
