package rt

import (
	"math"
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
