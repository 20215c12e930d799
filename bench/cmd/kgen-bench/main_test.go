package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/bench/internal/probe"
	"github.com/kgen-dev/kgen/bench/internal/report"
)

func TestIntList(t *testing.T) {
	got, err := intList(" 256,512 ,,1024")
	if err != nil || len(got) != 3 || got[2] != 1024 {
		t.Errorf("%v %v", got, err)
	}
	for _, bad := range []string{"a", "0", "-5"} {
		if _, err := intList(bad); err == nil {
			t.Errorf("intList(%q) accepted", bad)
		}
	}
}

func TestBar(t *testing.T) {
	if got := bar(5, 10, 10); got != "[#####.....]" {
		t.Errorf("bar = %q", got)
	}
	if got := bar(12, 10, 4); got != "[####]" {
		t.Errorf("overfull bar = %q", got)
	}
	var b bytes.Buffer
	p := newProgress(&b, 2)
	p.step("one")
	p.step("two")
	p.finish()
	if lines := strings.Split(strings.TrimSpace(b.String()), "\n"); len(lines) != 3 || !strings.Contains(lines[2], "2/2") {
		t.Errorf("progress output:\n%s", b.String())
	}
}

func TestJobsAndEnv(t *testing.T) {
	c := config{sizes: []int{64}, dgemm: true, skinny: true, skinnyNK: 128, batch: true, batchCount: 10, batchSizes: []int{8}, threads: 2, coretype: "Zen"}
	js := c.jobs()
	if len(js) != 2+3+1 {
		t.Fatalf("%d jobs: %+v", len(js), js)
	}
	if js[5].Batch != 10 || js[2].M != 1 || js[2].K != 128 {
		t.Errorf("jobs %+v", js)
	}
	// The parent environment is given, not read: the test must not depend on
	// the caller's (CI hosts set OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE, and
	// variables whose values mention OPENBLAS_*).
	parent := []string{"PATH=/bin", "OPENBLAS_CORETYPE=Prescott", "OPENBLAS_L2_SIZE=512",
		"BLIS_ARCH_TYPE=7", "GOMAXPROCS=9", "TOX_TESTENV_PASSENV=OPENBLAS_*"}
	env := envMap(t, peerEnv(c, "openblas", "Zen", parent))
	for k, v := range map[string]string{"OPENBLAS_NUM_THREADS": "2", "OPENBLAS_CORETYPE": "Zen", "GOMAXPROCS": "2",
		"OMP_NUM_THREADS": "2", "PATH": "/bin", "TOX_TESTENV_PASSENV": "OPENBLAS_*"} {
		if env[k] != v {
			t.Errorf("openblas env: %s=%q, want %q", k, env[k], v)
		}
	}
	for _, k := range []string{"OPENBLAS_L2_SIZE", "BLIS_ARCH_TYPE"} {
		if _, ok := env[k]; ok {
			t.Errorf("parent's %s leaked into the openblas peer", k)
		}
	}
	env = envMap(t, peerEnv(c, "blis", "", parent))
	if _, ok := env["BLIS_ARCH_TYPE"]; ok {
		t.Error("unforced blis has BLIS_ARCH_TYPE")
	}
	if e := envMap(t, peerEnv(c, "blis", "0", parent)); e["BLIS_ARCH_TYPE"] != "0" || e["BLIS_NUM_THREADS"] != "2" {
		t.Errorf("forced blis env: %v", e)
	}
	for k := range env {
		if strings.HasPrefix(k, "OPENBLAS_") {
			t.Errorf("blis env has %s", k)
		}
	}
	if env["BLIS_NUM_THREADS"] != "2" || env["GOMAXPROCS"] != "2" || env["TOX_TESTENV_PASSENV"] != "OPENBLAS_*" {
		t.Errorf("blis env: %v", env)
	}
	if _, ok := env["BLIS_ARCH_TYPE"]; ok {
		t.Error("parent's BLIS_ARCH_TYPE leaked into the blis peer")
	}
}

// envMap indexes an environment by name; a name given twice is an error,
// since the child would see only one of the two values.
func envMap(t *testing.T, env []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		if _, dup := m[k]; dup {
			t.Errorf("%s given twice", k)
		}
		m[k] = v
	}
	return m
}

// fakeLib answers rounds with canned times and logs the order of calls.
type fakeLib struct {
	lib   string
	times []float64
	log   *[]string
	n     int
}

func (f *fakeLib) name() string   { return f.lib }
func (f *fakeLib) kernel() string { return "fake" }
func (f *fakeLib) close() error   { return nil }
func (f *fakeLib) round(j report.Job) report.Result {
	*f.log = append(*f.log, f.lib)
	t := f.times[f.n%len(f.times)]
	f.n++
	return report.Result{Job: j, Library: f.lib, Median: t, Min: t, Max: t}
}

func TestInterleave(t *testing.T) {
	var log []string
	ms := []measurer{
		&fakeLib{lib: "kgen", times: []float64{1, 2, 1, 5, 5, 5}, log: &log},
		&fakeLib{lib: "openblas", times: []float64{1.2, 2.2, 1.1, 5, 5, 5}, log: &log},
		&fakeLib{lib: "blis", times: []float64{3, 3, 3}, log: &log},
	}
	jobs := []report.Job{
		{Kind: report.Square, Op: "sgemm", M: 8, K: 8, N: 8, Batch: 1},
		{Kind: report.Square, Op: "dgemm", M: 8, K: 8, N: 8, Batch: 1},
	}
	steps := 0
	rs := interleave(ms, jobs, 3, 0, func(measurer, report.Job, int) { steps++ })
	want := "kgen openblas blis openblas blis kgen blis kgen openblas " +
		"kgen openblas blis openblas blis kgen blis kgen openblas"
	if got := strings.Join(log, " "); got != want || steps != 18 {
		t.Errorf("order %q (%d steps), want %q", got, steps, want)
	}
	if len(rs) != 6 || rs[0].Library != "kgen" || rs[1].Library != "openblas" || rs[3].Op != "dgemm" {
		t.Fatalf("results %+v", rs)
	}
	if got := rs[0].Rounds; len(got) != 3 || got[1] != 2 || rs[0].Median != 1 || rs[0].Max != 2 {
		t.Errorf("kgen rounds %v median %v", got, rs[0].Median)
	}
	// Round-paired ratios 1.2, 1.1, 1.1: kgen leads openblas (the best peer).
	q := report.Ratios(rs)[0]
	if q.Peer != "openblas" || q.Verdict != report.Leads {
		t.Errorf("ratio %+v", q)
	}
}

// The breakdown runs every path end to end (structure only: a short run on
// a busy host may take few samples, so no share is asserted here; package
// breakdown tests the attribution on a canned profile).
func TestRunBreakdown(t *testing.T) {
	c := config{threads: 1, bdN: 96, bdTime: 20 * time.Millisecond, skinnyNK: 256, batchCount: 10}
	var b bytes.Buffer
	if err := runBreakdown(c, &b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{"packed          sgemm 96³", "packed          dgemm 96³", "unpacked small  sgemm 64³",
		"rows (few-row)  sgemm 4×256×256", "batched small   sgemm 10×16³", "microkernel", "on-CPU"} {
		if !strings.Contains(out, s) {
			t.Errorf("breakdown output lacks %q:\n%s", s, out)
		}
	}
}

func TestParseConfig(t *testing.T) {
	c, err := parseConfig([]string{"-threads", "2", "-rounds", "7", "-sizes", "64,128", "-libs", "kgen, blis"})
	if err != nil || c.threads != 2 || c.rounds != 7 || len(c.sizes) != 2 || len(c.libs) != 2 || c.libs[1] != "blis" ||
		c.blisArch != "auto" || c.coretype != "auto" || c.reps != 3 {
		t.Errorf("%+v %v", c, err)
	}
	if c, err := parseConfig([]string{"-isa", "avx2"}); err != nil || c.isa != "avx2" {
		t.Errorf("-isa avx2: %+v %v", c, err)
	}
	for _, bad := range [][]string{{"-rounds", "0"}, {"-threads", "0"}, {"-sizes", "x"}, {"-nosuchflag"}, {"stray"}, {"-isa", "avx3"}} {
		if _, err := parseConfig(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// -isa avx2 keeps the AVX2 peaks only; avx512 keeps both; none keeps all.
func TestHeldPeaks(t *testing.T) {
	ps := []probe.Peak{{ISA: "avx2", Elem: "f32", Cores: 1, GFLOPS: 100}, {ISA: "avx512", Elem: "f32", Cores: 1, GFLOPS: 200}}
	if got := probe.Best(heldPeaks(ps, "avx2"), "f32", 1); got != 100 {
		t.Errorf("avx2: best %v, want 100", got)
	}
	if got := probe.Best(heldPeaks(ps, "avx512"), "f32", 1); got != 200 {
		t.Errorf("avx512: best %v, want 200", got)
	}
	if got := len(heldPeaks(ps, "")); got != 2 {
		t.Errorf("no -isa kept %d peaks, want 2", got)
	}
}

func TestRoundOrder(t *testing.T) {
	if got := fmt.Sprint(roundOrder(3, 0), roundOrder(3, 1), roundOrder(3, 3), roundOrder(3, 6)); got != "[0 1 2] [1 2 0] [2 1 0] [0 1 2]" {
		t.Errorf("n=3 rows: %s", got)
	}
	if got := fmt.Sprint(roundOrder(4, 0)); got != "[0 1 3 2]" {
		t.Errorf("n=4 first row: %s", got)
	}
	if roundOrder(0, 3) != nil || fmt.Sprint(roundOrder(1, 5)) != "[0]" {
		t.Error("degenerate sizes")
	}
	for n := 2; n <= 7; n++ {
		rows := n
		if n%2 == 1 {
			rows = 2 * n
		}
		pos := make([][]int, n)     // pos[lib][position]
		follows := make([][]int, n) // follows[a][b]: a right after b
		for i := range pos {
			pos[i], follows[i] = make([]int, n), make([]int, n)
		}
		for r := 0; r < rows; r++ {
			o := roundOrder(n, r)
			seen := map[int]bool{}
			for i, k := range o {
				if seen[k] || k < 0 || k >= n {
					t.Fatalf("n=%d round %d: %v is not a permutation", n, r, o)
				}
				seen[k] = true
				pos[k][i]++
				if i > 0 {
					follows[k][o[i-1]]++
				}
			}
		}
		for a := 0; a < n; a++ {
			for i := 0; i < n; i++ {
				if pos[a][i] != rows/n {
					t.Errorf("n=%d: library %d at position %d %d times, want %d", n, a, i, pos[a][i], rows/n)
				}
			}
			for b := 0; b < n; b++ {
				if want := rows / n; a != b && follows[a][b] != want {
					t.Errorf("n=%d: %d follows %d %d times, want %d", n, a, b, follows[a][b], want)
				}
			}
		}
	}
}

func TestInterleaveSettles(t *testing.T) {
	var log []string
	ms := []measurer{&fakeLib{lib: "a", times: []float64{1}, log: &log}, &fakeLib{lib: "b", times: []float64{1}, log: &log}}
	job := []report.Job{{Kind: report.Square, Op: "sgemm", M: 2, K: 2, N: 2, Batch: 1}}
	t0 := time.Now()
	interleave(ms, job, 2, 5*time.Millisecond, func(measurer, report.Job, int) {})
	if d := time.Since(t0); d < 15*time.Millisecond { // 4 measurements, 3 pauses
		t.Errorf("2 rounds of 2 with 5 ms settles took %v", d)
	}
}
