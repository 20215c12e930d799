package report

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// Markdown writes the report as a markdown table; command is the command line that made it (quoted
// in the text) and withBase adds the "tuned vs default" column.
func (r *Report) Markdown(command string, withBase bool) []byte {
	var b bytes.Buffer
	p := r.Profile
	fmt.Fprintf(&b, "# Roofline: %s\n\n", orUnknown(p.CPU))
	fmt.Fprintf(&b, "Machine class `%s`, %d cores, clock %.2f GHz (dependent adds). Made by\n`%s`.\n\n", p.Class(), p.Cores, p.ClockGHz, command)
	b.WriteString("Attainable = min(peak, intensity × bandwidth of the level the working set fits in); intensity is the\n")
	b.WriteString("compulsory traffic's (every operand read once, every output written once: probe/report/work.go).\n")
	b.WriteString("For kernels without arithmetic the figures are GB/s against the level's bandwidth.\n\n")
	cols := []string{"#", "kernel", "shape", "variant", "cores", "GFLOP/s", "GB/s", "flop/B", "attainable", "% of attainable", "bound"}
	if withBase {
		cols = append(cols, "tuned vs default")
	}
	b.WriteString("| " + strings.Join(cols, " | ") + " |\n|")
	for range cols {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, row := range r.Rows {
		gf, ai, att := fmtG(row.GFLOPs), fmtG(row.Intensity), fmtG(row.Attainable)+" GFLOP/s"
		if row.Intensity == 0 {
			gf, ai, att = "–", "0", fmtG(row.Attainable)+" GB/s"
		}
		cells := []string{fmt.Sprint(row.N), row.Kernel, row.Shape, row.Variant, fmt.Sprint(row.Procs), gf,
			fmtG(row.GBs), ai, att, fmt.Sprintf("%.0f%%", row.Pct), row.Bound}
		if withBase {
			s := "–"
			if row.Speedup > 0 {
				s = fmt.Sprintf("%.2f×", row.Speedup)
			}
			cells = append(cells, s)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	b.WriteString("\nProfile figures used:\n\n")
	used := map[string]string{}
	for _, row := range r.Rows {
		if row.PeakKey != "" {
			used["peak "+row.PeakKey] = fmt.Sprintf("%s GFLOP/s", fmtG(p.Peak[row.PeakKey]))
		}
		used["bandwidth "+row.BandwidthKey] = fmt.Sprintf("%s GB/s", fmtG(p.Bandwidth[row.BandwidthKey]))
	}
	keys := make([]string, 0, len(used))
	for k := range used {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "- %s: %s\n", k, used[k])
	}
	if len(r.Skipped) > 0 {
		b.WriteString("\nNot placed:\n\n")
		for _, s := range r.Skipped {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	return b.Bytes()
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown CPU"
	}
	return s
}
