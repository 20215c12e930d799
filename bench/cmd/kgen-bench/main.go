// Command kgen-bench compares kgen's generated GEMM kernels with gonum and,
// when built with -tags peers (cgo), with OpenBLAS and BLIS, on this machine:
//
//	cd bench && go run -tags peers ./cmd/kgen-bench -csv out.csv -plot out/
//
// It first probes the machine (CPU, caches, FMA peaks of kgen-generated
// register-only kernels on 1 and all cores, streaming bandwidth), then
// measures square sgemm/dgemm, skinny sgemm (M = 1, 4, 16; N = K = 4096) and
// batches of small sgemm products. Each figure is the median of -reps
// repetitions (each at least -mintime long). A progress bar goes to stderr,
// the table to stdout.
//
// Each peer runs in its own process: kgen-bench re-executes itself with
// -peer NAME, the jobs on stdin and one JSON result per line on stdout, with
// the library's environment set only there (see package peers).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/cpu"

	"github.com/kgen-dev/kgen/bench/internal/plots"
	"github.com/kgen-dev/kgen/bench/internal/probe"
	"github.com/kgen-dev/kgen/bench/internal/report"
	"github.com/kgen-dev/kgen/bench/internal/run"
)

type config struct {
	sizes      []int
	threads    int
	reps       int
	minTime    time.Duration
	libs       []string
	skinny     bool
	skinnyNK   int
	batch      bool
	batchCount int
	batchSizes []int
	dgemm      bool
	csv, plot  string
	coretype   string
	blisArch   string
	obPath     string
	blisPath   string
	peer       string
}

func intList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad size %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func main() {
	var c config
	sizes := flag.String("sizes", "256,512,1024,2048", "square sizes n (comma-separated; 4096 is optional and slow for the Go libraries)")
	flag.IntVar(&c.threads, "threads", 1, "threads for every library (GOMAXPROCS, OPENBLAS_NUM_THREADS, BLIS_NUM_THREADS, OMP_NUM_THREADS)")
	flag.IntVar(&c.reps, "reps", 5, "timed repetitions per measurement (the median is reported)")
	flag.DurationVar(&c.minTime, "mintime", 100*time.Millisecond, "minimum duration of one repetition (short calls are looped)")
	libs := flag.String("libs", "kgen,kgen-go,gonum,openblas,blis", "libraries to run")
	flag.BoolVar(&c.skinny, "skinny", true, "run skinny sgemm M=1,4,16 with N=K=-skinny-nk")
	flag.IntVar(&c.skinnyNK, "skinny-nk", 4096, "N = K of the skinny shapes")
	flag.BoolVar(&c.batch, "batch", true, "run batches of small sgemm products")
	flag.IntVar(&c.batchCount, "batch-count", 1000, "products per batch")
	bsizes := flag.String("batch-sizes", "8,16,32", "n of the batched n×n×n products")
	flag.BoolVar(&c.dgemm, "dgemm", true, "also run square dgemm")
	flag.StringVar(&c.csv, "csv", "", "write the results as CSV to this file")
	flag.StringVar(&c.plot, "plot", "", "write PNG and SVG plots into this directory")
	flag.StringVar(&c.coretype, "openblas-coretype", "auto", `OPENBLAS_CORETYPE for the OpenBLAS process: "auto" picks SkylakeX (AVX-512), Zen (AMD AVX2) or Haswell (AVX2); "" leaves OpenBLAS to detect`)
	flag.StringVar(&c.blisArch, "blis-arch", "", "BLIS_ARCH_TYPE for the BLIS process (empty: BLIS detects)")
	flag.StringVar(&c.obPath, "openblas-lib", "", "OpenBLAS shared library (default: Debian's openblas-pthread)")
	flag.StringVar(&c.blisPath, "blis-lib", "", "BLIS shared library (default: Debian's blis-openmp)")
	flag.StringVar(&c.peer, "peer", "", "internal: run as the child process of peer NAME")
	flag.Parse()
	var err error
	if c.sizes, err = intList(*sizes); err == nil {
		c.batchSizes, err = intList(*bsizes)
	}
	if err != nil || c.threads < 1 || c.reps < 1 {
		fmt.Fprintln(os.Stderr, "kgen-bench: bad flags:", err)
		os.Exit(2)
	}
	for _, l := range strings.Split(*libs, ",") {
		if l = strings.TrimSpace(l); l != "" {
			c.libs = append(c.libs, l)
		}
	}
	if c.peer != "" {
		if err := child(c); err != nil {
			fmt.Fprintln(os.Stderr, "kgen-bench -peer", c.peer+":", err)
			os.Exit(1)
		}
		return
	}
	if err := parent(c); err != nil {
		fmt.Fprintln(os.Stderr, "kgen-bench:", err)
		os.Exit(1)
	}
}

// hello is the first line a peer child writes.
type hello struct {
	Kernel string `json:"kernel"`
	Detail string `json:"detail"`
	Err    string `json:"error,omitempty"`
}

func child(c config) error {
	runtime.GOMAXPROCS(c.threads)
	var jobs []report.Job
	if err := json.NewDecoder(os.Stdin).Decode(&jobs); err != nil {
		return err
	}
	path := c.obPath
	if c.peer == "blis" {
		path = c.blisPath
	}
	enc := json.NewEncoder(os.Stdout)
	lib, err := openPeer(c.peer, path, c.threads)
	if err != nil {
		return enc.Encode(hello{Err: err.Error()})
	}
	enc.Encode(hello{Kernel: lib.Kernel, Detail: lib.Detail})
	o := run.Options{Reps: c.reps, MinTime: c.minTime, Threads: c.threads}
	for _, j := range jobs {
		if err := enc.Encode(run.Job(lib, j, o)); err != nil {
			return err
		}
	}
	return nil
}

func (c config) jobs() []report.Job {
	var js []report.Job
	ops := []string{"sgemm"}
	if c.dgemm {
		ops = append(ops, "dgemm")
	}
	for _, op := range ops {
		for _, n := range c.sizes {
			js = append(js, report.Job{Kind: report.Square, Op: op, M: n, K: n, N: n, Batch: 1})
		}
	}
	if c.skinny {
		for _, m := range []int{1, 4, 16} {
			js = append(js, report.Job{Kind: report.Skinny, Op: "sgemm", M: m, K: c.skinnyNK, N: c.skinnyNK, Batch: 1})
		}
	}
	if c.batch {
		for _, n := range c.batchSizes {
			js = append(js, report.Job{Kind: report.Batch, Op: "sgemm", M: n, K: n, N: n, Batch: c.batchCount})
		}
	}
	return js
}

// coretype resolves -openblas-coretype "auto" for this CPU.
func coretype(flagVal, vendor string) string {
	if flagVal != "auto" {
		return flagVal
	}
	switch {
	case cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL:
		return "SkylakeX"
	case cpu.X86.HasAVX2 && strings.Contains(vendor, "AMD"):
		return "Zen"
	case cpu.X86.HasAVX2:
		return "Haswell"
	}
	return ""
}

// peerEnv is the child's environment: parent (ours, os.Environ()) with the
// library variables replaced.
func peerEnv(c config, name, model string, parent []string) []string {
	drop := []string{"OPENBLAS_", "BLIS_", "OMP_NUM_THREADS=", "GOMAXPROCS="}
	var env []string
	for _, e := range parent {
		keep := true
		for _, d := range drop {
			if strings.HasPrefix(e, d) {
				keep = false
			}
		}
		if keep {
			env = append(env, e)
		}
	}
	t := strconv.Itoa(c.threads)
	env = append(env, "GOMAXPROCS="+t, "OMP_NUM_THREADS="+t)
	switch name {
	case "openblas":
		env = append(env, "OPENBLAS_NUM_THREADS="+t)
		if ct := coretype(c.coretype, model); ct != "" {
			env = append(env, "OPENBLAS_CORETYPE="+ct)
		}
	case "blis":
		env = append(env, "BLIS_NUM_THREADS="+t)
		if c.blisArch != "" {
			env = append(env, "BLIS_ARCH_TYPE="+c.blisArch)
		}
	}
	return env
}

// runPeer runs jobs in a child process for peer name, calling step after each result.
func runPeer(c config, name, model string, jobs []report.Job, step func(string)) ([]report.Result, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	args := []string{"-peer", name, "-threads", strconv.Itoa(c.threads), "-reps", strconv.Itoa(c.reps),
		"-mintime", c.minTime.String(), "-openblas-lib", c.obPath, "-blis-lib", c.blisPath}
	cmd := exec.Command(exe, args...)
	cmd.Env = peerEnv(c, name, model, os.Environ())
	cmd.Stderr = os.Stderr
	in, _ := json.Marshal(jobs)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	dec := json.NewDecoder(bufio.NewReader(out))
	var h hello
	if err := dec.Decode(&h); err != nil || h.Err != "" {
		io.Copy(io.Discard, out)
		cmd.Wait()
		if h.Err != "" {
			return nil, "", fmt.Errorf("%s: %s", name, h.Err)
		}
		return nil, "", fmt.Errorf("%s: no answer from the child process (%v)", name, err)
	}
	var rs []report.Result
	for range jobs {
		var r report.Result
		if err := dec.Decode(&r); err != nil {
			break
		}
		rs = append(rs, r)
		step(fmt.Sprintf("%s %s %s", name, r.Op, r.Shape()))
	}
	werr := cmd.Wait()
	for i := len(rs); i < len(jobs); i++ { // the child died part way
		rs = append(rs, report.Result{Job: jobs[i], Library: name, Kernel: h.Kernel, Threads: c.threads,
			Err: fmt.Sprintf("child process failed: %v", werr)})
		step(name + " (failed)")
	}
	return rs, h.Kernel + ": " + h.Detail, nil
}

func fmtBytes(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

func parent(c config) error {
	cpuInfo := probe.ReadCPU()
	jobs := c.jobs()
	var inproc, peers []string
	for _, l := range c.libs {
		switch l {
		case "kgen", "kgen-go", "gonum":
			inproc = append(inproc, l)
		case "openblas", "blis":
			if peersBuilt {
				peers = append(peers, l)
			} else {
				fmt.Fprintf(os.Stderr, "kgen-bench: skipping %s: built without -tags peers (and cgo)\n", l)
			}
		default:
			return fmt.Errorf("unknown library %q", l)
		}
	}
	bwSizes := []int{16 << 10, 512 << 10, 8 << 20, 256 << 20}
	bwWorkers := []int{1}
	if c.threads > 1 {
		bwWorkers = append(bwWorkers, c.threads)
	}
	peakCores := []int{1, cpuInfo.Cores, c.threads}
	prog := newProgress(os.Stderr, 1+len(bwSizes)*len(bwWorkers)+len(jobs)*(len(inproc)+len(peers)))

	// Machine.
	prog.step("FMA peaks")
	peaks := probe.Peaks(peakCores...)
	var bws []probe.Bandwidth
	for _, w := range bwWorkers {
		for _, s := range bwSizes {
			prog.step(fmt.Sprintf("bandwidth %s ×%d", fmtBytes(s), w))
			bws = append(bws, probe.Stream(s, w)...)
		}
	}
	runtime.GOMAXPROCS(c.threads)
	bwOf := func(op string, size, workers int) float64 {
		for _, b := range bws {
			if b.Op == op && b.Bytes == size && b.Workers == workers {
				return b.GBps
			}
		}
		return 0
	}
	tc := min(c.threads, cpuInfo.Cores)
	rf := report.Roof{
		PeakF32: probe.Best(peaks, "f32", tc), PeakF64: probe.Best(peaks, "f64", tc),
		BW: bwOf("vsum", 256<<20, c.threads), BWLabel: "vsum 256 MiB",
	}
	if rf.PeakF32 == 0 { // no peak kernel runs here: fall back to the all-core figure or nothing
		rf.PeakF32, rf.PeakF64 = probe.Best(peaks, "f32", cpuInfo.Cores), probe.Best(peaks, "f64", cpuInfo.Cores)
	}

	// In-process libraries.
	var results []report.Result
	libKernel := map[string]string{}
	o := run.Options{Reps: c.reps, MinTime: c.minTime, Threads: c.threads}
	for _, name := range inproc {
		var lib run.Lib
		var err error
		switch name {
		case "kgen":
			lib, err = run.Kgen("kgen", "")
		case "kgen-go":
			lib, err = run.Kgen("kgen-go", "go")
		case "gonum":
			lib = run.Gonum()
		}
		if err != nil {
			return err
		}
		libKernel[name] = lib.Kernel + ": " + lib.Detail
		for _, j := range jobs {
			prog.step(fmt.Sprintf("%s %s %s", name, j.Op, j.Shape()))
			results = append(results, run.Job(lib, j, o))
		}
	}
	for _, name := range peers {
		rs, k, err := runPeer(c, name, cpuInfo.Model, jobs, func(s string) { prog.step(s) })
		if err != nil {
			fmt.Fprintln(os.Stderr, "\nkgen-bench:", err)
			for range jobs {
				prog.step(name + " (unavailable)")
			}
			continue
		}
		libKernel[name] = k
		results = append(results, rs...)
	}
	prog.finish()

	// Order: by job, then by library as given.
	order := map[string]int{}
	for i, l := range c.libs {
		order[l] = i
	}
	var sorted []report.Result
	for _, j := range jobs {
		for _, l := range c.libs {
			for _, r := range results {
				if r.Job == j && r.Library == l {
					sorted = append(sorted, r)
				}
			}
		}
	}

	// Report.
	w := os.Stdout
	fmt.Fprintf(w, "kgen-bench  %s  %s/%s  GOMAXPROCS=%d  threads=%d  reps=%d (median)  mintime=%s\n\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), c.threads, c.reps, c.minTime)
	fmt.Fprintf(w, "CPU: %s, %d cores, features %s\n", cpuInfo.Model, cpuInfo.Cores, strings.Join(cpuInfo.Features, " "))
	var caches []string
	for _, ch := range cpuInfo.Caches {
		caches = append(caches, fmt.Sprintf("L%d%s %s (shared by cpus %s)", ch.Level, strings.ToLower(ch.Type[:min(1, len(ch.Type))]), ch.Size, ch.SharedCPUs))
	}
	fmt.Fprintf(w, "Caches (cpu0, sysfs): %s\n\n", strings.Join(caches, "; "))
	pt := report.Table{Header: []string{"FMA peak", "cores", "GFLOP/s"}, Right: []bool{false, true, true}}
	for _, p := range peaks {
		pt.Rows = append(pt.Rows, []string{p.ISA + " " + p.Elem, strconv.Itoa(p.Cores), fmt.Sprintf("%.1f", p.GFLOPS)})
	}
	if len(peaks) == 0 {
		pt.Rows = append(pt.Rows, []string{"(no kgen peak kernel runs on this CPU)", "", ""})
	}
	pt.Write(w)
	fmt.Fprintln(w, "(register-only FMA chains generated by kgen's codegen/amd64; best of 5)")
	fmt.Fprintln(w)
	bt := report.Table{Header: []string{"bandwidth", "working set", "threads", "GB/s"}, Right: []bool{false, true, true, true}}
	for _, b := range bws {
		bt.Rows = append(bt.Rows, []string{b.Op, fmtBytes(b.Bytes), strconv.Itoa(b.Workers), fmt.Sprintf("%.1f", b.GBps)})
	}
	bt.Write(w)
	fmt.Fprintln(w, "(plain Go, best of 5: sum = 8 scalar uint64 accumulators, reads only; copy = Go copy() over two halves, read+write bytes counted)")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Libraries (threads=%d):\n", c.threads)
	for _, l := range c.libs {
		if k, ok := libKernel[l]; ok {
			fmt.Fprintf(w, "  %-9s %s\n", l, k)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%%peak: against the measured FMA peak on %d core(s) (f32 %.1f, f64 %.1f GFLOP/s).\n", tc, rf.PeakF32, rf.PeakF64)
	fmt.Fprintf(w, "GB/s: compulsory traffic (A + B read, C written) / median time; %%roof: against min(peak, intensity × %.1f GB/s (%s, %d thr)).\n\n", rf.BW, rf.BWLabel, c.threads)
	report.ResultTable(sorted, rf).Write(w)

	if c.csv != "" {
		f, err := os.Create(c.csv)
		if err != nil {
			return err
		}
		if err := report.WriteCSV(f, sorted, rf); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "wrote", c.csv)
	}
	if c.plot != "" {
		title := fmt.Sprintf("%s, %d thread(s)", cpuInfo.Model, c.threads)
		lines := []plots.BWLine{
			{Label: "DRAM (vsum 256 MiB)", GBps: bwOf("vsum", 256<<20, c.threads)},
			{Label: "vsum 8 MiB", GBps: bwOf("vsum", 8<<20, c.threads)},
		}
		files, err := plots.Write(c.plot, sorted, rf, lines, title)
		if err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "wrote", strings.Join(files, " "))
	}
	return nil
}
