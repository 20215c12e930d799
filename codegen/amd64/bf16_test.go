package amd64

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen/frontend"
)

// TestVDPBF16PSEncoding checks encVDPBF16PS (the bytes the bf16 kernels emit for VDPBF16PS, which avo and
// the Go assembler lack) against llvm-mc for every register in every operand position.
func TestVDPBF16PSEncoding(t *testing.T) {
	mc, err := exec.LookPath("llvm-mc")
	if err != nil {
		if os.Getenv("KGEN_REQUIRE_TOOLS") == "1" {
			t.Fatalf("llvm-mc not found and KGEN_REQUIRE_TOOLS=1: %v", err)
		}
		t.Skip("llvm-mc not installed (set KGEN_REQUIRE_TOOLS=1 to make this fatal)")
	}
	type ops struct{ src2, src1, dst int }
	var cases []ops
	for r := 0; r < 32; r++ {
		cases = append(cases, ops{r, (r + 7) % 32, (r + 19) % 32}, ops{(r + 11) % 32, r, (r + 3) % 32}, ops{(r + 5) % 32, (r + 23) % 32, r})
	}
	var lines []string
	for _, c := range cases {
		lines = append(lines, fmt.Sprintf("vdpbf16ps %%zmm%d, %%zmm%d, %%zmm%d", c.src2, c.src1, c.dst)) // AT&T: src2, src1, dst
	}
	cmd := exec.Command(mc, "-triple=x86_64", "-mattr=+avx512bf16", "-show-encoding")
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("llvm-mc: %v\n%s", err, out)
	}
	encRE := regexp.MustCompile(`encoding: \[((?:0x[0-9a-f]{2},?)+)\]`)
	got := encRE.FindAllStringSubmatch(string(out), -1)
	if len(got) != len(cases) {
		t.Fatalf("llvm-mc gave %d encodings for %d lines:\n%s", len(got), len(cases), out)
	}
	for i, c := range cases {
		var want []byte
		for _, h := range strings.Split(got[i][1], ",") {
			b, _ := strconv.ParseUint(strings.TrimPrefix(h, "0x"), 16, 8)
			want = append(want, byte(b))
		}
		if enc := encVDPBF16PS(c.src2, c.src1, c.dst); string(enc[:]) != string(want) {
			t.Errorf("%s: % x, llvm-mc % x", lines[i], enc, want)
		}
	}
}

// TestBF16Kernel: the bf16 kernel's k loop is VDPBF16PS on zmm registers only, MR·NR/16 per pair; the
// epilogue keeps the f32 instructions; the bf16 tile is rejected on AVX2 and unpacked.
func TestBF16Kernel(t *testing.T) {
	k := NewGemmKernel(BF16, AVX512)
	if k.Name != "bgemm14x32AVX512" || k.MR != 14 || k.NR != 32 {
		t.Fatalf("bf16 kernel %+v", k)
	}
	asm, _, err := Generate("p", []GemmKernel{k})
	if err != nil {
		t.Fatal(err)
	}
	text := string(asm)
	loop := text[strings.Index(text, "kloop:"):strings.Index(text, "kremainder:")]
	dp := regexp.MustCompile(`BYTE \$0x62; BYTE \$0x[0-9a-f]{2}; BYTE \$0x[0-9a-f]{2}; BYTE \$0x[0-9a-f]{2}; BYTE \$0x52; BYTE \$0x[0-9a-f]{2} // VDPBF16PS Z\d+, Z\d+, Z\d+`)
	if got, want := len(dp.FindAllString(loop, -1)), k.unroll()*k.MR*k.NR/16; got != want {
		t.Errorf("k loop: %d VDPBF16PS, want %d", got, want)
	}
	if strings.Contains(loop, "VFMADD") {
		t.Error("k loop of the bf16 kernel has an f32 FMA")
	}
	if !strings.Contains(text, "VFMADD231PS") { // beta·C in the epilogue
		t.Error("no f32 FMA in the epilogue")
	}
	for _, bad := range []GemmKernel{{Name: "b", Elem: BF16, ISA: AVX2, MR: 6, NR: 16}, NewGemmKernelU(BF16, AVX512)} {
		if bad.Validate() == nil {
			t.Errorf("Validate accepted %+v", bad)
		}
	}
}

// TestBF16Variant: a package with a bf16 GEMM gets an avx512bf16 variant, gated on AVX512_BF16 and
// AVX-512F, that points the bf16 slot at the VDPBF16PS kernel and installs the pair packers, while the
// f32 GEMM of the same package and the other variants keep the f32 kernels and f32 panels; mixing a bf16
// operand with an f32 one is not a pair slot. A package without bf16 GEMMs has no such variant.
func TestBF16Variant(t *testing.T) {
	gen := func(src string) string {
		p, err := frontend.Package("kk", "test.kdsl", src, "amd64")
		if err != nil {
			t.Fatal(err)
		}
		files, err := Backend{}.Generate(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if f.Name == "kgen_amd64.go" {
				return string(f.Data)
			}
		}
		t.Fatal("no kgen_amd64.go")
		return ""
	}
	src := gen(`
kernel bg(A: bf16[M, K], B: bf16[K, N], C: out f32[M, N]) {
    C[i, j] = sum(k: A[i, k] * B[k, j])
}
kernel mixed(A: bf16[M, K], B: f32[K, N], C: out f32[M, N]) {
    C[i, j] = sum(k: A[i, k] * B[k, j])
}
kernel sg(A: f32[M, K], B: f32[K, N], C: out f32[M, N]) {
    C[i, j] = sum(k: A[i, k] * B[k, j])
}
`)
	i := strings.Index(src, `{"avx512bf16", func() {`)
	if i < 0 {
		t.Fatalf("no avx512bf16 variant:\n%s", src)
	}
	cond := src[strings.LastIndex(src[:i], "if "):i]
	for _, want := range []string{"cpu.X86.HasAVX512BF16", "cpu.X86.HasAVX512F"} {
		if !strings.Contains(cond, want) {
			t.Errorf("avx512bf16 condition %q lacks %s", cond, want)
		}
	}
	body := src[i : i+strings.Index(src[i:], "}}}")]
	for _, want := range []string{"packDBF16 = packDPairBF16", "packPBBF16 = packPBbf16PairAVX2Slice",
		`*bgSlot = gemmSlot32{Name: "avx512bf16", MR: 14, NR: 32`, "Micro: bgemm14x32AVX512Slice",
		`*mixedSlot = gemmSlot32{Name: "avx512bf16", MR: 14, NR: 32, MC: sgemm14x32AVX512Blocks.MC`,
		`*sgSlot = gemmSlot32{Name: "avx512bf16", MR: 14, NR: 32, MC: sgemm14x32AVX512Blocks.MC`} {
		if !strings.Contains(body, want) {
			t.Errorf("avx512bf16 variant lacks %q:\n%s", want, body)
		}
	}
	if strings.Count(src, "bgemm14x32AVX512Slice,") != 1 || strings.Count(src, "packDPairBF16") != 1 ||
		strings.Count(src, "packPBBF16 = packPBbf16PairAVX2Slice") != 1 {
		t.Errorf("the VDPBF16PS kernel or the pair packers are installed outside the avx512bf16 variant:\n%s", src)
	}
	if other := gen(`
kernel sg(A: f32[M, K], B: f32[K, N], C: out f32[M, N]) {
    C[i, j] = sum(k: A[i, k] * B[k, j])
}
`); strings.Contains(other, "avx512bf16") {
		t.Error("a package without bf16 GEMMs has an avx512bf16 variant")
	}
}
