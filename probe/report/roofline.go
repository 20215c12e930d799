package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kgen-dev/kgen/probe"
)

// Row is one measured point against the roofline.
type Row struct {
	N                      int // 1-based; the picture labels points with it
	Bench                  string
	Kernel, Shape, Variant string
	Procs                  int
	GFLOPs, GBs            float64 // achieved
	Intensity              float64 // flop/byte; 0 for kernels without arithmetic
	// Attainable is min(peak, intensity × bandwidth) in GFLOP/s, or the bandwidth in GB/s for a kernel
	// without arithmetic; Pct is the achieved share of it.
	Attainable, Pct float64
	// Bound is "compute" or the memory level (L1, L2, L3, DRAM) whose bandwidth limits the kernel.
	Bound string
	// PeakKey and BandwidthKey are the profile entries used.
	PeakKey, BandwidthKey string
	// Speedup is the base run's time over this run's (0 without a base or a match): above 1 is faster.
	Speedup float64
}

// Report is the roofline of one set of benchmark results.
type Report struct {
	Profile *probe.Profile
	Rows    []Row
	// Skipped names the benchmarks the intensity table does not cover, or whose points lack a profile
	// figure, with the reason.
	Skipped []string
}

// Build places every result that the intensity table covers on p's roofline; base (optional) gives
// the "tuned vs default" column by matching names.
func Build(p *probe.Profile, results, base []Result) (*Report, error) {
	r := &Report{Profile: p}
	baseTime := map[string]float64{}
	for _, b := range base {
		for unit, v := range b.Metrics {
			if strings.HasPrefix(unit, "ns/") {
				baseTime[fmt.Sprintf("%s-%d %s", b.Name, b.Procs, unit)] = v
			}
		}
	}
	for _, res := range results {
		works, ok, err := lookup(res.Name)
		if err != nil {
			return nil, fmt.Errorf("benchmark %s (line %d): %v", res.Name, res.Line, err)
		}
		if !ok {
			r.Skipped = append(r.Skipped, res.Name+": no intensity entry")
			continue
		}
		for _, w := range works {
			for _, pt := range points(w, res) {
				row, why := place(p, pt.work, res, pt.ns)
				if why != "" {
					r.Skipped = append(r.Skipped, fmt.Sprintf("%s (%s): %s", res.Name, pt.work.Variant, why))
					continue
				}
				if b := baseTime[fmt.Sprintf("%s-%d %s", res.Name, res.Procs, pt.unit)]; b > 0 {
					row.Speedup = b / pt.ns
				}
				row.Bench = res.Name
				row.N = len(r.Rows) + 1
				r.Rows = append(r.Rows, row)
			}
		}
	}
	sort.Strings(r.Skipped)
	return r, nil
}

type point struct {
	work Work
	unit string
	ns   float64
}

// points pairs w with its measured times: ns/op, or one point per ns/<variant> metric.
func points(w Work, res Result) []point {
	if w.Metric != "ns/*" {
		if ns := res.Metrics[w.Metric]; ns > 0 {
			return []point{{w, w.Metric, ns}}
		}
		return nil
	}
	var units []string
	for u := range res.Metrics {
		if v, ok := strings.CutPrefix(u, "ns/"); ok && v != "op" && !strings.Contains(v, "/") {
			units = append(units, u)
		}
	}
	sort.Strings(units)
	var out []point
	for _, u := range units {
		v := w
		v.Variant = strings.TrimPrefix(u, "ns/")
		out = append(out, point{v, u, res.Metrics[u]})
	}
	return out
}

// place computes the roofline of one point; why says why it cannot (a figure the profile lacks).
func place(p *probe.Profile, w Work, res Result, ns float64) (Row, string) {
	row := Row{Kernel: w.Kernel, Shape: w.Shape, Variant: w.Variant, Procs: res.Procs}
	sec := ns * 1e-9
	row.GFLOPs = w.Flops / sec / 1e9
	row.GBs = w.Bytes / sec / 1e9
	level := Level(p, w.WorkingSet)
	bw, bwKey := figure(p.Bandwidth, fmt.Sprintf("%s/%s", level, w.Kind), res.Procs)
	if bw == 0 {
		return row, "the profile has no bandwidth " + bwKey
	}
	row.BandwidthKey = bwKey
	if w.Flops == 0 {
		row.Attainable, row.Bound = bw, level
		row.Pct = 100 * row.GBs / bw
		return row, ""
	}
	v := w.Variant
	if v == "host" { // a benchmark under the variant the machine selects: the profile's vector level
		v = p.ISA
	}
	isa := variantISA(v, w.Type)
	peak, peakKey := figure(p.Peak, isa+"/"+w.Type, res.Procs)
	if peak == 0 {
		return row, "the profile has no peak " + peakKey
	}
	row.PeakKey = peakKey
	row.Intensity = w.Intensity()
	row.Attainable, row.Bound = Attainable(peak, row.Intensity, bw, level)
	row.Pct = 100 * row.GFLOPs / row.Attainable
	return row, ""
}

// Attainable is the roofline: min(peak, intensity × bandwidth), and which of the two binds ("compute"
// or the level's name).
func Attainable(peak, intensity, bandwidth float64, level string) (float64, string) {
	if mem := intensity * bandwidth; mem < peak {
		return mem, level
	}
	return peak, "compute"
}

// Level is the memory level a working set of ws bytes is served from: the first cache level that holds
// it, else DRAM.
func Level(p *probe.Profile, ws float64) string {
	for _, c := range p.Caches {
		if ws <= float64(c.Size) {
			return fmt.Sprintf("L%d", c.Level)
		}
	}
	return "DRAM"
}

// figure returns m["<prefix>/<procs>c"], else the figure of the largest core count below procs (a run
// on more workers than the profile measured), and the key used; 0 when there is none.
func figure(m map[string]float64, prefix string, procs int) (float64, string) {
	key := fmt.Sprintf("%s/%dc", prefix, procs)
	if v, ok := m[key]; ok {
		return v, key
	}
	best, bestKey := 0.0, key
	for k, v := range m {
		var c int
		if strings.HasPrefix(k, prefix+"/") {
			if _, err := fmt.Sscanf(k[len(prefix)+1:], "%dc", &c); err == nil && c <= procs && v > best {
				best, bestKey = v, k
			}
		}
	}
	return best, bestKey
}

// variantISA maps a generated package's variant to the peak's ISA: the bf16 variant runs VDPBF16PS
// only on bf16 arithmetic (its f32 code is the avx512 code), "naive" and "go" are portable Go.
func variantISA(variant, typ string) string {
	v := strings.TrimSuffix(variant, "-goconv")
	switch {
	case v == "naive" || v == "go":
		return "go"
	case v == "avx512bf16" && typ != "bf16":
		return "avx512"
	}
	return v
}

func fmtG(x float64) string {
	switch {
	case x == 0:
		return "0"
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	case x >= 1:
		return fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%.3g", x)
}
