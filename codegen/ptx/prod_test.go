package ptx

import (
	"strconv"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/passes"
	"github.com/kgen-dev/kgen/target"
)

// compileProd compiles the named kernels of kernels.kdsl for ptx:sm_90a with plan (ProdPlan or a
// variation of it for the production version; gpu.tma alone for the other TMA versions), each of
// which must be staged by TMA.
func compileProd(t *testing.T, plan map[string]int, names ...string) []*ir.Func {
	t.Helper()
	m, err := target.Lookup("ptx:sm_90a")
	if err != nil {
		t.Fatal(err)
	}
	var fs []*ir.Func
	for _, name := range names {
		p := map[string]int{}
		for n, v := range plan {
			p[n] = v
		}
		f, err := passes.Compile(libKernel(t, name), m, passes.Options{Plan: p})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(f.String(), "async mbarrier") {
			t.Fatalf("%s: not staged by TMA:\n%s", name, f)
		}
		fs = append(fs, f)
	}
	return fs
}

// prodShapes are the emulated shapes of the production version: 1, rows that are 16-byte multiples
// but not of the 128-wide tiles, two blocks each way with ragged edges, several stage cycles.
var prodShapes = [][3]int{{1, 8, 8}, {17, 24, 72}, {136, 200, 328}}

// TestEmulatedProd runs the production sm_90a GEMMs (two consumer warpgroups of m64n256k16 wgmmas,
// a producer warpgroup, four TMA stages in dynamic shared memory, one wgmma group in flight) in the
// emulator against the interpreter; hgemm also with 128×128 block tiles and three stages.
func TestEmulatedProd(t *testing.T) {
	plans := []map[string]int{ProdPlan,
		{passes.PlanTMA: 3, passes.PlanWG: 2, passes.PlanWGN: 128, passes.PlanStages: 3}}
	for pi, plan := range plans {
		names := tmaKernels
		if pi > 0 {
			names = []string{"hgemm"}
		}
		for _, f := range compileProd(t, plan, names...) {
			k, err := Lower(f, "sm_90a")
			if err != nil {
				t.Fatal(err)
			}
			e := k.Entries[0]
			text := (&Module{Version: "8.0", Target: "sm_90a", Entries: []*Entry{e}}).Print()
			wantN := plan[passes.PlanWGN]
			for _, w := range []string{".extern .shared .align 1024 .b8 kgen_smem[];", "wgmma.wait_group.sync.aligned 1;", "wgmma.wait_group.sync.aligned 0;",
				"m64n" + strconv.Itoa(wantN) + "k16", ".maxntid 32, 12, 1"} {
				if !strings.Contains(text, w) {
					t.Fatalf("%s: the PTX lacks %q", f.Kernel.Name, w)
				}
			}
			if e.SharedBytes() != 0 || k.Launches[0].DynSharedBytes <= MaxStaticShared {
				t.Errorf("%s: %d static, %d dynamic shared bytes", f.Kernel.Name, e.SharedBytes(), k.Launches[0].DynSharedBytes)
			}
			if err := checkTMA(k, f, prodShapes...); err != nil {
				t.Errorf("%s %v: %v", f.Kernel.Name, plan, err)
			}
		}
	}
}

// TestProdSass assembles the production versions with ptxas 12.4 for sm_90a and reads their machine
// code: the wgmma of each consumer as HGMMA.64x256x16.F32 (four per K tile, between
// WARPGROUP.ARRIVE and WARPGROUP.DEPBAR), the boxes as UTMALDG.2D (two of A, two of B per stage), the
// mbarriers as SYNCS; no cp.async (LDGSTS), no spills, no static shared memory (the stages are
// dynamic), and registers that let the block's 384 threads run: at most 168 per thread (65536 / 384,
// rounded down to the allocation unit of 8), the block's whole register file at one block per SM,
// which its 192 KiB of stages allow anyway (so setmaxnreg has nothing to give: 160 registers).
func TestProdSass(t *testing.T) {
	ptxas := ptxasPath(t)
	ptxasSupports90a(t, ptxas)
	cuobjdump := toolPath(t, "cuobjdump", "KGEN_CUOBJDUMP")
	mod, ks, unsup := Build(compileProd(t, ProdPlan, tmaKernels...), SubTargets["sm_90a"], "kernels.kdsl")
	if len(unsup) != 0 {
		t.Fatalf("unsupported: %v", unsup)
	}
	stats, funcs := sm90aSass(t, ptxas, cuobjdump, mod.Print())
	for i, name := range tmaKernels {
		code := funcs[name+"_0"]
		for _, c := range []struct {
			insn string
			n    int
		}{{"UTMALDG.2D", 4}, {"SYNCS.EXCH.64", 2}, {"SYNCS.ARRIVE.TRANS64", 2}, {"SYNCS.PHASECHK.TRANS64.TRYWAIT", 2},
			{"HGMMA.64x256x16.F32", 4}, {"WARPGROUP.ARRIVE", 1}, {"WARPGROUP.DEPBAR.LE gsb0, 0x1", 1}} {
			if got := strings.Count(code, c.insn); got < c.n {
				t.Errorf("%s: %d %s, want at least %d", name, got, c.insn, c.n)
			}
		}
		if strings.Contains(code, "LDGSTS") || strings.Contains(code, "HGMMA.64x64x16") || strings.Contains(code, "HGMMA.64x128x16") {
			t.Errorf("%s: cp.async or 64-wide wgmmas in the production version", name)
		}
		s := stats[name+"_0"]
		dyn := ks[i].Launches[0].DynSharedBytes
		if s.SpillStores != 0 || s.SpillLoads != 0 || s.Smem != 0 || s.Regs > 168 || dyn > 227<<10 {
			t.Errorf("%s: %d/%d spill bytes, %d registers, %d bytes static and %d dynamic shared memory", name, s.SpillStores, s.SpillLoads, s.Regs, s.Smem, dyn)
		}
		t.Logf("%s: %d registers, %d bytes dynamic shared memory, 0 spills", name, s.Regs, dyn)
	}
}

// TestPlantedProdBugs: planted schedule bugs in the production version's PTX fail the emulated
// differential test: the consumers' full-barrier wait on the wrong parity (a wrong phase), a consumer
// releasing the previous stage before wgmma.wait_group 1 retired its wgmmas (too early), the drain
// before the store as wait_group 1 instead of 0 (the accumulator read while a group is in flight), and
// a launch passing less dynamic shared memory than the entry uses.
func TestPlantedProdBugs(t *testing.T) {
	plan := map[string]int{passes.PlanTMA: 3, passes.PlanWG: 2, passes.PlanWGN: 128, passes.PlanStages: 3}
	runPlanted(t, compileProd(t, plan, "hgemm")[0], [3]int{136, 136, 200}, []plantCase{
		{"full barrier waited on the wrong parity", "deadlock: thread 0 waits", func(e *Entry) bool {
			return edit(e, func(in *Instr) bool { return in.Op == "mbarrier.try_wait.parity.shared::cta.b64" }, func(in *Instr) *Instr {
				return &Instr{Op: in.Op, Args: []Operand{in.Args[0], in.Args[1], Imm(1)}}
			}, 1) // the consumers' wait comes first in the code
		}},
		{"stage released before wgmma.wait_group 1", "overwrites", waitAfterArrive},
		{"accumulator drained with wait_group 1", "C[0] = ", func(e *Entry) bool {
			return edit(e, func(in *Instr) bool {
				return in.Op == "wgmma.wait_group.sync.aligned" && in.Args[0] == Imm(0)
			}, func(in *Instr) *Instr {
				return &Instr{Op: in.Op, Args: []Operand{Imm(1)}}
			}, 1)
		}},
		{"too little dynamic shared memory", "is in no array", func(e *Entry) bool {
			for i := range e.Shared {
				if e.Shared[i].Extern {
					e.Shared[i].Count -= 1024
					return true
				}
			}
			return false
		}},
	})
}
