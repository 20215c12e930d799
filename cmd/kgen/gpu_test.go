package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestGoldenGPUIR pins what `kgen ir -target T` prints for the GPU targets (issue 9's first done-when):
// launches with grid and block (or warp) loops, shared staging with async copies and barriers, and a
// warp-scope MMA for the f16-in/f32-accumulate GEMM
// (and a simdgroup one for Metal's f32 GEMM; f32 GEMMs on PTX run exact thread register tiles). Beyond the golden text, each output must contain
// those constructs, so an -update that loses one fails.
func TestGoldenGPUIR(t *testing.T) {
	for _, c := range []struct {
		target, kernel, file string
		want                 []string
	}{
		{"ptx:sm_80", "sgemm", "../../kernels.kdsl", []string{"launch sgemm_0", "gpu.grid", "gpu.block", "alloc shared", "async group", "async.commit", "async.wait", "barrier block", "thread = 0", "mma %acc"}},
		{"ptx:sm_80", "hgemm_bias_gelu", "../../passes/testdata/mma.kdsl", []string{"launch hgemm_bias_gelu_0", "gpu.grid", "gpu.warp", "gpu.thread", "alloc shared", "async group", "async.commit", "async.wait", "barrier block", "warp sm80.m16n8k16", "mma %acc", "tanh"}},
		{"ptx:sm_80", "softmax", "../../kernels.kdsl", []string{"launch softmax_0", "gpu.grid", "gpu.warp", "gpu.thread", "alloc shared", "warp.reduce max %acc", "warp.reduce + %acc2", "barrier block"}},
		{"msl", "sgemm", "../../kernels.kdsl", []string{"launch sgemm_0", "gpu.grid", "gpu.warp", "gpu.thread", "simdgroup metal.simdgroup8x8", "alloc shared", "async group", "async.commit", "async.wait", "barrier block", "mma %acc"}},
	} {
		code, out, errOut := runKgen("ir", "-target", c.target, "-kernel", c.kernel, c.file)
		if code != 0 {
			t.Fatalf("%s %s: %s", c.target, c.kernel, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s %s: output lacks %q", c.target, c.kernel, w)
			}
		}
		checkGolden(t, filepath.Join("testdata", c.kernel+"."+strings.ReplaceAll(c.target, ":", "_")+".ir.golden"), out)
	}
}
