package run

import (
	"testing"
	"time"

	"github.com/kgen-dev/kgen/bench/internal/report"
)

func naive(m, k, n int, a, b, c []float32) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float32
			for p := 0; p < k; p++ {
				s += a[i*k+p] * b[p*n+j]
			}
			c[i*n+j] = s
		}
	}
}

func TestJobChecksResults(t *testing.T) {
	o := Options{Reps: 3, MinTime: time.Millisecond, Threads: 1}
	good := Lib{Name: "naive", S: naive}
	bad := Lib{Name: "bad", S: func(m, k, n int, a, b, c []float32) { naive(m, k, n, a, b, c); c[0]++ }}
	for _, j := range []report.Job{
		{Kind: report.Square, Op: "sgemm", M: 1, K: 1, N: 1, Batch: 1},
		{Kind: report.Skinny, Op: "sgemm", M: 3, K: 40, N: 17, Batch: 1},
		{Kind: report.Batch, Op: "sgemm", M: 4, K: 4, N: 4, Batch: 5},
	} {
		r := Job(good, j, o)
		if r.Err != "" || r.Median <= 0 || r.Min > r.Median || r.Max < r.Median || r.Reps != 3 {
			t.Errorf("%s: %+v", j.Shape(), r)
		}
	}
	// The check samples 24 entries; a 1×1 product always samples C[0].
	if r := Job(bad, report.Job{Kind: report.Square, Op: "sgemm", M: 1, K: 5, N: 1, Batch: 1}, o); r.Err == "" {
		t.Errorf("a wrong result passed: %+v", r)
	}
	if r := Job(good, report.Job{Kind: report.Square, Op: "dgemm", M: 2, K: 2, N: 2, Batch: 1}, o); r.Err != "not supported" {
		t.Errorf("dgemm without D: %+v", r)
	}
}

func TestGoLibs(t *testing.T) {
	o := Options{Reps: 1, MinTime: time.Millisecond, Threads: 1}
	k, err := Kgen("kgen", "")
	if err != nil {
		t.Fatal(err)
	}
	kg, err := Kgen("kgen-go", "go")
	if err != nil {
		t.Fatal(err)
	}
	if kg.Kernel != "go" {
		t.Errorf("portable variant reports %q", kg.Kernel)
	}
	for _, lib := range []Lib{k, kg, Gonum()} {
		for _, op := range []string{"sgemm", "dgemm"} {
			j := report.Job{Kind: report.Square, Op: op, M: 37, K: 29, N: 41, Batch: 1}
			if r := Job(lib, j, o); r.Err != "" {
				t.Errorf("%s %s: %s (rel err %g)", lib.Name, op, r.Err, r.MaxRelErr)
			}
		}
	}
}

func TestTime(t *testing.T) {
	calls := 0
	// minTime is 500 sleeps: calls are looped unless one sleep overran by
	// 250× (a loaded host stretches a 100 µs sleep to a few ms, not 25 ms).
	ts := Time(func() { calls++; time.Sleep(100 * time.Microsecond) }, 4, 50*time.Millisecond)
	if len(ts) != 4 || calls < 4*2 {
		t.Errorf("%d times, %d calls", len(ts), calls)
	}
	for _, x := range ts {
		if x < 100e-6 {
			t.Errorf("per-call time %v below the sleep", x)
		}
	}
}

func TestRunnerReusesOperands(t *testing.T) {
	var seen []*float32
	lib := Lib{Name: "naive", S: func(m, k, n int, a, b, c []float32) {
		seen = append(seen, &a[0])
		naive(m, k, n, a, b, c)
	}}
	rn := NewRunner(lib)
	o := Options{Reps: 2, MinTime: time.Microsecond, Threads: 1}
	j := report.Job{Kind: report.Square, Op: "sgemm", M: 7, K: 5, N: 3, Batch: 1}
	r1 := rn.Round(j, o)
	first := seen[0]
	r2 := rn.Round(j, o)
	if r1.Err != "" || r2.Err != "" || seen[len(seen)-1] != first {
		t.Errorf("rounds of one job did not reuse A: %v %v", r1.Err, r2.Err)
	}
	j2 := j
	j2.M = 11
	if r := rn.Round(j2, o); r.Err != "" || r.M != 11 {
		t.Errorf("new job: %+v", r)
	}
	if len(rn.s[0]) != 11*5 {
		t.Errorf("operands not replaced for a new job: len(A) = %d", len(rn.s[0]))
	}
}

func TestCollect(t *testing.T) {
	j := report.Job{Kind: report.Square, Op: "sgemm", M: 2, K: 2, N: 2, Batch: 1}
	rounds := []report.Result{
		{Job: j, Library: "x", Median: 3, Min: 2, Max: 9, MaxRelErr: 1e-7},
		{Job: j, Library: "x", Median: 1, Min: 1, Max: 1},
		{Job: j, Library: "x", Err: "child process failed"},
		{Job: j, Library: "x", Median: 2, Min: 2, Max: 2, MaxRelErr: 3e-7},
	}
	c := Collect(rounds)
	if len(c.Rounds) != 4 || c.Rounds[2] != 0 || c.Median != 2 || c.Min != 1 || c.Max != 3 ||
		c.Err != "child process failed" || c.MaxRelErr != 3e-7 || c.Library != "x" {
		t.Errorf("%+v", c)
	}
	if c := Collect([]report.Result{{Job: j, Err: "boom"}}); c.Median != 0 || c.Err != "boom" {
		t.Errorf("all failed: %+v", c)
	}
	if c := Collect(nil); c.Err == "" {
		t.Error("no rounds gave no error")
	}
}
