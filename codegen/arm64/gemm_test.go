package arm64

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestTileFor(t *testing.T) {
	for _, c := range []struct {
		elem   string
		mr, nr int
	}{{"f32", 8, 12}, {"f64", 6, 8}, {"f16", 0, 0}} {
		if mr, nr := TileFor(c.elem); mr != c.mr || nr != c.nr {
			t.Errorf("TileFor(%q) = %d, %d", c.elem, mr, nr)
		}
	}
	for _, k := range DefaultKernels() {
		if mr, nr := TileFor(k.Elem); mr != k.MR || nr != k.NR {
			t.Errorf("%s: DefaultKernels disagrees with TileFor", k.Name)
		}
	}
}

func TestPlanErrors(t *testing.T) {
	for _, k := range []GemmKernel{
		{Name: "a", Elem: "f16", MR: 8, NR: 8},
		{Name: "a", Elem: "f32", MR: 6, NR: 12}, // MR not a multiple of 4
		{Name: "a", Elem: "f32", MR: 8, NR: 16}, // 32 accumulators
		{Name: "a", Elem: "f64", MR: 8, NR: 8},  // 32 accumulators
		{Name: "a", Elem: "f32", MR: 8, NR: 12, KUnroll: 3},
		{Name: "1a", Elem: "f32", MR: 8, NR: 12},
	} {
		if _, err := Plan(k); err == nil {
			t.Errorf("%+v: no error", k)
		}
	}
	if _, _, err := Generate("p", []GemmKernel{DefaultKernels()[0], DefaultKernels()[0]}); err == nil {
		t.Error("duplicate names accepted")
	}
}

func TestPlanRegisters(t *testing.T) {
	p, err := Plan(DefaultKernels()[0])
	if err != nil {
		t.Fatal(err)
	}
	if p.A[0] != 0 || p.A[1] != 1 || p.B[0] != 2 || p.B[2] != 4 || p.Acc[0][0] != 8 || p.Acc[7][2] != 31 {
		t.Errorf("f32 plan: A %v B %v Acc %v", p.A, p.B, p.Acc)
	}
	p, err = Plan(DefaultKernels()[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(p.A) != 3 || len(p.B) != 4 || p.Acc[0][0] != 8 || p.Acc[5][3] != 31 {
		t.Errorf("f64 plan: A %v B %v Acc %v", p.A, p.B, p.Acc)
	}
}

func TestGenerateShape(t *testing.T) {
	asm, stubs, err := Generate("kern", DefaultKernels())
	if err != nil {
		t.Fatal(err)
	}
	asm2, stubs2, _ := Generate("kern", DefaultKernels())
	if !bytes.Equal(asm, asm2) || !bytes.Equal(stubs, stubs2) {
		t.Error("not deterministic")
	}
	for _, f := range [][]byte{asm, stubs} {
		if !bytes.HasPrefix(f, []byte(Header+"\n\n//go:build !purego\n")) {
			t.Errorf("bad header:\n%s", f[:80])
		}
	}
	for _, want := range []string{
		"TEXT ·sgemm8x12(SB), NOSPLIT, $432-80",
		"TEXT ·dgemm6x8(SB), NOSPLIT, $448-88",
		"FMOVS\talpha+56(FP), F0", "FMOVS\tbeta+60(FP), F1", "MOVD\tbias+64(FP), R5", "MOVD\tep+72(FP), R11",
		"FMOVD\talpha+56(FP), F0", "FMOVD\tbeta+64(FP), F1", "MOVD\tbias+72(FP), R5", "MOVD\tep+80(FP), R11",
		"// fmla v31.2d, v6.2d, v2.d[1]", "// fmax v8.4s, v8.4s, v0.4s",
	} {
		if !bytes.Contains(asm, []byte(want)) {
			t.Errorf("asm lacks %q", want)
		}
	}
	for _, r := range []string{"R18", "R26", "R27", "R28", "R29", "R30"} {
		for _, l := range strings.Split(string(asm), "\n") {
			if strings.Contains(l, r+",") || strings.HasSuffix(l, r) || strings.Contains(l, "("+r+")") {
				t.Errorf("reserved register %s used: %q", r, l)
			}
		}
	}
	if !bytes.Contains(stubs, []byte("//go:noescape\nfunc dgemm6x8(kc int, a, b, c *float64, ldc int, m, n int, alpha, beta float64, bias *float64, ep int)")) {
		t.Errorf("stubs:\n%s", stubs)
	}
}

func TestStaticFigures(t *testing.T) {
	f, err := StaticFigures(DefaultKernels()[0])
	if err != nil {
		t.Fatal(err)
	}
	var regs []int // V0..V4 (A, B; V2..V4 reused for C rows and V0..V2 for bias in the epilogue), V8..V31
	for i := 0; i < 32; i++ {
		if i < 5 || i >= 8 {
			regs = append(regs, i)
		}
	}
	want := Figures{MR: 8, NR: 12, KUnroll: 4, FMLAPerKStep: 24, LoadInstrPerKStep: 2, QLoadsPerKStep: 5,
		FMLAPerLoadInstr: 12, FMLAPerQLoad: 4.8, PrefetchPerIter: 5, FlopsPerKStep: 192, AccRegs: 24, VRegs: regs}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("f32 figures\n got %+v\nwant %+v", f, want)
	}
	f, err = StaticFigures(DefaultKernels()[1])
	if err != nil {
		t.Fatal(err)
	}
	if f.FMLAPerKStep != 24 || f.LoadInstrPerKStep != 2 || f.QLoadsPerKStep != 7 || f.AccRegs != 24 || f.PrefetchPerIter != 7 {
		t.Errorf("f64 figures %+v", f)
	}
	t.Logf("f64: %+v", f)
}
