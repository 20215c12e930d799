package rt

import (
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
)

func TestParallelForCoversEachIterationOnce(t *testing.T) {
	for _, tc := range []struct{ lo, hi, step, cost int }{{0, 1000, 1, 1 << 20}, {3, 1000, 7, 1 << 20}, {0, 5, 2, 0}, {5, 5, 1, 1 << 20}, {0, 1, 1, 1 << 30}} {
		hits := make([]int32, tc.hi+1)
		ParallelFor(tc.lo, tc.hi, tc.step, tc.cost, func(lo, hi int) {
			for i := lo; i < hi; i += tc.step {
				atomic.AddInt32(&hits[i], 1)
			}
		})
		for i := range hits {
			want := int32(0)
			if i >= tc.lo && i < tc.hi && (i-tc.lo)%tc.step == 0 {
				want = 1
			}
			if hits[i] != want {
				t.Fatalf("%+v: iteration %d ran %d times", tc, i, hits[i])
			}
		}
	}
}

func TestNumel(t *testing.T) {
	if n, ok := Numel(3, 4, 5); !ok || n != 60 {
		t.Fatal(n, ok)
	}
	if _, ok := Numel(math.MaxInt/2, 3); ok {
		t.Fatal("overflow not detected")
	}
	if _, ok := Numel(-1, 3); ok {
		t.Fatal("negative not detected")
	}
	// A zero dim anywhere makes an empty tensor, whatever the others multiply to (found by the wrapper
	// fuzzer: conv2d with Nb = CI = H = 2^31 and W = 0).
	if n, ok := Numel(1<<31, 1<<31, 1<<31, 0); !ok || n != 0 {
		t.Fatal("zero dim after an overflowing product:", n, ok)
	}
	if _, ok := Numel(0, -1); ok {
		t.Fatal("negative after a zero not detected")
	}
	if err := CheckLen("k", "A", 11, "M*K", 3, 4); err == nil || err.Error() != "k: A has length 11, want M*K = 12" {
		t.Fatal(err)
	}
}

// The successful checks of a generated wrapper must not allocate (small GEMMs call them per product).
func TestCheckLenDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() {
		if CheckLen("k", "A", 12, "M*K", 3, 4) != nil || !Inline(0, 8, 1, 1) {
			t.Fatal("unexpected")
		}
	}); n != 0 {
		t.Fatalf("%v allocations per call", n)
	}
}

func TestScratchReuse(t *testing.T) {
	for _, n := range []int{1, 63, 64, 65, 1000, 1 << 20} {
		s := Scratch32(n)
		if len(s) != n || cap(s) < n {
			t.Fatalf("Scratch32(%d): len %d cap %d", n, len(s), cap(s))
		}
		Release32(s)
		d := Scratch64(n)
		if len(d) != n {
			t.Fatalf("Scratch64(%d): len %d", n, len(d))
		}
		Release64(d)
	}
	Release32(make([]float32, 3)) // not from the pool: ignored
}

// TestScratchTyped: the generic pools give buffers of the asked length per type (an int8 buffer never
// comes back as an int32 one), reuse them, and a Scratch/Release pair allocates nothing once warm.
func TestScratchTyped(t *testing.T) {
	for _, n := range []int{1, 64, 65, 1000} {
		a := Scratch[int32](n)
		b := Scratch[int8](n)
		c := Scratch[uint16](n)
		if len(a) != n || len(b) != n || len(c) != n {
			t.Fatalf("Scratch(%d): lengths %d %d %d", n, len(a), len(b), len(c))
		}
		Release(a)
		Release(b)
		Release(c)
	}
	Release(make([]int8, 3)) // not from the pool: ignored
	allocs := testing.AllocsPerRun(100, func() {
		s := Scratch[int8](1000)
		s[999] = 1
		Release(s)
	})
	if allocs > 0.1 {
		t.Errorf("Scratch/Release of int8: %.1f allocations per call, want 0", allocs)
	}
}

func TestArgError(t *testing.T) {
	err := CheckLen("k", "A", 11, "M*K", 3, 4)
	var ae *ArgError
	if !errors.Is(err, ErrArgs) || !errors.As(err, &ae) || ae.Kernel != "k" {
		t.Fatalf("%v (%T) is not an ArgError of k", err, err)
	}
	if got := DimError("k", "M", -1).Error(); got != "k: dim M = -1 is negative" {
		t.Error(got)
	}
	if got := DimError("k", "M", math.MaxInt).Error(); !strings.Contains(got, "above rt.MaxDim") {
		t.Error(got)
	}
}

// Affine is exact where int arithmetic wraps around, and Within compares against a dim exactly.
func TestAffineWithin(t *testing.T) {
	big := math.MaxInt
	for _, c := range []struct {
		n      int
		lo, hi Wide
		want   bool
	}{
		{10, Affine(0), Affine(-2, 1, 5, 1, 6), true},      // (5-1) + (6-1) = 9 < 10
		{10, Affine(0), Affine(-2, 1, 5, 1, 7), false},     // 10
		{10, Affine(0), Affine(-2, 1, 3, 1, big), false},   // wraps to a negative int
		{big, Affine(0), Affine(-2, 1, big, 1, 1), true},   // MaxInt - 1
		{big, Affine(0), Affine(-2, 1, big, 1, 2), false},  // MaxInt
		{big, Affine(0), Affine(0, 4, big, 4, big), false}, // 8·MaxInt
		{10, Affine(3, -1, 5), Affine(2), false},           // 2 - (5-1) < 0
		{10, Affine(3, -1, 3), Affine(2), true},            // 0 .. 2
		{10, Affine(0, -4, big, 4, big), Affine(0, 4, big, -4, big, 1, 9), true},
		{5, Affine(math.MinInt), Affine(0), false},
		{0, Affine(0), Affine(0), false},
	} {
		if got := Within(c.n, c.lo, c.hi); got != c.want {
			t.Errorf("Within(%d, %v, %v) = %v, want %v", c.n, c.lo, c.hi, got, c.want)
		}
	}
	if testing.AllocsPerRun(100, func() { Within(7, Affine(1, 2, 3), Affine(1, 2, 3, 4, 5)) }) != 0 {
		t.Error("Affine allocates")
	}
}
