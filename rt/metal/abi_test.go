//go:build linux && (amd64 || arm64) && !kgen_nocuda

package metal

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// objcID and objcSEL have the kinds of purego/objc's ID and SEL (uintptr).
type (
	objcID  uintptr
	objcSEL uintptr
)

// sendAs binds sym the way purego/objc binds objc_msgSend: objc.ID.Send is
// func(ID, SEL, ...any) ID and objc.Send[T] is func(ID, SEL, ...any) T, the variadic any expanded
// by purego into C arguments by their dynamic types.
func sendAs[T any](t *testing.T, lib uintptr, sym string) func(objcID, objcSEL, ...any) T {
	t.Helper()
	p, err := purego.Dlsym(lib, sym)
	if err != nil {
		t.Fatal(err)
	}
	var fn func(objcID, objcSEL, ...any) T
	purego.RegisterFunc(&fn, p)
	return fn
}

// findClang returns clang-14 or clang from PATH, or "".
func findClang() string {
	for _, c := range []string{"clang-14", "clang"} {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	return ""
}

// The arguments and results rt/metal passes through objc_msgSend reach C functions with the IMP
// signatures of Apple's headers intact: two MTLSize by value, an MTLSize result, NSUInteger, BOOL,
// double and NSInteger results, a pointer to Go bytes, an NSError** out-parameter.
//
// On linux/amd64 the System V ABI is darwin/amd64's: a 24-byte MTLSize has class MEMORY and goes
// on the stack, a 24-byte result through a hidden pointer. On linux/arm64 (AAPCS64) a 24-byte
// MTLSize goes as a pointer to a caller's copy and a result through x8, as on Apple silicon, whose
// ABI differs from AAPCS64 only in ways these calls do not reach (variadic arguments, packing of
// stack arguments: every call here fits in x0..x7). Only the dispatch to the IMP differs on a Mac:
// objc_msgSend (and objc_msgSend_stret for the struct result on amd64) leaves the argument
// registers as they are. To run the arm64 case without an arm64 machine: cross-compile
// testdata/imps.c freestanding (clang --target=aarch64-linux-gnu -ffreestanding -fPIC -c, then
// ld.lld -shared), set KGEN_METAL_IMPS to it, and run the arm64 test binary with
// qemu-aarch64 -L <a sysroot holding Debian's libc6:arm64>.
func TestStructABI(t *testing.T) {
	so := os.Getenv("KGEN_METAL_IMPS") // a prebuilt imps.so, e.g. cross-compiled for a qemu run
	if so == "" {
		clang := findClang()
		if clang == "" {
			if os.Getenv("KGEN_REQUIRE_TOOLS") == "1" {
				t.Fatal("KGEN_REQUIRE_TOOLS=1 but clang is missing")
			}
			t.Skip("clang-14 (or clang) not found: testdata/imps.c cannot be built")
		}
		so = filepath.Join(t.TempDir(), "imps.so")
		if out, err := exec.Command(clang, "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-Wno-unused-parameter",
			"-o", so, filepath.Join("testdata", "imps.c")).CombinedOutput(); err != nil {
			t.Fatalf("clang: %v\n%s", err, out)
		}
	}
	lib, err := purego.Dlopen(so, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	var rec func(i int32) uint64
	var byteAt func(i int32) uint8
	purego.RegisterLibFunc(&rec, lib, "mock_rec")
	purego.RegisterLibFunc(&byteAt, lib, "mock_byte")
	recs := func(n int) []uint64 {
		r := make([]uint64, n)
		for i := range r {
			r[i] = rec(int32(i))
		}
		return r
	}
	equal := func(what string, got, want []uint64) {
		t.Helper()
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: recorded %v, want %v", what, got, want)
				return
			}
		}
	}

	grid, _ := SizeOf("grid", [3]int{65537, 3, 1}, 0)
	threads, _ := SizeOf("threads", [3]int{256, 2, 1}, 1)
	sendAs[objcID](t, lib, "imp_dispatch")(0x1000, 0x2000, grid, threads)
	equal("dispatchThreadgroups:threadsPerThreadgroup:", recs(8), []uint64{0x1000, 0x2000, 65537, 3, 1, 256, 2, 1})

	if got := sendAs[Size](t, lib, "imp_max_threads")(41, 98); got != (Size{Width: 42, Height: 100, Depth: 1024}) {
		t.Errorf("maxThreadsPerThreadgroup: got %+v, want {42 100 1024}", got)
	}

	arg := Value(uint32(0xA1B2C3D4))
	sendAs[objcID](t, lib, "imp_set_bytes")(0x30, 0x40, unsafe.Pointer(&arg[0]), uint64(len(arg)), uint64(3))
	equal("setBytes:length:atIndex:", recs(3), []uint64{0x30, 4, 3})
	if got := [4]uint8{byteAt(0), byteAt(1), byteAt(2), byteAt(3)}; got != [4]uint8{0xD4, 0xC3, 0xB2, 0xA1} {
		t.Errorf("setBytes: C saw bytes %x, want d4c3b2a1 (little-endian uint32)", got)
	}

	sendAs[objcID](t, lib, "imp_set_buffer")(0x50, 0x60, objcID(0xB0F), uint64(0), uint64(30))
	equal("setBuffer:offset:atIndex:", recs(4), []uint64{0x50, 0xB0F, 0, 30})

	if got := sendAs[float64](t, lib, "imp_gpu_time")(7, 0); got != 3.75 {
		t.Errorf("GPUStartTime: got %v, want 3.75", got)
	}

	setBool := sendAs[objcID](t, lib, "imp_set_bool")
	setBool(1, 2, false)
	if rec(0) != 3 {
		t.Errorf("setFastMathEnabled:NO: C saw %d, want 3 (false)", rec(0))
	}
	setBool(1, 2, true)
	if rec(0) != 7 {
		t.Errorf("setFastMathEnabled:YES: C saw %d, want 7 (true)", rec(0))
	}

	var nserr objcID
	if got := sendAs[objcID](t, lib, "imp_new_library")(1, 2, objcID(0xAAA), objcID(0xBBB), &nserr); got != 0 || nserr != 0x5eed {
		t.Errorf("newLibraryWithSource:options:error: returned %#x with error %#x, want 0 and 0x5eed", got, nserr)
	}
	equal("newLibraryWithSource:options:error:", recs(2), []uint64{0xAAA, 0xBBB})

	if got := sendAs[int](t, lib, "imp_code")(12, 0); got != -12 {
		t.Errorf("NSError code: got %d, want -12", got)
	}
	if got := CommandBufferStatus(sendAs[uint64](t, lib, "imp_status")(1, 2)); got != StatusError {
		t.Errorf("status: got %v, want %v", got, StatusError)
	}
}
