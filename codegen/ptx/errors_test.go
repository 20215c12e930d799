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
