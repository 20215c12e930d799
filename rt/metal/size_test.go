package metal

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// Size has MTLSize's C layout: three 8-byte NSUInteger at offsets 0, 8, 16.
func TestSizeLayout(t *testing.T) {
	var s Size
	if unsafe.Sizeof(s) != 24 || unsafe.Offsetof(s.Width) != 0 || unsafe.Offsetof(s.Height) != 8 || unsafe.Offsetof(s.Depth) != 16 {
		t.Errorf("Size: size %d, offsets %d %d %d; want 24, 0 8 16",
			unsafe.Sizeof(s), unsafe.Offsetof(s.Width), unsafe.Offsetof(s.Height), unsafe.Offsetof(s.Depth))
	}
	if n, ok := (Size{Width: 3, Height: 5, Depth: 7}).Count(); n != 105 || !ok {
		t.Errorf("Count = %d, %v", n, ok)
	}
	if _, ok := (Size{Width: math.MaxUint32 + 1, Height: math.MaxUint32 + 1, Depth: 1}).Count(); ok {
		t.Error("Count of 2^64 did not report overflow")
	}
	if n, ok := (Size{Width: 0, Height: math.MaxUint64, Depth: 2}).Count(); n != 0 || !ok {
		t.Errorf("Count with a zero = %d, %v", n, ok)
	}
	if _, err := SizeOf("grid", [3]int{1, 1, 0}, 1); err == nil || err.Error() != "metal: grid [1 1 0]: component 2 is 0, want >= 1" {
		t.Errorf("SizeOf error = %v", err)
	}
	// MTLLanguageVersion3_0 = (3 << 16) + 0 = 196608, 3_1 = 196609 (MTLLibrary.h).
	if Metal30 != 196608 || Metal31 != 196609 || Metal31.String() != "Metal 3.1" {
		t.Errorf("language versions %d %d %q", Metal30, Metal31, Metal31)
	}
}

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		e    *Error
		want string
	}{
		{&Error{Op: "commit (status MTLCommandBufferStatusError)", Domain: CommandBufferErrorDomain, Code: 3, Description: "Caused GPU Address Fault Error"},
			"metal: commit (status MTLCommandBufferStatusError): MTLCommandBufferErrorPageFault (3): Caused GPU Address Fault Error"},
		{&Error{Op: "newComputePipelineStateWithFunction:error:", Domain: "AGXMetalG14X", Code: 2}, "metal: newComputePipelineStateWithFunction:error:: AGXMetalG14X 2"},
		{&Error{Op: "newCommandQueue", Description: "returned nil"}, "metal: newCommandQueue: returned nil"},
		{&Error{Op: "x", Domain: LibraryErrorDomain, Code: 42, Description: "d"}, "metal: x: MTLLibraryErrorDomain 42: d"},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
	}
	if StatusCompleted.String() != "MTLCommandBufferStatusCompleted" || CommandBufferStatus(9).String() != "MTLCommandBufferStatus(9)" {
		t.Errorf("status names: %v %v", StatusCompleted, CommandBufferStatus(9))
	}
}

// Where Metal cannot exist, Open says so with ErrNoDevice and the reason.
func TestOpenNoDevice(t *testing.T) {
	if supported {
		t.Skip("this build supports Metal; TestGPUVectorAdd covers Open")
	}
	_, err := Open()
	if !errors.Is(err, ErrNoDevice) || !IsNoDevice(err) || !strings.Contains(err.Error(), runtime.GOOS) && !strings.Contains(err.Error(), "kgen_nometal") {
		t.Errorf("Open() = %v, want ErrNoDevice naming the reason", err)
	}
}
