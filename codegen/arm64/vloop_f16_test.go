package arm64

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen"
)

// f16Src has f16 storage in vector loops: both conversions, an inout f16 tensor with a cast to f16
// inside the expression, a GEMM whose packs widen f16 (the synthetic vloop_cvtF16F32) and whose
// result is narrowed by a vector loop, and a bf16 loop (not a slot: bf16 is outside the contract).
const f16Src = `
kernel cvt_f32_f16(X: f32[N], Y: out f16[N]) {
    Y[i] = f16(X[i])
}
kernel cvt_f16_f32(X: f16[N], Y: out f32[N]) {
    Y[i] = X[i]
}
kernel hscale(x: f16[N], y: inout f16[N], a: f32) {
    y[i] = f16(f16(a * x[i]) + y[i])
}
kernel hgemm(A: f16[M, K], B: f16[K, N], C: out f16[M, N]) {
    C[i, j] = f16(sum(k: A[i, k] * B[k, j]))
}
kernel bcvt(X: f32[N], Y: out bf16[N]) {
    Y[i] = bf16(X[i])
}
`

func TestVLoopF16(t *testing.T) {
	p := compile(t, f16Src)
	var vars []string
	for _, v := range codegen.PackageVLoops(p) {
		vars = append(vars, v.Var)
	}
	if want := "vloop_cvt_f32_f16_0 vloop_cvt_f16_f32_0 vloop_hscale_0 vloop_hgemm_0 vloop_cvtF16F32"; strings.Join(vars, " ") != want {
		t.Errorf("vector-loop slots %v, want %s", vars, want)
	}
	ks, impls := VLoopKernels(p, NEON)
	if len(ks) != len(vars) || !codegen.ImplsNeedF16(impls) {
		t.Fatalf("%d NEON loops for %d slots", len(ks), len(vars))
	}
	asm, stubs, err := GenerateWithVLoops("x", nil, ks)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(asm, []byte("#include \"textflag.h\"\n"))
	goAsm(t, asm[i+len("#include \"textflag.h\"\n"):])
	for _, s := range []string{
		"func vloop_cvt_f32_f16_0NEON(n int, p0 *float32, p1 *uint16)\n",
		"func vloop_hscale_0NEON(n int, p0 *uint16, p1 *uint16, c0 float32)\n",
		"func vloop_cvtF16F32NEON(n int, p0 *uint16, p1 *float32)\n",
	} {
		if !strings.Contains(string(stubs), s) {
			t.Errorf("stubs lack %q:\n%s", s, stubs)
		}
	}
	const (
		fcvtl = `WORD\s+\$0x0e217[89a-f][0-9a-f]{2} // fcvtl v\d+\.4s, v\d+\.4h`
		fcvtn = `WORD\s+\$0x0e216[89a-f][0-9a-f]{2} // fcvtn v\d+\.4h, v\d+\.4s`
		canon = `// fcmeq v\d+\.4s, v(\d+)\.4s, v(\d+)\.4s`
		ld4h  = `VLD1\.P\s+8\(R\d+\), \[V\d+\.H4\]`
		st4h  = `VST1\.P\s+\[V\d+\.H4\], 8\(R\d+\)`
	)
	for name, res := range map[string][]string{
		"vloop_cvt_f32_f16_0NEON": {fcvtn, canon, `VBIT\s`, st4h, `MOVD\s+\$4194304, R1`},
		"vloop_cvt_f16_f32_0NEON": {fcvtl, ld4h, `VST1\.P\s+\[V\d+\.S4\], 16\(R\d+\)`},
		"vloop_hscale_0NEON":      {fcvtl, fcvtn, canon, `VLD1\s+\(R3\), \[V\d+\.H4\]`, st4h},
		"vloop_hgemm_0NEON":       {fcvtn, canon, st4h},
		"vloop_cvtF16F32NEON":     {fcvtl, ld4h},
	} {
		body := funcBody(t, string(asm), name)
		for _, re := range res {
			if !regexp.MustCompile(re).MatchString(body) {
				t.Errorf("%s: no match for %q in\n%s", name, re, body)
			}
		}
		if strings.Contains(name, "cvt_f16_f32") || strings.Contains(name, "cvtF16F32") {
			if strings.Contains(body, "fcvtn") || strings.Contains(body, "fcmeq") {
				t.Errorf("%s: a widening loop narrows", name)
			}
		}
	}
	// hscale rounds through f16 twice (the cast, then the store): two narrowings, each canonicalizing NaN.
	if body := funcBody(t, string(asm), "vloop_hscale_0NEON"); strings.Count(body, "// fcvtn") != 2*5 || strings.Count(body, "// fcmeq") != 2*5 {
		t.Errorf("hscale: want 2 FCVTN and 2 FCMEQ per group (4 unrolled + 1 tail)\n%s", body)
	}
}
