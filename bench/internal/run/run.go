// Package run times GEMM jobs on one library: inputs, timing (median of
// repetitions), and a sampled check of the result.
package run

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/kgen-dev/kgen/bench/internal/report"
)

// Lib is one implementation under test. Every call computes C = A·B
// (alpha 1, beta 0) on row-major, untransposed, contiguous operands.
type Lib struct {
	Name   string
	Kernel string // the variant or core it runs, for the table
	Detail string // a longer description (version, configuration)
	Setup  func() // run before each job's timing (may be nil)
	S      func(m, k, n int, a, b, c []float32)
	D      func(m, k, n int, a, b, c []float64)
	// SBatch runs count products whose operands lie back to back in a, b,
	// c; nil means a Go loop over S.
	SBatch func(count, m, k, n int, a, b, c []float32)
}

// Options control the timing.
type Options struct {
	Reps    int           // timed repetitions; the median is reported
	MinTime time.Duration // minimum duration of one repetition (short calls are looped)
	Threads int
}

type float interface{ ~float32 | ~float64 }

func fill[T float](r *rand.Rand, n int) []T {
	x := make([]T, n)
	for i := range x {
		x[i] = T(2*r.Float64() - 1)
	}
	return x
}

// Time runs fn once to warm up and calibrate, then reps repetitions of
// enough calls to last minTime each, and returns the per-call time of every
// repetition.
func Time(fn func(), reps int, minTime time.Duration) []float64 {
	t0 := time.Now()
	fn()
	one := time.Since(t0)
	if one < minTime/10 { // the first call may have paid for page faults
		t0 = time.Now()
		fn()
		one = time.Since(t0)
	}
	inner := 1
	if one > 0 && one < minTime {
		inner = int(math.Ceil(float64(minTime) / float64(one)))
	}
	out := make([]float64, reps)
	for r := range out {
		t0 := time.Now()
		for i := 0; i < inner; i++ {
			fn()
		}
		out[r] = time.Since(t0).Seconds() / float64(inner)
	}
	return out
}

// check compares samples of the batch's products with a float64 dot
// product; the error is relative to Σ|a·b| of the entry.
func check[T float](r *rand.Rand, j report.Job, a, b, c []T) float64 {
	worst := 0.0
	mk, kn, mn := j.M*j.K, j.K*j.N, j.M*j.N
	for s := 0; s < 24; s++ {
		p := r.IntN(max(j.Batch, 1))
		i, jj := r.IntN(j.M), r.IntN(j.N)
		var ref, mag float64
		for k := 0; k < j.K; k++ {
			x := float64(a[p*mk+i*j.K+k]) * float64(b[p*kn+k*j.N+jj])
			ref += x
			mag += math.Abs(x)
		}
		e := math.Abs(float64(c[p*mn+i*j.N+jj])-ref) / math.Max(mag, 1e-30)
		if math.IsNaN(e) {
			e = math.Inf(1)
		}
		worst = math.Max(worst, e)
	}
	return worst
}

// Runner measures jobs on one library round after round. It keeps the
// operands of the last job, so the rounds of one shape reuse them (only
// the first round pays for allocating and filling them); a new job
// replaces them.
type Runner struct {
	Lib Lib
	job report.Job
	set bool
	r   *rand.Rand
	s   [3][]float32
	d   [3][]float64
}

// NewRunner returns a Runner for lib.
func NewRunner(lib Lib) *Runner { return &Runner{Lib: lib} }

func (rn *Runner) operands(j report.Job) {
	if rn.set && rn.job == j {
		return
	}
	rn.s, rn.d = [3][]float32{}, [3][]float64{}
	nb := max(j.Batch, 1)
	rn.r = rand.New(rand.NewPCG(uint64(j.M)<<40^uint64(j.K)<<20^uint64(j.N), uint64(nb)))
	switch j.Op {
	case "sgemm":
		rn.s = [3][]float32{fill[float32](rn.r, nb*j.M*j.K), fill[float32](rn.r, nb*j.K*j.N), make([]float32, nb*j.M*j.N)}
	case "dgemm":
		if nb == 1 {
			rn.d = [3][]float64{fill[float64](rn.r, j.M*j.K), fill[float64](rn.r, j.K*j.N), make([]float64, j.M*j.N)}
		}
	}
	rn.job, rn.set = j, true
}

// Round measures one round of j: a warm-up call, then o.Reps timed
// repetitions (see Time). The result's Median, Min and Max are over the
// repetitions and Rounds is nil (the caller collects rounds); Err is set
// when the library panics, lacks the op, or computes a wrong result
// (checked on sampled entries after every round).
func (rn *Runner) Round(j report.Job, o Options) (res report.Result) {
	lib := rn.Lib
	res = report.Result{Job: j, Library: lib.Name, Kernel: lib.Kernel, Threads: o.Threads, Reps: o.Reps}
	defer func() {
		if e := recover(); e != nil {
			res.Err = fmt.Sprint(e)
			rn.set = false // the operands may be half written
		}
	}()
	if lib.Setup != nil {
		lib.Setup()
	}
	nb := max(j.Batch, 1)
	var times []float64
	switch j.Op {
	case "sgemm":
		var fn func()
		switch {
		case nb > 1 && lib.SBatch != nil:
			rn.operands(j)
			a, b, c := rn.s[0], rn.s[1], rn.s[2]
			fn = func() { lib.SBatch(nb, j.M, j.K, j.N, a, b, c) }
		case nb > 1 && lib.S != nil:
			rn.operands(j)
			a, b, c := rn.s[0], rn.s[1], rn.s[2]
			mk, kn, mn := j.M*j.K, j.K*j.N, j.M*j.N
			fn = func() {
				for p := 0; p < nb; p++ {
					lib.S(j.M, j.K, j.N, a[p*mk:(p+1)*mk], b[p*kn:(p+1)*kn], c[p*mn:(p+1)*mn])
				}
			}
		case lib.S != nil:
			rn.operands(j)
			a, b, c := rn.s[0], rn.s[1], rn.s[2]
			fn = func() { lib.S(j.M, j.K, j.N, a, b, c) }
		default:
			res.Err = "not supported"
			return res
		}
		times = Time(fn, o.Reps, o.MinTime)
		res.MaxRelErr = check(rn.r, j, rn.s[0], rn.s[1], rn.s[2])
		if res.MaxRelErr > 1e-4 {
			res.Err = "WRONG RESULT"
		}
	case "dgemm":
		if lib.D == nil || nb > 1 {
			res.Err = "not supported"
			return res
		}
		rn.operands(j)
		a, b, c := rn.d[0], rn.d[1], rn.d[2]
		times = Time(func() { lib.D(j.M, j.K, j.N, a, b, c) }, o.Reps, o.MinTime)
		res.MaxRelErr = check(rn.r, j, a, b, c)
		if res.MaxRelErr > 1e-12 {
			res.Err = "WRONG RESULT"
		}
	default:
		res.Err = "unknown op " + j.Op
		return res
	}
	res.Median = report.Median(times)
	res.Min, res.Max = slices.Min(times), slices.Max(times)
	return res
}

// Job measures j on lib in a single round.
func Job(lib Lib, j report.Job, o Options) report.Result {
	return NewRunner(lib).Round(j, o)
}

// Collect merges the rounds of one library on one job into one Result:
// each round contributes its median, and Median, Min and Max are taken over
// the rounds (report.Summarize). The first error met is kept; rounds that
// failed count as missing.
func Collect(rounds []report.Result) report.Result {
	if len(rounds) == 0 {
		return report.Result{Err: "no rounds"}
	}
	out := rounds[0]
	out.Rounds = nil
	out.Err, out.MaxRelErr = "", 0
	for _, r := range rounds {
		t := r.Median
		if r.Err != "" {
			if out.Err == "" {
				out.Err = r.Err
			}
			if r.Err != "WRONG RESULT" { // a wrong result still has a time, printed with the error
				t = 0
			}
		}
		out.Rounds = append(out.Rounds, t)
		out.MaxRelErr = max(out.MaxRelErr, r.MaxRelErr)
	}
	s := report.Summarize(out.Rounds)
	out.Median, out.Min, out.Max = s.Median, s.Min, s.Max
	if s.N == 0 {
		out.Median, out.Min, out.Max = 0, 0, 0
	}
	return out
}
