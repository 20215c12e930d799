package tune

import (
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/codegen/ptx"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/passes"
)

// libGEMM is a kernel of kernels.kdsl.
func libGEMM(t *testing.T, name string) *ir.Kernel {
	t.Helper()
	src, err := os.ReadFile("../kernels.kdsl")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := check.File("kernels.kdsl", string(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		if k.Name == name {
			return k
		}
	}
	t.Fatalf("no kernel %s", name)
	return nil
}

// ptxasFor finds ptxas (CUDA 12 or later: sm_90a); missing, the test skips, or fails with
// KGEN_REQUIRE_TOOLS=1.
func ptxasFor(t *testing.T) string {
	t.Helper()
	p, err := FindTool("ptxas", "KGEN_PTXAS", ".")
	if err != nil {
		if os.Getenv("KGEN_REQUIRE_TOOLS") == "1" {
			t.Fatalf("KGEN_REQUIRE_TOOLS=1: %v", err)
		}
		t.Skip(err)
	}
	return p
}

// The candidates of ptx/sm_90a: ProdPlan's values first, then every combination of each symbol's value
// and its neighbours (WG 1–3, wgN 128/256, stages 3/4), each once, all in range; the shared-memory model
// is the lowered candidates' own figure.
func TestGPUCandidates(t *testing.T) {
	cs := GPUCandidates("ptx", "sm_90a")
	def := map[string]int{passes.PlanWG: 2, passes.PlanWGN: 256, passes.PlanStages: 4}
	if len(cs) != 12 || !maps.Equal(cs[0], def) {
		t.Fatalf("%d candidates, first %v; want 12, first %v", len(cs), cs[0], def)
	}
	seen := map[string]bool{}
	k := libGEMM(t, "hgemm")
	for _, c := range cs {
		s := PlanString(c)
		if seen[s] {
			t.Errorf("%s twice", s)
		}
		seen[s] = true
		if _, err := GPUPlan("ptx", "sm_90a", c); err != nil {
			t.Errorf("%s: %v", s, err)
		}
		if !slices.Contains([]int{1, 2, 3}, c[passes.PlanWG]) || !slices.Contains([]int{128, 256}, c[passes.PlanWGN]) ||
			!slices.Contains([]int{3, 4}, c[passes.PlanStages]) {
			t.Errorf("%s: not a neighbour of the default", s)
		}
		pk, err := ptx.ProdCandidate(k, prodPlan(c))
		if err != nil || pk == nil {
			t.Fatalf("%s: %v", s, err)
		}
		if got, model := pk.Launches[0].DynSharedBytes, ProdShared(prodPlan(c)); got != model {
			t.Errorf("%s: %d bytes of dynamic shared memory, the model says %d", s, got, model)
		}
	}
}

// GPUPlan and the lock parser reject what the sub-target cannot run, with what is allowed.
func TestGPUPlanRanges(t *testing.T) {
	for _, c := range []struct {
		tv     string
		values map[string]int
		want   string
	}{
		{"ptx/sm_90a", map[string]int{passes.PlanWGN: 96}, "gpu.wgN=96 is out of range on ptx/sm_90a: want one of [64 128 256]"},
		{"ptx/sm_90a", map[string]int{passes.PlanWG: 4}, "gpu.WG=4 is out of range on ptx/sm_90a: want one of [1 2 3]"},
		{"ptx/sm_90a", map[string]int{"gpu.BK": 32}, "gpu.BK is not a tunable plan symbol of ptx/sm_90a (want gpu.WG, gpu.wgN, gpu.tmaS)"},
		{"ptx/sm_80", map[string]int{passes.PlanWG: 2}, "ptx/sm_80 has no tunable GPU plan symbol (tunable: ptx/sm_90a)"},
		{"ptx/sm_90a", map[string]int{passes.PlanWG: 3, passes.PlanWGN: 256, passes.PlanStages: 5}, "gpu.tmaS=5 is out of range"},
	} {
		tgt, variant, _ := strings.Cut(c.tv, "/")
		if _, err := GPUPlan(tgt, variant, c.values); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v; want %q", c.tv, c.values, err, c.want)
		}
	}
	// a 3×256 block tile in 4 stages fits 227 KiB (230400 bytes); the model counts it
	if _, err := GPUPlan("ptx", "sm_90a", map[string]int{passes.PlanWG: 3, passes.PlanWGN: 256, passes.PlanStages: 4}); err != nil {
		t.Error(err)
	}
	line := "hgemm 0123456789abcdef ptx/sm_90a cuda-sm90-132sm gpu.WG=2 gpu.wgN=96 speedup=1.1 noise=0.01 shapes=64x64x64\n"
	if _, err := Parse("kgen.lock", []byte(line)); err == nil || !strings.Contains(err.Error(), "kgen.lock:1:60: gpu.wgN=96 is out of range") {
		t.Errorf("Parse: %v", err)
	}
	good := strings.Replace(line, "gpu.wgN=96", "gpu.wgN=128", 1)
	l, err := Parse("kgen.lock", []byte(good))
	if err != nil || string(l.Format()[len(header):]) != strings.Replace(good, "speedup=1.1 noise=0.01", "speedup=1.100 noise=0.010", 1) {
		t.Errorf("round trip: %v\n%s", err, l.Format())
	}
}

// Every candidate is checked before it may be timed: a good one passes ptxas and the emulator; one that
// ptxas cannot allocate registers for (three consumer warpgroups of 64×256 accumulators: 512 threads
// leave 128 registers a thread) is rejected with ptxas's message; and a planted candidate whose grid
// drops the last block column (a tile that skips the edge) computes a wrong result on the ragged
// shapes and is rejected there.
func TestGPUCheck(t *testing.T) {
	c := GPUCheck{Target: "ptx", Variant: "sm_90a", Ptxas: ptxasFor(t)}
	k := libGEMM(t, "hgemm")
	small := map[string]int{passes.PlanWG: 1, passes.PlanWGN: 128, passes.PlanStages: 3}
	if v := c.Check(k, small); v.Err != nil || v.Regs == 0 || v.Regs > 168 || v.Shared != ProdShared(prodPlan(small)) {
		t.Errorf("good candidate: %+v", v)
	}
	huge := map[string]int{passes.PlanWG: 3, passes.PlanWGN: 256, passes.PlanStages: 3}
	if v := c.Check(k, huge); v.Err == nil || !strings.Contains(v.Err.Error(), "Register allocation failed") {
		t.Errorf("3×256 candidate: %v", v.Err)
	}
	planted := c
	planted.Plant = func(pk *ptx.Kernel) {
		l := &pk.Launches[0]
		l.Grid[0] = ir.IMax(ir.ISub(l.Grid[0], ir.IConst{V: 1}), ir.IConst{V: 1}) // N blocks: one too few
	}
	if v := planted.Check(k, small); v.Err == nil || !strings.Contains(v.Err.Error(), "wrong result at 73x136x200") {
		t.Errorf("planted edge-skipping candidate: %v", v.Err)
	}
}

// fakeTimer times candidates by a table of ns a call keyed by entry and grid, with 1% noise that favours
// neither side when the times are equal.
type fakeTimer map[string]float64

func (f fakeTimer) Time(k *ir.Kernel, a, b *ptx.Kernel, dims map[string]int, pairs int) (ta, tb []float64, err error) {
	key := func(pk *ptx.Kernel) string {
		return strings.TrimSuffix(pk.Entries[0].Name, "_prod") + pk.Launches[0].Grid[0].String()
	}
	na, nb := f[key(a)], f[key(b)]
	if na == 0 || nb == 0 {
		return nil, nil, errors.New("no time for " + key(a) + " or " + key(b))
	}
	for i := 0; i < pairs; i++ {
		ta, tb = append(ta, na*(1+float64(i%2)/100)), append(tb, nb*(1+float64((i+1)%2)/100)) // 1% noise, no side favoured
	}
	return ta, tb, nil
}

// RunGPU keeps a candidate only when it beats the incumbent beyond noise: of two verified candidates
// besides the default, one as fast as it (the same block tile, other stages) is not kept, one 20% faster
// wins, and one as fast as the winner after it does not replace it,
// and the result carries its values and speed-up; a rejected candidate is never timed; without a timer
// nothing wins.
func TestRunGPU(t *testing.T) {
	c := GPUCheck{Target: "ptx", Variant: "sm_90a", Ptxas: ptxasFor(t), Shapes: [][3]int{{1, 8, 8}}}
	k := libGEMM(t, "hgemm")
	def := map[string]int{passes.PlanWG: 1, passes.PlanWGN: 128, passes.PlanStages: 3}
	near := map[string]int{passes.PlanWG: 1, passes.PlanWGN: 128, passes.PlanStages: 4}
	wide := map[string]int{passes.PlanWG: 1, passes.PlanWGN: 256, passes.PlanStages: 3}
	wide4 := map[string]int{passes.PlanWG: 1, passes.PlanWGN: 256, passes.PlanStages: 4}
	bad := map[string]int{passes.PlanWG: 3, passes.PlanWGN: 256, passes.PlanStages: 3}
	grid := func(v map[string]int) string {
		pk, err := ptx.ProdCandidate(k, prodPlan(v))
		if err != nil {
			t.Fatal(err)
		}
		return "hgemm_0" + pk.Launches[0].Grid[0].String()
	}
	// the fake keys times by entry and grid: def and near (same block tile) take the same time
	timer := fakeTimer{grid(def): 1000, grid(wide): 800}
	opt := GPUOptions{Check: c, Kernels: []*ir.Kernel{k}, Shapes: []Shape{{256, 256, 256}}, Budget: 1 << 40, Timer: timer,
		Candidates: []map[string]int{def, near, bad, wide, wide4}}
	rs := RunGPU(opt)
	if len(rs) != 1 || len(rs[0].Verdicts) != 5 || rs[0].Verified() != 4 || rs[0].Verdicts[2].Err == nil {
		t.Fatalf("results %+v", rs)
	}
	r := rs[0]
	if !maps.Equal(r.Best, wide) || r.Speedup < 1.2 || r.Speedup > 1.3 || !slices.Equal(r.Shapes, []string{"256x256x256"}) {
		t.Errorf("best %v speedup %.3f shapes %v; want %v at 1.25", r.Best, r.Speedup, r.Shapes, wide)
	}
	es := GPUEntries(rs, map[string]string{"hgemm": "0123456789abcdef"}, "ptx", "sm_90a", "cuda-sm90-132sm")
	if len(es) != 1 || es[0].Key() != "hgemm ptx/sm_90a cuda-sm90-132sm" || !maps.Equal(es[0].Values, wide) {
		t.Errorf("entries %+v", es)
	}
	opt.Timer = nil
	if rs := RunGPU(opt); rs[0].Best != nil || rs[0].Verified() != 4 {
		t.Errorf("without a timer: %+v", rs[0])
	}
}
