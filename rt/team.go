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

// teamWorker is one goroutine of the team. The caller posts a chunk by writing f, lo, hi and then
// incrementing seq; the worker runs it and stores seq into done. parked/wake (and callerParked/joined)
// are the sleeping side of each wait: the sleeper publishes that it parks, checks the condition once
// more, then blocks on its buffered channel; the other side sends a token when it sees the flag.
// A token can be left over (both sides raced); every wait loops on its condition, so it only costs a
// spurious wake-up.
type teamWorker struct {
	seq, done atomic.Uint64
	f         func(lo, hi int)
	lo, hi    int
	parked    atomic.Bool
	wake      chan struct{}
	tm        *time.Timer // the worker's park timeout (sleep)
	t         *team
	_         [64]byte // keep neighbouring workers' counters on other cache lines
}

type team struct {
	mu           sync.Mutex // held by the one ParallelFor that owns the team
	workers      []*teamWorker
	callerParked atomic.Bool
	joined       chan struct{}
	tm           *time.Timer // the owner's park timeout (sleep); used under mu
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
		if w.parked.Load() {
			poke(w.wake)
		}
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
		if w.t.callerParked.Load() {
			poke(w.t.joined)
		}
	}
}

// wait returns once seq has moved past last: spinning first, then parked on wake.
func (w *teamWorker) wait(last uint64) {
	if spin(func() bool { return w.seq.Load() != last }) {
		return
	}
	nap := time.Millisecond
	for w.seq.Load() == last {
		w.parked.Swap(true) // an exchange, not a store: see sleep
		if w.seq.Load() != last {
			w.parked.Store(false)
			return
		}
		w.tm = sleep(w.wake, w.tm, nap)
		w.parked.Store(false)
		nap = min(2*nap, time.Second)
	}
}

// await returns once cond holds (a worker has finished): spinning first, then parked on joined.
func (t *team) await(cond func() bool) {
	if spin(cond) {
		return
	}
	for !cond() {
		t.callerParked.Swap(true)
		if cond() {
			break
		}
		t.tm = sleep(t.joined, t.tm, time.Millisecond)
	}
	t.callerParked.Store(false)
}

// poke leaves a token in the sleeper's one-slot channel, unless one is there already.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// sleep blocks until ch has a token or d has passed, reusing tm (allocated on first use). The two
// sides of each wait publish with atomic read-modify-writes (seq.Add, done.Swap, parked.Swap) before
// they read the other side's word: under qemu-user on an x86 host, arm64's store-release followed by a
// load-acquire was not kept in order (a worker parked with work posted, the caller parked for ever:
// the arm64 CI step hung), while an exchange is a full barrier there too. The timeout bounds the cost
// of any wake-up lost all the same: a parked side looks again after d (a worker doubles its d while
// idle, up to a second).
func sleep(ch chan struct{}, tm *time.Timer, d time.Duration) *time.Timer {
	if tm == nil {
		tm = time.NewTimer(d)
	} else {
		tm.Reset(d)
	}
	select {
	case <-ch:
	case <-tm.C:
	}
	tm.Stop()
	return tm
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
