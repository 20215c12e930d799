package kernels

import (
	"math"
	"slices"
	"testing"
	"time"
)

// within runs f and fails the test if it does not return within d (a hang is reported, not waited for).
func within(t *testing.T, d time.Duration, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("no return within %v", d)
		return nil
	}
}

// Regressions of issue 10, item 3: a sum of dims in a bounds check that wrapped around, and a
// reduction loop that spun through a huge range with an empty inner one.
func TestWrapperExtremeDims(t *testing.T) {
	// (OW-1) + (KW-1) = 2 + MaxInt - 1 wrapped to a negative int and passed the check of x + kx < W.
	O := []float32{7, 7, 7}
	err := within(t, 5*time.Second, func() error {
		return Conv2d(1, 0, 1, 2, 1, 1, math.MaxInt, 1, 3, nil, nil, O)
	})
	if err == nil || !slices.Equal(O, []float32{7, 7, 7}) {
		t.Errorf("conv2d with KW = MaxInt: err %v, O %v", err, O)
	}
	// CI = 2^61-1 with KH = 0 and H = 0: every input is empty and O = 0, but the ci loop ran 2^61 times
	// around an empty ky loop (found by the wrapper fuzzer).
	O = []float32{7}
	err = within(t, 5*time.Second, func() error {
		return Conv2d(1, 1<<61-1, 0, 1, 1, 0, 1, 1, 1, nil, nil, O)
	})
	if err != nil || O[0] != 0 {
		t.Errorf("conv2d with an empty reduction: err %v, O %v", err, O)
	}
	// A huge M with every tensor empty has nothing to do.
	err = within(t, 5*time.Second, func() error {
		return Sgemm(1<<61-1, 0, 0, nil, nil, nil, 1, 0)
	})
	if err != nil {
		t.Errorf("sgemm with M = 2^61-1, K = N = 0: %v", err)
	}
}

// Issue 10, item 13: every wrapper error starts with the kernel name, and only with it.
func TestWrapperErrorFormat(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{Sgemm(-1, 5, 7, nil, nil, nil, 1, 0), "sgemm: dim M = -1 is negative"},
		{Sgemm(5, 7, 1, make([]float32, 34), make([]float32, 7), make([]float32, 5), 1, 0), "sgemm: A has length 34, want M*K = 35"},
		{Conv2d(1, 1, 2, 2, 1, 2, 2, 2, 1, make([]float32, 4), make([]float32, 4), make([]float32, 2)), "conv2d: index (y + ky) of I reaches outside dim H = 2"},
	} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("error %v, want %q", c.err, c.want)
		}
	}
}
