package gpuprobe

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/tune"
)

// nvTool finds ptxas or cuobjdump (tune.FindTool); a missing tool skips the test, or fails it when
// KGEN_REQUIRE_TOOLS=1.
func nvTool(t *testing.T, name, env string) string {
	t.Helper()
	p, err := tune.FindTool(name, env, ".")
	if err != nil {
		if os.Getenv("KGEN_REQUIRE_TOOLS") == "1" {
			t.Fatalf("KGEN_REQUIRE_TOOLS=1: %v", err)
		}
		t.Skip(err)
	}
	return p
}

// The mma peak kernel assembles for sm_80 and sm_90 without spills, and its machine code issues
// mmaChains bf16 HMMA.16816 a round (ptxas keeps every chain: none is dead or folded).
func TestMMAPeakPTX(t *testing.T) {
	ptxas, cuobjdump := nvTool(t, "ptxas", "KGEN_PTXAS"), nvTool(t, "cuobjdump", "KGEN_CUOBJDUMP")
	for _, arch := range []string{"sm_80", "sm_90"} {
		stats, err := tune.Assemble(ptxas, arch, mmaPeakPTX())
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := stats["kgen_mma_peak"]; !ok || s.SpillBytes() != 0 {
			t.Errorf("%s: %+v", arch, stats)
		}
		sass := sassOf(t, ptxas, cuobjdump, arch, mmaPeakPTX())
		if n := strings.Count(sass, "HMMA.16816.F32.BF16"); n != mmaChains {
			t.Errorf("%s: %d HMMA.16816.F32.BF16, want %d (the loop is not unrolled: one a chain)", arch, n, mmaChains)
		}
	}
}

// sassOf assembles text for arch and returns cuobjdump's machine code.
func sassOf(t *testing.T, ptxas, cuobjdump, arch, text string) string {
	t.Helper()
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "k.ptx"), filepath.Join(dir, "k.cubin")
	if err := os.WriteFile(src, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(ptxas, "-arch="+arch, "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("ptxas -arch=%s: %v\n%s", arch, err, out)
	}
	sass, err := exec.Command(cuobjdump, "-sass", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("cuobjdump: %v\n%s", err, sass)
	}
	return string(sass)
}

// The copy kernel assembles for sm_80 and sm_90 without spills and moves 16 bytes a load and a
// store (LDG.E.128, STG.E.128), one of each in its loop.
func TestCopyPTX(t *testing.T) {
	ptxas, cuobjdump := nvTool(t, "ptxas", "KGEN_PTXAS"), nvTool(t, "cuobjdump", "KGEN_CUOBJDUMP")
	for _, arch := range []string{"sm_80", "sm_90"} {
		stats, err := tune.Assemble(ptxas, arch, copyPTX)
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := stats["kgen_copy"]; !ok || s.SpillBytes() != 0 {
			t.Errorf("%s: %+v", arch, stats)
		}
		sass := sassOf(t, ptxas, cuobjdump, arch, copyPTX)
		if strings.Count(sass, "LDG.E.128") != 1 || strings.Count(sass, "STG.E.128") != 1 {
			t.Errorf("%s: want one LDG.E.128 and one STG.E.128:\n%s", arch, sass)
		}
	}
}
