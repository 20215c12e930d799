package amd64

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/codegen/frontend"
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

func compileF16(t *testing.T) *codegen.Package {
	t.Helper()
	p, err := frontend.Package("kk", "test.kdsl", f16Src, "go")
	if err != nil {
		t.Fatal(err)
	}
	return p
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

// TestVLoopF16 is an asmcheck of the f16 vector loops: F16C conversions with rounding immediate 0 on
// memory operands, NaN canonicalized before every narrowing, the group index scaled per access size.
func TestVLoopF16(t *testing.T) {
	p := compileF16(t)
	ks, impls := VLoopKernels(p, AVX2)
	var names []string
	for _, k := range ks {
		names = append(names, k.Name)
	}
	want := "vloop_cvt_f32_f16_0AVX2 vloop_cvt_f16_f32_0AVX2 vloop_hscale_0AVX2 vloop_hgemm_0AVX2 vloop_cvtF16F32AVX2"
	if strings.Join(names, " ") != want || !codegen.ImplsNeedF16(impls) {
		t.Fatalf("AVX2 vector loops %v, want %s", names, want)
	}
	asm, stubs, err := GenerateWithVLoops("x", nil, ks)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"func vloop_cvt_f32_f16_0AVX2(n int, p0 *float32, p1 *uint16)\n",
		"func vloop_hscale_0AVX2(n int, p0 *uint16, p1 *uint16, c0 float32)\n",
		"func vloop_cvtF16F32AVX2(n int, p0 *uint16, p1 *float32)\n",
	} {
		if !strings.Contains(string(stubs), s) {
			t.Errorf("stubs lack %q:\n%s", s, stubs)
		}
	}
	const (
		widen  = `VCVTPH2PS\s+\S*\(\w+\)\(AX\*1\), Y\d+`
		narrow = `VCVTPS2PH\s+\$0x00, Y\d+, \S*\(\w+\)\(AX\*1\)`
		canon  = `VCMPPS\s+\$0x03, Y(\d+), Y\d+, Y\d+`
		blend  = `VBLENDVPS\s+Y\d+, Y\d+, Y\d+, Y\d+`
	)
	for name, res := range map[string][]string{
		"vloop_cvt_f32_f16_0AVX2": {`VMOVUPS\s+\S*\(\w+\)\(AX\*2\), Y\d+`, canon, `VORPS\s+vloopF16Quiet`, blend, narrow, `ADDQ\s+\$0x00000040, AX`},
		"vloop_cvt_f16_f32_0AVX2": {widen, `VMOVUPS\s+Y\d+, \S*\(\w+\)\(AX\*2\)`},
		"vloop_hscale_0AVX2":      {widen, `VCVTPS2PH\s+\$0x00, Y\d+, X\d+`, `VCVTPH2PS\s+X\d+, Y\d+`, narrow, canon},
		"vloop_hgemm_0AVX2":       {canon, narrow},
		"vloop_cvtF16F32AVX2":     {widen},
	} {
		body := funcBody(t, string(asm), name)
		for _, re := range res {
			if !regexp.MustCompile(re).MatchString(body) {
				t.Errorf("%s: no match for %q in\n%s", name, re, body)
			}
		}
		if regexp.MustCompile(`VCVTPS2PH\s+\$0x0[1-7]`).MatchString(body) {
			t.Errorf("%s: narrowing without round-to-nearest-even", name)
		}
	}
}
