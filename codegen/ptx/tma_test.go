package ptx

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/passes"
	"github.com/kgen-dev/kgen/rt/cuda"
	"github.com/kgen-dev/kgen/rt/cuda/mockdriver"
	"github.com/kgen-dev/kgen/target"
)

// tmaKernels are the kernels of kernels.kdsl whose sm_90a wgmma tiles TMA can load (passes/tma.go).
var tmaKernels = []string{"hgemm", "bgemm", "bgemm_bf16"}

// compileTMA compiles the named kernels of kernels.kdsl for ptx:sm_90a with the plan value gpu.tma = 1
// set before staging (TMA staging on per-stage mbarriers).
func compileTMA(t *testing.T, names ...string) []*ir.Func { return compileTMAWith(t, 1, names...) }

// compileTMAWith is compileTMA with gpu.tma = mode (2: warp-specialised).
func compileTMAWith(t *testing.T, mode int, names ...string) []*ir.Func {
	t.Helper()
	return compileProd(t, map[string]int{passes.PlanTMA: mode}, names...)
}

// libKernel is kernel name of kernels.kdsl (its algorithm level).
func libKernel(t *testing.T, name string) *ir.Kernel {
	t.Helper()
	for _, f := range compileFile(t, "../../kernels.kdsl", "ptx:sm_90a") {
		if f.Kernel.Name == name {
			return f.Kernel
		}
	}
	t.Fatalf("no kernel %s", name)
	return nil
}

// tmaShapes are the emulated shapes of the TMA GEMMs: M = 1, primes and non-multiples of the 64-wide
// tiles; K and N multiples of 8 (the tensor maps need 16-byte rows, TMAMapOf); K up to four 64-deep
// tiles, so that each of the two stages is refilled.
var tmaShapes = [][3]int{{1, 8, 8}, {17, 24, 72}, {67, 136, 200}, {130, 72, 8}}

// mnk names M, N, K for a GEMM kernel (whose dims are those).
func mnk(k *ir.Kernel, s [3]int) map[string]int {
	d := map[string]int{}
	for _, dim := range k.Dims {
		d[dim.Name] = map[string]int{"M": s[0], "N": s[1], "K": s[2]}[dim.Name]
	}
	return d
}

// checkTMA emulates the TMA GEMM f (lowered to k) on tmaShapes against the interpreter.
func checkTMA(k *Kernel, f *ir.Func, only ...[3]int) error {
	var shapes []map[string]int
	if only == nil {
		only = tmaShapes
	}
	for _, s := range only {
		shapes = append(shapes, mnk(f.Kernel, s))
	}
	return checkDims(k, f, shapes, rand.New(rand.NewPCG(3, 5)))
}

// TestEmulatedTMA runs the TMA-staged sm_90a GEMMs (bulk tensor copies on per-stage mbarriers, the
// host's tensor maps encoded as the mock driver does) in the emulator against the interpreter.
func TestEmulatedTMA(t *testing.T) {
	for _, f := range compileTMA(t, tmaKernels...) {
		t.Run(f.Kernel.Name, func(t *testing.T) {
			k, err := Lower(f, "sm_90a")
			if err != nil {
				t.Fatal(err)
			}
			if len(k.Params) == 0 || k.Params[len(k.Params)-1].Kind != PTensorMap {
				t.Fatalf("no tensor-map parameters: %+v", k.Params)
			}
			if err := checkTMA(k, f); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestTMAMapOf: the map of a tensor whose rows are not 16-byte aligned is refused with the reason.
func TestTMAMapOf(t *testing.T) {
	p := ParamInfo{Name: "A", Kind: PTensorMap, Elem: ir.F16, Shape: []string{"M", "K"}}
	m, err := TMAMapOf(p, map[string]int64{"M": 17, "K": 72})
	if err != nil || m.Dims != [2]uint64{72, 17} || m.RowStride != 144 || m.Box != [2]uint32{64, 64} || m.Swizzle != 3 || m.DataType != 6 {
		t.Fatalf("TMAMapOf = %+v, %v", m, err)
	}
	if _, err := TMAMapOf(p, map[string]int64{"M": 17, "K": 17}); err == nil || !strings.Contains(err.Error(), "not a multiple of 16") {
		t.Fatalf("K = 17: %v, want a refusal", err)
	}
}

// TestPlantedTMABugs: each broken TMA pipeline fails the emulated differential test, with the error
// that names it.
func TestPlantedTMABugs(t *testing.T) {
	fs := compileTMA(t, "hgemm")
	f := fs[0]
	setArg := func(op string, i int, v Operand) func(e *Entry) bool {
		return func(e *Entry) bool {
			return edit(e, func(in *Instr) bool { return in.Op == op }, func(in *Instr) *Instr {
				c := *in
				c.Args = append([]Operand{}, in.Args...)
				c.Args[i] = v
				return &c
			}, -1)
		}
	}
	for _, c := range []struct {
		name, want string
		plant      func(e *Entry) bool
		mapHook    func(*mockTensorMap)
		four       bool // only the shape with four K tiles (the first shapes fail otherwise: NaN results)
	}{
		{"parity always 0", "deadlock: thread 0 waits (try_wait.parity 0)", setArg("mbarrier.try_wait.parity.shared::cta.b64", 2, Imm(0)), nil, false},
		{"parity always 1", "deadlock", setArg("mbarrier.try_wait.parity.shared::cta.b64", 2, Imm(1)), nil, false},
		{"missing expect_tx", "while a bulk copy into it is in flight", func(e *Entry) bool {
			return edit(e, func(in *Instr) bool { return in.Op == "mbarrier.arrive.expect_tx.shared::cta.b64" }, func(in *Instr) *Instr {
				return &Instr{Op: "mbarrier.arrive.shared::cta.b64", Args: in.Args[:2]}
			}, -1)
		}, nil, false},
		{"expect_tx 2 bytes short", "beyond the expect_tx count", setArg("mbarrier.arrive.expect_tx.shared::cta.b64", 2, Imm(16382)), nil, false},
		{"expect_tx 2 bytes over", "deadlock", setArg("mbarrier.arrive.expect_tx.shared::cta.b64", 2, Imm(16386)), nil, false},
		{"no wait", "without having seen that phase complete", func(e *Entry) bool {
			return edit(e, func(in *Instr) bool { return in.Op == "mbarrier.try_wait.parity.shared::cta.b64" }, func(in *Instr) *Instr {
				return &Instr{Op: "setp.eq.s32", Args: []Operand{in.Args[0], Imm(0), Imm(0)}}
			}, -1)
		}, nil, false},
		{"stage refilled before its wgmma completed (wgmma.wait_group 1)", "which a wgmma still in flight reads", setArg("wgmma.wait_group.sync.aligned", 0, Imm(1)), nil, true},
		{"tensor map without swizzle, descriptors 128-byte swizzled", "|diff|", func(*Entry) bool { return true }, func(m *mockTensorMap) { m.swizzle = 0 }, false},
		{"tensor map 64-byte swizzle", "with swizzle mode 2 are not modelled", func(*Entry) bool { return true }, func(m *mockTensorMap) { m.swizzle = 2 }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, err := Lower(f, "sm_90a")
			if err != nil {
				t.Fatal(err)
			}
			if err := checkTMA(k, f); err != nil {
				t.Fatalf("the unplanted kernel fails: %v", err)
			}
			changed := false
			for _, e := range k.Entries {
				changed = c.plant(e) || changed
			}
			if !changed {
				t.Fatal("nothing to plant the bug in")
			}
			emuMapHook = c.mapHook
			defer func() { emuMapHook = nil }()
			if c.four {
				err = checkTMA(k, f, [3]int{67, 136, 200}) // four K tiles: the stages are refilled
			} else {
				err = checkTMA(k, f)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("planted bug: %v, want an error containing %q", err, c.want)
			}
			t.Logf("detected: %v", err)
		})
	}
}

// TestTMASass assembles the TMA-staged GEMMs with ptxas 12.4 for sm_90a and reads their machine code:
// each loads its tiles with UTMALDG.2D (two per K tile: in the prologue and in the loop), synchronises
// on mbarriers with SYNCS instructions (SYNCS.EXCH.64: init; SYNCS.ARRIVE.TRANS64: arrive.expect_tx;
// SYNCS.PHASECHK.TRANS64.TRYWAIT: try_wait.parity), multiplies with four HGMMA.64x64x16.F32 per K tile,
// spills nothing, declares at most 48 KiB of shared memory, and ptxas does not serialize the wgmmas.
func TestTMASass(t *testing.T) { checkTMASass(t, compileTMA(t, tmaKernels...), 4) }

// TestTMASpecialisedSass is TestTMASass for the warp-specialised versions (gpu.tma = 2: one loop of
// two UTMALDG in the producer, no prologue).
func TestTMASpecialisedSass(t *testing.T) { checkTMASass(t, compileTMAWith(t, 2, tmaKernels...), 2) }

// checkTMASass assembles fs's sm_90a module and checks each TMA GEMM's machine code (loads: the
// UTMALDG.2D count).
func checkTMASass(t *testing.T, fs []*ir.Func, loads int) {
	ptxas := ptxasPath(t)
	ptxasSupports90a(t, ptxas)
	cuobjdump := toolPath(t, "cuobjdump", "KGEN_CUOBJDUMP")
	mod, _, unsup := Build(fs, SubTargets["sm_90a"], "kernels.kdsl")
	if len(unsup) != 0 {
		t.Fatalf("unsupported: %v", unsup)
	}
	stats, funcs := sm90aSass(t, ptxas, cuobjdump, mod.Print())
	for _, name := range tmaKernels {
		code := funcs[name+"_0"]
		for _, c := range []struct {
			insn string
			n    int
		}{{"UTMALDG.2D", loads}, {"SYNCS.EXCH.64", 1}, {"SYNCS.ARRIVE.TRANS64", 2}, {"SYNCS.PHASECHK.TRANS64.TRYWAIT", 1}, {"HGMMA.64x64x16.F32", 4}} {
			if got := strings.Count(code, c.insn); got < c.n {
				t.Errorf("%s: %d %s, want at least %d:\n%s", name, got, c.insn, c.n, code)
			}
		}
		if strings.Contains(code, "LDGSTS") {
			t.Errorf("%s: still copies with cp.async (LDGSTS)", name)
		}
		s := stats[name+"_0"]
		if s.SpillStores != 0 || s.SpillLoads != 0 || s.Smem > 48<<10 {
			t.Errorf("%s: %d/%d spill bytes, %d bytes of shared memory", name, s.SpillStores, s.SpillLoads, s.Smem)
		}
		t.Logf("%s: UTMALDG.2D, SYNCS, 4 HGMMA.64x64x16.F32 per K tile; %d registers, %d bytes smem, 0 spills", name, s.Regs, s.Smem)
	}
}

// TestTMAMapMockDriver: the map TMAMapOf describes, encoded by rt/cuda's EncodeTiled through the mock
// driver (what the generated glue does at launch), is byte for byte the one the emulator's tests
// encode (encodeMockTensorMap), and the emulator decodes from it the tensor the glue described.
func TestTMAMapMockDriver(t *testing.T) {
	lib := mockdriver.Build(t)
	d, err := cuda.OpenLibrary(lib)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := d.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := dev.PrimaryContext()
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	buf, err := ctx.Alloc(72 * 40 * 2)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	p := ParamInfo{Name: "B", Kind: PTensorMap, Elem: ir.BF16, Shape: []string{"K", "N"}}
	tm, err := TMAMapOf(p, map[string]int64{"K": 40, "N": 72})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ctx.EncodeTiled(cuda.TiledMap{DataType: cuda.TensorMapDataType(tm.DataType), Global: buf.Ptr(), Dims: tm.Dims[:],
		Strides: []uint64{tm.RowStride}, Box: tm.Box[:], Swizzle: cuda.TensorMapSwizzle(tm.Swizzle)})
	if err != nil {
		t.Fatal(err)
	}
	want := encodeMockTensorMap(emuTensorMap(p, &ir.Tensor{Name: "B", Type: ir.BF16}, uint64(buf.Ptr()), map[string]int{"K": 40, "N": 72}))
	if string(got[:]) != string(want) {
		t.Fatalf("the mock driver's map\n%x\nis not the emulator's\n%x", got[:], want)
	}
	m := decodeMockTensorMap(got[:])
	if m.global != uint64(buf.Ptr()) || m.dims[0] != 72 || m.dims[1] != 40 || m.strides[0] != 144 || m.box[0] != 64 || m.box[1] != 64 || m.swizzle != 3 || m.dtype != 9 {
		t.Fatalf("decoded %v", m)
	}
}

// TestEmulatedTMASpecialised runs the warp-specialised TMA GEMMs (gpu.tma = 2: a producer warpgroup
// whose thread 0 loads the tiles, a consumer warpgroup that multiplies and releases each stage on its
// empty barrier) in the emulator against the interpreter, and assembles them: UTMALDG, SYNCS, HGMMA,
// no spills.
func TestEmulatedTMASpecialised(t *testing.T) {
	fs := compileTMAWith(t, 2, tmaKernels...)
	for _, f := range fs {
		k, err := Lower(f, "sm_90a")
		if err != nil {
			t.Fatal(err)
		}
		if err := checkTMA(k, f); err != nil {
			t.Errorf("%s: %v", f.Kernel.Name, err)
		}
	}
}

// TestPlantedTMASpecialisedBugs: a consumer that releases its stage (arrives on the empty barrier)
// before its wgmma completed (its wgmma read completes only at the wait that retires it, after the
// arrival), and a producer that refills a stage without waiting for its release (the
// tile a consumer has not read yet is overwritten: the consumer then waits for a phase that has passed,
// forever on hardware), fail the emulated differential test.
func TestPlantedTMASpecialisedBugs(t *testing.T) {
	runPlanted(t, compileTMAWith(t, 2, "hgemm")[0], [3]int{67, 136, 200}, []plantCase{
		{"empty arrival before wgmma.wait_group", "read since the last bar.sync (and before no mbarrier arrival this thread waited for)", waitAfterArrive},
		{"no wait for the empty barrier", "deadlock: thread 128 waits", func(e *Entry) bool {
			n := 0
			return edit(e, func(in *Instr) bool {
				if in.Op == "mbarrier.try_wait.parity.shared::cta.b64" {
					n++
					return n == 1 // the producer's wait (first in the code)
				}
				return false
			}, func(in *Instr) *Instr {
				return &Instr{Op: "setp.eq.s32", Args: []Operand{in.Args[0], Imm(0), Imm(0)}}
			}, 1)
		}},
	})
}

// plantCase is a bug planted into a lowered kernel's entries, and the emulator's error it must cause.
type plantCase struct {
	name, want string
	plant      func(e *Entry) bool
}

// runPlanted lowers f for sm_90a once per case, plants the case's bug and runs the emulated
// differential test at shape (M, N, K), which must fail with the case's error.
func runPlanted(t *testing.T, f *ir.Func, shape [3]int, cases []plantCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, err := Lower(f, "sm_90a")
			if err != nil {
				t.Fatal(err)
			}
			changed := false
			for _, e := range k.Entries {
				changed = c.plant(e) || changed
			}
			if !changed {
				t.Fatal("nothing to plant the bug in")
			}
			err = checkTMA(k, f, shape)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("planted bug: %v, want an error containing %q", err, c.want)
			}
			t.Logf("detected: %v", err)
		})
	}
}

// waitAfterArrive moves the first wgmma.wait_group after the empty barrier's arrival that follows it
// (a consumer releasing its stage before its wgmmas retired).
func waitAfterArrive(e *Entry) bool {
	// move the wait that retires the wgmmas after the empty barrier's arrival
	wait, arrive := -1, -1
	for i, it := range e.body {
		if in, ok := it.(*Instr); ok {
			switch {
			case in.Op == "wgmma.wait_group.sync.aligned" && arrive < 0:
				wait = i
			case in.Op == "mbarrier.arrive.shared::cta.b64" && wait >= 0 && arrive < 0:
				arrive = i
			}
		}
	}
	if wait < 0 || arrive < 0 {
		return false
	}
	w := e.body[wait]
	copy(e.body[wait:arrive], e.body[wait+1:arrive+1])
	e.body[arrive] = w
	return true
}

// TestEmulatedTMAEpilogue: of passes/testdata/mma.kdsl's GEMMs with fused epilogues, hgemm_bias_gelu
// (A K-major, B N-major) gets the warp-specialised TMA staging and equals the interpreter in the
// emulator (bias + GELU after the consumer's accumulator); bgemm_scale_residual (B stored N×K: its
// rows are not N-contiguous) keeps cp.async.
func TestEmulatedTMAEpilogue(t *testing.T) {
	m, err := target.Lookup("ptx:sm_90a")
	if err != nil {
		t.Fatal(err)
	}
	fs := compileFile(t, "../../passes/testdata/mma.kdsl", "ptx:sm_90a")
	got := map[string]bool{}
	for _, g := range fs {
		if g.Kernel.Name != "hgemm_bias_gelu" && g.Kernel.Name != "bgemm_scale_residual" {
			continue
		}
		f, err := passes.Compile(g.Kernel, m, passes.Options{Plan: map[string]int{passes.PlanTMA: 2}})
		if err != nil {
			t.Fatal(err)
		}
		got[g.Kernel.Name] = strings.Contains(f.String(), "async mbarrier")
		if !got[g.Kernel.Name] {
			continue
		}
		k, err := Lower(f, "sm_90a")
		if err != nil {
			t.Fatal(err)
		}
		if err := checkTMA(k, f); err != nil {
			t.Errorf("%s: %v", g.Kernel.Name, err)
		}
	}
	if !got["hgemm_bias_gelu"] || got["bgemm_scale_residual"] {
		t.Errorf("TMA staging: %v, want hgemm_bias_gelu only", got)
	}
}

// TestEmulatedEveryTMAVersion runs the TMA and production versions that the sm_90a module holds for
// kernels of kernels.kdsl other than tmaKernels (which TestEmulatedTMASpecialised and TestEmulatedProd
// run), built as kgen gen builds them (tmaVariant, prodVariant), in the emulator against the
// interpreter: every entry of the module runs in some emulated test.
func TestEmulatedEveryTMAVersion(t *testing.T) {
	n := 0
	for _, f := range compileFile(t, "../../kernels.kdsl", "ptx:sm_90a") {
		if slices.Contains(tmaKernels, f.Kernel.Name) {
			continue
		}
		tk, err := tmaVariant(f.Kernel)
		if err != nil {
			t.Fatal(err)
		}
		if tk == nil {
			continue
		}
		pk, err := prodVariant(f.Kernel, ProdPlan)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []struct {
			k      *Kernel
			shapes [][3]int
		}{{tk, tmaShapes}, {pk, prodShapes}} {
			if v.k == nil {
				continue
			}
			n++
			t.Run(v.k.Entries[0].Name, func(t *testing.T) {
				if err := checkTMA(v.k, f, v.shapes...); err != nil {
					t.Error(err)
				}
			})
		}
	}
	if n == 0 {
		t.Fatal("no TMA versions beyond tmaKernels: hlinear_gelu has one")
	}
}
