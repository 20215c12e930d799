package ptx

import (
	"strings"
	"sync"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestPtxasLibrary assembles the PTX modules kgen gen writes for kernels.kdsl (every kernel; on sm_90a
// also the TMA and production versions) with ptxas -v, for every architecture each sub-target claims,
// and checks what ptxas reports: every entry assembled, GEMM
// entries (those with an MMA) spill nothing, every entry's registers fit its block (255 at most, and
// threads·registers within the 64K-register file so that one block fits on an SM), static shared
// memory within 48 KiB, dynamic within sm_90's 227 KiB. Kernels the lowering does not support yet must say so (not supported yet).
func TestPtxasLibrary(t *testing.T) {
	ptxas := ptxasPath(t)
	for _, sub := range []string{"sm_80", "sm_90a"} {
		st := SubTargets[sub]
		pkg := libraryPackage(t, "ptx:"+sub)
		fs := compileFile(t, "../../kernels.kdsl", "ptx:"+sub)
		// the module kgen gen writes: on sm_90a with the TMA and production versions
		mod, ks, unsup, err := buildModule(pkg, st)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range unsup {
			t.Errorf("%s: every kernel of kernels.kdsl has a PTX version, but %s", sub, u.Reason)
		}
		if len(ks)+len(unsup) != len(fs) {
			t.Fatalf("%s: %d kernels, %d lowered and %d unsupported", sub, len(fs), len(ks), len(unsup))
		}
		gemm := map[string]bool{}
		threads := map[string]int{}
		byName := map[string]*ir.Func{}
		for _, f := range fs {
			byName[f.Kernel.Name] = f
		}
		for _, k := range ks {
			hasMMA := false
			ir.WalkNodes(byName[k.Name].Body, func(n ir.Node) bool {
				_, ok := n.(*ir.MMA)
				hasMMA = hasMMA || ok
				return true
			})
			for _, v := range []*Kernel{k, k.TMA, k.Prod} {
				for _, e := range v.entries() {
					threads[e.Name] = e.Threads()
					gemm[e.Name] = hasMMA
				}
			}
		}
		if sub == "sm_90a" && (!gemm["hlinear_gelu_0_tma"] || !gemm["hgemm_0_prod"]) {
			t.Fatalf("%s: the module lacks the TMA or production versions", sub)
		}
		if !gemm["sgemm_0"] || gemm["saxpy_0"] {
			t.Fatalf("%s: GEMM entries not identified", sub)
		}
		text := mod.Print()
		if sub == "sm_90a" {
			ptxasSupports90a(t, ptxas)
		}
		// The 16-bit GEMMs run on tensor cores: mma.sync with ldmatrix on sm_80 (A stored along K
		// read without .trans and B along N with; bgemm_tt's stages, stored the other way, the
		// opposite); on sm_90a, wgmma (TestWGMMASass checks its machine code).
		if sub == "sm_80" {
			nn := []string{"ldmatrix.sync.aligned.m8n8.x4.shared.b16", "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16"}
			tt := []string{"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", "ldmatrix.sync.aligned.m8n8.x2.shared.b16"}
			for name, lds := range map[string][]string{"hgemm_0": nn, "bgemm_0": nn, "bgemm_bf16_0": nn, "bgemm_tt_0": tt} {
				found := false
				for _, e := range mod.Entries {
					if e.Name == name {
						text := (&Module{Version: "7.0", Target: "sm_80", Entries: []*Entry{e}}).Print()
						found = strings.Contains(text, "mma.sync.aligned.m16n8k16.row.col.f32") && strings.Contains(text, lds[0]) && strings.Contains(text, lds[1])
					}
				}
				if !found {
					t.Errorf("%s: %s lacks mma.sync.aligned.m16n8k16 or the ldmatrix loads %v", sub, name, lds)
				}
			}
		} else {
			for _, name := range []string{"hgemm_0", "bgemm_0", "bgemm_bf16_0", "bgemm_tt_0"} {
				for _, e := range mod.Entries {
					if e.Name == name && !strings.Contains((&Module{Version: st.Version, Target: st.Target, Entries: []*Entry{e}}).Print(), "wgmma.mma_async.sync.aligned.m64n64k16.f32") {
						t.Errorf("%s: %s lacks wgmma.mma_async", sub, name)
					}
				}
			}
		}
		// The architectures assemble concurrently (ptxas is single-threaded).
		results := make([]map[string]ptxasStats, len(st.Archs))
		errs := make([]error, len(st.Archs))
		var wg sync.WaitGroup
		for i, arch := range st.Archs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = runPtxas(ptxas, arch, text)
			}()
		}
		wg.Wait()
		for i, arch := range st.Archs {
			if errs[i] != nil {
				t.Fatalf("%s: %v", sub, errs[i])
			}
			stats := results[i]
			for _, e := range mod.Entries {
				s, ok := stats[e.Name]
				if !ok {
					t.Errorf("%s/%s: ptxas reported nothing for %s", sub, arch, e.Name)
					continue
				}
				if gemm[e.Name] && (s.SpillStores != 0 || s.SpillLoads != 0) {
					t.Errorf("%s/%s: GEMM entry %s spills (%d bytes stored, %d loaded)", sub, arch, e.Name, s.SpillStores, s.SpillLoads)
				}
				if limit := min(255, 65536/threads[e.Name]); s.Regs > limit {
					t.Errorf("%s/%s: %s uses %d registers, a block of %d threads allows %d", sub, arch, e.Name, s.Regs, threads[e.Name], limit)
				}
				if dyn := e.DynamicSharedBytes(); dyn > 227<<10 {
					t.Errorf("%s/%s: %s uses %d bytes of dynamic shared memory, more than sm_90's 227 KiB", sub, arch, e.Name, dyn)
				}
				if s.Smem > 48<<10 {
					t.Errorf("%s/%s: %s uses %d bytes of static shared memory", sub, arch, e.Name, s.Smem)
				}
			}
			if len(stats) != len(mod.Entries) {
				t.Errorf("%s/%s: ptxas reported %d entries, the module has %d", sub, arch, len(stats), len(mod.Entries))
			}
			t.Logf("%s/%s: %d entries assembled", sub, arch, len(stats))
		}
	}
}

// entries are k's entries (none for a nil kernel: a version that does not exist).
func (k *Kernel) entries() []*Entry {
	if k == nil {
		return nil
	}
	return k.Entries
}
