package ptx

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/passes"
)

// Shared memory has 32 banks of 4 bytes; a request is served in one wavefront per distinct 4-byte
// word that a bank must deliver. bankWavefronts returns the wavefronts of one phase: accesses of size
// bytes at addrs (the bytes' words, bank word/4 mod 32; the same word twice is a broadcast).
func bankWavefronts(addrs []uint64, size int) int {
	words := map[int]map[uint64]bool{}
	for _, a := range addrs {
		for w := a / 4; w < (a+uint64(size)+3)/4; w++ {
			b := int(w % 32)
			if words[b] == nil {
				words[b] = map[uint64]bool{}
			}
			words[b][w] = true
		}
	}
	most := 0
	for _, ws := range words {
		most = max(most, len(ws))
	}
	return most
}

// bankConflicts counts the extra wavefronts (beyond one per phase) of the recorded accesses: each
// ldmatrix 8×8 matrix is one phase of 8 16-byte rows; a cp.async store wave is split in phases of
// 128 bytes' worth of lanes (8 lanes of 16 bytes, 16 of 8, 32 of 4), the lanes in order. It returns
// the conflicts and the phases of each kind, and a description of the first conflicting phase.
func bankConflicts(b *bankLog) (ldConf, ldPhases, cpConf, cpPhases int, first string) {
	note := func(s string) {
		if first == "" {
			first = s
		}
	}
	for _, rows := range b.ldmatrix {
		ldPhases++
		if w := bankWavefronts(rows, 16); w > 1 {
			ldConf += w - 1
			note(fmt.Sprintf("ldmatrix rows at %#x: %d wavefronts", rows, w))
		}
	}
	for _, lanes := range b.cpAsync {
		slices.SortFunc(lanes, func(x, y cpLane) int { return x.lane - y.lane })
		per := 32
		if lanes[0].size > 4 {
			per = 128 / lanes[0].size
		}
		phases := map[int][]uint64{}
		for _, l := range lanes {
			phases[l.lane/per] = append(phases[l.lane/per], l.addr)
		}
		for _, addrs := range phases {
			cpPhases++
			if w := bankWavefronts(addrs, lanes[0].size); w > 1 {
				cpConf += w - 1
				note(fmt.Sprintf("cp.async stores of %d bytes at %#x: %d wavefronts", lanes[0].size, addrs, w))
			}
		}
	}
	return
}

// bankRun emulates k on full tiles (every dimension 64, so the ldmatrix path runs) and returns what
// emuBanks recorded.
func bankRun(t *testing.T, k *Kernel, f *ir.Func) *bankLog {
	t.Helper()
	dims := map[string]int{}
	for _, p := range f.Kernel.Params {
		for _, d := range p.Shape {
			dims[d.Name] = 64
		}
	}
	emuBanks = &bankLog{cpAsync: map[cpWave][]cpLane{}, runs: map[cpRun]int{}}
	defer func() { emuBanks = nil }()
	if err := checkDims(k, f, []map[string]int{dims}, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	return emuBanks
}

// TestSM80SharedBanks: the sm_80 tensor-core GEMMs read their shared stages with ldmatrix and fill
// them with 16-byte cp.async chunks; with the A stages swizzled (passes.SM80ALayout) and the stages of
// transposed operands (bgemm_tt's A and B, bgemm_scale_residual's B) in passes.SM80TLayout neither
// has a bank conflict. The addresses are the ones the emulator computes running the printed PTX.
func TestSM80SharedBanks(t *testing.T) {
	fs := append(compileFile(t, "../../kernels.kdsl", "ptx:sm_80"), compileFile(t, "../../passes/testdata/mma.kdsl", "ptx:sm_80")...)
	want := map[string]bool{"hgemm": true, "bgemm": true, "bgemm_bf16": true, "bgemm_tt": true, "hlinear_gelu": true, "bgemm_scale_residual": true}
	for _, f := range fs {
		if !want[f.Kernel.Name] {
			continue
		}
		delete(want, f.Kernel.Name)
		t.Run(f.Kernel.Name, func(t *testing.T) {
			k, err := Lower(f, "sm_80")
			if err != nil {
				t.Fatal(err)
			}
			ldC, ldP, cpC, cpP, first := bankConflicts(bankRun(t, k, f))
			t.Logf("ldmatrix: %d phases, %d conflicts; cp.async: %d phases, %d conflicts", ldP, ldC, cpP, cpC)
			if ldP == 0 {
				t.Fatalf("no ldmatrix ran")
			}
			if ldC != 0 || cpC != 0 {
				t.Errorf("bank conflicts: ldmatrix %d of %d phases, cp.async %d of %d phases; first: %s", ldC, ldP, cpC, cpP, first)
			}
		})
	}
	if len(want) != 0 {
		t.Fatalf("kernels not found: %v", want)
	}
}

// TestBankCounter: the counter sees the row-major A stage's conflict (rows r and r+4 of a 32-byte
// row pitch share banks) and none in its swizzle.
func TestBankCounter(t *testing.T) {
	rowMajor, swz := ir.RowMajor(ir.IConst{V: 16}), passes.SM80ALayout()
	for _, c := range []struct {
		lay  ir.Layout
		want int
	}{{rowMajor, 2}, {swz, 1}} {
		for chunk := 0; chunk < 2; chunk++ {
			var rows []uint64
			for r := 0; r < 8; r++ {
				o, err := evalIExpr(c.lay.Offset(ir.IConst{V: r}, ir.IConst{V: 8 * chunk}), nil)
				if err != nil {
					t.Fatal(err)
				}
				rows = append(rows, uint64(2*o))
			}
			if w := bankWavefronts(rows, 16); w != c.want {
				t.Errorf("%v chunk %d: rows at %v take %d wavefronts, want %d", c.lay, chunk, rows, w, c.want)
			}
		}
	}
}

// TestPlantedWrongSwizzle: the MMAs read their swizzled stages (passes.SM80ALayout, and bgemm_tt's
// transposed A and B stages, passes.SM80TView) through a swizzle that XORs the wrong row bit
// (Swizzle<1,3,2>: row bit 1 instead of 2) while the cp.async copies still write the right one; the
// emulator differential test must see the wrong products (the ldmatrix addresses come from the layout).
func TestPlantedWrongSwizzle(t *testing.T) {
	fs := kernelsByName(t, "../../kernels.kdsl", "ptx:sm_80")
	stages := map[string]bool{passes.SM80ALayout().String(): true, passes.SM80TView().String(): true}
	for _, c := range []struct {
		name    string
		operand func(m *ir.MMA) *ir.Operand
	}{
		{"hgemm", func(m *ir.MMA) *ir.Operand { return &m.A }},
		{"bgemm_tt", func(m *ir.MMA) *ir.Operand { return &m.A }},
		{"bgemm_tt", func(m *ir.MMA) *ir.Operand { return &m.B }},
	} {
		f := fs[c.name]
		if f == nil {
			t.Fatalf("no kernel %s", c.name)
		}
		var ops []*ir.Operand
		var right []ir.Layout
		ir.WalkNodes(f.Body, func(n ir.Node) bool {
			if m, ok := n.(*ir.MMA); ok {
				o := c.operand(m)
				if z, ok := o.Layout.(*ir.Swizzle); ok && stages[z.String()] {
					ops, right = append(ops, o), append(right, o.Layout)
				}
			}
			return true
		})
		if len(ops) == 0 {
			t.Fatalf("%s: no MMA reads a swizzled stage", c.name)
		}
		k, err := Lower(f, "sm_80")
		if err != nil {
			t.Fatal(err)
		}
		if err := checkShapes(k, f, 2); err != nil {
			t.Fatalf("%s before the plant: %v", c.name, err)
		}
		for _, o := range ops {
			o.Layout = ir.NewSwizzle(o.Layout.(*ir.Swizzle).Of, 1, 3, 2)
		}
		k, err = Lower(f, "sm_80")
		for i, o := range ops {
			o.Layout = right[i] // f is shared with the other tests
		}
		if err != nil {
			t.Fatal(err)
		}
		err = checkShapes(k, f, 2)
		if err == nil {
			t.Errorf("%s: the wrong swizzle of the %v reads went unnoticed", c.name, right[0])
			continue
		}
		t.Logf("%s %v: detected: %v", c.name, right[0], err)
	}
}
