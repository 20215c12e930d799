package report

import (
	"bytes"
	"encoding/csv"
	"math"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{9, 9, 1, 1, 5}, 5},
	} {
		in := append([]float64(nil), c.in...)
		if got := Median(in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Fatalf("Median modified its input: %v", in)
			}
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median(nil) is not NaN")
	}
}

func TestFlopsBytes(t *testing.T) {
	sq := Job{Kind: Square, Op: "sgemm", M: 1024, K: 1024, N: 1024, Batch: 1}
	if got, want := sq.Flops(), 2*math.Pow(1024, 3); got != want {
		t.Errorf("flops %v, want %v", got, want)
	}
	if got, want := sq.Bytes(), 4*3*math.Pow(1024, 2); got != want {
		t.Errorf("bytes %v, want %v", got, want)
	}
	d := Job{Kind: Square, Op: "dgemm", M: 2, K: 3, N: 4}
	if d.Flops() != 48 || d.Bytes() != 8*(6+12+8) {
		t.Errorf("dgemm 2×3×4: flops %v bytes %v", d.Flops(), d.Bytes())
	}
	b := Job{Kind: Batch, Op: "sgemm", M: 8, K: 8, N: 8, Batch: 1000}
	if b.Flops() != 1000*2*512 || b.Bytes() != 1000*4*3*64 {
		t.Errorf("batch: flops %v bytes %v", b.Flops(), b.Bytes())
	}
	if got := b.Intensity(); math.Abs(got-8.0/6) > 1e-12 { // 2n³ / (4·3n²) = n/6
		t.Errorf("batch intensity %v, want %v", got, 8.0/6)
	}
	sk := Job{Kind: Skinny, Op: "sgemm", M: 1, K: 4096, N: 4096, Batch: 1}
	if sk.Intensity() > 0.5 || sk.Intensity() < 0.49 {
		t.Errorf("M=1 intensity %v, want just under 0.5", sk.Intensity())
	}
	for j, want := range map[Job]string{sq: "1024³", b: "1000×8³", sk: "1×4096×4096"} {
		if got := j.Shape(); got != want {
			t.Errorf("Shape = %q, want %q", got, want)
		}
	}
	r := Result{Job: sq, Median: 0.02}
	if got, want := r.GFLOPS(), sq.Flops()/0.02/1e9; got != want {
		t.Errorf("GFLOPS %v, want %v", got, want)
	}
	if (Result{Job: sq}).GFLOPS() != 0 {
		t.Error("GFLOPS of an unmeasured result is not 0")
	}
}

func TestRoof(t *testing.T) {
	rf := Roof{PeakF32: 100, PeakF64: 50, BW: 20}
	sk := Job{Op: "sgemm", M: 1, K: 4096, N: 4096, Batch: 1}
	if got, want := rf.Bound(sk), sk.Intensity()*20; got != want {
		t.Errorf("skinny bound %v, want %v", got, want)
	}
	sq := Job{Op: "dgemm", M: 512, K: 512, N: 512, Batch: 1}
	if rf.Bound(sq) != 50 {
		t.Errorf("square dgemm bound %v, want the f64 peak", rf.Bound(sq))
	}
	if (Roof{PeakF32: 7}).Bound(sk) != 7 {
		t.Error("without a bandwidth the bound is not the peak")
	}
	// With levels, the smallest working set holding the job's operands bounds it: the skinny job moves
	// 4·(4096 + 4096² + 4096) bytes ≈ 64.03 MiB, more than 64 MiB, so the 256 MiB level (10 GB/s); a
	// 16·… bytes one fits none below 1 GiB; the smallest jobs take the first level.
	lv := Roof{PeakF32: 1e6, Levels: []BWLevel{{1 << 20, 100}, {64 << 20, 30}, {256 << 20, 10}}}
	for _, c := range []struct {
		j    Job
		bw   float64
		over float64
	}{
		{sk, 10, 256 << 20},
		{Job{Op: "sgemm", M: 1, K: 4000, N: 4000, Batch: 1}, 30, 64 << 20},
		{Job{Op: "sgemm", M: 8, K: 8, N: 8, Batch: 1}, 100, 1 << 20},
		{Job{Op: "sgemm", M: 1, K: 16384, N: 16384, Batch: 1}, 10, 256 << 20},
	} {
		if bw, over := lv.BWFor(c.j); bw != c.bw || over != c.over {
			t.Errorf("%s: bandwidth %v over %v bytes, want %v over %v", c.j.Shape(), bw, over, c.bw, c.over)
		}
		if got, want := lv.Bound(c.j), c.j.Intensity()*c.bw; got != want {
			t.Errorf("%s: bound %v, want %v", c.j.Shape(), got, want)
		}
	}
}

func TestTableWrite(t *testing.T) {
	tb := Table{Header: []string{"a", "num"}, Right: []bool{false, true},
		Rows: [][]string{{"xé", "1"}, {"long", "12.5"}}}
	var b bytes.Buffer
	if err := tb.Write(&b); err != nil {
		t.Fatal(err)
	}
	want := "a      num\n----  ----\nxé       1\nlong  12.5\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestResultTable(t *testing.T) {
	rf := Roof{PeakF32: 100, PeakF64: 50, BW: 20}
	sq := Job{Kind: Square, Op: "sgemm", M: 1000, K: 1000, N: 1000, Batch: 1}
	sk := Job{Kind: Skinny, Op: "sgemm", M: 1, K: 4000, N: 4000, Batch: 1}
	rs := []Result{
		{Job: sq, Library: "kgen", Kernel: "avx2", Median: 0.04},  // 50 GFLOP/s
		{Job: sq, Library: "gonum", Kernel: "go", Median: 0.2},    // 10
		{Job: sk, Library: "kgen", Kernel: "avx2", Median: 0.004}, // 8 GFLOP/s
		{Job: sk, Library: "blis", Err: "child process failed"},
	}
	tb := ResultTable(rs, rf)
	if len(tb.Rows) != 4 {
		t.Fatalf("%d rows", len(tb.Rows))
	}
	col := func(name string) int {
		for i, h := range tb.Header {
			if h == name {
				return i
			}
		}
		t.Fatalf("no column %q", name)
		return -1
	}
	if g := tb.Rows[0][col("GFLOP/s")]; g != "50.0" {
		t.Errorf("GFLOP/s %q", g)
	}
	if p := tb.Rows[0][col("%peak")]; p != "50%" {
		t.Errorf("%%peak %q", p)
	}
	if tb.Rows[1][0] != "" || tb.Rows[1][1] != "" {
		t.Errorf("repeated op/shape printed: %q", tb.Rows[1])
	}
	if tb.Rows[0][col("GB/s")] != "" {
		t.Error("GB/s printed for a square job")
	}
	// Skinny: 2·4000·4000 flops, 4·(4000+16e6+4000) bytes in 4 ms.
	if gb := tb.Rows[2][col("GB/s")]; gb != "16.0" {
		t.Errorf("skinny GB/s %q", gb)
	}
	if roof := tb.Rows[2][col("%roof")]; roof != "80%" { // 16 of 20 GB/s
		t.Errorf("skinny %%roof %q", roof)
	}
	if n := tb.Rows[3][col("note")]; n != "child process failed" || tb.Rows[3][col("GFLOP/s")] != "" {
		t.Errorf("failed row %q", tb.Rows[3])
	}
	var b bytes.Buffer
	tb.Write(&b)
	if !strings.Contains(b.String(), "1000³") || !strings.Contains(b.String(), "1×4000×4000") {
		t.Errorf("table lacks the shapes:\n%s", b.String())
	}
}

func TestWriteCSV(t *testing.T) {
	rf := Roof{PeakF32: 100, PeakF64: 50, BW: 20}
	sq := Job{Kind: Square, Op: "dgemm", M: 100, K: 100, N: 100, Batch: 1}
	rs := []Result{
		{Job: sq, Library: "openblas", Kernel: "Zen, (x)", Threads: 1, Reps: 5, Median: 1e-4, Min: 9e-5, Max: 2e-4},
		{Job: sq, Library: "blis", Err: "boom"},
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, rs, rf); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || strings.Join(recs[0], ",") != strings.Join(CSVHeader, ",") {
		t.Fatalf("records %q", recs)
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
	if get(recs[1], "kernel") != "Zen, (x)" || get(recs[1], "gflops") != "20" || get(recs[1], "pct_peak") != "40" {
		t.Errorf("row %q", recs[1])
	}
	if get(recs[2], "error") != "boom" || get(recs[2], "gflops") != "0" {
		t.Errorf("failed row %q", recs[2])
	}
}
