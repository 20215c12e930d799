// Package mockdriver builds rt/cuda's mock CUDA driver (rt/cuda/testdata/mockcuda.c) for the tests of
// other packages: the code that drives rt/cuda (generated PTX glue, the machine probe) is checked
// against it without a GPU.
package mockdriver

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Build compiles the mock with clang-14 (or clang) into t's temporary directory and returns the path
// of the libcuda.so.1 it made; point cuda.LibraryEnv at it. Without clang the test is skipped, or
// fails when KGEN_REQUIRE_TOOLS=1.
func Build(t testing.TB) string {
	t.Helper()
	clang := ""
	for _, c := range []string{"clang-14", "clang"} {
		if p, err := exec.LookPath(c); err == nil {
			clang = p
			break
		}
	}
	if clang == "" {
		if os.Getenv("KGEN_REQUIRE_TOOLS") == "1" {
			t.Fatal("KGEN_REQUIRE_TOOLS=1: clang-14 (or clang) not found: the mock CUDA driver cannot be built")
		}
		t.Skip("clang-14 (or clang) not found: the mock CUDA driver cannot be built")
	}
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("mockdriver: cannot locate its source")
	}
	src := filepath.Join(filepath.Dir(self), "..", "testdata", "mockcuda.c")
	lib := filepath.Join(t.TempDir(), "libcuda.so.1")
	out, err := exec.Command(clang, "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-Wno-unused-parameter", "-o", lib, src).CombinedOutput()
	if err != nil {
		t.Fatalf("clang: %v\n%s", err, out)
	}
	return lib
}
