package ir_test

import (
	"math"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/ir"
)

// run interprets a one-kernel source at the algorithm level on N = 3 with x = [1, 2, 3], y = [NaN,
// +Inf, -Inf] and the given scalars, and returns y.
func run(t *testing.T, src string, scalars map[string]float64) []float64 {
	t.Helper()
	ks, err := check.File("beta.kdsl", src)
	if err != nil {
		t.Fatal(err)
	}
	args := ir.Args{
		Tensors: map[string][]float64{"x": {1, 2, 3}, "y": {math.NaN(), math.Inf(1), math.Inf(-1)}},
		Scalars: scalars,
		Dims:    map[string]int{"N": 3},
	}
	if err := ir.RunKernel(ks[0], ir.Storage, args); err != nil {
		t.Fatal(err)
	}
	return args.Tensors["y"]
}

func same(a, b []float64) bool {
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return len(a) == len(b)
}

// The forms of docs/LANGUAGE.md, "Scaled outputs", at the algorithm level.
func TestBetaForms(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		body string
		beta float64
		want []float64
	}{
		{"y[i] = x[i] + beta * y[i]", 0, []float64{1, 2, 3}},
		{"y[i] = y[i] * beta + x[i]", 0, []float64{1, 2, 3}},
		{"y[i] = x[i] - beta * y[i]", math.Copysign(0, -1), []float64{1, 2, 3}},
		{"y[i] = beta * y[i] - x[i]", 0, []float64{-1, -2, -3}},
		{"y[i] = (2 * beta) * y[i] + x[i]", 0, []float64{1, 2, 3}},
		{"y[i] = beta * y[i] * x[i]", 0, []float64{0, 0, 0}},
		{"y[i] = relu(beta * y[i]) + x[i]", 0, []float64{1, 2, 3}},
		{"y[i] = x[i] + beta * y[i]", 1, []float64{nan, math.Inf(1), math.Inf(-1)}},
		{"y[i] = x[i] + beta * y[i]", nan, []float64{nan, nan, nan}},
		// Not scaled-output terms: ordinary arithmetic, 0·NaN = NaN.
		{"y[i] = x[i] + beta * (2 * y[i])", 0, []float64{nan, nan, nan}},
		{"y[i] = x[i] + beta * (y[i] * x[i])", 0, []float64{nan, nan, nan}},
		{"y[i] += beta * x[i]", 0, []float64{nan, math.Inf(1), math.Inf(-1)}},
	} {
		src := "kernel k(x: f32[N], y: inout f32[N], beta: f32) {\n    " + c.body + "\n}\n"
		if got := run(t, src, map[string]float64{"beta": c.beta}); !same(got, c.want) {
			t.Errorf("%s with beta = %v: y = %v, want %v", c.body, c.beta, got, c.want)
		}
	}
}

// The kdsl examples of docs/LANGUAGE.md's "Scaled outputs" section check, and the saxpby example does
// what the text says: beta = 0 gives exactly alpha·x over NaN and Inf, beta = 1 keeps them.
func TestBetaDocExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/LANGUAGE.md")
	if err != nil {
		t.Fatal(err)
	}
	sec := string(doc)
	start := strings.Index(sec, "## Scaled outputs")
	if start < 0 {
		t.Fatal("docs/LANGUAGE.md has no section \"Scaled outputs\"")
	}
	sec = sec[start:]
	if end := strings.Index(sec[3:], "\n## "); end >= 0 {
		sec = sec[:end+3]
	}
	blocks := regexp.MustCompile("(?s)```kdsl\n(.*?)```").FindAllStringSubmatch(sec, -1)
	if len(blocks) == 0 {
		t.Fatal("no kdsl example in the section")
	}
	for _, b := range blocks {
		if _, err := check.File("doc.kdsl", b[1]); err != nil {
			t.Errorf("example does not check: %v\n%s", err, b[1])
		}
	}
	ex := blocks[0][1]
	if got := run(t, ex, map[string]float64{"alpha": 0.5, "beta": 0}); !same(got, []float64{0.5, 1, 1.5}) {
		t.Errorf("beta = 0: y = %v, want alpha·x", got)
	}
	if got := run(t, ex, map[string]float64{"alpha": 0.5, "beta": 1}); !math.IsNaN(got[0]) || !math.IsInf(got[1], 1) {
		t.Errorf("beta = 1: y = %v, want the NaN and Inf kept", got)
	}
}
