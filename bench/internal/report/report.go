// Package report holds the benchmark's results and their derived figures
// (flops, bytes, GFLOP/s, % of peak, roofline), and writes them as a text
// table and as CSV. It has no cgo and no plotting.
package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Kinds of job.
const (
	Square = "square" // M = K = N
	Skinny = "skinny" // small M, large K = N
	Batch  = "batch"  // Batch independent n×n×n products
)

// Job is one measured shape: Batch independent C(M×N) = A(M×K)·B(K×N)
// products, row-major, alpha = 1, beta = 0.
type Job struct {
	Kind    string `json:"kind"`
	Op      string `json:"op"` // "sgemm" or "dgemm"
	M, K, N int
	Batch   int `json:"batch"` // number of products per timed call; 1 unless Kind is Batch
}

// ElemSize is the size in bytes of one element of j.Op.
func (j Job) ElemSize() int {
	if j.Op == "dgemm" {
		return 8
	}
	return 4
}

func (j Job) batch() int { return max(j.Batch, 1) }

// Flops is the useful work of one timed call: 2·M·N·K per product.
func (j Job) Flops() float64 {
	return 2 * float64(j.M) * float64(j.N) * float64(j.K) * float64(j.batch())
}

// Bytes is the compulsory memory traffic of one timed call: A and B read
// once, C written once (beta = 0, so C need not be read).
func (j Job) Bytes() float64 {
	e := float64(j.ElemSize())
	return e * float64(j.M*j.K+j.K*j.N+j.M*j.N) * float64(j.batch())
}

// Intensity is the arithmetic intensity in flops per byte of compulsory traffic.
func (j Job) Intensity() float64 { return j.Flops() / j.Bytes() }

// Shape prints the job's shape, e.g. "1024³", "1×4096×4096", "1000×8³".
func (j Job) Shape() string {
	switch {
	case j.batch() > 1 && j.M == j.K && j.K == j.N:
		return fmt.Sprintf("%d×%d³", j.batch(), j.M)
	case j.M == j.K && j.K == j.N:
		return fmt.Sprintf("%d³", j.M)
	case j.batch() > 1:
		return fmt.Sprintf("%d×(%d×%d×%d)", j.batch(), j.M, j.K, j.N)
	}
	return fmt.Sprintf("%d×%d×%d", j.M, j.K, j.N)
}

// Result is one library's measurement of one job. Times are seconds per
// timed call (one product, or the whole batch).
type Result struct {
	Job
	Library string `json:"library"`
	Kernel  string `json:"kernel"` // the variant or core the library ran
	Threads int    `json:"threads"`
	Reps    int    `json:"reps"` // timed repetitions per round
	// Rounds holds one time per interleaved round (the median of that
	// round's repetitions); Median, Min and Max are taken over Rounds (over
	// the repetitions when a single round was run).
	Rounds    []float64 `json:"rounds_s,omitempty"`
	Median    float64   `json:"median_s"`
	Min       float64   `json:"min_s"`
	Max       float64   `json:"max_s"`
	MaxRelErr float64   `json:"max_rel_err"` // of sampled entries against a float64 dot product
	Err       string    `json:"error,omitempty"`
}

// GFLOPS is the median speed.
func (r Result) GFLOPS() float64 {
	if r.Median <= 0 {
		return 0
	}
	return r.Flops() / r.Median / 1e9
}

// Spread is (Max − Min) / Median (NaN when unmeasured).
func (r Result) Spread() float64 {
	if r.Median <= 0 {
		return math.NaN()
	}
	return (r.Max - r.Min) / r.Median
}

// GBps is the median compulsory-traffic bandwidth.
func (r Result) GBps() float64 {
	if r.Median <= 0 {
		return 0
	}
	return r.Bytes() / r.Median / 1e9
}

// Roof is what bounds the measurements: FMA peaks in GFLOP/s and a memory
// bandwidth in GB/s.
type Roof struct {
	PeakF32, PeakF64 float64
	BW               float64 // GB/s; 0 if unknown
	BWLabel          string  // where BW comes from, e.g. "sum 256 MiB"
	// Levels, when given, are bandwidths measured over working sets of several sizes (ascending); a job
	// is bounded by the smallest one that holds its compulsory traffic (its operands), the largest when
	// none does. A 64 MiB skinny operand on a CPU with a 260 MiB L3 streams at the L3's rate, not at
	// the rate of a 256 MiB set; BW alone would put it above 100% of its roof.
	Levels []BWLevel
}

// BWLevel is the bandwidth measured over one working-set size.
type BWLevel struct {
	Bytes float64
	GBps  float64
}

// BWFor returns the bandwidth that bounds j and the working-set size it was measured over (0 for BW).
func (rf Roof) BWFor(j Job) (gbps, over float64) {
	if len(rf.Levels) == 0 {
		return rf.BW, 0
	}
	for _, l := range rf.Levels {
		if l.Bytes >= j.Bytes() {
			return l.GBps, l.Bytes
		}
	}
	l := rf.Levels[len(rf.Levels)-1]
	return l.GBps, l.Bytes
}

// Peak returns the FMA peak for op.
func (rf Roof) Peak(op string) float64 {
	if op == "dgemm" {
		return rf.PeakF64
	}
	return rf.PeakF32
}

// Bound is the roofline bound min(peak, intensity × bandwidth) for j.
func (rf Roof) Bound(j Job) float64 {
	p := rf.Peak(j.Op)
	bw, _ := rf.BWFor(j)
	if bw <= 0 {
		return p
	}
	return math.Min(p, j.Intensity()*bw)
}

// Median returns the median of xs (the mean of the middle two for an even
// count), or NaN for none. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func pct(x, of float64) float64 {
	if of <= 0 {
		return math.NaN()
	}
	return 100 * x / of
}

// fmtNum prints x with 3 significant figures at most 1 decimal ("" for NaN).
func fmtNum(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return ""
	case math.Abs(x) >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case math.Abs(x) >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

func fmtPct(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	return strconv.FormatFloat(x, 'f', 0, 64) + "%"
}

// fmtDur prints seconds with a unit.
func fmtDur(s float64) string {
	switch {
	case s <= 0 || math.IsNaN(s):
		return ""
	case s < 1e-3:
		return fmtNum(s*1e6) + "µs"
	case s < 1:
		return fmtNum(s*1e3) + "ms"
	}
	return fmtNum(s) + "s"
}

// Table is a text table with right-aligned numeric columns.
type Table struct {
	Header []string
	Right  []bool // per column: right-align
	Rows   [][]string
}

// WriteMarkdown prints t as a GitHub-flavoured markdown table (numeric
// columns right-aligned; "|" in cells escaped).
func (t Table) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	row := func(cells []string) {
		b.WriteString("|")
		for i := range t.Header {
			c := ""
			if i < len(cells) {
				c = strings.ReplaceAll(cells[i], "|", `\|`)
			}
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n")
	}
	row(t.Header)
	b.WriteString("|")
	for i := range t.Header {
		if i < len(t.Right) && t.Right[i] {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		row(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Write prints t with columns separated by two spaces and a dashed rule
// under the header. Widths count runes, not bytes.
func (t Table) Write(w io.Writer) error {
	width := make([]int, len(t.Header))
	for i, h := range t.Header {
		width[i] = len([]rune(h))
	}
	for _, r := range t.Rows {
		for i, c := range r {
			if i < len(width) {
				width[i] = max(width[i], len([]rune(c)))
			}
		}
	}
	line := func(cells []string) string {
		var b strings.Builder
		for i := range width {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i > 0 {
				b.WriteString("  ")
			}
			if i < len(t.Right) && t.Right[i] {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
		}
		return strings.TrimRight(b.String(), " ") + "\n"
	}
	rule := make([]string, len(width))
	for i := range width {
		rule[i] = strings.Repeat("-", width[i])
	}
	out := line(t.Header) + line(rule)
	for _, r := range t.Rows {
		out += line(r)
	}
	_, err := io.WriteString(w, out)
	return err
}

// fmtRatio prints a Ratio as "0.93 [0.85–1.02]" ("" when there is none).
func fmtRatio(q Ratio) string {
	if q.Rounds == 0 || math.IsNaN(q.Median) {
		return ""
	}
	return fmtR(q.Median) + " [" + fmtR(q.Lo) + "–" + fmtR(q.Hi) + "]"
}

// fmtR prints a ratio with 2 decimals, or 3 when 2 would round it to 1.00
// (so that an interval edge of 0.998 does not read as containing 1).
func fmtR(x float64) string {
	if x != 1 && math.Abs(x-1) < 0.005 {
		return strconv.FormatFloat(x, 'f', 3, 64)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// ResultTable lays out results, one row each in the given order; the op and
// shape are printed only when they change. median, min and max are over the
// interleaved rounds, spread = (max − min) / median. %peak is against the FMA
// peak of the op's precision; GB/s and %roof (against min(peak, intensity ×
// bandwidth)) are printed for skinny and batched jobs. kgen's rows carry its
// speed over the best peer's, the median of the per-round ratios with their
// [min–max] interval, and the verdict of Compare.
func ResultTable(rs []Result, rf Roof) Table {
	t := Table{
		Header: []string{"op", "shape", "library", "kernel", "median", "min", "max", "spread", "GFLOP/s", "%peak", "GB/s", "%roof", "÷ best peer [interval]", "verdict", "note"},
		Right:  []bool{false, false, false, false, true, true, true, true, true, true, true, true, false, false, false},
	}
	ratios := Ratios(rs)
	var last string
	for i, r := range rs {
		op, shape := r.Op, r.Shape()
		if key := op + " " + shape; key == last {
			op, shape = "", ""
		} else {
			last = key
		}
		row := []string{op, shape, r.Library, r.Kernel}
		if r.Err != "" && r.Median <= 0 {
			row = append(row, "", "", "", "", "", "", "", "", "", "", r.Err)
			t.Rows = append(t.Rows, row)
			continue
		}
		g := r.GFLOPS()
		row = append(row, fmtDur(r.Median), fmtDur(r.Min), fmtDur(r.Max), fmtPct(100*r.Spread()), fmtNum(g), fmtPct(pct(g, rf.Peak(r.Op))))
		if r.Kind == Skinny || r.Kind == Batch {
			row = append(row, fmtNum(r.GBps()), fmtPct(pct(g, rf.Bound(r.Job))))
		} else {
			row = append(row, "", "")
		}
		if q, ok := ratios[i]; ok {
			row = append(row, fmtRatio(q)+" "+q.Peer, q.Verdict)
		} else {
			row = append(row, "", "")
		}
		row = append(row, r.Err)
		t.Rows = append(t.Rows, row)
	}
	return t
}

// CSVHeader is the first record WriteCSV writes.
var CSVHeader = []string{
	"kind", "op", "m", "k", "n", "batch", "library", "kernel", "threads", "reps",
	"rounds", "median_s", "min_s", "max_s", "spread", "gflops", "pct_peak", "gbytes_s", "intensity_flop_per_byte",
	"roof_gflops", "pct_roof", "best_peer", "ratio_vs_best_peer", "ratio_lo", "ratio_hi", "verdict",
	"round_times_s", "max_rel_err", "error",
}

// WriteCSV writes a header and one record per result. Medians, minima and
// maxima are over the rounds (round_times_s, separated by ";"); the ratio
// columns are filled on kgen's rows only (see Compare).
func WriteCSV(w io.Writer, rs []Result, rf Roof) error {
	ratios := Ratios(rs)
	cw := csv.NewWriter(w)
	cw.Write(CSVHeader)
	g := func(x float64) string {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return ""
		}
		return strconv.FormatFloat(x, 'g', 6, 64)
	}
	for i, r := range rs {
		gf := r.GFLOPS()
		q, ok := ratios[i]
		peer, verdict := "", ""
		qm, ql, qh := math.NaN(), math.NaN(), math.NaN()
		if ok {
			peer, verdict, qm, ql, qh = q.Peer, q.Verdict, q.Median, q.Lo, q.Hi
		}
		var rounds []string
		for _, x := range r.Rounds {
			rounds = append(rounds, g(x))
		}
		cw.Write([]string{
			r.Kind, r.Op, strconv.Itoa(r.M), strconv.Itoa(r.K), strconv.Itoa(r.N), strconv.Itoa(r.batch()),
			r.Library, r.Kernel, strconv.Itoa(r.Threads), strconv.Itoa(r.Reps),
			strconv.Itoa(len(r.Rounds)), g(r.Median), g(r.Min), g(r.Max), g(r.Spread()), g(gf), g(pct(gf, rf.Peak(r.Op))), g(r.GBps()), g(r.Intensity()),
			g(rf.Bound(r.Job)), g(pct(gf, rf.Bound(r.Job))), peer, g(qm), g(ql), g(qh), verdict,
			strings.Join(rounds, ";"), g(r.MaxRelErr), r.Err,
		})
	}
	cw.Flush()
	return cw.Error()
}
