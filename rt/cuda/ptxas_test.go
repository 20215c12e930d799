package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// findPtxas returns the repository's .tools/ptxas (scripts/setup.sh fetches it), else ptxas from
// PATH, else "".
func findPtxas() string {
	if p, err := filepath.Abs(filepath.Join("..", "..", ".tools", "ptxas")); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("ptxas"); err == nil {
		return p
	}
	return ""
}

// The hand-written vadd.ptx the GPU test loads is valid PTX: NVIDIA's assembler accepts it for the
// GPUs kgen targets, without spills. (The GPU test then needs only the driver's JIT.)
func TestVaddPTXAssembles(t *testing.T) {
	ptxas := findPtxas()
	if ptxas == "" {
		if os.Getenv("KGEN_REQUIRE_TOOLS") == "1" {
			t.Fatal("KGEN_REQUIRE_TOOLS=1 but ptxas is missing (scripts/setup.sh puts it in .tools/)")
		}
		t.Skip("ptxas not found (scripts/setup.sh puts it in .tools/)")
	}
	for _, sm := range []string{"sm_80", "sm_90"} {
		out, err := exec.Command(ptxas, "-v", "-arch="+sm, "-o", filepath.Join(t.TempDir(), "vadd.cubin"),
			filepath.Join("testdata", "vadd.ptx")).CombinedOutput()
		if err != nil {
			t.Fatalf("ptxas -arch=%s vadd.ptx: %v\n%s", sm, err, out)
		}
		if !strings.Contains(string(out), "Compiling entry function 'vadd'") || !strings.Contains(string(out), " 0 bytes spill stores") {
			t.Errorf("ptxas -arch=%s: unexpected report\n%s", sm, out)
		}
	}
}
