// Command kgen-bench compares kgen's generated GEMM kernels with gonum and,
// when built with -tags peers (cgo), with OpenBLAS and BLIS, on this machine:
//
//	cd bench && go run -tags peers ./cmd/kgen-bench -csv out.csv -plot out/
//
// It first probes the machine (CPU, caches, FMA peaks of kgen-generated
// register-only kernels on 1 and all cores, streaming bandwidth), then
// measures square sgemm/dgemm, skinny sgemm (M = 1, 4, 16; N = K = 4096) and
// batches of small sgemm products.
//
// Fair measurement on a noisy host: for each shape, the libraries run in
// interleaved rounds (A B C, B C A, C A B, C B A, ... for -rounds rounds: a
// Williams design, see roundOrder; with -threads > 1 a -settle pause before
// each measurement lets the previous library's threads stop). A round is a
// warm-up call and -reps timed repetitions (each at least -mintime long);
// its figure is their median. Per library the table gives the median, min,
// max and spread over the rounds, and kgen's speed over the best peer's as
// the median of the per-round ratios with their [min–max] interval, marked
// "within noise" when the interval contains 1.0 (report.Compare).
//
// Each peer runs in its own long-lived process: kgen-bench re-executes
// itself with -peer NAME, with the library's environment set only there
// (see package peers), and drives it over a pipe one round at a time (see
// peerproc.go). A progress bar goes to stderr, the table to stdout.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kgen-dev/kgen/bench/internal/peercfg"
	"github.com/kgen-dev/kgen/bench/internal/plots"
	"github.com/kgen-dev/kgen/bench/internal/probe"
	"github.com/kgen-dev/kgen/bench/internal/report"
	"github.com/kgen-dev/kgen/bench/internal/run"
)

type config struct {
	sizes      []int
	threads    int
	reps       int
	settle     time.Duration
	rounds     int
	md         string
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
	isa        string
	obPath     string
	blisPath   string
	peer       string
	bd         bool
	bdN        int
	bdTime     time.Duration
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

// parseConfig parses the command line (without the program name).
func parseConfig(args []string) (config, error) {
	fs := flag.NewFlagSet("kgen-bench", flag.ContinueOnError)
	var c config
	sizes := fs.String("sizes", "256,512,1024,2048", "square sizes n (comma-separated; 4096 is optional and slow for the Go libraries)")
	fs.IntVar(&c.threads, "threads", 1, "threads for every library (GOMAXPROCS, OPENBLAS_NUM_THREADS, BLIS_NUM_THREADS, OMP_NUM_THREADS)")
	fs.IntVar(&c.reps, "reps", 3, "timed repetitions per round (the round's figure is their median)")
	fs.IntVar(&c.rounds, "rounds", 5, "interleaved rounds per shape (libraries A B C, B C A, C A B, C B A, ...); 3 or more for a noise verdict")
	fs.DurationVar(&c.settle, "settle", -1, "pause before each measurement, for the previous library's threads to stop spinning (negative: 100ms with -threads > 1, none with 1)")
	fs.DurationVar(&c.minTime, "mintime", 100*time.Millisecond, "minimum duration of one repetition (short calls are looped)")
	libs := fs.String("libs", "kgen,kgen-go,gonum,openblas,blis", "libraries to run")
	fs.BoolVar(&c.skinny, "skinny", true, "run skinny sgemm M=1,4,16 with N=K=-skinny-nk")
	fs.IntVar(&c.skinnyNK, "skinny-nk", 4096, "N = K of the skinny shapes")
	fs.BoolVar(&c.batch, "batch", true, "run batches of small sgemm products")
	fs.IntVar(&c.batchCount, "batch-count", 1000, "products per batch")
	bsizes := fs.String("batch-sizes", "8,16,32", "n of the batched n×n×n products")
	fs.BoolVar(&c.dgemm, "dgemm", true, "also run square dgemm")
	fs.StringVar(&c.csv, "csv", "", "write the results as CSV to this file")
	fs.StringVar(&c.md, "md", "", "write the results table as markdown to this file")
	fs.StringVar(&c.plot, "plot", "", "write PNG and SVG plots into this directory")
	fs.StringVar(&c.coretype, "openblas-coretype", "auto", `OPENBLAS_CORETYPE for the OpenBLAS process: "auto" forces the best core for the CPU's ISA when OpenBLAS detects a worse one (SkylakeX for AVX-512, Zen/Haswell for AVX2; package peercfg); "" leaves OpenBLAS to detect`)
	fs.StringVar(&c.blisArch, "blis-arch", "auto", `BLIS_ARCH_TYPE (a number) for the BLIS process: "auto" forces the best configuration this BLIS has for the CPU's ISA when it detects a worse one (e.g. skx for "generic" on a Zen 5; package peercfg); "" leaves BLIS to detect`)
	fs.StringVar(&c.isa, "isa", "", `hold every library to this vector ISA: "avx2" runs kgen's avx2 variant, the peers' best AVX2 kernels ("auto" above) and measures %peak against the AVX2 FMA peak, as on a CPU without AVX-512; "avx512" likewise; "" lets each run its best`)
	fs.StringVar(&c.obPath, "openblas-lib", "", "OpenBLAS shared library (default: Debian's openblas-pthread)")
	fs.StringVar(&c.blisPath, "blis-lib", "", "BLIS shared library (default: Debian's blis-openmp)")
	fs.StringVar(&c.peer, "peer", "", "internal: run as the child process of peer NAME")
	fs.BoolVar(&c.bd, "breakdown", false, "instead of comparing, profile kgen's GEMM paths and say where the time goes (packing, microkernel, edges, sync)")
	fs.IntVar(&c.bdN, "breakdown-n", 1024, "n of the packed n³ shapes -breakdown profiles")
	fs.DurationVar(&c.bdTime, "breakdown-time", 3*time.Second, "profiled time per path for -breakdown")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if c.sizes, err = intList(*sizes); err == nil {
		c.batchSizes, err = intList(*bsizes)
	}
	if err != nil {
		return c, err
	}
	if c.threads < 1 || c.reps < 1 || c.rounds < 1 || c.bdN < 1 || c.skinnyNK < 1 || c.batchCount < 1 {
		return c, errors.New("-threads, -reps, -rounds, -breakdown-n, -skinny-nk and -batch-count must be at least 1")
	}
	switch c.isa {
	case "", "avx2", "avx512":
	default:
		return c, fmt.Errorf("-isa %q: want avx2, avx512 or nothing", c.isa)
	}
	for _, l := range strings.Split(*libs, ",") {
		if l = strings.TrimSpace(l); l != "" {
			c.libs = append(c.libs, l)
		}
	}
	return c, nil
}

func main() {
	c, err := parseConfig(os.Args[1:])
	if err == flag.ErrHelp {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kgen-bench: bad flags:", err)
		os.Exit(2)
	}
	if c.peer != "" {
		if err := child(c); err != nil {
			fmt.Fprintln(os.Stderr, "kgen-bench -peer", c.peer+":", err)
			os.Exit(1)
		}
		return
	}
	if c.bd {
		if err := runBreakdown(c, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "kgen-bench -breakdown:", err)
			os.Exit(1)
		}
		return
	}
	if err := parent(c); err != nil {
		fmt.Fprintln(os.Stderr, "kgen-bench:", err)
		os.Exit(1)
	}
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
	loadStart := loadAvg()
	jobs := c.jobs()
	for _, l := range c.libs {
		switch l {
		case "kgen", "kgen-go", "gonum":
		case "openblas", "blis":
			if !peersBuilt {
				fmt.Fprintf(os.Stderr, "kgen-bench: skipping %s: built without -tags peers (and cgo)\n", l)
			}
		default:
			return fmt.Errorf("unknown library %q", l)
		}
	}
	bwSizes := []int{16 << 10, 512 << 10, 8 << 20, 256 << 20}
	if c.skinny {
		// the skinny shapes' footprint (B dominates): their roof is the bandwidth over a working set
		// that holds the largest of them (report.Roof.BWFor takes the smallest set holding a job),
		// rounded up to whole MiB
		var most float64
		for _, j := range jobs {
			if j.Kind == report.Skinny {
				most = max(most, j.Bytes())
			}
		}
		bwSizes = append(bwSizes, (int(most)+(1<<20)-1)>>20<<20)
		slices.Sort(bwSizes)
		bwSizes = slices.Compact(bwSizes)
	}
	bwWorkers := []int{1}
	if c.threads > 1 {
		bwWorkers = append(bwWorkers, c.threads)
	}
	peakCores := []int{1, cpuInfo.Cores, c.threads}
	prog := newProgress(os.Stderr, 1+len(bwSizes)*len(bwWorkers)+len(jobs)*c.rounds*len(c.libs))

	// Machine.
	prog.step("FMA peaks")
	peaks := heldPeaks(probe.Peaks(peakCores...), c.isa)
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
	for _, s := range bwSizes {
		if bw := bwOf("vsum", s, c.threads); bw > 0 {
			rf.Levels = append(rf.Levels, report.BWLevel{Bytes: float64(s), GBps: bw})
		}
	}
	if rf.PeakF32 == 0 { // no peak kernel runs here: fall back to the all-core figure or nothing
		rf.PeakF32, rf.PeakF64 = probe.Best(peaks, "f32", cpuInfo.Cores), probe.Best(peaks, "f64", cpuInfo.Cores)
	}

	// The libraries, in the order given: in-process ones and peer children.
	var ms []measurer
	defer func() {
		for _, m := range ms {
			m.close()
		}
	}()
	o := run.Options{Reps: c.reps, MinTime: c.minTime, Threads: c.threads}
	var overhead, peerNotes []string
	host, err := peercfg.Host().Cap(c.isa)
	if err != nil {
		return fmt.Errorf("-isa %s: %v", c.isa, err)
	}
	for _, name := range c.libs {
		switch name {
		case "kgen", "kgen-go", "gonum":
			var lib run.Lib
			var err error
			switch name {
			case "kgen":
				lib, err = run.Kgen("kgen", c.isa)
			case "kgen-go":
				lib, err = run.Kgen("kgen-go", "go")
			case "gonum":
				lib = run.Gonum()
			}
			if err != nil {
				return err
			}
			ms = append(ms, inProc{rn: run.NewRunner(lib), o: o})
		case "openblas", "blis":
			if !peersBuilt {
				continue
			}
			p, note, err := startConfigured(c, name, host)
			peerNotes = append(peerNotes, note)
			if err != nil {
				fmt.Fprintln(os.Stderr, "kgen-bench:", err, "(left out)")
				continue
			}
			ms = append(ms, p)
			rt, err := p.roundTrip(20)
			if err != nil {
				return fmt.Errorf("%s: %v", name, err)
			}
			overhead = append(overhead, fmt.Sprintf("%s: start to hello %.1f ms, round trip %.0f µs", name,
				p.startup.Seconds()*1e3, rt.Seconds()*1e6))
		}
	}
	prog.setTotal(prog.done + len(jobs)*c.rounds*len(ms))

	settle := c.settle
	if settle < 0 {
		settle = 0
		if c.threads > 1 {
			settle = 100 * time.Millisecond
		}
	}
	sorted := interleave(ms, jobs, c.rounds, settle, func(m measurer, j report.Job, r int) {
		prog.step(fmt.Sprintf("%s %s %s round %d/%d", m.name(), j.Op, j.Shape(), r+1, c.rounds))
	})
	prog.finish()
	libKernel := map[string]string{}
	for _, m := range ms {
		libKernel[m.name()] = m.kernel()
	}

	// Report.
	w := os.Stdout
	fmt.Fprintf(w, "kgen-bench  %s  %s/%s  GOMAXPROCS=%d  threads=%d  rounds=%d (interleaved)  reps=%d per round (median)  mintime=%s  settle=%s\n\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), c.threads, c.rounds, c.reps, c.minTime, settle)
	fmt.Fprintf(w, "CPU: %s, %d cores, features %s\n", cpuInfo.Model, cpuInfo.Cores, strings.Join(cpuInfo.Features, " "))
	var caches []string
	for _, ch := range cpuInfo.Caches {
		caches = append(caches, fmt.Sprintf("L%d%s %s (shared by cpus %s)", ch.Level, strings.ToLower(ch.Type[:min(1, len(ch.Type))]), ch.Size, ch.SharedCPUs))
	}
	fmt.Fprintf(w, "Caches (cpu0, sysfs): %s\n", strings.Join(caches, "; "))
	fmt.Fprintf(w, "Host load (1-minute average, /proc/loadavg): %s at the start, %s at the end, on %d CPUs%s\n\n",
		loadStart, loadAvg(), cpuInfo.Cores, busyNote(loadStart, cpuInfo.Cores))
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
	fmt.Fprintf(w, "Libraries (threads=%d%s):\n", c.threads, isaNote(c.isa, host))
	for _, l := range c.libs {
		if k, ok := libKernel[l]; ok {
			fmt.Fprintf(w, "  %-9s %s\n", l, k)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%%peak: against the measured FMA peak on %d core(s) (f32 %.1f, f64 %.1f GFLOP/s).\n", tc, rf.PeakF32, rf.PeakF64)
	fmt.Fprintf(w, "GB/s: compulsory traffic (A + B read, C written) / median time; %%roof: against min(peak, intensity × bandwidth), the bandwidth of vsum on %d thr over the smallest measured working set that holds the job's operands (the bandwidth table above).\n\n", c.threads)
	if len(peerNotes) > 0 {
		fmt.Fprintln(w, "Peer configuration (each peer's own detection first, then the best it has for the CPU's ISA):")
		for _, n := range peerNotes {
			fmt.Fprintln(w, "  "+n)
		}
		fmt.Fprintln(w)
	}
	if len(overhead) > 0 {
		fmt.Fprintf(w, "Peer children (long-lived, one request per round; the round trip is outside the timed region): %s.\n", strings.Join(overhead, "; "))
	}
	fmt.Fprintf(w, "median/min/max: over %d interleaved rounds (each the median of %d reps); spread = (max−min)/median.\n", c.rounds, c.reps)
	fmt.Fprintf(w, "÷ best peer: kgen's speed over the fastest peer's (by median), median of the per-round ratios [min–max];\n")
	fmt.Fprintf(w, "  \"within noise\" when the interval contains 1.0 (it holds the median ratio with probability %.0f%% for %d rounds; no verdict under %d).\n\n",
		100*report.Coverage(c.rounds), c.rounds, report.MinNoiseRounds)
	table := report.ResultTable(sorted, rf)
	table.Write(w)
	if c.md != "" {
		md := func(f io.Writer) error {
			fmt.Fprintf(f, "%s, %d cores (%s%s); %s; threads=%d; %d interleaved rounds × %d reps; host load %s → %s.\n\n",
				cpuInfo.Model, cpuInfo.Cores, host.ISA(), isaNote(c.isa, host), runtime.Version(), c.threads, c.rounds, c.reps, loadStart, loadAvg())
			for _, n := range peerNotes {
				fmt.Fprintf(f, "- %s\n", n)
			}
			fmt.Fprintf(f, "\nmedian/min/max over the rounds; spread = (max−min)/median; ÷ best peer = median of the per-round ratios "+
				"peer time / kgen time [min–max], \"within noise\" when the interval contains 1.0 (coverage %.0f%% for %d rounds).\n\n",
				100*report.Coverage(c.rounds), c.rounds)
			return table.WriteMarkdown(f)
		}
		if err := writeFile(c.md, md); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "wrote", c.md)
	}

	if c.csv != "" {
		if err := writeFile(c.csv, func(w io.Writer) error { return report.WriteCSV(w, sorted, rf) }); err != nil {
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

// writeFile writes path through write, via a temporary file renamed into
// place: never a partly written output.
func writeFile(path string, write func(io.Writer) error) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// roundOrder is the order of n libraries in round r: row r of a Williams
// design (first row 0, 1, n−1, 2, n−2, ...; row r adds r mod n; for odd n,
// rows n..2n−1 are rows 0..n−1 reversed). Every library takes every
// position equally often, and follows every other library equally often,
// over each n rounds (even n) or 2n rounds (odd n): a library that leaves
// the machine disturbed (thread pools still spinning, caches full of its
// data) then hands that disturbance to each of the others alike.
func roundOrder(n, r int) []int {
	if n <= 0 {
		return nil
	}
	first := make([]int, 0, n)
	first = append(first, 0)
	for lo, hi := 1, n-1; len(first) < n; {
		first = append(first, lo)
		lo++
		if len(first) < n {
			first = append(first, hi)
			hi--
		}
	}
	rows := n
	if n%2 == 1 {
		rows = 2 * n
	}
	r %= rows
	out := make([]int, n)
	for i := range out {
		out[i] = (first[i] + r) % n
	}
	if r >= n {
		for i := range out {
			out[i] = (first[n-1-i] + r) % n
		}
	}
	return out
}

// interleave measures every job on every library in rounds: for each job,
// round r (0-based) runs the libraries in the order roundOrder(L, r) (for
// three libraries: A B C, B C A, C A B, C B A, A C B, B A C). With settle
// > 0 it pauses that long before each measurement but a job's first, so
// that a peer's worker threads still spinning after its round (OpenBLAS
// and OpenMP spin a while before sleeping) do not steal the next library's
// cores. step is called before each measurement. The results are one per
// (job, library), in job order then library order, each collecting its
// rounds (run.Collect).
func interleave(ms []measurer, jobs []report.Job, rounds int, settle time.Duration, step func(m measurer, j report.Job, r int)) []report.Result {
	var out []report.Result
	for _, j := range jobs {
		per := make([][]report.Result, len(ms))
		for r := 0; r < rounds; r++ {
			for i, k := range roundOrder(len(ms), r) {
				if settle > 0 && (r > 0 || i > 0) {
					time.Sleep(settle)
				}
				step(ms[k], j, r)
				per[k] = append(per[k], ms[k].round(j))
			}
		}
		for k := range ms {
			out = append(out, run.Collect(per[k]))
		}
	}
	return out
}

// isaRank orders the ISAs -isa takes; heldPeaks keeps the peaks of
// kernels at or below isa ("" keeps all).
var isaRank = map[string]int{"avx2": 1, "avx512": 2}

func heldPeaks(ps []probe.Peak, isa string) []probe.Peak {
	if isa == "" {
		return ps
	}
	var out []probe.Peak
	for _, p := range ps {
		if r, ok := isaRank[p.ISA]; ok && r <= isaRank[isa] {
			out = append(out, p)
		}
	}
	return out
}

// isaNote says, after a thread count or an ISA, that -isa holds every
// library to host's (capped) ISA.
func isaNote(isa string, host peercfg.CPU) string {
	if isa == "" {
		return ""
	}
	return fmt.Sprintf("; every library held to %s by -isa %s", host.ISA(), isa)
}

// probeModel names the CPU: its model and vector ISA.
func probeModel() string {
	return fmt.Sprintf("CPU: %s (%s)", probe.ReadCPU().Model, peercfg.Host().ISA())
}

// loadAvg is the 1-minute load average from /proc/loadavg ("?" if unknown).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// busyNote warns when the host ran more than one runnable task per CPU.
func busyNote(load string, cpus int) string {
	x, err := strconv.ParseFloat(load, 64)
	if err != nil || x <= float64(cpus) {
		return ""
	}
	return ": a busy host, expect wide spreads"
}
