package ptx

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/rt/cuda/mockdriver"
)

// genPackage generates kernels.kdsl (the repository's) with -targets go,amd64,arm64,ptx:sm_80,sm_90a
// into a directory under testdata (inside the module, so it builds against this checkout) and
// returns the repository root and the package's path relative to it.
func genPackage(t *testing.T) (root, rel string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("testdata", "tmp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	pkg := filepath.Join(dir, "kernels")
	cmd := exec.Command("go", "run", "./cmd/kgen", "gen", "-targets", "go,amd64,arm64,ptx:sm_80,sm_90a",
		"-o", filepath.Join("codegen/ptx", pkg), "kernels.kdsl")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kgen gen: %v\n%s", err, out)
	}
	return root, "./" + filepath.ToSlash(filepath.Join("codegen/ptx", pkg))
}

func goCmd(t *testing.T, root string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%s go %s: %v\n%s", strings.Join(env, " "), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestGluePackage generates the repository's kernels with the PTX targets and checks, with
// CGO_ENABLED=0: that the package (ptx_cuda.go, ptx_cuda_test.go included) vets for linux/amd64
// (and, with KGEN_CROSS_VET=1 as in rt/cuda, linux/arm64, darwin/arm64 and windows/amd64); that without a driver OpenCUDA fails cleanly and
// every GPU test skips saying why; and, with rt/cuda's mock driver (built with clang), the launch
// sequence of every generated method (the mock test of testdata/glue_mock_test.go.txt).
func TestGluePackage(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and builds a package of 36 kernels")
	}
	root, pkg := genPackage(t)
	sameBoundsChecks(t, filepath.Join(root, filepath.FromSlash(pkg)))
	nocgo := []string{"CGO_ENABLED=0"}
	platforms := []string{"linux/amd64"}
	if os.Getenv("KGEN_CROSS_VET") == "1" {
		platforms = append(platforms, "linux/arm64", "darwin/arm64", "windows/amd64")
	} else {
		t.Log("vetting for linux/amd64 only; KGEN_CROSS_VET=1 adds linux/arm64, darwin/arm64, windows/amd64")
	}
	for _, p := range platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		goCmd(t, root, append(nocgo, "GOOS="+goos, "GOARCH="+goarch), "vet", pkg)
	}
	if t.Failed() {
		return
	}
	// Without a driver (an absent library named explicitly: the machine may have one).
	out := goCmd(t, root, append(nocgo, "KGEN_CUDA_LIBRARY=/nonexistent/libcuda.so.1"), "test", "-count=1", "-v", "-run", "^TestCUDA(Sgemm|Softmax|Hgemm)$", pkg)
	if n := strings.Count(out, "no usable GPU: kernels: OpenCUDA: cuda: no CUDA driver"); n != 3 {
		t.Errorf("without a driver: %d tests skipped naming the missing driver, want 3:\n%s", n, out)
	}
	if strings.Contains(out, "--- FAIL") || strings.Contains(out, "panic") {
		t.Errorf("without a driver:\n%s", out)
	}
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skip("the mock driver is a Linux shared library")
	}
	lib := mockdriver.Build(t)
	src, err := os.ReadFile(filepath.Join("testdata", "glue_mock_test.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(root, filepath.FromSlash(pkg), "ptx_mock_test.go")
	if err := os.WriteFile(dst, []byte(strings.Replace(string(src), "package PKG", "package kernels", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out = goCmd(t, root, append(nocgo, "KGEN_MOCK_LIB="+lib), "test", "-count=1", "-v", "-run", "^TestMockGlue", pkg)
	for _, name := range []string{"TestMockGlueOpen", "TestMockGlueLaunches", "TestMockGlueSameErrors"} {
		if !strings.Contains(out, "--- PASS: "+name) {
			t.Errorf("%s did not pass:\n%s", name, out)
		}
	}
}

// sameBoundsChecks checks that every affine bounds check of ptx_cuda.go is, word for word, one the
// go backend wrote into a CPU wrapper (boundsChecks mirrors it), and that there are some (the
// pooling and convolution kernels of kernels.kdsl have them).
func sameBoundsChecks(t *testing.T, dir string) {
	t.Helper()
	glue, err := os.ReadFile(filepath.Join(dir, "ptx_cuda.go"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var cpu strings.Builder
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "ptx_") || strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cpu.Write(b)
	}
	n := 0
	for _, l := range strings.Split(string(glue), "\n") {
		if l = strings.TrimSpace(l); strings.Contains(l, "rt.Within(") || strings.Contains(l, "reaches outside dim") {
			n++
			if !strings.Contains(cpu.String(), l) {
				t.Errorf("ptx_cuda.go checks %q, which no CPU wrapper does", l)
			}
		}
	}
	if n < 4 {
		t.Errorf("ptx_cuda.go has %d bounds-check lines, want the pooling and convolution kernels'", n)
	}
}
