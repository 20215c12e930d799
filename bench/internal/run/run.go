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

// Job measures j on lib.
func Job(lib Lib, j report.Job, o Options) (res report.Result) {
	res = report.Result{Job: j, Library: lib.Name, Kernel: lib.Kernel, Threads: o.Threads, Reps: o.Reps}
	defer func() {
		if e := recover(); e != nil {
			res.Err = fmt.Sprint(e)
		}
	}()
	if lib.Setup != nil {
		lib.Setup()
	}
	nb := max(j.Batch, 1)
	r := rand.New(rand.NewPCG(uint64(j.M)<<40^uint64(j.K)<<20^uint64(j.N), uint64(nb)))
	var times []float64
	switch j.Op {
	case "sgemm":
		a, b, c := fill[float32](r, nb*j.M*j.K), fill[float32](r, nb*j.K*j.N), make([]float32, nb*j.M*j.N)
		var fn func()
		switch {
		case nb > 1 && lib.SBatch != nil:
			fn = func() { lib.SBatch(nb, j.M, j.K, j.N, a, b, c) }
		case nb > 1 && lib.S != nil:
			mk, kn, mn := j.M*j.K, j.K*j.N, j.M*j.N
			fn = func() {
				for p := 0; p < nb; p++ {
					lib.S(j.M, j.K, j.N, a[p*mk:(p+1)*mk], b[p*kn:(p+1)*kn], c[p*mn:(p+1)*mn])
				}
			}
		case lib.S != nil:
			fn = func() { lib.S(j.M, j.K, j.N, a, b, c) }
		default:
			res.Err = "not supported"
			return res
		}
		times = Time(fn, o.Reps, o.MinTime)
		res.MaxRelErr = check(r, j, a, b, c)
		if res.MaxRelErr > 1e-4 {
			res.Err = "WRONG RESULT"
		}
	case "dgemm":
		if lib.D == nil || nb > 1 {
			res.Err = "not supported"
			return res
		}
		a, b, c := fill[float64](r, j.M*j.K), fill[float64](r, j.K*j.N), make([]float64, j.M*j.N)
		times = Time(func() { lib.D(j.M, j.K, j.N, a, b, c) }, o.Reps, o.MinTime)
		res.MaxRelErr = check(r, j, a, b, c)
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
