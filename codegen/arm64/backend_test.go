package arm64

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/codegen/frontend"
	"github.com/kgen-dev/kgen/target"
)

const backendSrc = `
kernel sgemm(A: f32[M, K], B: f32[K, N], C: inout f32[M, N], alpha: f32, beta: f32) {
    C[i, j] = alpha * sum(k: A[i, k] * B[k, j]) + beta * C[i, j]
}

kernel sgemm_nt(A: f32[M, K], B: f32[N, K], C: inout f32[M, N], alpha: f32, beta: f32) {
    C[i, j] = alpha * sum(k: A[i, k] * B[j, k]) + beta * C[i, j]
}

kernel dgemm(A: f64[M, K], B: f64[K, N], C: inout f64[M, N], alpha: f64, beta: f64) {
    C[i, j] = alpha * sum(k: A[i, k] * B[k, j]) + beta * C[i, j]
}

kernel saxpy(x: f32[N], y: inout f32[N], alpha: f32) {
    y[i] = alpha * x[i] + y[i]
}
`

// compile builds a codegen.Package from kdsl source the way kgen gen does for the arm64 backend (compiled by
// the arm64 pipeline, whose plan holds the neon variant's tile).
func compile(t *testing.T, src string) *codegen.Package {
	t.Helper()
	p, err := frontend.Package("kk", "test.kdsl", src, "arm64")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBackend(t *testing.T) {
	p := compile(t, backendSrc)
	var be codegen.Backend = Backend{}
	if be.Name() != "arm64" {
		t.Errorf("Name() = %q", be.Name())
	}
	files, err := be.Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range files {
		got[f.Name] = string(f.Data)
	}
	for _, name := range []string{"kgen_arm64.s", "kgen_stub_arm64.go", "kgen_arm64.go"} {
		src, ok := got[name]
		if !ok {
			t.Fatalf("no %s among %d files", name, len(files))
		}
		if !strings.HasPrefix(src, codegen.Header) || !strings.Contains(src, "//go:build !purego\n") {
			t.Errorf("%s: missing header or !purego build tag", name)
		}
	}
	if len(files) != 3 {
		t.Errorf("%d files, want 3", len(files))
	}

	// One kernel per element type, shared by the slots that use it, made of by-element FMLA words.
	asm := got["kgen_arm64.s"]
	for _, k := range []string{"sgemm8x12NEON", "dgemm6x8NEON"} {
		if n := strings.Count(asm, "TEXT ·"+k+"(SB)"); n != 1 {
			t.Errorf("kgen_arm64.s: %d TEXT symbols for %s, want 1", n, k)
		}
		if !strings.Contains(got["kgen_stub_arm64.go"], "func "+k+"(") {
			t.Errorf("kgen_stub_arm64.go: no declaration of %s", k)
		}
	}
	// Two microkernels, two rows kernels, four packing routines and saxpy's vector loop.
	if n := strings.Count(asm, "TEXT "); n != 9 {
		t.Errorf("kgen_arm64.s: %d TEXT symbols, want 9", n)
	}
	for _, k := range []string{"sgemmRowsNEON", "dgemmRowsNEON", "packDf32NEON", "packPBf32NEON",
		"packDf64NEON", "packPBf64NEON"} {
		if n := strings.Count(asm, "TEXT ·"+k+"(SB)"); n != 1 {
			t.Errorf("kgen_arm64.s: %d TEXT symbols for %s, want 1", n, k)
		}
	}
	if !strings.Contains(asm, "TEXT ·vloop_saxpy_0NEON(SB), NOSPLIT, $0-28") ||
		!strings.Contains(got["kgen_stub_arm64.go"], "func vloop_saxpy_0NEON(n int, p0 *float32, p1 *float32, c0 float32)\n") {
		t.Errorf("no vector loop for saxpy:\n%s", got["kgen_stub_arm64.go"])
	}
	fmla := regexp.MustCompile(`WORD\s+\$0x[0-9a-f]{8} // fmla v\d+\.(4s|2d), v\d+\.(4s|2d), v\d+\.([sd])\[\d\]`)
	lanes := map[string]int{}
	for _, m := range fmla.FindAllStringSubmatch(asm, -1) {
		lanes[m[3]]++
	}
	if lanes["s"] == 0 || lanes["d"] == 0 {
		t.Errorf("kgen_arm64.s: FMLA words by lane type %v, want both f32 (s) and f64 (d)", lanes)
	}

	// The dispatch file: slice adapters over unsafe.SliceData, one unconditional "neon" variant
	// installing every slot (blocks multiples of the tile), then registerVariants returns; no cpu package.
	disp := got["kgen_arm64.go"]
	for _, want := range []string{
		"package kk\n",
		"func sgemm8x12NEONSlice(kc int, a, b, c []float32,",
		"func dgemm6x8NEONSlice(kc int, a, b, c []float64,",
		"unsafe.SliceData(a), unsafe.SliceData(b), &c[0]",
		"\tvariants = append([]variant{{\"neon\", func() {\n",
		"\treturn true\n}\n",
		"func vloop_saxpy_0NEONSlot(lo, hi int, t0 []float32, o0 int, t1 []float32, o1 int, c0 float32) int {\n\tn := (hi - lo) / 4\n",
		"\t\tvloop_saxpy_0 = vloop_saxpy_0NEONSlot\n",
		"\t\tpackD32 = packDf32NEONSlice\n", "\t\tpackPB32 = packPBf32NEONSlice\n",
		"\t\tpackD64 = packDf64NEONSlice\n", "\t\tpackPB64 = packPBf64NEONSlice\n",
		"\trowsVia32(sgemmRowsNEONPtr, kc, a, ars, acs, b, ldb, c, ldc, m, n, alpha, beta, bias, ep)\n",
		"\tfor i := 0; i < m; i += 4 {\n\t\tsgemmRowsNEON(kc, unsafe.SliceData(a[min(i*ars, len(a)):]), ars, acs, unsafe.SliceData(b), ldb, &c[i*ldc], ldc, min(4, m-i), n)\n",
	} {
		if !strings.Contains(disp, want) {
			t.Errorf("kgen_arm64.go lacks %q:\n%s", want, disp)
		}
	}
	if strings.Contains(disp, "x/sys/cpu") || strings.Contains(disp[strings.Index(disp, "func registerVariants()"):], "\tif ") {
		t.Errorf("kgen_arm64.go: the neon variant should be registered without a feature check:\n%s", disp)
	}
	arm, err := target.Lookup("arm64")
	if err != nil {
		t.Fatal(err)
	}
	install := regexp.MustCompile(`\*(\w+)Slot = (gemmSlot\d\d)\{Name: "neon", MR: (\d+), NR: (\d+), MC: (\w+)Blocks\.MC, KC: (\w+)Blocks\.KC, NC: (\w+)Blocks\.NC, SmallWork: 512000, SmallDeep: 0, RowsMax: 4, RowsNB: ` +
		strconv.Itoa(arm.Knobs.RowsNB) + `, RowBlocks: 4, Micro: (\w+)Slice, MicroU: microUGo(32|64), MicroB: microBGo(?:32|64), Rows: (\w+)Slice\}`)
	want := map[string]string{"sgemm": "sgemm8x12NEON", "sgemm_nt": "sgemm8x12NEON", "dgemm": "dgemm6x8NEON"}
	seen := map[string]bool{}
	for _, m := range install.FindAllStringSubmatch(disp, -1) {
		seen[m[1]] = true
		if want[m[1]] != m[8] || m[5] != m[8] || m[6] != m[8] || m[7] != m[8] {
			t.Errorf("slot %s uses %s with blocks of %s, want %s", m[1], m[8], m[5], want[m[1]])
		}
		if r := map[string]string{"gemmSlot32": "sgemmRowsNEON", "gemmSlot64": "dgemmRowsNEON"}[m[2]]; m[10] != r {
			t.Errorf("slot %s: rows kernel %s, want %s", m[1], m[10], r)
		}
		// the blocks are probed at init for this kernel's tile
		size := map[string]string{"gemmSlot32": "4", "gemmSlot64": "8"}[m[2]]
		decl := "var " + m[8] + "Blocks = target.HostGemmBlocks(" + m[3] + ", " + m[4] + ", " + size + ")"
		if !strings.Contains(disp, decl) {
			t.Errorf("slot %s: no %q", m[1], decl)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("installed slots %v, want %v", seen, want)
	}

	// Deterministic.
	again, err := be.Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := range files {
		if !bytes.Equal(files[i].Data, again[i].Data) {
			t.Errorf("%s: output is not deterministic", files[i].Name)
		}
	}
}

// A package without GEMM, transpose or vector-loop slots needs no arm64 files (an integer loop has no
// NEON version).
func TestBackendNoSlots(t *testing.T) {
	p := compile(t, "kernel iadd(x: i32[N], y: inout i32[N]) {\n    y[i] = x[i] + y[i]\n}\n")
	files, err := Backend{}.Generate(p)
	if err != nil || len(files) != 0 {
		t.Errorf("Generate = %d files, %v; want none", len(files), err)
	}
}

// A transpose gets the NEON tile routine of its element type, installed through the checking adapter.
func TestBackendTransposeOnly(t *testing.T) {
	p := compile(t, "kernel transpose(A: f32[M, N], B: out f32[N, M]) {\n    B[j, i] = A[i, j]\n}\n")
	files, err := Backend{}.Generate(p)
	if err != nil || len(files) != 3 {
		t.Fatalf("Generate = %d files, %v; want 3", len(files), err)
	}
	asm := string(files[0].Data)
	if strings.Count(asm, "TEXT ") != 1 || !strings.Contains(asm, "TEXT ·transposeF32NEON(SB)") {
		t.Errorf("kgen_arm64.s:\n%s", asm)
	}
	disp := string(files[2].Data)
	if strings.Contains(disp, "unsafe") || !strings.Contains(disp, `transposeSlot.Name, transposeSlot.T = "neon", transposeF32NEONSlice`) ||
		!strings.Contains(disp, "if !transposeFits(rows, cols, len(src), lds, len(dst), ldd) {") {
		t.Errorf("kgen_arm64.go:\n%s", disp)
	}
}

// A package with vector loops but no GEMM slots gets the three files, without microkernels.
func TestBackendVLoopsOnly(t *testing.T) {
	p := compile(t, "kernel saxpy(x: f32[N], y: inout f32[N], alpha: f32) {\n    y[i] = alpha * x[i] + y[i]\n}\n")
	files, err := Backend{}.Generate(p)
	if err != nil || len(files) != 3 {
		t.Fatalf("Generate = %d files, %v; want 3", len(files), err)
	}
	asm := string(files[0].Data)
	if strings.Count(asm, "TEXT ") != 1 || !strings.Contains(asm, "TEXT ·vloop_saxpy_0NEON(SB)") {
		t.Errorf("kgen_arm64.s:\n%s", asm)
	}
	if disp := string(files[2].Data); strings.Contains(disp, "unsafe") || !strings.Contains(disp, "vloop_saxpy_0 = vloop_saxpy_0NEONSlot") {
		t.Errorf("kgen_arm64.go:\n%s", disp)
	}
}
