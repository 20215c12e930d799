package ptx

import (
	"strings"
	"testing"
)

// TestTestdataKernels lowers the GEMM-with-epilogue kernels of passes/testdata/mma.kdsl: each either
// lowers and then matches the interpreter in the emulator, or fails with a "not supported yet" error
// (tanh has no accurate expansion yet).
func TestTestdataKernels(t *testing.T) {
	for _, f := range compileFile(t, "../../passes/testdata/mma.kdsl", "ptx:sm_80") {
		k, err := Lower(f, "sm_80")
		if err != nil {
			if !strings.Contains(err.Error(), "not supported yet") {
				t.Errorf("%s: %v", f.Kernel.Name, err)
			}
			t.Logf("%v", err)
			continue
		}
		if err := checkShapes(k, f, 3); err != nil {
			t.Errorf("%s: %v", f.Kernel.Name, err)
		}
	}
}

// TestCPUFuncRejected hands the lowering loop IR compiled for a CPU target: a clear error, no panic.
func TestCPUFuncRejected(t *testing.T) {
	for _, f := range compileFile(t, "../../kernels.kdsl", "go")[:3] {
		if _, err := Lower(f, "sm_80"); err == nil || !strings.Contains(err.Error(), "not supported yet: host code outside a GPU launch") {
			t.Errorf("%s: %v", f.Kernel.Name, err)
		}
	}
}

// TestPtxasTestdata assembles the testdata kernels (f16/bf16 GEMMs with tanh epilogues, a sigmoid of
// the BLAS form, a tf32 GEMM) for sm_80.
func TestPtxasTestdata(t *testing.T) {
	ptxas := ptxasPath(t)
	fs := compileFile(t, "../../passes/testdata/mma.kdsl", "ptx:sm_80")
	mod, ks, unsup := Build(fs, SubTargets["sm_80"], "mma.kdsl")
	// every kernel emits; the one with `precision tf32` for ptx on tf32 tensor cores
	if len(unsup) != 0 || len(ks) != len(fs) {
		t.Fatalf("unsupported: %v", unsup)
	}
	tf32 := false
	for _, e := range mod.Entries {
		if e.Name == "sgemm_tf32_0" {
			text := (&Module{Version: "7.0", Target: "sm_80", Entries: []*Entry{e}}).Print()
			tf32 = strings.Contains(text, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") && strings.Contains(text, "cvt.rna.tf32.f32")
		}
	}
	if !tf32 {
		t.Error("sgemm_tf32_0 lacks mma.sync m16n8k8 .tf32 or the cvt.rna.tf32.f32 of its operands")
	}
	st := assemble(t, ptxas, "sm_80", mod.Print())
	for _, e := range mod.Entries {
		s, ok := st[e.Name]
		if !ok || s.SpillStores != 0 || s.SpillLoads != 0 {
			t.Errorf("%s: %+v (reported: %v)", e.Name, s, ok)
		}
	}
}

// TestOpsKernels lowers testdata/ops.kdsl (every scalar operator, function, comparison, cast and type),
// assembles it for sm_80 and runs it in the emulator against the interpreter.
func TestOpsKernels(t *testing.T) {
	fs := compileFile(t, "testdata/ops.kdsl", "ptx:sm_80")
	mod, ks, unsup := Build(fs, SubTargets["sm_80"], "ops.kdsl")
	if len(unsup) > 0 {
		t.Fatalf("unsupported: %v", unsup)
	}
	for i, k := range ks {
		t.Run(k.Name, func(t *testing.T) {
			if err := checkShapes(k, fs[i], 5); err != nil {
				t.Error(err)
			}
		})
	}
	assemble(t, ptxasPath(t), "sm_80", mod.Print())
}

func TestLowerBadInput(t *testing.T) {
	if _, err := Lower(nil, "sm_80"); err == nil {
		t.Error("nil function lowered")
	}
	f := compileFile(t, "../../kernels.kdsl", "ptx:sm_80")[0]
	if _, err := Lower(f, "sm_75"); err == nil || !strings.Contains(err.Error(), "unknown sub-target") {
		t.Errorf("sm_75: %v", err)
	}
}
