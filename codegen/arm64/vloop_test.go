package arm64

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen"
)

// vloopSrc exercises every operation the NEON vector loops support, in f32 and f64, plus two they do
// not (f64 exp; a strided load, which is not a vector-loop slot at all).
const vloopSrc = `
kernel saxpy(x: f32[N], y: inout f32[N], alpha: f32) {
    y[i] = alpha * x[i] + y[i]
}
kernel sdot(x: f32[N], y: f32[N], r: out f32[]) {
    r[] = sum(i: x[i] * y[i])
}
kernel softmax(X: f32[M, N], Y: out f32[M, N]) {
    let m[i] = max(j: X[i, j])
    Y[i, j] = exp(X[i, j] - m[i])
    let s[i] = sum(j: Y[i, j])
    Y[i, j] = Y[i, j] / s[i]
}
kernel vops(x: f32[N], z: f32[N], y: out f32[N], a: f32) {
    y[i] = max(-x[i] * abs(z[i]), a) - min(sqrt(abs(x[i])), relu(z[i])) / a
}
kernel rmin(x: f32[N], r: out f32[]) {
    r[] = min(i: x[i])
}
kernel dops(x: f64[N], y: inout f64[N], a: f64) {
    y[i] = a * x[i] + relu(y[i]) / sqrt(abs(-x[i]))
}
kernel ddot(x: f64[N], y: f64[N], r: out f64[]) {
    r[] = sum(i: x[i] * y[i])
}
kernel dmax(x: f64[N], r: out f64[]) {
    r[] = max(i: x[i] - 1.0)
}
kernel dexp(x: f64[N], y: out f64[N]) {
    y[i] = exp(x[i])
}
kernel transpose(A: f32[M, N], B: out f32[N, M]) {
    B[j, i] = A[i, j]
}
`

func TestVLoopKernels(t *testing.T) {
	p := compile(t, vloopSrc)
	ks, impls := VLoopKernels(p, NEON)
	var names []string
	for i, k := range ks {
		names = append(names, k.Name)
		if impls[i].Func != k.Name || impls[i].VLoop != k.VLoop || impls[i].Lanes != k.Lanes() {
			t.Errorf("impl %d = %+v for %s", i, impls[i], k.Name)
		}
		if want := 16 / k.VLoop.Elem.Size(); k.Lanes() != want {
			t.Errorf("%s: %d lanes, want %d", k.Name, k.Lanes(), want)
		}
	}
	want := []string{"vloop_saxpy_0NEON", "vloop_sdot_0NEON", "vloop_softmax_0NEON", "vloop_softmax_1NEON",
		"vloop_softmax_2NEON", "vloop_softmax_3NEON", "vloop_vops_0NEON", "vloop_rmin_0NEON", "vloop_dops_0NEON",
		"vloop_ddot_0NEON", "vloop_dmax_0NEON"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("NEON vector loops\n%v\nwant\n%v", names, want)
	}
	// f64 exp is a slot the generator leaves nil.
	all := codegen.PackageVLoops(p)
	if all[len(all)-1].Var != "vloop_dexp_0" || CanVectorize(VLoopKernel{Name: "x", VLoop: all[len(all)-1], ISA: NEON}) {
		t.Errorf("the f64 exp loop should be a slot without a NEON version")
	}
	if CanVectorize(VLoopKernel{Name: "x", VLoop: all[0], ISA: "sve"}) {
		t.Errorf("an unknown ISA should not vectorize")
	}

	asm, stubs, err := GenerateWithVLoops("x", nil, ks)
	if err != nil {
		t.Fatal(err)
	}
	again, stubs2, _ := GenerateWithVLoops("x", nil, ks)
	if !bytes.Equal(asm, again) || !bytes.Equal(stubs, stubs2) {
		t.Error("output is not deterministic")
	}
	i := bytes.Index(asm, []byte("#include \"textflag.h\"\n"))
	goAsm(t, asm[i+len("#include \"textflag.h\"\n"):])
	for _, s := range []string{
		"func vloop_saxpy_0NEON(n int, p0 *float32, p1 *float32, c0 float32)\n",
		"func vloop_sdot_0NEON(n int, p0 *float32, p1 *float32) float32\n",
		"func vloop_ddot_0NEON(n int, p0 *float64, p1 *float64) float64\n",
		"func vloop_dops_0NEON(n int, p0 *float64, p1 *float64, c0 float64)\n",
	} {
		if !strings.Contains(string(stubs), s) {
			t.Errorf("stubs lack %q:\n%s", s, stubs)
		}
	}

	// asmcheck: the instructions each loop must contain.
	const (
		ld4  = `VLD1\.P\s+16\(R\d+\), \[V\d+\.S4\]`
		ld2  = `VLD1\.P\s+16\(R\d+\), \[V\d+\.D2\]`
		fma4 = `VFMLA\s+V\d+\.S4, V\d+\.S4, V\d+\.S4`
		fma2 = `VFMLA\s+V\d+\.D2, V\d+\.D2, V\d+\.D2`
	)
	checks := map[string][]string{
		"vloop_saxpy_0NEON": {ld4, fma4, `VLD1\s+\(R3\), \[V\d+\.S4\]`, `VST1\.P\s+\[V\d+\.S4\], 16\(R3\)`,
			`FMOVS\s+c0\+24\(FP\), F0`, `VDUP\s+V0\.S\[0\], V0\.S4`},
		"vloop_sdot_0NEON":    {ld4, fma4, `// faddp v\d+\.4s`, `FMOVS\s+F\d+, ret\+24\(FP\)`},
		"vloop_softmax_0NEON": {`MOVD\s+\$4286578688, R1`, `// fmax v\d+\.4s`, `// fmaxp v\d+\.4s`, `FMOVS\s+F\d+, ret\+16\(FP\)`},
		"vloop_softmax_1NEON": {`// fsub v\d+\.4s`, `// frintn v\d+\.4s`, `VFMLS\s+V\d+\.S4`, fma4, `// fcvtzs v\d+\.4s`,
			`// sshr v\d+\.4s, v\d+\.4s, #1`, `VSHL\s+\$23, V\d+\.S4`, `MOVD\s+\$1069066811, R1`},
		"vloop_softmax_2NEON": {`// fadd v\d+\.4s`, `// faddp v\d+\.4s`},
		"vloop_softmax_3NEON": {`// fdiv v\d+\.4s`, `VLD1\s+\(R2\)`, `VST1\.P\s+\[V\d+\.S4\], 16\(R2\)`},
		"vloop_vops_0NEON": {`// fneg v\d+\.4s`, `// fabs v\d+\.4s`, `// fsqrt v\d+\.4s`, `// fmax v\d+\.4s`,
			`// fmin v\d+\.4s`, `// fsub v\d+\.4s`, `// fdiv v\d+\.4s`, `VEOR\s+V\d+\.B16`},
		"vloop_rmin_0NEON": {`MOVD\s+\$2139095040, R1`, `// fmin v\d+\.4s`, `// fminp v\d+\.4s`},
		"vloop_dops_0NEON": {ld2, fma2, `// fsqrt v\d+\.2d`, `// fdiv v\d+\.2d`, `// fmax v\d+\.2d`, `FMOVD\s+c0\+24\(FP\), F0`,
			`VDUP\s+V0\.D\[0\], V0\.D2`},
		"vloop_ddot_0NEON": {ld2, fma2, `// faddp v\d+\.2d`, `FMOVD\s+F\d+, ret\+24\(FP\)`},
		"vloop_dmax_0NEON": {`MOVD\s+\$-4503599627370496, R1`, `VDUP\s+R1, V\d+\.D2`, `// fmaxp v\d+\.2d`},
	}
	for name, res := range checks {
		body := funcBody(t, string(asm), name)
		for _, re := range res {
			if !regexp.MustCompile(re).MatchString(body) {
				t.Errorf("%s: no match for %q in\n%s", name, re, body)
			}
		}
		if m := regexp.MustCompile(`(?m)^\s+F(ADD|SUB|MUL|DIV|MADD|MAX|MIN|NEG|ABS|SQRT)[SD]\s`).FindString(body); m != "" {
			t.Errorf("%s: scalar FP instruction %q", name, m)
		}
		if f64 := strings.Contains(body, ".D2"); f64 != strings.HasPrefix(name, "vloop_d") {
			t.Errorf("%s: wrong arrangement", name)
		}
	}
	// The horizontal reduction uses log2(lanes) pairwise steps.
	if n := strings.Count(funcBody(t, string(asm), "vloop_sdot_0NEON"), "// faddp"); n != 2 {
		t.Errorf("sdot: %d FADDP, want 2", n)
	}
	if n := strings.Count(funcBody(t, string(asm), "vloop_ddot_0NEON"), "// faddp"); n != 1 {
		t.Errorf("ddot: %d FADDP, want 1", n)
	}
}

// funcBody returns the text of TEXT ·name(SB) up to the next function.
func funcBody(t *testing.T, asm, name string) string {
	t.Helper()
	i := strings.Index(asm, "TEXT ·"+name+"(SB)")
	if i < 0 {
		t.Fatalf("no function %s", name)
	}
	s := asm[i:]
	if j := strings.Index(s[1:], "\nTEXT "); j >= 0 {
		s = s[:j+1]
	}
	return s
}

// TestVLoopFrame checks the ABI0 argument layout: results start at a multiple of 8 after the arguments.
func TestVLoopFrame(t *testing.T) {
	p := compile(t, vloopSrc)
	ks, _ := VLoopKernels(p, NEON)
	want := map[string][3]any{ // invariant offsets, result offset, argument size
		"vloop_saxpy_0NEON":   {[]int{24}, 32, 28}, // no result: ret is unused
		"vloop_sdot_0NEON":    {[]int(nil), 24, 28},
		"vloop_softmax_0NEON": {[]int(nil), 16, 20},
		"vloop_vops_0NEON":    {[]int{32, 36}, 40, 40},
		"vloop_dops_0NEON":    {[]int{24}, 32, 32},
		"vloop_dmax_0NEON":    {[]int{16}, 24, 32},
	}
	for _, k := range ks {
		w, ok := want[k.Name]
		if !ok {
			continue
		}
		inv, ret, size := newVLoopGen(&Builder{}, k, 1).frame()
		if !slices.Equal(inv, w[0].([]int)) || ret != w[1].(int) || size != w[2].(int) {
			t.Errorf("%s: frame %v %d %d, want %v", k.Name, inv, ret, size, w)
		}
	}
}
