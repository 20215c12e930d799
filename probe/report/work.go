package report

import (
	"fmt"
	"strconv"
	"strings"
)

// Work is what one call (one benchmark op) of a kernel at one shape must do: its arithmetic and its
// compulsory memory traffic (every operand read once, every output written once), from which the
// arithmetic intensity Flops/Bytes follows, and the working set that decides the memory level.
type Work struct {
	Kernel, Shape, Variant string
	Flops, Bytes           float64 // per op
	WorkingSet             float64 // bytes the op touches
	// Type is the precision of the arithmetic, the peak it is held against: f32, f64, or bf16 (only
	// on the avx512bf16 variant's VDPBF16PS; f16 and bf16 kernels elsewhere widen to f32).
	Type string
	// Kind is the bandwidth the traffic moves at: "read" when reads dominate, "copy" when the kernel
	// streams in and out about as much.
	Kind string
	// Metric is the time unit to read: "ns/op", or "ns/<variant>" for benchmarks that time several
	// variants in one op.
	Metric string
}

// Intensity is Flops/Bytes.
func (w Work) Intensity() float64 { return w.Flops / w.Bytes }

// entry turns one benchmark of kernels/*_test.go into the Work of each of its points. The table is
// written by hand from the benchmark code: each case quotes what its benchmark runs.
type entry struct {
	bench string // first name element
	doc   string
	work  func(parts []string) ([]Work, error)
}

// table is the arithmetic intensity of every benchmark of kernels/*_test.go that times a kernel.
// Benchmarks not listed (ScalarBound, the *Ratio benchmarks, F16PackA) time no single kernel call or
// repeat another row; the report names them as skipped.
var table = []entry{
	// BenchmarkSgemm: Sgemm(n, n, n) on n×n f32 matrices (variants, and "naive" the i-k-j Go loop):
	// 2n³ flops; A and B read, C written: 3·4n² bytes.
	{"Sgemm", "sgemm n³", func(p []string) ([]Work, error) { return square(p, "sgemm", 1, 12, "f32") }},
	// BenchmarkDgemm: the same in f64: 2n³ flops, 3·8n² bytes.
	{"Dgemm", "dgemm n³", func(p []string) ([]Work, error) { return square(p, "dgemm", 1, 24, "f64") }},
	// BenchmarkSkinny: Sgemm(m, n, n) with few rows, name m×n×n: 2mn² flops; B (n²) read, A (mn) read,
	// C (mn) written: 4(n² + 2mn) bytes, the figure the benchmark's GB/s counts.
	{"Skinny", "sgemm with few rows", func(p []string) ([]Work, error) {
		n, err := dims(p, 2, 3)
		if err != nil {
			return nil, err
		}
		m, k := n[0], n[1]
		return one(p, "sgemm", 2*m*k*k, 4*(k*k+2*m*k), "f32", "read"), nil
	}},
	// BenchmarkSmallBatch: 1000 independent n×n products per op: 1000·2n³ flops, 1000·12n² bytes; the
	// working set is the whole batch (each product is touched once per op).
	{"SmallBatch", "1000 sgemm n³", func(p []string) ([]Work, error) { return square(p, "sgemm batch", 1000, 12, "f32") }},
	// BenchmarkBgemm: bf16 A, B (2 bytes), f32 C: 2n³ flops, 2·2n² + 4n² bytes. The avx512bf16 variant
	// runs VDPBF16PS (the bf16 peak); the others widen to f32.
	{"Bgemm", "bgemm n³", func(p []string) ([]Work, error) {
		typ := "f32"
		if len(p) > 1 && p[1] == "avx512bf16" {
			typ = "bf16"
		}
		return square(p, "bgemm", 1, 8, typ)
	}},
	// BenchmarkF16Hgemm: f16 A, B, C (2 bytes each), widened to f32 for the arithmetic: 2n³ flops,
	// 3·2n² bytes. The variant "<v>-goconv" is v with the portable conversions.
	{"F16Hgemm", "hgemm n³", func(p []string) ([]Work, error) { return square(p, "hgemm", 1, 6, "f32") }},
	// BenchmarkTuned: kernel/MxNxK under the variant the machine selects (kgen tune's shapes, the
	// tuned-vs-default comparison): 2MNK flops; A (MK) and B (KN) read, C (MN) written, at the
	// kernel's element sizes: sgemm 4, dgemm 8, bgemm 2 (A, B) and 4 (C), hgemm 2. bgemm is held to the
	// f32 peak: the name does not say whether the avx512bf16 variant ran.
	{"Tuned", "tuned GEMMs", func(p []string) ([]Work, error) {
		n, err := dims(p, 2, 3)
		if err != nil {
			return nil, err
		}
		el, ok := map[string][3]float64{"sgemm": {4, 4, 4}, "dgemm": {8, 8, 8}, "bgemm": {2, 2, 4}, "hgemm": {2, 2, 2}}[p[1]]
		if !ok {
			return nil, fmt.Errorf("unknown kernel %q (want sgemm, dgemm, bgemm or hgemm)", p[1])
		}
		m, nn, k := n[0], n[1], n[2]
		b := el[0]*m*k + el[1]*k*nn + el[2]*m*nn
		typ := map[bool]string{true: "f64", false: "f32"}[p[1] == "dgemm"]
		return []Work{{Kernel: p[1], Shape: p[2], Variant: "host", Flops: 2 * m * nn * k, Bytes: b, WorkingSet: b,
			Type: typ, Kind: "read", Metric: "ns/op"}}, nil
	}},
	// BenchmarkVLoop: kernel/size/variant with n = 16 Ki (size L2) or 16 Mi (size mem) elements per
	// operand; flops and bytes as the benchmark counts them: sdot 2n flops over x, y (8n bytes); saxpy
	// 2n over x read, y read and written (12n); sgemv 2n over the matrix (4n); softmax 5n (max, sub,
	// exp, sum, scale) over X read and Y written (8n); layernorm 8n over X and Y (8n). Streams that
	// write run at copy bandwidth.
	{"VLoop", "vector loops", func(p []string) ([]Work, error) {
		if len(p) != 4 {
			return nil, fmt.Errorf("want VLoop/kernel/size/variant")
		}
		n := map[string]float64{"L2": 16 << 10, "mem": 16 << 20}[p[2]]
		if n == 0 {
			return nil, fmt.Errorf("unknown size %q (want L2 or mem)", p[2])
		}
		k := map[string]struct {
			flops, bytes float64
			kind         string
		}{"sdot": {2, 8, "read"}, "saxpy": {2, 12, "copy"}, "sgemv": {2, 4, "read"},
			"softmax": {5, 8, "copy"}, "layernorm": {8, 8, "copy"}}
		c, ok := k[p[1]]
		if !ok {
			return nil, fmt.Errorf("unknown kernel %q", p[1])
		}
		w := Work{Kernel: p[1], Shape: fmt.Sprintf("n=%s", p[2]), Variant: p[3], Flops: c.flops * n,
			Bytes: c.bytes * n, WorkingSet: c.bytes * n, Type: "f32", Kind: c.kind, Metric: "ns/op"}
		return []Work{w}, nil
	}},
	// BenchmarkTranspose: m×n f32 read and written, no arithmetic: 8mn bytes at copy bandwidth.
	{"Transpose", "transpose", func(p []string) ([]Work, error) {
		if len(p) != 3 {
			return nil, fmt.Errorf("want Transpose/MxN/variant")
		}
		n, err := parseDims(p[1], 2)
		if err != nil {
			return nil, err
		}
		b := 8 * n[0] * n[1]
		return []Work{{Kernel: "transpose", Shape: p[1], Variant: p[2], Bytes: b, WorkingSet: b, Type: "f32", Kind: "copy", Metric: "ns/op"}}, nil
	}},
	// BenchmarkF16Cvt: 1 Mi elements converted (f32→f16 or f16→f32): 6 bytes each, no arithmetic.
	{"F16Cvt", "f16 conversion", func(p []string) ([]Work, error) {
		if len(p) != 3 {
			return nil, fmt.Errorf("want F16Cvt/direction/variant")
		}
		b := 6.0 * (1 << 20)
		return []Work{{Kernel: "cvt_" + p[1], Shape: "n=1Mi", Variant: p[2], Bytes: b, WorkingSet: b, Type: "f32", Kind: "copy", Metric: "ns/op"}}, nil
	}},
	// BenchmarkStridedReduction: one op times every variant; its metric ns/<variant> is the fastest
	// call of that variant. colsum m×n: mn adds, A read (4mn) and s written (4n); sum_mid/max_mid
	// m×n×k: mnk adds (or max), 4mnk + 4mk bytes; hsum_mid the same on f16 (2 bytes) summed in f32;
	// batch_stats nb×c: mean (1 add) and variance (sub, mul, add) per element, 4 flops, X read once
	// (4·nb·c) and 8c written.
	{"StridedReduction", "strided reductions", func(p []string) ([]Work, error) {
		if len(p) != 3 {
			return nil, fmt.Errorf("want StridedReduction/kernel/shape")
		}
		d, err := parseDims(p[2], 0)
		if err != nil {
			return nil, err
		}
		var flops, bytes float64
		switch {
		case p[1] == "colsum" && len(d) == 2:
			flops, bytes = d[0]*d[1], 4*d[0]*d[1]+4*d[1]
		case (p[1] == "sum_mid" || p[1] == "max_mid") && len(d) == 3:
			flops, bytes = d[0]*d[1]*d[2], 4*d[0]*d[1]*d[2]+4*d[0]*d[2]
		case p[1] == "hsum_mid" && len(d) == 3:
			flops, bytes = d[0]*d[1]*d[2], 2*d[0]*d[1]*d[2]+2*d[0]*d[2]
		case p[1] == "batch_stats" && len(d) == 2:
			flops, bytes = 4*d[0]*d[1], 4*d[0]*d[1]+8*d[1]
		default:
			return nil, fmt.Errorf("unknown reduction %s/%s", p[1], p[2])
		}
		// The variants are the metrics' names: filled in by points.
		return []Work{{Kernel: p[1], Shape: p[2], Flops: flops, Bytes: bytes, WorkingSet: bytes, Type: "f32", Kind: "read", Metric: "ns/*"}}, nil
	}},
}

// square is the Work of count n×n×n products named Bench/variant/n: count·2n³ flops and
// count·perN2·n² bytes, read-dominated.
func square(p []string, kernel string, count, perN2 float64, typ string) ([]Work, error) {
	n, err := dims(p, 2, 1)
	if err != nil {
		return nil, err
	}
	return one(p, kernel, count*2*cube(n[0]), count*perN2*sq(n[0]), typ, "read"), nil
}

// one is the single Work of a benchmark named Bench/variant/shape.
func one(p []string, kernel string, flops, bytes float64, typ, kind string) []Work {
	return []Work{{Kernel: kernel, Shape: p[2], Variant: p[1], Flops: flops, Bytes: bytes, WorkingSet: bytes,
		Type: typ, Kind: kind, Metric: "ns/op"}}
}

// dims parses p[i], the last name element, as sizes separated by x: want of them (0: any number).
func dims(p []string, i, want int) ([]float64, error) {
	if len(p) != i+1 {
		return nil, fmt.Errorf("want %d name elements", i+1)
	}
	return parseDims(p[i], want)
}

func parseDims(s string, want int) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, "x") {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("shape %q: want positive sizes separated by x", s)
		}
		out = append(out, float64(n))
	}
	if want > 0 && len(out) != want {
		return nil, fmt.Errorf("shape %q: want %d sizes", s, want)
	}
	return out, nil
}

func sq(n float64) float64   { return n * n }
func cube(n float64) float64 { return n * n * n }

// lookup returns the Work of the benchmark name (without "Benchmark"), ok false when the table has no
// entry for it.
func lookup(name string) ([]Work, bool, error) {
	p := strings.Split(name, "/")
	for _, e := range table {
		if e.bench == p[0] {
			w, err := e.work(p)
			return w, true, err
		}
	}
	return nil, false, nil
}
