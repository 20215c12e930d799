package msl

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

func libraryText(t *testing.T) string {
	t.Helper()
	text, err := os.ReadFile("../../kernels.kdsl")
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

// TestEveryKernelEmitsOrSaysWhy: every kernel of kernels.kdsl lowers, or fails with a "not supported
// yet" error (never a panic): f64 kernels (no double in Metal) always, bf16 kernels below Metal 3.1.
func TestEveryKernelEmitsOrSaysWhy(t *testing.T) {
	for _, spec := range []string{"msl", "msl:3.1"} {
		p := compilePackage(t, "kernels.kdsl", libraryText(t), spec)
		src, err := BuildSource(p)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		for _, k := range p.Kernels {
			f64, bf16 := false, false
			for _, prm := range k.K.Params {
				f64 = f64 || prm.Type == ir.F64
				bf16 = bf16 || prm.Type == ir.BF16
			}
			err, left := src.Unsupported[k.K.Name]
			wantLeft := f64 || (bf16 && spec == "msl")
			if left != wantLeft {
				t.Errorf("%s %s: left out %v (%v), want %v", spec, k.K.Name, left, err, wantLeft)
			}
			if left && !IsNotSupported(err) {
				t.Errorf("%s %s: %v is not a not-supported error", spec, k.K.Name, err)
			}
			if !left && len(launchesOf(src, k.K)) == 0 {
				t.Errorf("%s %s: emitted without launches", spec, k.K.Name)
			}
		}
	}
}

// kernelText is the emitted function fn (from its doc comment to its closing brace).
func kernelText(t *testing.T, src string, fn string) string {
	t.Helper()
	i := strings.Index(src, "kernel void "+fn+"(")
	if i < 0 {
		t.Fatalf("no kernel %s", fn)
	}
	if j := strings.LastIndex(src[:i], "\n\n"); j >= 0 {
		i = j + 2
	}
	end := strings.Index(src[i:], "\n}\n")
	return src[i : i+end+3]
}

// TestEmittedInstructions checks that kernels use the Metal constructs that make them correct and
// fast, and not the ones they must not (no double, no leftover asynchronous copy).
func TestEmittedInstructions(t *testing.T) {
	p := compilePackage(t, "kernels.kdsl", libraryText(t), "msl:3.1")
	src, err := BuildSource(p)
	if err != nil {
		t.Fatal(err)
	}
	for fn, wants := range map[string][]string{
		"saxpy_0": {regexp.QuoteMeta("kernels.kdsl:51: y[i] = alpha * x[i] + y[i]"), regexp.QuoteMeta("[[threadgroup_position_in_grid]]"),
			regexp.QuoteMeta("device float* y [[buffer(1)]]"), regexp.QuoteMeta("constant const float& alpha [[buffer(2)]]")},
		"sgemm_0": {`threadgroup float As\[768\];`, "simdgroup_float8x8 acc2 = make_filled_simdgroup_matrix<float, 8, 8>", "simdgroup_load\\(", "simdgroup_multiply_accumulate\\(acc2, ", "simdgroup_store\\(acc2, ",
			`threadgroup_barrier\(mem_flags::mem_device \| mem_flags::mem_threadgroup\);`, `if \(beta == 0.0f\)`},
		"softmax_0": {"threadgroup float red\\[2\\];", "metal::exp\\(", "kg_max\\(", "threadgroup_barrier",
			regexp.QuoteMeta("acc = simd_any(metal::isnan(acc)) ? NAN : simd_max(acc);"), regexp.QuoteMeta("acc2 = acc2 + simd_shuffle_xor(acc2, 16);")},
		"hgemm_0":       {"device const half\\* A", "threadgroup half As", "C\\[.*\\] = half\\(", "float\\(As\\[", "simdgroup_half8x8 mat_a"},
		"bgemm_0":       {"simdgroup_bfloat8x8 mat_a", "simdgroup_multiply_accumulate\\(acc"},
		"bgemm_bf16_0":  {"device const bfloat\\* A", "= bfloat\\("},
		"transpose_0":   {`B\[j \* M \+ i\] = A\[i \* N \+ j\];`},
		"layernorm_0":   {"metal::sqrt\\("},
		"cvt_f32_f16_0": {"Y\\[i\\] = half\\(X\\[i\\]\\);"},
	} {
		text := kernelText(t, src.Text, fn)
		for _, w := range wants {
			if !regexp.MustCompile(w).MatchString(text) {
				t.Errorf("%s lacks %q:\n%s", fn, w, text)
			}
		}
	}
	code := regexp.MustCompile(`//.*`).ReplaceAllString(src.Text, "")
	for _, bad := range []string{"double", "cp.async", "/* plan symbol", "?"} {
		if bad == "?" {
			bad = "Ident{?}" // iexprRaw's fallback
		}
		if strings.Contains(code, bad) {
			t.Errorf("the emitted source contains %q", bad)
		}
	}
}

// TestPlanLimits: a plan that needs more than Metal allows (1024 threads, 32 KiB of threadgroup
// memory) is a clear error, not a kernel that fails to compile on the device.
func TestPlanLimits(t *testing.T) {
	for _, tc := range []struct {
		kernel, sym string
		val         int
		want        string
	}{
		{"saxpy", "gpu.B1", 2048, "threadgroup of 2048 threads"},
		{"sgemm", "gpu.W", 32, "bytes of threadgroup memory"},
	} {
		p := compilePackage(t, "kernels.kdsl", libraryText(t), "msl")
		for _, k := range p.Kernels {
			if k.K.Name != tc.kernel {
				continue
			}
			k.F.Plan[tc.sym] = tc.val
			_, err := Lower(k.K, k.F, "kernels.kdsl")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s with %s = %d: %v, want an error containing %q", tc.kernel, tc.sym, tc.val, err, tc.want)
			}
		}
	}
}

// TestMissingPlanSymbol: loop IR whose plan lacks a symbol it uses is an error, not a guess.
func TestMissingPlanSymbol(t *testing.T) {
	p := compilePackage(t, "kernels.kdsl", libraryText(t), "msl:3.1")
	for _, k := range p.Kernels {
		if _, err := Lower(k.K, k.F, "kernels.kdsl"); err != nil {
			continue // f64: left out before its plan matters
		}
		for _, sym := range []string{"gpu.B1", "gpu.W", "gpu.RW"} {
			if _, ok := k.F.Plan[sym]; !ok {
				continue
			}
			delete(k.F.Plan, sym)
			if _, err := Lower(k.K, k.F, "kernels.kdsl"); err == nil || !strings.Contains(err.Error(), sym) {
				t.Errorf("%s without %s: %v, want an error naming it", k.K.Name, sym, err)
			}
		}
	}
}

// TestHostCodeIsRefused: loop IR that is not GPU-mapped (the portable pipeline's) is refused with a
// not-supported error, and so is a package of only such kernels, with nothing written.
func TestHostCodeIsRefused(t *testing.T) {
	p := compilePackage(t, "kernels.kdsl", libraryText(t), "go")
	for _, k := range p.Kernels[:3] {
		if _, err := Lower(k.K, k.F, "kernels.kdsl"); !IsNotSupported(err) {
			t.Errorf("%s (portable loop IR): %v, want a not-supported error", k.K.Name, err)
		}
	}
	p.Target = "msl"
	if files, err := (Backend{}).Generate(p); err == nil || files != nil {
		t.Errorf("Generate of host-only loop IR: %d files, %v", len(files), err)
	}
}

func TestVersion(t *testing.T) {
	for spec, want := range map[string]int{"msl": 300, "msl:3.0": 300, "msl:3.1": 310} {
		if v, err := Version(spec); err != nil || v != want {
			t.Errorf("Version(%q) = %d, %v; want %d", spec, v, err, want)
		}
	}
	for _, bad := range []string{"msl:3", "msl:x.1", "msl:3.-1"} {
		if _, err := Version(bad); err == nil {
			t.Errorf("Version(%q): no error", bad)
		}
	}
	if _, err := BuildSource(&codegen.Package{Target: "msl:abc"}); err == nil {
		t.Error("BuildSource with a bad version: no error")
	}
}

// TestBFloatNeedsMetal31: at Metal 3.0 every bf16 kernel is left out with the reason, and the source
// has no bfloat at all (simdgroup_bfloat8x8 included), while half GEMMs still get simdgroup_half8x8;
// at 3.1 the bf16 GEMMs multiply simdgroup_bfloat8x8 tiles.
func TestBFloatNeedsMetal31(t *testing.T) {
	for _, spec := range []string{"msl", "msl:3.1"} {
		src, err := BuildSource(compilePackage(t, "kernels.kdsl", libraryText(t), spec))
		if err != nil {
			t.Fatal(err)
		}
		err30 := src.Unsupported["bgemm"]
		if spec == "msl" {
			if err30 == nil || !strings.Contains(err30.Error(), "bf16 needs Metal 3.1 (target msl:3.1)") {
				t.Errorf("bgemm at Metal 3.0: %v, want it left out for bf16", err30)
			}
			if strings.Contains(src.Text, "bfloat") {
				t.Error("the Metal 3.0 source names bfloat")
			}
		} else if err30 != nil || !strings.Contains(kernelText(t, src.Text, "bgemm_0"), "simdgroup_bfloat8x8 mat_a") {
			t.Errorf("bgemm at Metal 3.1: %v, want simdgroup_bfloat8x8 tiles", err30)
		}
		if !strings.Contains(kernelText(t, src.Text, "hgemm_0"), "simdgroup_half8x8 mat_a") {
			t.Errorf("%s: hgemm has no simdgroup_half8x8 tiles", spec)
		}
	}
}
