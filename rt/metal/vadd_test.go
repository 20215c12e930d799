package metal

import (
	"math"
	"math/rand/v2"
	"testing"
)

// checkVadd runs vadd (testdata/vadd.metal, or fakeVadd) on ragged sizes: 0 (empty buffers and an
// empty grid: nothing runs), 1, a prime below the SIMD width, a size that is no multiple of the
// threadgroup, and one above 2^16. c starts as NaN with one sentinel element past n, so a thread
// that did not write, or wrote past n, shows. The sums are compared exactly with the host's
// float32 sums (one IEEE addition each).
func checkVadd(t *testing.T, d *Device, fn *Function) {
	t.Helper()
	rng := rand.New(rand.NewPCG(12, uint64(len(fn.Name()))))
	for _, n := range []int{0, 1, 31, 1000, 65537} {
		a, b := make([]float32, n), make([]float32, n)
		for i := range a {
			a[i] = float32(rng.NormFloat64() * 1e3)
			b[i] = float32(rng.NormFloat64())
		}
		c := make([]float32, n+1)
		for i := range c {
			c[i] = float32(math.NaN())
		}
		c[n] = 12345
		da, err := NewBufferFrom(d, a)
		if err != nil {
			t.Fatal(err)
		}
		db, err := NewBufferFrom(d, b)
		if err != nil {
			t.Fatal(err)
		}
		dc, err := NewBufferFrom(d, c)
		if err != nil {
			t.Fatal(err)
		}
		tpg := min(256, fn.Info().MaxTotalThreadsPerThreadgroup)
		grid := (n + tpg - 1) / tpg
		if err := fn.Dispatch([3]int{grid, 1, 1}, [3]int{tpg, 1, 1}, da, db, dc, Value(uint32(n))); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if err := Download(c, dc); err != nil {
			t.Fatal(err)
		}
		bad := 0
		for i := range n {
			if want := a[i] + b[i]; c[i] != want {
				if bad++; bad <= 5 {
					t.Errorf("n=%d: c[%d] = %v, want %v", n, i, c[i], want)
				}
			}
		}
		if c[n] != 12345 {
			t.Errorf("n=%d: the element past n was overwritten: %v", n, c[n])
		}
		for _, buf := range []*Buffer{da, db, dc} {
			buf.Free()
		}
	}
}
