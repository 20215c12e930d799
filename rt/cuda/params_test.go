package cuda

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"unsafe"
)

// read returns n bytes at the address cuLaunchKernel would read for parameter i.
func (p *params) read(i, n int) []byte {
	base := uintptr(unsafe.Pointer(&p.arena[0]))
	off := int(p.ptrs[i] - base)
	return p.arena[off : off+n]
}

func TestPackParams(t *testing.T) {
	tm := make([]byte, 128)
	for i := range tm {
		tm[i] = byte(i * 7)
	}
	args := []any{int8(-3), DevicePtr(0x1122334455667788), int32(-5), uint16(0xBEEF), float32(1.5),
		Raw{Bytes: tm, Align: 64}, float64(-2.25), uint64(1 << 40), int16(-2), uint32(7), int64(-9), uint8(200)}
	p, err := packParams(args)
	if err != nil {
		t.Fatal(err)
	}
	ne := binary.NativeEndian
	want := [][]byte{
		{0xFD}, ne.AppendUint64(nil, 0x1122334455667788), ne.AppendUint32(nil, math.MaxUint32-4),
		ne.AppendUint16(nil, 0xBEEF), ne.AppendUint32(nil, math.Float32bits(1.5)), tm,
		ne.AppendUint64(nil, math.Float64bits(-2.25)), ne.AppendUint64(nil, 1<<40),
		ne.AppendUint16(nil, 0xFFFE), ne.AppendUint32(nil, 7), ne.AppendUint64(nil, math.MaxUint64-8), {200},
	}
	aligns := []uintptr{1, 8, 4, 2, 4, 64, 8, 8, 2, 4, 8, 1}
	for i := range args {
		if got := p.read(i, len(want[i])); string(got) != string(want[i]) {
			t.Errorf("param %d (%T): bytes % x, want % x", i, args[i], got, want[i])
		}
		if p.ptrs[i]%aligns[i] != 0 {
			t.Errorf("param %d (%T) at %#x: not %d-aligned", i, args[i], p.ptrs[i], aligns[i])
		}
		if i > 0 && p.ptrs[i] < p.ptrs[i-1]+uintptr(len(want[i-1])) {
			t.Errorf("param %d overlaps param %d", i, i-1)
		}
	}
}

type half uint16
type count int32
type wide float64
type size int

// Named types pass as their underlying fixed-width kind (f16.F16 is a uint16, a .b16 parameter).
func TestPackParamsNamedTypes(t *testing.T) {
	p, err := packParams([]any{half(0x3C00), count(-2), wide(0.5), int8(1)})
	if err != nil {
		t.Fatal(err)
	}
	ne := binary.NativeEndian
	for i, want := range [][]byte{ne.AppendUint16(nil, 0x3C00), ne.AppendUint32(nil, 0xFFFFFFFE), ne.AppendUint64(nil, math.Float64bits(0.5))} {
		if got := p.read(i, len(want)); string(got) != string(want) {
			t.Errorf("param %d: % x, want % x", i, got, want)
		}
	}
	if _, err := packParams([]any{size(3)}); err == nil || !strings.Contains(err.Error(), "cuda.size has no fixed width") {
		t.Errorf("packParams(named int) = %v", err)
	}
}

func TestPackParamsRefuses(t *testing.T) {
	freed := &Buffer{freed: true}
	for _, c := range []struct {
		arg  any
		want string
	}{
		{int(1), "no fixed width"},
		{uint(1), "no fixed width"},
		{[]float32{1}, "unsupported kernel parameter type []float32"},
		{Raw{Bytes: []byte{1}, Align: 3}, "power of two"},
		{Raw{}, "empty Raw"},
		{freed, ErrClosed.Error()},
		{(*Buffer)(nil), "nil *Buffer"},
	} {
		_, err := packParams([]any{int32(0), c.arg})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "argument 1") {
			t.Errorf("packParams(%T) = %v, want error with %q", c.arg, err, c.want)
		}
	}
	p, err := packParams(nil)
	if err != nil || len(p.ptrs) != 0 {
		t.Errorf("packParams(nil) = %v, %v", p, err)
	}
	if r := p.call(func(kp *uintptr) int32 {
		if kp != nil {
			return 1
		}
		return 0
	}); r != 0 {
		t.Error("no arguments must pass a null kernelParams")
	}
}
