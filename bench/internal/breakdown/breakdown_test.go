package breakdown

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/kgen-dev/kgen/bench/internal/report"
)

const kp = "github.com/kgen-dev/kgen/kernels."

// asm is a cut-down microkernel with the labels of kernels/kgen_amd64.s.
const asm = `#include "textflag.h"

TEXT ·sgemm14x32AVX512(SB), NOSPLIT, $0-80
	MOVQ kc+0(FP), CX
kloop:
	VFMADD231PS Z0, Z1, Z2
	JNZ kloop
kremainder:
	TESTQ CX, CX
kloop1:
	VFMADD231PS Z0, Z1, Z2
epilogue:
	VMULPS Z3, Z2, Z2
beta_edge:
	KMOVW K1, AX
beta_row3:
	VMOVUPS (DI), K1, Z4
nobeta:
	VMOVUPS Z2, (DI)
store_edge:
	KMOVW K1, AX
store_row0:
	VMOVUPS Z2, K1, (DI)
done:
	RET

TEXT ·packPB32(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	RET
`

func TestParseLabels(t *testing.T) {
	ls, err := ParseLabels(strings.NewReader(asm))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(asm, "\n")
	if len(ls) != len(lines)+1 && len(ls) != len(lines) {
		t.Fatalf("%d labels for %d lines", len(ls), len(lines))
	}
	at := func(text string) string { // the label of the line holding text
		for i, l := range lines {
			if strings.Contains(l, text) {
				return ls[i+1]
			}
		}
		t.Fatalf("no line %q", text)
		return ""
	}
	for text, want := range map[string]string{
		"MOVQ kc+0(FP)": "", "JNZ kloop": "kloop", "TESTQ CX": "kremainder", "VMULPS": "epilogue",
		"VMOVUPS (DI), K1, Z4": "beta_row3", "VMOVUPS Z2, (DI)": "nobeta", "VMOVUPS Z2, K1, (DI)": "store_row0",
		"MOVQ a+0(FP), SI": "", // a new TEXT block resets the label
	} {
		if got := at(text); got != want {
			t.Errorf("line %q: label %q, want %q", text, got, want)
		}
	}
}

// The labels this package keys on exist in the committed assembly.
func TestRealAssemblyLabels(t *testing.T) {
	f, err := os.Open("../../../kernels/kgen_amd64.s")
	if err != nil {
		t.Skip("kernels/kgen_amd64.s not found:", err)
	}
	defer f.Close()
	ls, err := ParseLabels(f)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, l := range ls {
		seen[l] = true
	}
	for _, l := range []string{"kloop", "kremainder", "epilogue", "beta_edge", "store_edge", "store_row0"} {
		if !seen[l] {
			t.Errorf("label %q not in kgen_amd64.s: the edge attribution would miss it", l)
		}
	}
}

func fr(fn string) Frame { return Frame{Func: fn} }

func TestClassify(t *testing.T) {
	labels := func(file string, line int) string {
		if file != "kgen_amd64.s" {
			return ""
		}
		return map[int]string{10: "kloop", 20: "store_edge", 21: "store_row5", 22: "kremainder", 23: "epilogue"}[line]
	}
	worker := fr("github.com/kgen-dev/kgen/rt.startPool.func1")
	impl := fr(kp + "sgemmImpl")
	micro := func(line int) Frame { return Frame{Func: kp + "sgemm14x32AVX512", File: "kgen_amd64.s", Line: line} }
	for _, c := range []struct {
		name  string
		stack []Frame
		want  Category
	}{
		{"kloop", []Frame{micro(10), impl}, Micro},
		{"epilogue", []Frame{micro(23), impl}, Micro},
		{"store edge", []Frame{micro(20), impl}, Edges},
		{"row store", []Frame{micro(21), impl}, Edges},
		{"k remainder", []Frame{micro(22), impl}, Edges},
		{"unpacked micro on a worker", []Frame{{Func: kp + "sgemm14x32AVX512U", File: "kgen_amd64.s", Line: 10}, fr(kp + "sgemmImpl.func2"), worker}, Micro},
		{"rows kernel", []Frame{fr(kp + "sgemmRowsAVX512"), fr(kp + "sgemmRowsAVX512Ptr"), fr(kp + "rowsVia32")}, Micro},
		{"rows fall-back", []Frame{fr(kp + "rowsCoreGo32"), fr(kp + "rowsVia32")}, Edges},
		{"portable micro", []Frame{fr(kp + "microGo32_3x2"), impl}, Micro},
		{"pack B asm", []Frame{fr(kp + "packPB32"), impl}, Pack},
		{"pack A avx2", []Frame{fr(kp + "packDf32AVX2"), fr(kp + "packD32"), impl}, Pack},
		{"memmove in packing", []Frame{fr("runtime.memmove"), fr(kp + "packD32"), impl}, Pack},
		{"loop nest", []Frame{impl, fr(kp + "Sgemm")}, Loop},
		{"epilogue glue", []Frame{fr(kp + "rowsVia32"), impl}, Loop},
		{"scratch", []Frame{fr("github.com/kgen-dev/kgen/rt.Scratch32"), impl}, Loop},
		{"fork", []Frame{fr("github.com/kgen-dev/kgen/rt.ParallelFor"), impl}, Sync},
		{"chan send", []Frame{fr("runtime.futex"), fr("runtime.futexwakeup"), fr("runtime.chansend1"), fr("github.com/kgen-dev/kgen/rt.ParallelFor")}, Sync},
		{"worker waits", []Frame{fr("runtime.procyield"), fr("runtime.chanrecv2"), worker}, Sync},
		{"join", []Frame{fr("runtime.lock2"), fr("sync.(*WaitGroup).Wait"), fr("github.com/kgen-dev/kgen/rt.ParallelFor")}, Sync},
		{"idle M spinning", []Frame{fr("runtime.runqgrab"), fr("runtime.stealWork"), fr("runtime.findRunnable"), fr("runtime.schedule"), fr("runtime.mstart")}, Sync},
		{"gc", []Frame{fr("runtime.scanobject"), fr("runtime.gcDrain"), fr("runtime.gcBgMarkWorker")}, Other},
		{"alloc under the loop", []Frame{fr("runtime.memclrNoHeapPointers"), fr("runtime.mallocgc"), fr(kp + "sgemmImpl")}, Other},
		{"harness", []Frame{fr("github.com/kgen-dev/kgen/bench/internal/run.Time")}, Other},
		{"empty", nil, Other},
	} {
		if got := Classify(c.stack, labels); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// canned builds a CPU profile like runtime/pprof's: sample types
// samples/count and cpu/nanoseconds, 10 ms per sample.
func canned() *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10_000_000,
	}
	fns := map[string]*profile.Function{}
	fn := func(name, file string) *profile.Function {
		if f, ok := fns[name]; ok {
			return f
		}
		f := &profile.Function{ID: uint64(len(fns) + 1), Name: name, SystemName: name, Filename: file}
		fns[name] = f
		p.Function = append(p.Function, f)
		return f
	}
	loc := func(name, file string, line int) *profile.Location {
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Address: uint64(0x1000 + len(p.Location)),
			Line: []profile.Line{{Function: fn(name, file), Line: int64(line)}}}
		p.Location = append(p.Location, l)
		return l
	}
	add := func(n int, locs ...*profile.Location) {
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Value: []int64{int64(n), int64(n) * 10_000_000}})
	}
	impl := loc(kp+"sgemmImpl", "/k/sgemm.go", 120)
	add(60, loc(kp+"sgemm14x32AVX512", "/k/kgen_amd64.s", 6), impl)  // kloop
	add(10, loc(kp+"sgemm14x32AVX512", "/k/kgen_amd64.s", 21), impl) // store_row0
	add(15, loc(kp+"packPB32", "/k/kgen_amd64.s", 25), impl)
	add(5, loc(kp+"sgemmImpl", "/k/sgemm.go", 130))
	add(8, loc("runtime.procyield", "/go/proc.go", 1), loc("runtime.chanrecv2", "/go/chan.go", 1), loc("github.com/kgen-dev/kgen/rt.startPool.func1", "/rt/rt.go", 35))
	add(2, loc("runtime.scanobject", "/go/mgc.go", 1), loc("runtime.gcBgMarkWorker", "/go/mgc.go", 2))
	return p
}

func TestAttributeCannedProfile(t *testing.T) {
	// Round-trip through the serialized form, as a profile from runtime/pprof is read.
	var buf bytes.Buffer
	if err := canned().Write(&buf); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	ls, _ := ParseLabels(strings.NewReader(asm))
	labels := func(file string, line int) string {
		if file == "/k/kgen_amd64.s" && line < len(ls) {
			return ls[line]
		}
		return ""
	}
	b, err := Attribute(p, labels)
	if err != nil {
		t.Fatal(err)
	}
	ms := 10 * time.Millisecond
	want := [NumCategories]time.Duration{Micro: 60 * ms, Edges: 10 * ms, Pack: 15 * ms, Sync: 8 * ms, Loop: 5 * ms, Other: 2 * ms}
	// 6 records standing for 100 samples.
	if b.ByCat != want || b.CPU != 100*ms || b.Samples != 100 {
		t.Errorf("by category %v (cpu %v, %d samples), want %v", b.ByCat, b.CPU, b.Samples, want)
	}
	if b.Frac(Micro) != 0.6 {
		t.Errorf("micro share %v", b.Frac(Micro))
	}
	if top := b.TopFuncs(2); len(top) != 2 || top[0] != "kernels.sgemm14x32AVX512" || top[1] != "kernels.packPB32" {
		t.Errorf("top %v", top)
	}
	if b.ByFunc["kernels.sgemm14x32AVX512 (edge paths)"] != 10*ms {
		t.Errorf("by func %v", b.ByFunc)
	}
	if mr, nr := b.Tile(); mr != 14 || nr != 32 {
		t.Errorf("tile %d×%d", mr, nr)
	}
	// Two threads for 1 s of wall (100 × 10 ms): 2 s of thread time, 1 s sampled (no getrusage figure).
	r := Run{Path: "packed", Job: report.Job{Kind: report.Square, Op: "sgemm", M: 100, K: 100, N: 100, Batch: 1},
		Threads: 2, Calls: 4, Wall: 100 * ms, B: b}
	cat, on := r.Shares()
	if cat[Micro] != 0.6 || cat[Edges] != 0.1 || on != 0.5 {
		t.Errorf("shares %v on-CPU %v", cat, on)
	}
	r2 := r
	r2.CPU = 1500 * time.Millisecond // getrusage wins over the samples
	if _, on := r2.Shares(); on != 0.75 {
		t.Errorf("on-CPU with getrusage %v", on)
	}
	tb := Table([]Run{r})
	row := strings.Join(tb.Rows[0], "|")
	if tb.Rows[0][4] != "100" {
		t.Errorf("samples cell %q", tb.Rows[0][4])
	}
	// 100×100 in 14×32 tiles: 112×128 computed, 1 − 10000/14336 = 30%.
	for _, s := range []string{"packed", "sgemm 100³", "250.00ms", "|60%|10%|15%|8%|5%|2%|50%|30%|", "kernels.sgemm14x32AVX512, kernels.packPB32"} {
		if !strings.Contains("|"+row+"|", s) {
			t.Errorf("row %q lacks %q", row, s)
		}
	}
	if _, err := Attribute(&profile.Profile{SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}}}, nil); err == nil {
		t.Error("a heap profile was accepted")
	}
}

func TestPadding(t *testing.T) {
	if got := Padding(14, 32, 14, 32); got != 0 {
		t.Errorf("exact fit %v", got)
	}
	if got := Padding(15, 32, 14, 32); math.Abs(got-(1-15.0/28)) > 1e-12 {
		t.Errorf("one extra row %v", got)
	}
	if !math.IsNaN(Padding(8, 8, 0, 0)) {
		t.Error("no tile gave a number")
	}
}
