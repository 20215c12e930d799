package probe

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/rt/cuda"
)

// TestGPUMock runs probeGPUs against rt/cuda's mock driver (built with clang from its testdata): the
// device's name, architecture, SM count and shared memory come through; the mock's events measure no
// time for a memset, so the bandwidth is left out and the note says so. Without a driver at all the
// list is empty and the note says why.
func TestGPUMock(t *testing.T) {
	t.Setenv(cuda.LibraryEnv, filepath.Join(t.TempDir(), "nosuch.so"))
	if gpus, note := probeGPUs(true); len(gpus) != 0 || !strings.Contains(note, "no CUDA GPU") {
		t.Errorf("no driver: %v, %q", gpus, note)
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the mock driver is built for linux/amd64")
	}
	clang := ""
	for _, c := range []string{"clang-14", "clang"} {
		if p, err := exec.LookPath(c); err == nil {
			clang = p
			break
		}
	}
	if clang == "" {
		if os.Getenv("KGEN_REQUIRE_TOOLS") == "1" {
			t.Fatal("clang not found and KGEN_REQUIRE_TOOLS=1")
		}
		t.Skip("clang not installed: the mock CUDA driver cannot be built (KGEN_REQUIRE_TOOLS=1 makes this fatal)")
	}
	lib := filepath.Join(t.TempDir(), "libcuda.so.1")
	if out, err := exec.Command(clang, "-shared", "-fPIC", "-O1", "-o", lib, "../rt/cuda/testdata/mockcuda.c").CombinedOutput(); err != nil {
		t.Fatalf("clang: %v\n%s", err, out)
	}
	t.Setenv(cuda.LibraryEnv, lib)
	gpus, note := probeGPUs(true)
	want := GPU{API: "cuda", Name: "kgen mock GPU (sm_90)", Arch: "sm_90", Units: 132, SharedBytes: 233472}
	if len(gpus) != 1 || gpus[0].API != want.API || gpus[0].Name != want.Name || gpus[0].Arch != want.Arch ||
		gpus[0].Units != want.Units || gpus[0].SharedBytes != want.SharedBytes || gpus[0].BandwidthGBs != 0 {
		t.Fatalf("gpus = %+v, want %+v", gpus, want)
	}
	if !strings.Contains(note, "bandwidth not measured: the events measured no time") || !strings.Contains(note, "1 CUDA device(s)") {
		t.Errorf("note = %q", note)
	}
}
