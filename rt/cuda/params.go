package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"unsafe"
)

// Raw is a kernel parameter passed as its bytes, for structs such as the 128-byte CUtensorMap of a
// TMA kernel (declared in PTX as .param .align 64 .b8 name[128]). Align is the alignment of the
// host copy in bytes: a power of two up to 128, 0 meaning 8.
type Raw struct {
	Bytes []byte
	Align int
}

// params is a kernel's argument list laid out the way cuLaunchKernel reads it: ptrs[i] is the
// address of argument i's bytes inside arena. The arena is pinned while a launch reads it.
type params struct {
	arena []byte
	ptrs  []uintptr
	sizes []int // bytes of each argument
	args  []any
}

// paramBytes returns the bytes of one argument as the PTX parameter expects them (host byte
// order) and their alignment. Named types count by their underlying kind (f16.F16 is a .b16).
// Go's int, uint and uintptr are refused because their width would silently
// decide the PTX parameter type: pass int32 or int64 to say which.
func paramBytes(i int, v any) ([]byte, int, error) {
	ne := binary.NativeEndian
	switch x := v.(type) {
	case *Buffer:
		if err := x.live(); err != nil {
			return nil, 0, fmt.Errorf("cuda: argument %d: %w", i, err)
		}
		return ne.AppendUint64(nil, uint64(x.ptr)), 8, nil
	case DevicePtr:
		return ne.AppendUint64(nil, uint64(x)), 8, nil
	case int8:
		return []byte{byte(x)}, 1, nil
	case uint8:
		return []byte{x}, 1, nil
	case int16:
		return ne.AppendUint16(nil, uint16(x)), 2, nil
	case uint16:
		return ne.AppendUint16(nil, x), 2, nil
	case int32:
		return ne.AppendUint32(nil, uint32(x)), 4, nil
	case uint32:
		return ne.AppendUint32(nil, x), 4, nil
	case float32:
		return ne.AppendUint32(nil, math.Float32bits(x)), 4, nil
	case int64:
		return ne.AppendUint64(nil, uint64(x)), 8, nil
	case uint64:
		return ne.AppendUint64(nil, x), 8, nil
	case float64:
		return ne.AppendUint64(nil, math.Float64bits(x)), 8, nil
	case TensorMap:
		return x[:], 64, nil
	case *TensorMap:
		if x == nil {
			return nil, 0, fmt.Errorf("cuda: argument %d: nil *TensorMap", i)
		}
		return x[:], 64, nil
	case Raw:
		al := x.Align
		if al == 0 {
			al = 8
		}
		if al < 0 || al > 128 || al&(al-1) != 0 {
			return nil, 0, fmt.Errorf("cuda: argument %d: Raw alignment %d is not a power of two ≤ 128", i, x.Align)
		}
		if len(x.Bytes) == 0 {
			return nil, 0, fmt.Errorf("cuda: argument %d: empty Raw parameter", i)
		}
		return x.Bytes, al, nil
	}
	// Named types (f16.F16, f16.BF16, enums) by their underlying fixed-width kind.
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return uintBytes(uint64(rv.Int()), int(rv.Type().Size()))
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return uintBytes(rv.Uint(), int(rv.Type().Size()))
	case reflect.Float32:
		return ne.AppendUint32(nil, math.Float32bits(float32(rv.Float()))), 4, nil
	case reflect.Float64:
		return ne.AppendUint64(nil, math.Float64bits(rv.Float())), 8, nil
	case reflect.Int, reflect.Uint, reflect.Uintptr:
		return nil, 0, fmt.Errorf("cuda: argument %d: %T has no fixed width; pass int32/uint32 or int64/uint64 to match the PTX parameter", i, v)
	}
	return nil, 0, fmt.Errorf("cuda: argument %d: unsupported kernel parameter type %T", i, v)
}

// uintBytes returns the low n bytes of x in host order, aligned to n.
func uintBytes(x uint64, n int) ([]byte, int, error) {
	b := binary.NativeEndian.AppendUint64(nil, x)
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 { // big-endian host: the low bytes are last
		b = b[8-n:]
	}
	return b[:n], n, nil
}

// packParams lays out args for cuLaunchKernel. It fails, touching nothing, on an argument of an
// unsupported type or a freed Buffer.
func packParams(args []any) (*params, error) {
	type item struct {
		b   []byte
		off int
	}
	items := make([]item, len(args))
	size := 0
	for i, v := range args {
		b, al, err := paramBytes(i, v)
		if err != nil {
			return nil, err
		}
		size = (size + al - 1) &^ (al - 1)
		items[i] = item{b, size}
		size += len(b)
	}
	const maxAlign = 128
	p := &params{arena: make([]byte, size+maxAlign), ptrs: make([]uintptr, len(args)), sizes: make([]int, len(args)), args: args}
	base := int((maxAlign - uintptr(unsafe.Pointer(&p.arena[0]))%maxAlign) % maxAlign)
	for i, it := range items {
		copy(p.arena[base+it.off:], it.b)
		p.sizes[i] = len(it.b)
		p.ptrs[i] = uintptr(unsafe.Pointer(&p.arena[base+it.off]))
	}
	return p, nil
}

// call passes the parameter array to f (as cuLaunchKernel's kernelParams), keeping the arena pinned
// and alive until f returns. With no arguments it passes a null array.
func (p *params) call(f func(kernelParams *uintptr) int32) int32 {
	if len(p.ptrs) == 0 {
		return f(nil)
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&p.arena[0])
	r := f(&p.ptrs[0])
	runtime.KeepAlive(p)
	return r
}
