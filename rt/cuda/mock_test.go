//go:build linux && (amd64 || arm64) && !kgen_nocuda

package cuda

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// mockLib is testdata/mockcuda.c built as a libcuda.so.1, plus its test hooks.
type mockLib struct {
	path        string
	fail        func(name string, code int32)
	reset       func()
	get         func(key string) int64
	launchParam func(i int32, out unsafe.Pointer, cap int32) int32
	lastPTX     func(out unsafe.Pointer, cap int32) int32
}

var (
	mockOnce sync.Once
	mockLibV *mockLib
	mockSkip string
	mockErr  error
)

// findClang returns clang-14 or clang from PATH, or "".
func findClang() string {
	for _, c := range []string{"clang-14", "clang"} {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	return ""
}

// buildMock compiles testdata/mockcuda.c with the given -D flags into t.TempDir()/libcuda.so.1.
// The caller has checked that clang exists.
func buildMock(t *testing.T, defines ...string) (string, error) {
	path := filepath.Join(t.TempDir(), "libcuda.so.1")
	args := append([]string{"-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-Wno-unused-parameter", "-o", path}, defines...)
	out, err := exec.Command(findClang(), append(args, filepath.Join("testdata", "mockcuda.c"))...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("clang: %v\n%s", err, out)
	}
	return path, nil
}

// mockDriver builds the mock driver once per test process (into the first caller's TempDir: the
// library stays mapped after the directory is removed), resets its state, and opens it through
// Open with LibraryEnv naming it, the path generated code takes.
func mockDriver(t *testing.T) (*Driver, *mockLib) {
	t.Helper()
	mockOnce.Do(func() {
		clang := findClang()
		if clang == "" {
			mockSkip = "clang-14 (or clang) not found: the mock CUDA driver cannot be built"
			return
		}
		path, err := buildMock(t)
		if err != nil {
			mockErr = err
			return
		}
		h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			mockErr = err
			return
		}
		m := &mockLib{path: path}
		for name, fn := range map[string]any{"mock_fail": &m.fail, "mock_reset": &m.reset, "mock_get": &m.get,
			"mock_launch_param": &m.launchParam, "mock_last_ptx": &m.lastPTX} {
			purego.RegisterLibFunc(fn, h, name)
		}
		mockLibV = m
	})
	if mockErr != nil {
		t.Fatalf("building/loading the mock driver: %v", mockErr)
	}
	if mockLibV == nil {
		if os.Getenv("KGEN_REQUIRE_TOOLS") == "1" {
			t.Fatalf("KGEN_REQUIRE_TOOLS=1: %s", mockSkip)
		}
		t.Skip(mockSkip)
	}
	m := mockLibV
	m.reset()
	t.Setenv(LibraryEnv, m.path)
	d, err := Open()
	if err != nil {
		t.Fatalf("Open(mock): %v", err)
	}
	return d, m
}

// param returns the bytes the mock's cuLaunchKernel read for parameter i of the last launch.
func (m *mockLib) param(t *testing.T, i int) []byte {
	t.Helper()
	buf := make([]byte, 256)
	n := m.launchParam(int32(i), unsafe.Pointer(&buf[0]), int32(len(buf)))
	if n < 0 {
		t.Fatalf("the last launch has no parameter %d", i)
	}
	return buf[:n]
}

// ptx returns the PTX text the mock's cuModuleLoadDataEx last received.
func (m *mockLib) ptx() string {
	buf := make([]byte, 1<<16)
	n := m.lastPTX(unsafe.Pointer(&buf[0]), int32(len(buf)))
	if n < 0 {
		return ""
	}
	return string(buf[:min(int(n), len(buf))])
}

// check fails the test if the mock's counter key is not want.
func (m *mockLib) check(t *testing.T, key string, want int64) {
	t.Helper()
	if got := m.get(key); got != want {
		t.Errorf("mock %s = %d, want %d", key, got, want)
	}
}
