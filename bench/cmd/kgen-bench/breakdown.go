package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/google/pprof/profile"

	"github.com/kgen-dev/kgen/bench/internal/breakdown"
	"github.com/kgen-dev/kgen/bench/internal/report"
	"github.com/kgen-dev/kgen/bench/internal/run"
)

// bdPath is one of kgen's GEMM paths and a shape that takes it.
type bdPath struct {
	name string
	job  report.Job
}

// breakdownPaths are the shapes profiled by -breakdown: each takes one path
// of kgen's generated sgemm/dgemm (kernels/sgemm.go): packed (M·N·K above
// the slot's SmallWork), unpacked (small), rows (M ≤ RowsMax) and a batch
// of small products (a Go loop over Sgemm, as the comparison runs it).
func (c config) breakdownPaths() []bdPath {
	n := c.bdN
	return []bdPath{
		{"packed", report.Job{Kind: report.Square, Op: "sgemm", M: n, K: n, N: n, Batch: 1}},
		{"packed", report.Job{Kind: report.Square, Op: "dgemm", M: n, K: n, N: n, Batch: 1}},
		{"unpacked small", report.Job{Kind: report.Square, Op: "sgemm", M: 64, K: 64, N: 64, Batch: 1}},
		{"rows (few-row)", report.Job{Kind: report.Skinny, Op: "sgemm", M: 4, K: c.skinnyNK, N: c.skinnyNK, Batch: 1}},
		{"batched small", report.Job{Kind: report.Batch, Op: "sgemm", M: 16, K: 16, N: 16, Batch: c.batchCount}},
	}
}

// bdHz is the CPU profile rate of -breakdown: runtime/pprof's own. A higher
// rate can only be had by calling runtime.SetCPUProfileRate first, which
// runtime/pprof does not support (the runtime prints a warning); longer
// runs (-breakdown-time) buy samples instead.
const bdHz = 100

// profileLoop calls fn once to warm up, then repeatedly for at least d
// under the CPU profiler, and returns the parsed profile, the calls made,
// their wall time and the process's CPU time over them (0 if unknown).
func profileLoop(fn func(), d time.Duration) (*profile.Profile, int, time.Duration, time.Duration, error) {
	fn()
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return nil, 0, 0, 0, err
	}
	calls := 0
	c0 := cpuTime()
	t0 := time.Now()
	for time.Since(t0) < d {
		fn()
		calls++
	}
	wall := time.Since(t0)
	cpu := cpuTime() - c0
	pprof.StopCPUProfile()
	p, err := profile.Parse(&buf)
	if c0 < 0 || cpu < 0 {
		cpu = 0
	}
	return p, calls, wall, cpu, err
}

func randSlice[T float32 | float64](r *rand.Rand, n int) []T {
	x := make([]T, n)
	for i := range x {
		x[i] = T(2*r.Float64() - 1)
	}
	return x
}

// runBreakdown profiles each path with kgen's best variant (or the one
// -isa names) and writes the attribution table.
func runBreakdown(c config, w io.Writer) error {
	runtime.GOMAXPROCS(c.threads)
	lib, err := run.Kgen("kgen", c.isa)
	if err != nil {
		return err
	}
	lib.Setup()
	r := rand.New(rand.NewPCG(1, 2))
	labels := &breakdown.FileLabels{}
	var runs []breakdown.Run
	for _, p := range c.breakdownPaths() {
		j := p.job
		nb := max(j.Batch, 1)
		var fn func()
		switch j.Op {
		case "sgemm":
			a, b, cc := randSlice[float32](r, nb*j.M*j.K), randSlice[float32](r, nb*j.K*j.N), make([]float32, nb*j.M*j.N)
			mk, kn, mn := j.M*j.K, j.K*j.N, j.M*j.N
			fn = func() {
				for q := 0; q < nb; q++ {
					lib.S(j.M, j.K, j.N, a[q*mk:(q+1)*mk], b[q*kn:(q+1)*kn], cc[q*mn:(q+1)*mn])
				}
			}
		case "dgemm":
			a, b, cc := randSlice[float64](r, j.M*j.K), randSlice[float64](r, j.K*j.N), make([]float64, j.M*j.N)
			fn = func() { lib.D(j.M, j.K, j.N, a, b, cc) }
		}
		fmt.Fprintf(os.Stderr, "breakdown: %s %s %s, %d thread(s), %s\n", p.name, j.Op, j.Shape(), c.threads, c.bdTime)
		prof, calls, wall, cpu, err := profileLoop(fn, c.bdTime)
		if err != nil {
			return fmt.Errorf("%s %s: %v", p.name, j.Shape(), err)
		}
		b, err := breakdown.Attribute(prof, labels.Label)
		if err != nil {
			return err
		}
		runs = append(runs, breakdown.Run{Path: p.name, Job: j, Threads: c.threads, Calls: calls, Wall: wall, CPU: cpu, B: b})
	}
	cpuInfo := probeModel()
	fmt.Fprintf(w, "kgen-bench -breakdown  %s  %s  kgen variant %s  threads=%d  %s per path (CPU profile at %d Hz)\n\n",
		runtime.Version(), cpuInfo, lib.Kernel, c.threads, c.bdTime, bdHz)
	fmt.Fprintln(w, "Shares of the sampled CPU time, by the leaf function of each CPU-profile sample (package breakdown):")
	fmt.Fprintln(w, "  microkernel: the assembly kernels' full-tile code; edges: their masked partial-tile and k-remainder paths (by .s label)")
	fmt.Fprintln(w, "  and the portable rows fall-back; packing: pack*; sync: rt.ParallelFor, the worker pool, scheduler, channel/futex")
	fmt.Fprintln(w, "  waits; loop nest: kernels.*/rt.* glue; other: GC, allocation, harness. A share's sampling error is about ±1/√samples.")
	fmt.Fprintln(w, "  on-CPU: process CPU time (getrusage) / (wall × threads); the rest is blocked workers or the host running others.")
	fmt.Fprintln(w, "  tile pad: the share of the microkernel's work that pads partial tiles (masked tiles still run the whole k loop).")
	fmt.Fprintln(w)
	t := breakdown.Table(runs)
	t.Write(w)
	if c.md != "" {
		if err := writeFile(c.md, t.WriteMarkdown); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "wrote", c.md)
	}
	return nil
}
