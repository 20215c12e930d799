package llvm

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestExamples builds examples/c (clang) and examples/fortran (gfortran, bind(C)) against the generated
// kernels and runs them: each checks sgemm (and saxpy) against its own reference and exits nonzero
// on a mismatch.
func TestExamples(t *testing.T) {
	clang, gfortran := tool(t, "clang-14", "clang"), tool(t, "gfortran")
	_, lib := compiled(t)
	dir := t.TempDir()
	obj := filepath.Join(lib, "kernels.o")
	src, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	run(t, dir, clang, "-O2", "-I", lib, filepath.Join(src, "c", "main.c"), obj, "-lm", "-o", "cexample")
	if out := string(run(t, dir, "./cexample")); !strings.HasPrefix(out, "ok") {
		t.Errorf("C example: %s", out)
	}
	run(t, dir, gfortran, "-O2", "-J", dir, filepath.Join(src, "fortran", "main.f90"), obj, "-lm", "-o", "fexample")
	if out := string(run(t, dir, "./fexample")); !strings.HasPrefix(strings.TrimSpace(out), "ok") {
		t.Errorf("Fortran example: %s", out)
	}
}
