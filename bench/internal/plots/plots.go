// Package plots draws kgen-bench's results with gonum/plot: GFLOP/s against
// size per library, and a roofline.
package plots

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/kgen-dev/kgen/bench/internal/report"
)

// BWLine is one bandwidth ceiling of the roofline.
type BWLine struct {
	Label string
	GBps  float64
}

const w, h = 16 * vg.Centimeter, 10 * vg.Centimeter

// save writes p as name.png and name.svg under dir and returns the paths.
func save(p *plot.Plot, dir, name string) ([]string, error) {
	var out []string
	for _, ext := range []string{".png", ".svg"} {
		f := filepath.Join(dir, name+ext)
		if err := p.Save(w, h, f); err != nil {
			return out, err
		}
		out = append(out, f)
	}
	return out, nil
}

// libraries returns the libraries of rs in first-seen order.
func libraries(rs []report.Result) []string {
	var libs []string
	for _, r := range rs {
		if !slices.Contains(libs, r.Library) {
			libs = append(libs, r.Library)
		}
	}
	return libs
}

// hline is a horizontal dashed line at y across [x0, x1].
func hline(y, x0, x1 float64, c color.Color) *plotter.Line {
	l, _ := plotter.NewLine(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}})
	l.Color = c
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	return l
}

// Write draws gflops_sgemm, gflops_dgemm (square jobs) and roofline into dir.
func Write(dir string, rs []report.Result, rf report.Roof, bws []BWLine, title string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	libs := libraries(rs)
	var files []string
	for _, op := range []string{"sgemm", "dgemm"} {
		var sq []report.Result
		for _, r := range rs {
			if r.Kind == report.Square && r.Op == op && r.Median > 0 {
				sq = append(sq, r)
			}
		}
		if len(sq) == 0 {
			continue
		}
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s, square, row-major — %s", op, title)
		p.X.Label.Text = "n (M = K = N)"
		p.Y.Label.Text = "GFLOP/s (median)"
		p.X.Scale = plot.LogScale{}
		var sizes []float64
		for _, r := range sq {
			if !slices.Contains(sizes, float64(r.M)) {
				sizes = append(sizes, float64(r.M))
			}
		}
		slices.Sort(sizes)
		var ticks []plot.Tick
		for _, s := range sizes {
			ticks = append(ticks, plot.Tick{Value: s, Label: strconv.Itoa(int(s))})
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.Legend.Top = true
		p.Legend.Left = true
		p.Legend.TextStyle.Font.Size = vg.Points(8)
		for i, lib := range libs {
			var xys plotter.XYs
			for _, r := range sq {
				if r.Library == lib {
					xys = append(xys, plotter.XY{X: float64(r.M), Y: r.GFLOPS()})
				}
			}
			if len(xys) == 0 {
				continue
			}
			l, s, err := plotter.NewLinePoints(xys)
			if err != nil {
				return files, err
			}
			l.Color, s.Color = plotutil.Color(i), plotutil.Color(i)
			s.Shape = plotutil.Shape(i)
			p.Add(l, s)
			p.Legend.Add(lib, l, s)
		}
		pk := rf.Peak(op)
		p.Add(hline(pk, sizes[0], sizes[len(sizes)-1], color.Gray{Y: 80}))
		p.Legend.Add(fmt.Sprintf("FMA peak %.0f", pk), hline(pk, 0, 1, color.Gray{Y: 80}))
		p.Y.Min, p.Y.Max = 0, pk*1.15
		f, err := save(p, dir, "gflops_"+op)
		files = append(files, f...)
		if err != nil {
			return files, err
		}
	}

	// Roofline.
	p := plot.New()
	p.Title.Text = "Roofline — " + title
	p.X.Label.Text = "arithmetic intensity (flop / byte of compulsory traffic)"
	p.Y.Label.Text = "GFLOP/s (median)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top = false
	p.Legend.Left = false
	p.Legend.TextStyle.Font.Size = vg.Points(7)
	xmin, xmax, ymin := 0.1, 1000.0, 0.5
	for _, r := range rs {
		if r.Median > 0 {
			xmin = math.Min(xmin, r.Intensity()/2)
			xmax = math.Max(xmax, r.Intensity()*2)
			ymin = math.Min(ymin, r.GFLOPS()/2)
		}
	}
	for i, pk := range []struct {
		label string
		v     float64
	}{{"f32 FMA peak", rf.PeakF32}, {"f64 FMA peak", rf.PeakF64}} {
		if pk.v <= 0 {
			continue
		}
		for j, bw := range bws {
			if bw.GBps <= 0 {
				continue
			}
			f := plotter.NewFunction(func(x float64) float64 { return math.Min(pk.v, x*bw.GBps) })
			f.XMin, f.XMax = xmin, xmax
			f.Samples = 400
			f.Color = color.Gray{Y: uint8(40 + 60*j)}
			f.Width = vg.Points(1)
			if i == 1 {
				f.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(f)
			p.Legend.Add(fmt.Sprintf("%s %.0f / %s %.0f GB/s", pk.label, pk.v, bw.Label, bw.GBps), f)
		}
	}
	for i, lib := range libs {
		var xys plotter.XYs
		for _, r := range rs {
			if r.Library == lib && r.Median > 0 {
				xys = append(xys, plotter.XY{X: r.Intensity(), Y: r.GFLOPS()})
			}
		}
		if len(xys) == 0 {
			continue
		}
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return files, err
		}
		s.Color = plotutil.Color(i)
		s.Shape = plotutil.Shape(i)
		s.Radius = vg.Points(2.5)
		p.Add(s)
		p.Legend.Add(lib, s)
	}
	p.X.Min, p.X.Max = xmin, xmax
	p.Y.Min, p.Y.Max = ymin, math.Max(rf.PeakF32, rf.PeakF64)*1.6
	f, err := save(p, dir, "roofline")
	files = append(files, f...)
	return files, err
}
