//go:build amd64 && !purego && linux

package mk

import (
	"math"
	"testing"

	"github.com/kgen-dev/kgen/codegen/amd64"
	"github.com/kgen-dev/kgen/kgentest"
)

// TestVLoopF64 runs the f64 vector loops of gen's vloopSrc (kgen's own kernels have none): the AVX-512
// routines on every count 1..70 and two long ones, operands flush against PROT_NONE pages at their ends
// and starts (the masked tail must not touch a lane past n), with NaN, ±Inf, -0 among the inputs. The
// elementwise loop must equal a scalar evaluation (no FMA contraction in it) and, bit for bit, the AVX2
// routine on the whole groups; max and min reductions are exact, the dot product within its error bound.
func TestVLoopF64(t *testing.T) {
	if !amd64.HostSupports(amd64.AVX2) {
		t.Skip("no AVX2")
	}
	z512 := amd64.HostSupports(amd64.AVX512)
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0}
	val := func(i, seed int) float64 {
		if (i*7+seed)%23 == 5 {
			return special[(i+seed)%len(special)]
		}
		return float64((i*13+seed*5)%17-8) * 0.37
	}
	same := func(a, b float64) bool { return a == b || (a != a && b != b) }
	const a = 1.25
	for _, n := range append(seq(1, 70), 1000, 4099) {
		for _, end := range []bool{true, false} {
			for _, withSpecial := range []bool{false, true} {
				x, fx := kgentest.Guarded[float64](n, end)
				y, fy := kgentest.Guarded[float64](n, !end)
				z, fz := kgentest.Guarded[float64](n, end)
				for i := range n {
					x[i], y[i] = val(i, 1), val(i, 2)
					if !withSpecial && (x[i] != x[i] || math.IsInf(x[i], 0)) {
						x[i] = 0.5
					}
					if !withSpecial && (y[i] != y[i] || math.IsInf(y[i], 0)) {
						y[i] = -0.75
					}
				}
				want := make([]float64, n)
				for i := range n {
					r := max(x[i], y[i]) * a
					if r < 0 {
						r = 0
					}
					want[i] = (r + min(math.Abs(x[i]), -y[i])) - math.Sqrt(math.Abs(y[i]))/a
				}
				wsum, wabs, wmax, wmin := 0.0, 0.0, math.Inf(-1), math.Inf(1)
				for i := range n {
					wsum += x[i] * y[i]
					wabs += math.Abs(x[i] * y[i])
					wmax, wmin = max(wmax, x[i]), min(wmin, x[i])
				}
				type routines struct {
					name       string
					count      int // iterations the routine runs: n, or the AVX2 whole groups
					ops        func(int)
					sum        func(int) float64
					maxr, minr func(int) float64
				}
				rs := []routines{{"avx2", n / 4 * 4,
					func(k int) { vloop_dops_0AVX2(k/4, &x[0], &y[0], &z[0], a, a) },
					func(k int) float64 { return vloop_dsum_0AVX2(k/4, &x[0], &y[0]) },
					func(k int) float64 { return vloop_dmax_0AVX2(k/4, &x[0]) },
					func(k int) float64 { return vloop_dmin_0AVX2(k/4, &x[0]) }}}
				if z512 {
					rs = append(rs, routines{"avx512", n,
						func(k int) { vloop_dops_0AVX512(k, &x[0], &y[0], &z[0], a, a) },
						func(k int) float64 { return vloop_dsum_0AVX512(k, &x[0], &y[0]) },
						func(k int) float64 { return vloop_dmax_0AVX512(k, &x[0]) },
						func(k int) float64 { return vloop_dmin_0AVX512(k, &x[0]) }})
				}
				var prev []float64
				for _, r := range rs {
					if r.count == 0 {
						continue
					}
					for i := range z {
						z[i] = 42
					}
					r.ops(r.count)
					for i := range n {
						w := want[i]
						if i >= r.count {
							w = 42
						}
						if !same(z[i], w) {
							t.Fatalf("%s dops n=%d end=%v: z[%d] = %v, want %v (x %v, y %v)", r.name, n, end, i, z[i], w, x[i], y[i])
						}
						if prev != nil && i < len(prev) && math.Float64bits(z[i]) != math.Float64bits(prev[i]) {
							t.Fatalf("%s dops n=%d: z[%d] bits %#x, avx2 %#x", r.name, n, i, math.Float64bits(z[i]), math.Float64bits(prev[i]))
						}
					}
					prev = append([]float64(nil), z[:r.count]...)
					if r.count != n {
						continue // the reductions' results need every element
					}
					if got := r.sum(n); !same(got, wsum) && !(math.Abs(got-wsum) <= 1e-13*wabs) {
						t.Fatalf("%s dsum n=%d: %v, want %v", r.name, n, got, wsum)
					}
					if got := r.maxr(n); !same(got, wmax) {
						t.Fatalf("%s dmax n=%d: %v, want %v", r.name, n, got, wmax)
					}
					if got := r.minr(n); !same(got, wmin) {
						t.Fatalf("%s dmin n=%d: %v, want %v", r.name, n, got, wmin)
					}
				}
				fx()
				fy()
				fz()
			}
		}
	}
	if !z512 {
		t.Log("no AVX-512: only the AVX2 routines ran")
	}
}

func seq(lo, hi int) []int {
	var s []int
	for i := lo; i <= hi; i++ {
		s = append(s, i)
	}
	return s
}
