package main

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/probe"
	"github.com/kgen-dev/kgen/rt/cuda"
	"github.com/kgen-dev/kgen/tune"
)

const hgemmKdsl = `kernel hgemm(A: f16[M, K], B: f16[K, N], C: out f16[M, N]) {
    C[i, j] = f16(sum(k: A[i, k] * B[k, j]))
}
`

// gpuEntry is a lock line (after kernel and hash) for hgemm's production sm_90a GEMM.
const gpuEntry = "ptx/sm_90a cuda-sm90-132sm gpu.WG=2 gpu.tmaS=3 gpu.wgN=128 speedup=1.100 noise=0.010 shapes=4096x4096x4096"

func genPTX(t *testing.T, kdsl string, args ...string) map[string]string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "pkg")
	code, _, errOut := runKgen(append(append([]string{"gen", "-o", out, "-pkg", "pkg", "-tests=false", "-targets", "go,ptx:sm_80,sm_90a"}, args...), kdsl)...)
	if code != 0 {
		t.Fatalf("kgen gen: exit %d: %s", code, errOut)
	}
	return readFiles(t, out)
}

// A GPU lock entry reaches the production sm_90a GEMM: its block tile (128×128: two warpgroups of
// m64n128k16), three stages in 99328 bytes of dynamic shared memory and the grid that tile needs;
// nothing else changes (the sm_80 module, the Go files); generation from the same lock is
// byte-identical, and -lock none is the untuned package. verify says it is fresh, and stale against a
// profile without that GPU.
func TestGPULockReachesGen(t *testing.T) {
	kdsl := write(t, "h.kdsl", hgemmKdsl)
	plain := genPTX(t, kdsl)
	lockForKernel(t, kdsl, "hgemm", gpuEntry)
	tuned, again := genPTX(t, kdsl), genPTX(t, kdsl)
	if !maps.Equal(tuned, again) {
		t.Error("two generations from the same lock differ")
	}
	for name := range plain {
		if changed := plain[name] != tuned[name]; changed != (name == "ptx_sm_90a.ptx" || name == "ptx_kernels.go") {
			t.Errorf("%s: changed %v by the lock", name, changed)
		}
	}
	for _, c := range []struct {
		files      map[string]string
		dyn, wgmma string
	}{{plain, "dynShared: 197632", "m64n256k16"}, {tuned, "dynShared: 99328", "m64n128k16"}} {
		if !strings.Contains(c.files["ptx_kernels.go"], `{entry: "hgemm_0_prod", sharedBytes: 0, `+c.dyn) ||
			!strings.Contains(c.files["ptx_sm_90a.ptx"], "wgmma.mma_async.sync.aligned."+c.wgmma) {
			t.Errorf("want the production entry with %s and %s", c.dyn, c.wgmma)
		}
	}
	if !strings.Contains(tuned["ptx_kernels.go"], "ptxFloorDiv((d[2] + 127), 128)") {
		t.Error("the tuned grid is not one block a 128 columns")
	}
	if none := genPTX(t, kdsl, "-lock", "none"); !maps.Equal(none, plain) {
		t.Error("-lock none differs from no lock")
	}
	if code, out, errOut := runKgen("verify", kdsl); code != 0 || !strings.Contains(out, "1 entries fresh") {
		t.Errorf("verify: exit %d: %s%s", code, out, errOut)
	}
	if code, _, errOut := runKgen("verify", "-profile", writeProfile(t), kdsl); code != 1 ||
		!strings.Contains(errOut, "kgen.lock:1: hgemm ptx/sm_90a cuda-sm90-132sm: GPU class cuda-sm90-132sm is not one of the profile's (it has no GPU)") {
		t.Errorf("verify against a profile without a GPU: exit %d: %s", code, errOut)
	}
	p := probe.Profile{Version: probe.Version, GOOS: "linux", GOARCH: "amd64", ISA: "go", Cores: 1,
		GPUs: []probe.GPU{{API: "cuda", Arch: "sm_90", Units: 132}}}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runKgen("verify", "-profile", write(t, "gpu.json", string(b)), kdsl); code != 0 || !strings.Contains(out, "1 entries fresh") {
		t.Errorf("verify against the GPU's profile: exit %d: %s%s", code, out, errOut)
	}
}

// GPU lock entries the sub-target cannot run stop gen and fail verify with the lock's file:line (and
// column): a value out of range, a symbol that is not tunable, a sub-target without tunable symbols,
// and entries of two GPU classes for one kernel (the plan is compiled in: one a sub-target).
func TestGPULockErrors(t *testing.T) {
	for _, tc := range []struct {
		lines []string
		want  string
	}{
		{[]string{strings.Replace(gpuEntry, "gpu.wgN=128", "gpu.wgN=96", 1)}, "kgen.lock:1:71: gpu.wgN=96 is out of range on ptx/sm_90a: want one of [64 128 256]"},
		{[]string{strings.Replace(gpuEntry, "gpu.WG=2", "gpu.BX=2", 1)}, "kgen.lock:1:51: gpu.BX is not a tunable plan symbol of ptx/sm_90a"},
		{[]string{strings.Replace(gpuEntry, "sm_90a", "sm_80", 1)}, "kgen.lock:1:50: ptx/sm_80 has no tunable GPU plan symbol"},
		{[]string{gpuEntry, strings.Replace(gpuEntry, "132sm", "114sm", 1)}, "kgen.lock:2: kernel hgemm has entries for ptx/sm_90a of two GPU classes (cuda-sm90-132sm on line 1, cuda-sm90-114sm here)"},
	} {
		kdsl := write(t, "h.kdsl", hgemmKdsl)
		lockForKernel(t, kdsl, "hgemm", tc.lines...)
		out := filepath.Join(t.TempDir(), "pkg")
		code, _, errOut := runKgen("gen", "-o", out, "-targets", "ptx:sm_90a", kdsl)
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("gen %q: exit %d: %s", tc.lines, code, errOut)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("gen %q: output written", tc.lines)
		}
		if code, _, errOut := runKgen("verify", kdsl); code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("verify %q: exit %d: %s", tc.lines, code, errOut)
		}
	}
}

// Without a GPU, kgen tune -target ptx:sm_90a still checks candidates (here only the default: the
// budget is spent at once), says how many it verified and that it cannot time them and why, and
// leaves the lock as it was; a sub-target without tunable symbols is a usage error.
func TestTuneGPUNoDevice(t *testing.T) {
	if _, err := tune.FindTool("ptxas", "KGEN_PTXAS", "."); err != nil {
		if os.Getenv("KGEN_REQUIRE_TOOLS") == "1" {
			t.Fatalf("KGEN_REQUIRE_TOOLS=1: %v", err)
		}
		t.Skip(err)
	}
	t.Setenv(cuda.LibraryEnv, filepath.Join(t.TempDir(), "nosuch.so"))
	kdsl := write(t, "h.kdsl", hgemmKdsl)
	lock := lockForKernel(t, kdsl, "hgemm", gpuEntry)
	before, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runKgen("tune", "-target", "ptx:sm_90a", "-budget", "1ns", kdsl)
	if code != 0 || !strings.Contains(out, "kgen tune: ptx:sm_90a: verified 1 of 1 candidates of 1 kernels (0 rejected); cannot time them: no GPU (") ||
		!strings.Contains(out, "the budget left 11 candidates unchecked") || !strings.Contains(out, "kgen.lock not written") ||
		!strings.Contains(errOut, "hgemm: {gpu.WG=2 gpu.tmaS=4 gpu.wgN=256} verified: ") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
	if after, err := os.ReadFile(lock); err != nil || string(after) != string(before) {
		t.Errorf("the lock changed: %v\n%s", err, after)
	}
	if code, _, errOut := runKgen("tune", "-target", "ptx:sm_80", kdsl); code != 2 || !strings.Contains(errOut, "ptx/sm_80 has no tunable GPU plan symbol (tunable: ptx:sm_90a)") {
		t.Errorf("-target ptx:sm_80: exit %d: %s", code, errOut)
	}
}
