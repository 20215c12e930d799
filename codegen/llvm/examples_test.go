package llvm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// examplePackage generates kernels.kdsl as package "kernels" (the names the examples call) and
// compiles it to kernels.o with opt -O3 and llc -O3; it returns the directory holding kernels.h and
// kernels.o.
func examplePackage(t *testing.T) string {
	t.Helper()
	opt, llc := tool(t, "opt", "opt-14"), tool(t, "llc", "llc-14")
	p := library(t)
	p.Name = "kernels"
	files, err := Backend{}.Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, dir, opt, "-O3", "kernels.ll", "-o", "kernels.bc")
	run(t, dir, llc, "-O3", "-relocation-model=pic", "-filetype=obj", "kernels.bc", "-o", "kernels.o")
	return dir
}

// TestExamples builds examples/c (clang) and examples/fortran (gfortran, bind(C)) against the generated
// kernels and runs them: each checks sgemm (and saxpy) against its own reference and exits nonzero
// on a mismatch.
func TestExamples(t *testing.T) {
	clang, gfortran := tool(t, "clang-14", "clang"), tool(t, "gfortran")
	dir := examplePackage(t)
	src, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	run(t, dir, clang, "-O2", "-I", dir, filepath.Join(src, "c", "main.c"), "kernels.o", "-lm", "-o", "cexample")
	if out := string(run(t, dir, "./cexample")); !strings.HasPrefix(out, "ok") {
		t.Errorf("C example: %s", out)
	}
	run(t, dir, gfortran, "-O2", "-J", dir, filepath.Join(src, "fortran", "main.f90"), "kernels.o", "-lm", "-o", "fexample")
	if out := string(run(t, dir, "./fexample")); !strings.HasPrefix(strings.TrimSpace(out), "ok") {
		t.Errorf("Fortran example: %s", out)
	}
}
