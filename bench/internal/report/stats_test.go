package report

import (
	"bytes"
	"encoding/csv"
	"math"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{0.012, 0.010, 0, math.NaN(), 0.011, 0.020})
	if s.N != 4 || s.Min != 0.010 || s.Max != 0.020 || !near(s.Median, 0.0115) {
		t.Errorf("%+v", s)
	}
	// spread = (0.020 − 0.010) / 0.0115
	if got := s.Spread(); !near(got, 0.010/0.0115) {
		t.Errorf("spread %v", got)
	}
	if one := Summarize([]float64{3}); one.Spread() != 0 || one.Median != 3 {
		t.Errorf("one round: %+v", one)
	}
	if none := Summarize(nil); none.N != 0 || !math.IsNaN(none.Spread()) {
		t.Errorf("no rounds: %+v", none)
	}
}

func TestCoverage(t *testing.T) {
	for n, want := range map[int]float64{1: 0, 3: 0.75, 5: 0.9375, 7: 1 - 2.0/128} {
		if got := Coverage(n); !near(got, want) {
			t.Errorf("Coverage(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestCompare(t *testing.T) {
	for _, c := range []struct {
		name        string
		kgen, peer  []float64
		med, lo, hi float64
		verdict     string
		rounds      int
	}{
		// peer/kgen per round: 1.1, 1.2, 1.05 → all above 1.
		{"leads", []float64{10, 10, 20}, []float64{11, 12, 21}, 1.1, 1.05, 1.2, Leads, 3},
		// 0.9, 0.8, 0.95, 0.85, 0.7
		{"behind", []float64{10, 10, 20, 20, 10}, []float64{9, 8, 19, 17, 7}, 0.85, 0.7, 0.95, Behind, 5},
		// 0.9, 1.1, 1.0: the interval contains 1.
		{"noise", []float64{10, 10, 10}, []float64{9, 11, 10}, 1.0, 0.9, 1.1, WithinNoise, 3},
		// A common slow phase (round 2 is 3× slower for both) cancels in the pairing.
		{"common-mode", []float64{10, 30, 10}, []float64{12, 36, 12.5}, 1.2, 1.2, 1.25, Leads, 3},
		// Two rounds: no verdict, however clear.
		{"two", []float64{10, 10}, []float64{20, 20}, 2, 2, 2, TooFew, 2},
		// Failed rounds (0, NaN) are dropped, the pairing kept.
		{"failed", []float64{10, 0, 10, 10, math.NaN()}, []float64{5, 5, 6, 7, 5}, 0.6, 0.5, 0.7, Behind, 3},
	} {
		r := Compare("openblas", c.kgen, c.peer)
		if r.Peer != "openblas" || r.Rounds != c.rounds || r.Verdict != c.verdict ||
			!near(r.Median, c.med) || !near(r.Lo, c.lo) || !near(r.Hi, c.hi) {
			t.Errorf("%s: %+v", c.name, r)
		}
	}
	if r := Compare("blis", nil, nil); r.Verdict != TooFew || r.Rounds != 0 || !math.IsNaN(r.Median) {
		t.Errorf("empty: %+v", r)
	}
	// A ratio exactly 1 at the edge of the interval is within noise.
	if r := Compare("x", []float64{1, 1, 1}, []float64{1, 1.5, 2}); r.Verdict != WithinNoise {
		t.Errorf("edge: %+v", r)
	}
}

func TestBestPeerAndRatios(t *testing.T) {
	sq := Job{Kind: Square, Op: "sgemm", M: 64, K: 64, N: 64, Batch: 1}
	other := Job{Kind: Square, Op: "sgemm", M: 128, K: 128, N: 128, Batch: 1}
	mk := func(lib string, j Job, rounds ...float64) Result {
		s := Summarize(rounds)
		return Result{Job: j, Library: lib, Rounds: rounds, Median: s.Median, Min: s.Min, Max: s.Max}
	}
	rs := []Result{
		mk("kgen", sq, 1.0, 1.1, 0.9),
		mk("kgen-go", sq, 9, 9, 9),
		mk("gonum", sq, 8, 8, 8),
		mk("openblas", sq, 1.2, 1.2, 1.2),
		mk("blis", sq, 0.8, 0.9, 1.0), // the best peer: median 0.9
		mk("blis", other, 0.1, 0.1, 0.1),
		{Job: sq, Library: "failing", Err: "boom"},
	}
	if b := BestPeer(rs, sq); b != 4 {
		t.Fatalf("best peer %d", b)
	}
	q := Ratios(rs)
	if len(q) != 2 {
		t.Fatalf("ratios %v", q)
	}
	// kgen vs blis: 0.8/1.0, 0.9/1.1, 1.0/0.9.
	if r := q[0]; r.Peer != "blis" || !near(r.Lo, 0.8) || !near(r.Hi, 1/0.9) || r.Verdict != WithinNoise {
		t.Errorf("kgen: %+v", r)
	}
	if r := q[1]; r.Verdict != Behind {
		t.Errorf("kgen-go: %+v", r)
	}
	if BestPeer(rs[:2], sq) != -1 {
		t.Error("a kgen library counted as a peer")
	}
}

func TestTableAndCSVCarryRatios(t *testing.T) {
	rf := Roof{PeakF32: 100, PeakF64: 50}
	sq := Job{Kind: Square, Op: "sgemm", M: 100, K: 100, N: 100, Batch: 1}
	rs := []Result{
		{Job: sq, Library: "kgen", Rounds: []float64{1e-3, 2e-3, 1e-3}, Median: 1e-3, Min: 1e-3, Max: 2e-3},
		{Job: sq, Library: "openblas", Rounds: []float64{1.1e-3, 1.8e-3, 0.9e-3}, Median: 1.1e-3, Min: 0.9e-3, Max: 1.8e-3},
	}
	tb := ResultTable(rs, rf)
	col := func(name string) int {
		for i, h := range tb.Header {
			if h == name {
				return i
			}
		}
		t.Fatalf("no column %q", name)
		return -1
	}
	row := tb.Rows[0]
	if row[col("spread")] != "100%" || row[col("min")] != "1.00ms" || row[col("max")] != "2.00ms" {
		t.Errorf("kgen row %q", row)
	}
	// ratios 1.1, 0.9, 0.9 → median 0.9, interval [0.9, 1.1].
	if got := row[col("÷ best peer [interval]")]; got != "0.90 [0.90–1.10] openblas" || row[col("verdict")] != WithinNoise {
		t.Errorf("ratio cell %q verdict %q", got, row[col("verdict")])
	}
	if tb.Rows[1][col("verdict")] != "" {
		t.Error("a peer row carries a verdict")
	}
	var md bytes.Buffer
	tb.WriteMarkdown(&md)
	lines := strings.Split(strings.TrimSpace(md.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], "|---|---|") || !strings.Contains(lines[2], "| within noise |") {
		t.Errorf("markdown:\n%s", md.String())
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, rs, rf); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	get := func(r []string, name string) string {
		for i, h := range CSVHeader {
			if h == name {
				return r[i]
			}
		}
		t.Fatalf("no column %q", name)
		return ""
	}
	k := recs[1]
	if get(k, "rounds") != "3" || get(k, "spread") != "1" || get(k, "best_peer") != "openblas" ||
		get(k, "ratio_lo") != "0.9" || get(k, "ratio_hi") != "1.1" || get(k, "verdict") != WithinNoise ||
		get(k, "round_times_s") != "0.001;0.002;0.001" {
		t.Errorf("kgen record %q", k)
	}
	if get(recs[2], "verdict") != "" || get(recs[2], "ratio_vs_best_peer") != "" {
		t.Errorf("peer record %q", recs[2])
	}
}

func TestFmtRatio(t *testing.T) {
	for q, want := range map[Ratio]string{
		{Rounds: 3, Median: 0.9, Lo: 0.85, Hi: 0.998}:  "0.90 [0.85–0.998]",
		{Rounds: 3, Median: 1, Lo: 0.9, Hi: 1.0004}:    "1.00 [0.90–1.000]",
		{Rounds: 3, Median: 1.234, Lo: 1.1, Hi: 1.456}: "1.23 [1.10–1.46]",
		{Rounds: 0, Median: 1, Lo: 1, Hi: 1}:           "",
	} {
		if got := fmtRatio(q); got != want {
			t.Errorf("fmtRatio(%+v) = %q, want %q", q, got, want)
		}
	}
}
