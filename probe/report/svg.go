package report

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// The picture is drawn by hand rather than with a plotting library: a log-log frame, a few lines and
// labelled dots need no more, and the module keeps its small dependency set (the output is plain,
// deterministic text).

const (
	svgW, svgH               = 960, 640
	left, right, top, bottom = 70, 230, 40, 60
)

var levelColor = map[string]string{"compute": "#c0392b", "L1": "#2471a3", "L2": "#17a589", "L3": "#b7950b", "DRAM": "#7d3c98"}

// SVG draws the roofline: the bandwidth line of each level (read, at the rows' core count), the
// compute ceiling of each peak the rows use, and the rows with arithmetic as dots numbered as in the
// table, coloured by their bound.
func (r *Report) SVG() []byte {
	p := r.Profile
	procs := 1
	peaks := map[string]float64{}
	xmin, xmax, ymin, ymax := 1.0/8, 64.0, math.Inf(1), 0.0
	for _, row := range r.Rows {
		if row.Intensity == 0 {
			continue
		}
		procs = max(procs, row.Procs)
		peaks[row.PeakKey] = p.Peak[row.PeakKey]
		xmin, xmax = math.Min(xmin, row.Intensity), math.Max(xmax, row.Intensity)
		ymin, ymax = math.Min(ymin, row.GFLOPs), math.Max(ymax, math.Max(row.GFLOPs, row.Attainable))
	}
	for _, v := range peaks {
		ymax = math.Max(ymax, v)
	}
	if math.IsInf(ymin, 1) {
		ymin, ymax = 1, 100
	}
	xmin, xmax = math.Pow(2, math.Floor(math.Log2(xmin))), math.Pow(2, math.Ceil(math.Log2(xmax)))
	ymin, ymax = math.Pow(10, math.Floor(math.Log10(ymin))), math.Pow(10, math.Ceil(math.Log10(ymax*1.2)))
	px := func(x float64) float64 {
		return left + (svgW-left-right)*(math.Log(x)-math.Log(xmin))/(math.Log(xmax)-math.Log(xmin))
	}
	py := func(y float64) float64 {
		return svgH - bottom - (svgH-top-bottom)*(math.Log(y)-math.Log(ymin))/(math.Log(ymax)-math.Log(ymin))
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", svgW, svgH, svgW, svgH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", svgW, svgH)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15">%s</text>`+"\n", left, esc("Roofline: "+orUnknown(p.CPU)+fmt.Sprintf(", %d core(s)", procs)))
	// Frame and grid.
	for x := xmin; x <= xmax*1.0001; x *= 2 {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e5e5e5"/>`+"\n", px(x), top, px(x), svgH-bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", px(x), svgH-bottom+16, fmtTick(x, true))
	}
	for e := math.Round(math.Log10(ymin)); e <= math.Round(math.Log10(ymax)); e++ {
		y := math.Pow(10, e)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`+"\n", left, py(y), svgW-right, py(y))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, py(y)+4, fmtTick(y, false))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black"/>`+"\n", left, top, svgW-left-right, svgH-top-bottom)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">arithmetic intensity (flop/byte, compulsory traffic)</text>`+"\n", (left+svgW-right)/2, svgH-16)
	fmt.Fprintf(&b, `<text transform="translate(18 %d) rotate(-90)" text-anchor="middle">GFLOP/s</text>`+"\n", (top+svgH-bottom)/2)
	// Bandwidth lines up to the highest ceiling; compute ceilings across.
	roof := ymax
	if len(peaks) > 0 {
		roof = 0
		for _, v := range peaks {
			roof = math.Max(roof, v)
		}
	}
	var labels []string
	for _, lv := range []string{"L1", "L2", "L3", "DRAM"} {
		bw, key := figure(p.Bandwidth, lv+"/read", procs)
		if bw == 0 {
			continue
		}
		x0, x1 := math.Max(xmin, ymin/bw), math.Min(xmax, roof/bw)
		if x0 >= x1 {
			continue
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5"/>`+"\n", px(x0), py(bw*x0), px(x1), py(bw*x1), levelColor[lv])
		labels = append(labels, fmt.Sprintf("%s|%s %s GB/s", levelColor[lv], key, fmtG(bw)))
	}
	keys := make([]string, 0, len(peaks))
	for k := range peaks {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return peaks[keys[i]] > peaks[keys[j]] || peaks[keys[i]] == peaks[keys[j]] && keys[i] < keys[j]
	})
	lastY := math.Inf(-1)
	for _, k := range keys { // highest first; a label is pushed down below the one above it
		y := py(peaks[k])
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-dasharray="6 4"/>`+"\n", left, y, svgW-right, y, levelColor["compute"])
		ly := math.Max(y+4, lastY+13)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" fill="%s">%s</text>`+"\n", svgW-right+4, ly, levelColor["compute"], esc(k+" "+fmtG(peaks[k])))
		lastY = ly
	}
	for i, l := range labels {
		color, text, _ := strings.Cut(l, "|")
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%s</text>`+"\n", svgW-right+4, svgH-bottom-16*(len(labels)-i), color, esc(text))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11">dots: the rows of roofline.md by number,</text>`+"\n", svgW-right+4, top+40)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11">coloured as the line that bounds them</text>`+"\n", svgW-right+4, top+54)
	// Points; a number that would overprint one already drawn is left out (the dot's title keeps it).
	var drawn [][2]float64
	for _, row := range r.Rows {
		if row.Intensity == 0 {
			continue
		}
		x, y := px(row.Intensity), py(math.Max(row.GFLOPs, ymin))
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s" fill-opacity="0.8"><title>%s</title></circle>`+"\n", x, y, levelColor[row.Bound],
			esc(fmt.Sprintf("#%d %s %s %s: %s GFLOP/s, %.0f%% of %s (%s)", row.N, row.Kernel, row.Shape, row.Variant, fmtG(row.GFLOPs), row.Pct, fmtG(row.Attainable), row.Bound)))
		free := true
		for _, d := range drawn {
			if math.Abs(d[0]-x) < 16 && math.Abs(d[1]-y) < 10 {
				free = false
				break
			}
		}
		if free {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10">%d</text>`+"\n", x+5, y-4, row.N)
			drawn = append(drawn, [2]float64{x, y})
		}
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// fmtTick writes an intensity tick as a fraction below 1 (1/8), a GFLOP/s tick as a decimal (0.1).
func fmtTick(v float64, fraction bool) string {
	switch {
	case v >= 1:
		return fmt.Sprintf("%.0f", v)
	case fraction:
		return fmt.Sprintf("1/%.0f", 1/v)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
