// Package rt is the small run-time support library of kgen-generated packages: a worker pool that runs
// parallel loops across GOMAXPROCS cores, and shape arithmetic that cannot overflow. It has no
// dependencies beyond the standard library and x/sys/cpu.
package rt

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"sync"
)

// MinParallelWork is the estimated work (loop iterations or multiply-adds) below which a parallel loop
// runs on the calling goroutine: splitting smaller jobs costs more than it saves.
var MinParallelWork = 1 << 16

type task struct {
	f      func(lo, hi int)
	lo, hi int
	wg     *sync.WaitGroup
}

var (
	poolOnce sync.Once
	tasks    chan task
)

func startPool() {
	tasks = make(chan task)
	for i := 0; i < runtime.NumCPU(); i++ {
		go func() {
			for t := range tasks {
				t.f(t.lo, t.hi)
				t.wg.Done()
			}
		}()
	}
}

// ParallelFor runs body over [lo, hi) in steps of step, split into contiguous chunks (each a whole
// number of steps) run on up to GOMAXPROCS workers, and returns when all are done. cost estimates the
// work of one iteration; small loops run inline.
//
// The chunks go to the spinning team (team.go) when it is free: its workers wait for the next loop
// by spinning for a while (SetSpinWait) before they park, so the several fork/joins of one GEMM call (and the
// calls of a loop of them) cost a cache-line handoff, not a goroutine wake-up. A second caller
// while the team is busy (another goroutine, or a loop inside a worker's body) uses the channel pool.
func ParallelFor(lo, hi, step, cost int, body func(lo, hi int)) {
	if hi <= lo {
		return
	}
	if Inline(lo, hi, step, cost) {
		body(lo, hi)
		return
	}
	n := (hi - lo + step - 1) / step
	workers := min(runtime.GOMAXPROCS(0), n)
	per := (n + workers - 1) / workers
	if teamFor(lo, hi, step*per, workers, body) {
		return
	}
	poolOnce.Do(startPool)
	var wg sync.WaitGroup
	// The caller runs the first chunk, and every chunk no pool goroutine is free to take (a send that
	// would block): with concurrent callers, or a loop inside a loop's body, all of them can be busy.
	var mine [][2]int // the first chunk, then any no pool goroutine took
	for start := lo; start < hi; start += per * step {
		end := min(start+per*step, hi)
		if start > lo {
			wg.Add(1)
			select {
			case tasks <- task{body, start, end, &wg}:
				continue
			default:
				wg.Done()
			}
		}
		mine = append(mine, [2]int{start, end})
	}
	for _, c := range mine {
		body(c[0], c[1])
	}
	wg.Wait()
}

// Workers is the number of workers ParallelFor splits a loop between (GOMAXPROCS): generated code
// sizes the row blocks of a parallel GEMM so that their count is a multiple of it.
func Workers() int { return runtime.GOMAXPROCS(0) }

// Inline reports whether ParallelFor would run the loop on the calling goroutine: one worker, one
// iteration, or less work than MinParallelWork. Generated code tests it first so that small loops
// run without building a closure.
func Inline(lo, hi, step, cost int) bool {
	n := (hi - lo + step - 1) / step // <= 0 when hi <= lo
	// The work test first: runtime.GOMAXPROCS(0) takes the scheduler lock, which cost a batch of 8×8×8
	// products 11% of its time.
	return n <= 1 || n*max(cost, 1) < MinParallelWork || runtime.GOMAXPROCS(0) <= 1
}

// Numel multiplies dims, reporting false if a dim is negative or the product overflows int. A zero
// dim makes the product 0 even when the other dims' product would overflow.
func Numel(dims ...int) (int, bool) {
	for _, d := range dims {
		if d < 0 {
			return 0, false
		}
	}
	if slices.Contains(dims, 0) {
		return 0, true
	}
	n := uint(1)
	for _, d := range dims {
		hi, lo := bits.Mul(n, uint(d))
		if hi != 0 || lo > uint(^uint(0)>>1) {
			return 0, false
		}
		n = lo
	}
	return int(n), true
}

// MaxHalf bounds dims whose product generated wrappers compute without an overflow check: the product
// of two values up to MaxHalf fits an int.
const MaxHalf = 1<<(bits.UintSize/2-1) - 1

// MaxDim is the largest dim a generated kernel accepts (2^61-1 with 64-bit ints, 2^29-1 with 32-bit
// ones): loop counters stepping by a tile size then cannot wrap around. With 64-bit ints a larger dim
// could only belong to an empty tensor.
const MaxDim = 1<<(bits.UintSize-3) - 1

// ErrArgs is matched (errors.Is) by every error a generated kernel function returns: the arguments
// were invalid and nothing was written.
var ErrArgs = errors.New("invalid kernel arguments")

// ArgError is the error of a generated kernel function whose arguments are invalid (a dim negative or
// above MaxDim, a slice of the wrong length, an index that reaches outside a dim). Its text is
// "kernel: message", for example "sgemm: A has length 34, want M*K = 35".
type ArgError struct {
	Kernel string // the kernel's kdsl name
	Msg    string
}

func (e *ArgError) Error() string { return e.Kernel + ": " + e.Msg }

// Is makes errors.Is(err, ErrArgs) hold.
func (e *ArgError) Is(target error) bool { return target == ErrArgs }

// Errorf returns an *ArgError of kernel with a formatted message.
func Errorf(kernel, format string, a ...any) error {
	return &ArgError{Kernel: kernel, Msg: fmt.Sprintf(format, a...)}
}

// DimError reports dim name = v as negative or above MaxDim (generated wrappers call it when
// uint(v) > MaxDim).
func DimError(kernel, name string, v int) error {
	if v < 0 {
		return Errorf(kernel, "dim %s = %d is negative", name, v)
	}
	return Errorf(kernel, "dim %s = %d is above rt.MaxDim = %d", name, v, MaxDim)
}

// CheckLen returns an error naming kernel and parameter unless the slice length equals the product of
// the dims (named in shape).
func CheckLen(kernel, param string, got int, shape string, dims ...int) error {
	want, ok := Numel(dims...)
	if !ok {
		// dims is copied so that it does not escape: the successful path must not allocate.
		return Errorf(kernel, "%s: shape %s = %v is negative or overflows", param, shape, slices.Clone(dims))
	}
	if got != want {
		return Errorf(kernel, "%s has length %d, want %s = %d", param, got, shape, want)
	}
	return nil
}
