package gpuprobe

import (
	"github.com/kgen-dev/kgen/probe"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/rt/cuda"
	"github.com/kgen-dev/kgen/rt/cuda/mockdriver"
)

// TestGPUMock runs CUDA against rt/cuda's mock driver (package mockdriver builds it): the
// device's name, architecture, SM count and shared memory come through; the mock's events measure no
// time for a memset or the mma kernel, so the bandwidth and peak are left out and the note says so. Without a driver at all the
// list is empty and the note says why.
func TestGPUMock(t *testing.T) {
	t.Setenv(cuda.LibraryEnv, filepath.Join(t.TempDir(), "nosuch.so"))
	if gpus, note := CUDA(true); len(gpus) != 0 || !strings.Contains(note, "no CUDA GPU") {
		t.Errorf("no driver: %v, %q", gpus, note)
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the mock driver is built for linux/amd64")
	}
	lib := mockdriver.Build(t)
	t.Setenv(cuda.LibraryEnv, lib)
	gpus, note := CUDA(true)
	want := probe.GPU{API: "cuda", Name: "kgen mock GPU (sm_90)", Arch: "sm_90", Units: 132, SharedBytes: 233472, SharedPerBlock: 232448}
	if len(gpus) != 1 || gpus[0].API != want.API || gpus[0].Name != want.Name || gpus[0].Arch != want.Arch ||
		gpus[0].Units != want.Units || gpus[0].SharedBytes != want.SharedBytes || gpus[0].SharedPerBlock != want.SharedPerBlock ||
		gpus[0].BandwidthGBs != 0 || gpus[0].CopyGBs <= 0 || gpus[0].PeakTFLOPs["mma.m16n8k16/bf16"] <= 0 {
		t.Fatalf("gpus = %+v, want %+v", gpus, want)
	}
	if gpus[0].Class() != "cuda-sm90-132sm" {
		t.Errorf("class %q, want cuda-sm90-132sm", gpus[0].Class())
	}
	// The copy and mma peak kernels load and launch on the mock (their PTX is only stored there; the
	// events count calls, so the figures are positive and meaningless); a memset between two events
	// measures no time there, so the write bandwidth is left out and the note says so.
	for _, w := range []string{"bandwidth not measured: the events measured no time", "1 CUDA device(s)"} {
		if !strings.Contains(note, w) {
			t.Errorf("note = %q, want it to say %q", note, w)
		}
	}
	if strings.Contains(note, "mma peak not measured") || strings.Contains(note, "copy bandwidth not measured") {
		t.Errorf("note = %q", note)
	}
}
