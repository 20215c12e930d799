package cuda

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A library that does not exist is ErrNoDriver, with the path in the message, never a panic.
func TestOpenMissingLibrary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "libcuda-does-not-exist.so.1")
	_, err := OpenLibrary(path)
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("OpenLibrary(%s) = %v, want ErrNoDriver", path, err)
	}
	if supported && !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the library", err)
	}
	if !IsNoDevice(err) {
		t.Errorf("IsNoDevice(%v) = false", err)
	}
	t.Setenv(LibraryEnv, path)
	if _, err := Open(); !errors.Is(err, ErrNoDriver) {
		t.Fatalf("Open with %s=%s: %v, want ErrNoDriver", LibraryEnv, path, err)
	}
}

// A library that exists but is not a CUDA driver lacks cuInit: ErrNoDriver naming the symbol.
func TestOpenNotADriver(t *testing.T) {
	if runtime.GOOS != "linux" || !supported {
		t.Skip("needs a Linux shared library without CUDA symbols")
	}
	_, err := OpenLibrary("libc.so.6")
	if !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "cuInit") {
		t.Fatalf("OpenLibrary(libc.so.6) = %v, want ErrNoDriver naming cuInit", err)
	}
}

func TestResultError(t *testing.T) {
	for _, c := range []struct {
		r    Result
		want string
	}{
		{ErrorNoDevice, "CUDA_ERROR_NO_DEVICE (100)"},
		{ErrorInvalidPTX, "CUDA_ERROR_INVALID_PTX (218)"},
		{ErrorUnsupportedPTXVersion, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222)"},
		{Result(4242), "CUDA_ERROR_4242 (4242)"},
	} {
		if got := c.r.Error(); got != c.want {
			t.Errorf("Result(%d).Error() = %q, want %q", int32(c.r), got, c.want)
		}
	}
	err := check("cuInit", 100)
	if !errors.Is(err, ErrorNoDevice) || !IsNoDevice(err) || err.Error() != "cuda: cuInit: CUDA_ERROR_NO_DEVICE (100)" {
		t.Errorf("check(cuInit, 100) = %v", err)
	}
	if check("x", 0) != nil {
		t.Error("check(x, 0) != nil")
	}
}

// The package builds and vets without cgo on every platform kgen's generated packages target.
func TestCrossVet(t *testing.T) {
	if os.Getenv("KGEN_CROSS_VET") != "1" {
		t.Skip("set KGEN_CROSS_VET=1 to vet for every platform (a cold cache compiles the standard library for each: minutes); scripts/test.sh does the same in its cross-builds step")
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		t.Skipf("no go command at %s", gobin)
	}
	for _, p := range []string{"linux/amd64", "linux/arm64", "darwin/arm64", "windows/amd64"} {
		goos, goarch, _ := strings.Cut(p, "/")
		cmd := exec.Command(gobin, "vet", ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("CGO_ENABLED=0 GOOS=%s GOARCH=%s go vet: %v\n%s", goos, goarch, err, out)
		}
	}
}
