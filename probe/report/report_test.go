package report

import (
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/probe"
)

// madeUp is a profile with round figures, so every expected number below is worked out by hand.
func madeUp() *probe.Profile {
	return &probe.Profile{Version: probe.Version, GOOS: "linux", GOARCH: "amd64", CPU: "Made-up CPU", ISA: "avx512", Cores: 2,
		Caches: []probe.Cache{{Level: 1, Size: 32 << 10}, {Level: 2, Size: 1 << 20}, {Level: 3, Size: 8 << 20}},
		Peak:   map[string]float64{"avx512/f32/1c": 100, "avx2/f32/1c": 50, "go/f32/1c": 5},
		Bandwidth: map[string]float64{"L1/read/1c": 200, "L2/read/1c": 100, "L2/copy/1c": 80, "L3/read/1c": 50,
			"L3/copy/1c": 40, "DRAM/read/1c": 10, "DRAM/copy/1c": 8},
	}
}

const benchText = `goos: linux
goarch: amd64
pkg: github.com/kgen-dev/kgen/kernels
cpu: Made-up CPU
BenchmarkScalarBound        	       1	  40000000 ns/op	        10.00 GFLOP/s
BenchmarkSgemm/avx512/512   	      10	   3000000 ns/op	        89.48 GFLOP/s
BenchmarkSgemm/avx512/512   	      10	   2000000 ns/op	        89.48 GFLOP/s
BenchmarkSgemm/avx512/512   	      10	   4000000 ns/op	        89.48 GFLOP/s
BenchmarkVLoop/sdot/mem/avx2	     100	  20000000 ns/op
BenchmarkVLoop/saxpy/L2/go  	    1000	     20000 ns/op
BenchmarkTranspose/1024x1024/avx512-2	50	1000000 ns/op	8.39 GB/s
BenchmarkStridedReduction/colsum/128x256-2	100	5000 ns/op	2000 ns/avx2	8000 ns/go	4.000 go/avx2
PASS
ok  	github.com/kgen-dev/kgen/kernels	12.3s
`

func near(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want)) }

// TestRooflineByHand: each row's achieved, attainable, share and bound against numbers worked out by
// hand in the comments (the compulsory traffic of probe/report/work.go).
func TestRooflineByHand(t *testing.T) {
	res, err := Parse("bench.txt", strings.NewReader(benchText))
	if err != nil {
		t.Fatal(err)
	}
	base, err := Parse("base.txt", strings.NewReader("BenchmarkSgemm/avx512/512  10  6000000 ns/op\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(madeUp(), res, base)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		variant                   string
		procs                     int
		gflops, gbs, ai, att, pct float64
		bound, peak, bw           string
		speedup                   float64
	}
	wants := []want{
		// sgemm 512: median of 2, 3, 4 ms = 3 ms; 2·512³ = 268435456 flop → 89.4785 GFLOP/s; 12·512² =
		// 3145728 B (3 MiB: L3) → 1.048576 GB/s; AI 85.33, ×50 GB/s ≫ 100: compute bound at 100;
		// the base's 6 ms makes it 2× faster.
		{"avx512", 1, 268435456 / 3e-3 / 1e9, 3145728 / 3e-3 / 1e9, 268435456.0 / 3145728, 100, 100 * 268435456 / 3e-3 / 1e9 / 100, "compute", "avx512/f32/1c", "L3/read/1c", 2},
		// sdot n = 16Mi: 2n = 33554432 flop in 20 ms = 1.6777 GFLOP/s; 8n = 134217728 B (128 MiB:
		// DRAM) → 6.7109 GB/s; AI 0.25 × 10 GB/s = 2.5 < 50: DRAM bound, 67.1%.
		{"avx2", 1, 33554432 / 0.02 / 1e9, 134217728 / 0.02 / 1e9, 0.25, 2.5, 100 * (33554432 / 0.02 / 1e9) / 2.5, "DRAM", "avx2/f32/1c", "DRAM/read/1c", 0},
		// saxpy n = 16Ki: 32768 flop in 20 µs = 1.6384 GFLOP/s; 12n = 196608 B (L2, copy: 80 GB/s) →
		// 9.8304 GB/s; AI 1/6 × 80 = 13.3 > 5 (go peak): compute bound at 5, 32.8%.
		{"go", 1, 1.6384, 9.8304, 1.0 / 6, 5, 100 * 1.6384 / 5, "compute", "go/f32/1c", "L2/copy/1c", 0},
		// transpose 1024²: no arithmetic; 8·2^20 B = 8 MiB (L3, holds exactly) in 1 ms = 8.388608 GB/s
		// against L3 copy; the run had 2 procs, the profile only 1c: the 1c figure 40 GB/s → 20.97%.
		{"avx512", 2, 0, 8.388608, 0, 40, 100 * 8.388608 / 40, "L3", "", "L3/copy/1c", 0},
		// colsum 128×256 (ns/avx2 = 2000, ns/go = 8000): 32768 flop; 4·32768 + 4·256 = 132096 B (L2
		// read, 2 procs → the 1c 100 GB/s); AI 0.248062; avx2: 16.384 GFLOP/s against min(50, 24.806)
		// = 24.806 (L2 bound), 66.05%; go: 4.096 against min(5, 24.806) = 5 (compute), 81.92%.
		{"avx2", 2, 16.384, 132096 / 2e-6 / 1e9, 32768.0 / 132096, 32768.0 / 132096 * 100, 100 * 16.384 / (32768.0 / 132096 * 100), "L2", "avx2/f32/1c", "L2/read/1c", 0},
		{"go", 2, 4.096, 132096 / 8e-6 / 1e9, 32768.0 / 132096, 5, 100 * 4.096 / 5, "compute", "go/f32/1c", "L2/read/1c", 0},
	}
	if len(r.Rows) != len(wants) {
		t.Fatalf("%d rows, want %d: %+v (skipped %v)", len(r.Rows), len(wants), r.Rows, r.Skipped)
	}
	for i, w := range wants {
		g := r.Rows[i]
		if g.N != i+1 || g.Variant != w.variant || g.Procs != w.procs || !near(g.GFLOPs, w.gflops) || !near(g.GBs, w.gbs) ||
			!near(g.Intensity, w.ai) || !near(g.Attainable, w.att) || !near(g.Pct, w.pct) || g.Bound != w.bound ||
			g.PeakKey != w.peak || g.BandwidthKey != w.bw || !near(g.Speedup, w.speedup) {
			t.Errorf("row %d (%s):\n got %+v\nwant %+v", i+1, g.Bench, g, w)
		}
	}
	if len(r.Skipped) != 1 || !strings.HasPrefix(r.Skipped[0], "ScalarBound: no intensity entry") {
		t.Errorf("skipped = %q", r.Skipped)
	}
	md := string(r.Markdown("kgen report -profile p.json -bench bench.txt -base base.txt", true))
	for _, s := range []string{"| 1 | sgemm | 512 | avx512 | 1 | 89.5 | 1.05 | 85.3 | 100 GFLOP/s | 89% | compute | 2.00× |",
		"| 4 | transpose | 1024x1024 | avx512 | 2 | – | 8.39 | 0 | 40.0 GB/s | 21% | L3 | – |",
		"| 6 | colsum | 128x256 | go | 2 | 4.10 | 16.5 | 0.248 | 5.00 GFLOP/s | 82% | compute | – |",
		"- peak avx512/f32/1c: 100 GFLOP/s", "ScalarBound"} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q:\n%s", s, md)
		}
	}
	svg := r.SVG()
	if err := xml.Unmarshal(svg, new(struct{})); err != nil {
		t.Errorf("SVG is not well-formed XML: %v", err)
	}
	if n := strings.Count(string(svg), "<circle"); n != 5 {
		t.Errorf("SVG has %d points, want the 5 rows with arithmetic", n)
	}
}

// TestAttainable: the two sides of the ridge and the ridge itself (peak 100, bandwidth 20: ridge at 5
// flop/byte).
func TestAttainable(t *testing.T) {
	for _, c := range []struct {
		ai, want float64
		bound    string
	}{{1, 20, "L2"}, {4.99, 99.8, "L2"}, {5, 100, "compute"}, {64, 100, "compute"}} {
		got, b := Attainable(100, c.ai, 20, "L2")
		if !near(got, c.want) || b != c.bound {
			t.Errorf("Attainable(100, %g, 20) = %g %s, want %g %s", c.ai, got, b, c.want, c.bound)
		}
	}
}

// TestBadInput: a missing file, malformed result lines (file:line:col), and a shape the intensity
// table cannot read.
func TestBadInput(t *testing.T) {
	if _, err := ParseFile(filepath.Join(t.TempDir(), "nosuch.txt")); err == nil || !os.IsNotExist(err) || !strings.Contains(err.Error(), "nosuch.txt") {
		t.Errorf("missing file: err = %v", err)
	}
	for _, c := range []struct{ text, want string }{
		{"goos: linux\n\nBenchmarkSgemm/avx512/512-2   ten   12 ns/op\n", `b.txt:3:31: malformed benchmark line: iteration count "ten" is not an integer`},
		{"BenchmarkSgemm/avx512/512-2 10 12 ns/op 7\n", `b.txt:1:41: malformed benchmark line: value "7" has no unit`},
		{"PASS\nBenchmarkX 10 1.2.3 ns/op\n", `b.txt:2:15: malformed benchmark line: value "1.2.3" of unit "ns/op" is not a number`},
	} {
		_, err := Parse("b.txt", strings.NewReader(c.text))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Parse(%q):\n got %v\nwant %s...", c.text, err, c.want)
		}
	}
	res, err := Parse("b.txt", strings.NewReader("BenchmarkSgemm/avx512/abc 10 12 ns/op\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(madeUp(), res, nil); err == nil || !strings.Contains(err.Error(), "line 1") || !strings.Contains(err.Error(), `shape "abc"`) {
		t.Errorf("bad shape: err = %v", err)
	}
	// The bare name line go test prints before a benchmark's log output is not an error.
	if res, err := Parse("b.txt", strings.NewReader("BenchmarkSgemm/avx512/512\n    bench_test.go:12: log\n")); err != nil || len(res) != 0 {
		t.Errorf("bare name line: %v, %v", res, err)
	}
}

// BenchmarkTuned's points: 2MNK flops and each operand once at the kernel's element sizes, worked by hand
// for 4×1024×1024 (M×N×K); the variant is the profile's vector level.
func TestTunedWork(t *testing.T) {
	for _, tc := range []struct {
		name         string
		flops, bytes float64
		typ          string
	}{
		{"Tuned/sgemm/4x1024x1024", 8388608, 4*4096 + 4*1048576 + 4*4096, "f32"},
		{"Tuned/dgemm/4x1024x1024", 8388608, 8*4096 + 8*1048576 + 8*4096, "f64"},
		{"Tuned/bgemm/4x1024x1024", 8388608, 2*4096 + 2*1048576 + 4*4096, "f32"},
		{"Tuned/hgemm/4x1024x1024", 8388608, 2*4096 + 2*1048576 + 2*4096, "f32"},
	} {
		ws, ok, err := lookup(tc.name)
		if err != nil || !ok || len(ws) != 1 {
			t.Fatalf("%s: %v %v %v", tc.name, ws, ok, err)
		}
		if w := ws[0]; w.Flops != tc.flops || w.Bytes != tc.bytes || w.Type != tc.typ || w.Variant != "host" {
			t.Errorf("%s: %+v, want flops %v bytes %v type %s variant host", tc.name, w, tc.flops, tc.bytes, tc.typ)
		}
	}
	if _, _, err := lookup("Tuned/zgemm/4x4x4"); err == nil {
		t.Error("an unknown kernel is accepted")
	}
}
