package rt

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// checkCover runs one ParallelFor and fails unless every iteration ran exactly once.
func checkCover(t *testing.T, lo, hi, step int) {
	t.Helper()
	hits := make([]int32, hi+1)
	ParallelFor(lo, hi, step, 1<<20, func(a, b int) {
		for i := a; i < b; i += step {
			atomic.AddInt32(&hits[i], 1)
		}
	})
	for i := range hits {
		want := int32(0)
		if i >= lo && i < hi && (i-lo)%step == 0 {
			want = 1
		}
		if hits[i] != want {
			t.Fatalf("[%d, %d) step %d: iteration %d ran %d times", lo, hi, step, i, hits[i])
		}
	}
}

// The team (spinning, parked after SpinWait, spinning off) covers every iteration once, many loops
// in a row, with up to four workers.
func TestTeamCoversEachIterationOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	defer SetSpinWait(SetSpinWait(0))
	for _, sw := range []time.Duration{100 * time.Microsecond, 0, time.Microsecond} {
		SetSpinWait(sw)
		for r := 0; r < 200; r++ {
			checkCover(t, 0, 1000, 1)
			checkCover(t, 3, 1000, 7)
			checkCover(t, 0, 3, 1) // fewer iterations than workers
		}
		time.Sleep(2 * time.Millisecond) // let the workers park, then wake them
		checkCover(t, 0, 100, 1)
	}
}

// Callers on several goroutines at once, and a parallel loop inside a worker's body: whoever finds the
// team busy takes the channel pool; every iteration still runs once and nothing deadlocks.
func TestTeamConcurrentAndNested(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 50; r++ {
				var n atomic.Int64
				ParallelFor(0, 64, 1, 1<<20, func(a, b int) {
					for i := a; i < b; i++ {
						ParallelFor(0, 16, 1, 1<<20, func(c, d int) { n.Add(int64(d - c)) })
					}
				})
				if n.Load() != 64*16 {
					t.Errorf("nested loops ran %d inner iterations, want %d", n.Load(), 64*16)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("concurrent and nested parallel loops did not finish in 60 s")
	}
}

// A loop on the team allocates nothing (generated GEMMs fork and join per K block, and a batch of
// small products calls them per product).
func TestTeamDoesNotAllocate(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var sink [4]int
	body := func(lo, hi int) { sink[lo%4] += hi - lo }
	ParallelFor(0, 4, 1, 1<<20, body) // start the team
	if n := testing.AllocsPerRun(200, func() { ParallelFor(0, 4, 1, 1<<20, body) }); n != 0 {
		t.Fatalf("ParallelFor on the team: %v allocations per call, want 0", n)
	}
}
