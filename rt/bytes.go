package rt

import "unsafe"

// Scalar is the element types that device buffers (rt/cuda, rt/metal) hold as their in-memory bytes
// (uint16 carries f16 and bf16 bits; ~ admits named types such as f16.F16).
type Scalar interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// Bytes views s as its in-memory bytes, without copying: nil for an empty slice.
func Bytes[T Scalar](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}
