package msl

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.metal from the emitter (read them before committing)")

// TestGolden pins the emitted MSL of three kernels that show every construct of the lowering: an
// elementwise kernel (saxpy), a row reduction with threadgroup memory and barriers (softmax) and a
// staged simdgroup GEMM with a beta epilogue (sgemm). The files were read by a person; the CPU runs
// (TestKernelsRunOnCPU) check what they compute.
func TestGolden(t *testing.T) {
	p := compilePackage(t, "kernels.kdsl", libraryText(t), "msl:3.1")
	src, err := BuildSource(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range []string{"saxpy_0", "softmax_0", "sgemm_0"} {
		got := kernelText(t, src.Text, fn)
		path := filepath.Join("testdata", "golden", fn+".metal")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -run TestGolden -update)", err)
		}
		if got != string(want) {
			t.Errorf("%s differs from %s (go test -run TestGolden -update rewrites it):\n%s", fn, path, got)
		}
	}
}
