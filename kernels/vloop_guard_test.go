//go:build linux && amd64 && !purego

package kernels

import (
	"math"
	"slices"
	"testing"

	"github.com/kgen-dev/kgen/f16"
	"github.com/kgen-dev/kgen/kgentest"
)

// TestVLoopAVX512TailGuard calls AVX-512 vector-loop routines directly with every count n from 1 to 70
// (whole groups, unrolled groups and every masked tail length) on operands flush against PROT_NONE
// pages, at their ends and at their starts: a masked-off lane that were read or written would fault.
// Elementwise f32 (saxpy: a load, a read-write operand), reductions (sdot, and softmax's max, whose
// masked lanes must not reach the maximum), and f16 loads and stores (cvt both ways, hadd) are checked
// against exact scalar results.
func TestVLoopAVX512TailGuard(t *testing.T) {
	if !slices.Contains(Variants(), "avx512") {
		t.Skip("no avx512 variant on this CPU")
	}
	f32 := func(n int, end bool, f func(i int) float32) ([]float32, func()) {
		s, free := kgentest.Guarded[float32](n, end)
		for i := range s {
			s[i] = f(i)
		}
		return s, free
	}
	h16 := func(n int, end bool, f func(i int) float32) ([]uint16, func()) {
		s, free := kgentest.Guarded[uint16](n, end)
		for i := range s {
			s[i] = uint16(f16.FromFloat32(f(i)))
		}
		return s, free
	}
	xs := func(i int) float32 { return float32(i%7 - 3) }
	ys := func(i int) float32 { return float32(i%5) * 0.5 }
	for n := 1; n <= 70; n++ {
		for _, end := range []bool{true, false} {
			x, fx := f32(n, end, xs)
			y, fy := f32(n, !end, ys)
			vloop_saxpy_0AVX512(n, &x[0], &y[0], 1.5)
			for i := range y {
				if want := 1.5*xs(i) + ys(i); y[i] != want {
					t.Fatalf("saxpy n=%d end=%v: y[%d] = %v, want %v", n, end, i, y[i], want)
				}
			}
			var dot float32
			for i := range n {
				dot += xs(i) * ys(i)
			}
			for i := range y {
				y[i] = ys(i)
			}
			if got := vloop_sdot_0AVX512(n, &x[0], &y[0]); got != dot {
				t.Fatalf("sdot n=%d end=%v: %v, want %v", n, end, got, dot)
			}
			// All values negative: a masked lane counted as 0 (or read past the end) would win the max.
			for i := range x {
				x[i] = -1 - float32(i%9)
			}
			if got := vloop_softmax_0AVX512(n, &x[0]); got != -1 {
				t.Fatalf("max n=%d end=%v: %v, want -1", n, end, got)
			}
			h, fh := h16(n, !end, func(int) float32 { return 0 })
			vloop_cvt_f32_f16_0AVX512(n, &x[0], &h[0])
			back, fb := f32(n, end, func(int) float32 { return float32(math.NaN()) })
			vloop_cvt_f16_f32_0AVX512(n, &h[0], &back[0])
			for i := range back {
				if back[i] != x[i] {
					t.Fatalf("cvt n=%d end=%v: %v → f16 → %v", n, end, x[i], back[i])
				}
			}
			a, fa := h16(n, end, xs)
			b, fb2 := h16(n, !end, ys)
			c, fc := h16(n, end, func(int) float32 { return 7 })
			vloop_hadd_0AVX512(n, &a[0], &b[0], &c[0])
			for i := range c {
				if got, want := f16.F16(c[i]).Float32(), xs(i)+ys(i); got != want {
					t.Fatalf("hadd n=%d end=%v: z[%d] = %v, want %v", n, end, i, got, want)
				}
			}
			for _, free := range []func(){fx, fy, fh, fb, fa, fb2, fc} {
				free()
			}
		}
	}
}
