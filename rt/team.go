package rt

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// SetSpinWait sets how long a team worker, having finished its chunk, keeps polling for the next one before
// it parks (and how long the caller polls for the workers' chunks before it parks). A parallel GEMM
// forks and joins several times per call (the B̃ pack, then the blocks, per K block): waking a parked
// goroutine costs tens of microseconds on a virtual machine, and the worker then starts late, so
// small parallel GEMMs (256³ on two cores) ran slower than on one. Spinning is what BLAS thread pools
// do (OpenBLAS, OpenMP runtimes); a spinning worker yields its P (runtime.Gosched) between polls, so
// other goroutines still run. 0 turns spinning off: worth it where GOMAXPROCS exceeds the CPUs the
// process really gets (a spinning thread then holds a CPU the others wait for), as with any BLAS
// pool. It returns the previous value; the default is 100 µs.
func SetSpinWait(d time.Duration) time.Duration { return time.Duration(spinWait.Swap(int64(d))) }

var spinWait atomic.Int64

func init() { spinWait.Store(int64(100 * time.Microsecond)) }

// teamWorker is one goroutine of the team. The caller posts a chunk by writing f, lo, hi, incrementing
// seq and leaving a token in wake; the worker runs it, stores seq into done and leaves a token in the
// team's joined. Each waiting side polls its condition (spin), then blocks on its channel, looping on the
// condition: a token is sent after every update, whether or not anyone sleeps, so no wake-up can be lost,
// and a token left over from an earlier round only costs one more look at the condition.
type teamWorker struct {
	seq, done atomic.Uint64
	f         func(lo, hi int)
	lo, hi    int
	wake      chan struct{}
	t         *team
	_         [64]byte // keep neighbouring workers' counters on other cache lines
}

type team struct {
	mu      sync.Mutex // held by the one ParallelFor that owns the team
	workers []*teamWorker
	joined  chan struct{}
}

var theTeam = team{joined: make(chan struct{}, 1)}

// teamFor runs body over [lo, hi) in chunks of chunk on the caller and workers-1 team workers, and
// reports false (running nothing) when the team is busy.
func teamFor(lo, hi, chunk, workers int, body func(lo, hi int)) bool {
	t := &theTeam
	if !t.mu.TryLock() {
		return false
	}
	defer t.mu.Unlock()
	for len(t.workers) < workers-1 {
		w := &teamWorker{wake: make(chan struct{}, 1), t: t}
		t.workers = append(t.workers, w)
		go w.run()
	}
	used := 0                                                                 // workers given a chunk: the first ones
	for start := lo + chunk; start < hi && used < workers-1; start += chunk { // the caller's chunk is [lo, lo+chunk)
		w := t.workers[used]
		w.f, w.lo, w.hi = body, start, min(start+chunk, hi)
		w.seq.Add(1)
		poke(w.wake)
		used++
	}
	body(lo, min(lo+chunk, hi))
	for _, w := range t.workers[:used] {
		want := w.seq.Load()
		if w.done.Load() != want {
			t.await(func() bool { return w.done.Load() == want })
		}
		w.f = nil // drop the closure: it may hold large slices
	}
	return true
}

// run is a worker's loop: wait for the next seq, run the chunk, publish done.
func (w *teamWorker) run() {
	var last uint64
	for {
		if w.seq.Load() == last {
			w.wait(last)
		}
		last = w.seq.Load()
		w.f(w.lo, w.hi)
		w.done.Swap(last)
		poke(w.t.joined)
	}
}

// wait returns once seq has moved past last: spinning first, then blocked on wake.
func (w *teamWorker) wait(last uint64) {
	if spin(func() bool { return w.seq.Load() != last }) {
		return
	}
	for w.seq.Load() == last {
		<-w.wake
	}
}

// await returns once cond holds (a worker has finished): spinning first, then blocked on joined.
func (t *team) await(cond func() bool) {
	if spin(cond) {
		return
	}
	for !cond() {
		<-t.joined
	}
}

// poke leaves a token in the sleeper's one-slot channel, unless one is there already. It follows every
// update a sleeper waits for, unconditionally. Session 8 had poked only a side that had published a
// "parked" flag, and under qemu-user (arm64 on x86) the flag and the update were seen out of order: a
// worker parked with work posted, and the arm64 CI step hung. Exchanges and 1 ms timed parks mended that,
// but a park with a timer cost the two-core GEMMs 4–12% on the Zen 5 (dgemm 1024³ 16.1 against 15.2 ms;
// the runtime wakes an idle P's poller for every timer armed). A token per update needs no ordering
// argument beyond the channel's own lock: a sleeper that finds the buffer empty has consumed every
// token sent before, and re-reads its condition after each. The one lock-free step is the sender's test
// for a full buffer (a token already there: the sleeper will look again anyway): each side publishes
// its word with a read-modify-write (seq.Add, done.Swap; the receiver's channel unlock is an exchange)
// before it reads the other's, a full barrier under qemu too.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// spin polls cond for up to the spin wait and reports whether it came true. It reads the clock and yields
// the P every 64 polls.
func spin(cond func() bool) bool {
	wait := time.Duration(spinWait.Load())
	if wait <= 0 {
		return cond()
	}
	var deadline time.Time
	for i := 1; ; i++ {
		if cond() {
			return true
		}
		if i%64 == 0 {
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(wait)
			} else if now.After(deadline) {
				return false
			}
			runtime.Gosched()
		}
	}
}
