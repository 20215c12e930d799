package breakdown

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kgen-dev/kgen/bench/internal/report"
)

// Run is one profiled benchmark loop of a GEMM path.
type Run struct {
	Path    string     // "packed", "unpacked small", "rows (few-row)", "batched small"
	Job     report.Job // the shape (Batch products per call)
	Threads int
	Calls   int           // calls made while profiling
	Wall    time.Duration // wall time of those calls
	CPU     time.Duration // the process's CPU time (getrusage) over those calls; 0 if unknown
	B       Breakdown
}

var tileRE = regexp.MustCompile(`gemm(\d+)x(\d+)`)

// Tile returns the microkernel tile MR×NR seen in the profile (from a leaf
// named like sgemm14x32AVX512), or 0, 0.
func (b Breakdown) Tile() (mr, nr int) {
	var best time.Duration
	for f, d := range b.ByFunc {
		if m := tileRE.FindStringSubmatch(f); m != nil && d > best {
			mr, _ = strconv.Atoi(m[1])
			nr, _ = strconv.Atoi(m[2])
			best = d
		}
	}
	return mr, nr
}

// Padding is the share of the microkernel's work spent on padding when an
// M×N product is covered by MR×NR tiles: 1 − M·N / (⌈M/MR⌉·MR · ⌈N/NR⌉·NR)
// (the masked edge tiles still run the whole k loop). NaN without a tile.
func Padding(m, n, mr, nr int) float64 {
	if mr <= 0 || nr <= 0 || m <= 0 || n <= 0 {
		return math.NaN()
	}
	full := float64((m+mr-1)/mr*mr) * float64((n+nr-1)/nr*nr)
	return 1 - float64(m)*float64(n)/full
}

// Shares returns each category's share of the sampled CPU time (they sum
// to 1) and the on-CPU share of the thread time: CPU time (getrusage when
// known, else the sampled time) over Wall × Threads. What is not on CPU is
// workers blocked waiting (fork/join) or the process preempted by other
// load on the host; the profile cannot tell those apart, but a 1-thread
// run of the same shape in the same session shows the host's part.
func (r Run) Shares() (cat [NumCategories]float64, onCPU float64) {
	onCPU = math.NaN()
	if r.B.CPU > 0 {
		for c := range cat {
			cat[c] = float64(r.B.ByCat[c]) / float64(r.B.CPU)
		}
	}
	total := float64(r.Wall) * float64(max(r.Threads, 1))
	cpu := r.CPU
	if cpu <= 0 {
		cpu = r.B.CPU
	}
	if total > 0 {
		onCPU = float64(cpu) / total
	}
	return cat, onCPU
}

func pctCell(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(100*x, 'f', 0, 64) + "%"
}

// Table lays out runs: shares of the sampled CPU time per category (they
// sum to 100%; a share's sampling error is about ±1/√samples), the on-CPU
// share of the thread time, the tile padding and the top leaves.
func Table(runs []Run) report.Table {
	h := []string{"path", "shape", "thr", "per call", "samples"}
	for c := Category(0); c < NumCategories; c++ {
		h = append(h, c.String())
	}
	h = append(h, "on-CPU", "tile pad", "top leaf functions")
	right := make([]bool, len(h))
	for i := 2; i < len(h)-1; i++ {
		right[i] = true
	}
	t := report.Table{Header: h, Right: right}
	for _, r := range runs {
		per := ""
		if r.Calls > 0 {
			per = fmtDur(r.Wall.Seconds() / float64(r.Calls))
		}
		row := []string{r.Path, r.Job.Op + " " + r.Job.Shape(), strconv.Itoa(r.Threads), per, strconv.FormatInt(r.B.Samples, 10)}
		cat, on := r.Shares()
		for _, x := range cat {
			row = append(row, pctCell(x))
		}
		mr, nr := r.B.Tile()
		pad := math.NaN()
		if !strings.HasPrefix(r.Path, "rows") {
			pad = Padding(r.Job.M, r.Job.N, mr, nr)
		}
		row = append(row, pctCell(on), pctCell(pad), strings.Join(r.B.TopFuncs(3), ", "))
		t.Rows = append(t.Rows, row)
	}
	return t
}

func fmtDur(s float64) string {
	switch {
	case s < 1e-3:
		return fmt.Sprintf("%.1fµs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.2fms", s*1e3)
	}
	return fmt.Sprintf("%.2fs", s)
}
