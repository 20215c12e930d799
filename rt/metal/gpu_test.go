package metal

import (
	_ "embed"
	"errors"
	"os"
	"strings"
	"testing"
)

// vaddMSL is embedded so that a test binary built with `go test -c` runs anywhere without testdata.
//
//go:embed testdata/vadd.metal
var vaddMSL string

// gpuDevice opens the system's Metal device. Without one (any system but macOS with a GPU) it
// skips, saying why, unless KGEN_REQUIRE_GPU=1, where it fails.
func gpuDevice(tb testing.TB) *Device {
	tb.Helper()
	d, err := Open()
	if IsNoDevice(err) {
		if os.Getenv("KGEN_REQUIRE_GPU") == "1" {
			tb.Fatalf("KGEN_REQUIRE_GPU=1 but no Metal device: %v", err)
		}
		tb.Skipf("no Metal device: %s", strings.TrimPrefix(err.Error(), ErrNoDevice.Error()+": "))
	}
	if err != nil {
		tb.Fatalf("Metal is present but Open failed: %v", err)
	}
	tb.Cleanup(func() { d.Close() })
	return d
}

// On a Mac: the MSL source compiles at run time for Metal 3.0 and 3.1, vadd runs on ragged sizes
// and is exact, a broken source comes back as MTLLibraryErrorCompileFailure with the compiler's
// message, a missing function is an error naming it, and GPU timestamps are ordered.
func TestGPUVectorAdd(t *testing.T) {
	d := gpuDevice(t)
	inf := d.Info()
	t.Logf("%s: maxThreadsPerThreadgroup %v, threadgroup memory %d B, max buffer %d MiB, working set %d MiB, unified %v",
		inf.Name, inf.MaxThreadsPerThreadgroup, inf.MaxThreadgroupMemoryLength, inf.MaxBufferLength>>20,
		inf.RecommendedMaxWorkingSetSize>>20, inf.HasUnifiedMemory)
	for _, v := range []LanguageVersion{Metal30, Metal31} {
		lib, err := d.Compile(vaddMSL, v)
		if err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		fn, err := lib.Function("vadd")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: vadd maxTotalThreadsPerThreadgroup %d, threadExecutionWidth %d, warnings %q",
			v, fn.Info().MaxTotalThreadsPerThreadgroup, fn.Info().ThreadExecutionWidth, lib.Warnings())
		checkVadd(t, d, fn)
		if _, err := lib.Function("no_such_kernel"); err == nil || !strings.Contains(err.Error(), "no_such_kernel") {
			t.Errorf("Function(no_such_kernel) = %v, want an error naming it", err)
		}
		x, _ := NewBufferFrom(d, []float32{1})
		tm, err := fn.DispatchTimed([3]int{1, 1, 1}, [3]int{32, 1, 1}, x, x, x, Value(uint32(1)))
		if err != nil || tm.GPUStart <= 0 || tm.GPUEnd < tm.GPUStart {
			t.Errorf("DispatchTimed = %+v, %v: want 0 < GPUStart <= GPUEnd", tm, err)
		}
		x.Free()
		fn.Close()
		lib.Close()
	}

	_, err := d.Compile("kernel void broken(device float *p [[buffer(0)]]) { p[0] = undeclared; }", Metal30)
	var me *Error
	if !errors.As(err, &me) || me.Domain != LibraryErrorDomain || me.Code != 3 || !strings.Contains(me.Description, "undeclared") {
		t.Errorf("Compile(broken) = %#v, want MTLLibraryErrorCompileFailure naming 'undeclared'", err)
	}
}
