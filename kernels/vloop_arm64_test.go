//go:build arm64 && !purego

// The arm64 counterpart of vloop_test.go: the NEON vector loops of kgen_arm64.s (run under qemu-aarch64
// off arm64 hardware).

package kernels

import (
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// asmFunc returns the body of TEXT ·name(SB) in kgen_arm64.s.
func asmFunc(t *testing.T, name string) string {
	t.Helper()
	src, err := os.ReadFile("kgen_arm64.s")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	i := strings.Index(s, "TEXT ·"+name+"(SB)")
	if i < 0 {
		t.Fatalf("kgen_arm64.s has no function %s", name)
	}
	s = s[i:]
	if j := strings.Index(s[1:], "\nTEXT "); j >= 0 {
		s = s[:j+1]
	}
	return s
}

// TestVLoopAsm checks that the vector loops of saxpy, sdot, sgemv, softmax, layernorm and conv2d are
// generated as NEON on .S4 vectors with post-increment loads (an asmcheck in the spirit of the Go
// compiler's test/codegen).
func TestVLoopAsm(t *testing.T) {
	const (
		ld   = `VLD1\.P\s+16\(R\d+\), \[V\d+\.S4\]`
		fmla = `VFMLA\s+V\d+\.S4, V\d+\.S4, V\d+\.S4`
	)
	for name, want := range map[string][]string{
		"vloop_saxpy_0NEON":     {ld, fmla, `VST1\.P\s+\[V\d+\.S4\], 16\(R\d+\)`},
		"vloop_sdot_0NEON":      {ld, fmla, `// faddp v\d+\.4s`},
		"vloop_sgemv_0NEON":     {ld, fmla},
		"vloop_conv2d_0NEON":    {ld, fmla},
		"vloop_softmax_0NEON":   {`// fmax v\d+\.4s, v\d+\.4s, v\d+\.4s`, `// fmaxp v\d+\.4s`},
		"vloop_softmax_1NEON":   {`// frintn v\d+\.4s`, `VFMLS\s+V\d+\.S4`, fmla, `// sshr v\d+\.4s, v\d+\.4s, #1`},
		"vloop_softmax_2NEON":   {`// fadd v\d+\.4s, v\d+\.4s, v\d+\.4s`, `// faddp v\d+\.4s`},
		"vloop_softmax_3NEON":   {`// fdiv v\d+\.4s, v\d+\.4s, v\d+\.4s`, `VDUP\s+V\d+\.S\[0\], V\d+\.S4`},
		"vloop_layernorm_1NEON": {`// fsub v\d+\.4s`, fmla},
		"vloop_layernorm_2NEON": {`// fdiv v\d+\.4s, v\d+\.4s, v\d+\.4s`, fmla},
	} {
		body := asmFunc(t, name)
		for _, re := range want {
			if !regexp.MustCompile(re).MatchString(body) {
				t.Errorf("%s: no match for %q in\n%s", name, re, body)
			}
		}
		// The vector loops do no scalar floating-point arithmetic.
		if m := regexp.MustCompile(`(?m)^\s+F(ADD|SUB|MUL|DIV|MADD|MAX|MIN)[SD]\s`).FindString(body); m != "" {
			t.Errorf("%s: scalar FP instruction %q", name, m)
		}
	}
}

// TestVLoopVariants runs the vectorized kernels under neon and go on long rows (so the assembly does
// most of the work) with NaN, ±Inf and -0 sprinkled in, and compares them.
func TestVLoopVariants(t *testing.T) {
	if !slices.Contains(Variants(), "neon") {
		t.Fatal("no neon variant")
	}
	defer Use("")
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func(n int, special bool) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(rng.NormFloat64())
			if special && rng.IntN(50) == 0 {
				s[i] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1))}[rng.IntN(4)]
			}
		}
		return s
	}
	close := func(a, b []float32, tol float64) bool {
		for i := range a {
			x, y := float64(a[i]), float64(b[i])
			if x != x || y != y {
				if (x != x) != (y != y) {
					return false
				}
				continue
			}
			if math.IsInf(x, 0) || math.IsInf(y, 0) {
				if x != y {
					return false
				}
				continue
			}
			if math.Abs(x-y) > tol*max(1, math.Abs(y)) {
				return false
			}
		}
		return true
	}
	run := func(v string, f func() []float32) []float32 {
		if err := Use(v); err != nil {
			t.Fatal(err)
		}
		return f()
	}
	for _, n := range []int{1, 7, 8, 9, 31, 32, 33, 67, 1000, 4099} {
		for _, special := range []bool{false, true} {
			m := 3
			X, x, y, g, bt := gen(m*n, special), gen(n, special), gen(n, special), gen(n, false), gen(n, false)
			cases := map[string]func() []float32{
				"sdot": func() []float32 { r := []float32{0}; must(t, Sdot(n, x, y, r)); return r },
				"saxpy": func() []float32 {
					out := slices.Clone(y)
					must(t, Saxpy(n, x, out, 1.5))
					return out
				},
				"sgemv": func() []float32 {
					out := gen(m, false)
					must(t, Sgemv(m, n, X, x, out, 0.5, 0))
					return out
				},
				"softmax": func() []float32 { out := make([]float32, m*n); must(t, Softmax(m, n, X, out)); return out },
				"layernorm": func() []float32 {
					out := make([]float32, m*n)
					must(t, Layernorm(m, n, X, g, bt, out, 1e-5))
					return out
				},
			}
			for name, f := range cases {
				a, b := run("neon", f), run("go", f)
				if !close(a, b, 1e-4*math.Sqrt(float64(n))) {
					t.Errorf("%s n=%d special=%v: neon %v\ngo %v", name, n, special, head(a), head(b))
				}
			}
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func head(s []float32) []float32 { return s[:min(len(s), 12)] }

// TestVLoopExpULP measures the vectorized exp of softmax's second loop (Y = exp(X - m), run with m = 0)
// against float32(math.Exp(float64(x))), the portable code's: at most 1 ulp for normal results, exact
// specials (NaN, ±Inf, overflow to +Inf, underflow to 0), and within 1 unit of 2^-149 for subnormals.
func TestVLoopExpULP(t *testing.T) {
	if !slices.Contains(Variants(), "neon") {
		t.Fatal("no neon variant")
	}
	var xs []float32
	for x := float32(-110); x < 95; x += 0.0037 {
		xs = append(xs, x)
	}
	xs = append(xs, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 88.72283, 88.72284, -87.33654, -103.97208, -103.97209)
	for len(xs)%4 != 0 {
		xs = append(xs, 0)
	}
	ys := make([]float32, len(xs))
	vloop_softmax_1NEON(len(xs)/4, &xs[0], &ys[0], 0) // p0 = X (read), p1 = Y (written)
	worst := 0.0
	for i, x := range xs {
		want := float32(math.Exp(float64(x)))
		got := ys[i]
		switch {
		case want != want:
			if got == got {
				t.Errorf("exp(%v) = %v, want NaN", x, got)
			}
			continue
		case math.IsInf(float64(want), 0) || want == 0:
			if got != want && !(want == 0 && got <= 0x1p-149) {
				t.Errorf("exp(%v) = %v, want %v", x, got, want)
			}
			continue
		}
		ulp := float64(math.Nextafter32(want, float32(math.Inf(1))) - want)
		e := math.Abs(float64(got)-float64(want)) / ulp
		if want < 0x1p-126 {
			e = math.Abs(float64(got)-float64(want)) / 0x1p-149
		}
		worst = max(worst, e)
		if e > 1 {
			t.Errorf("exp(%v) = %v, want %v (%.2f ulp)", x, got, want, e)
		}
	}
	t.Logf("max error %.2f ulp over %d points", worst, len(xs))
}
