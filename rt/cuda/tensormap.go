package cuda

import (
	"fmt"
	"unsafe"
)

// TensorMap is a CUtensorMap: the 128-byte TMA descriptor cp.async.bulk.tensor reads. Pass it to
// Launch by value (declared in PTX as .param .align 64 .b8 name[128]).
type TensorMap [128]byte

// TensorMapDataType is a CUtensorMapDataType (cuda.h).
type TensorMapDataType int32

const (
	TensorUint8    TensorMapDataType = 0
	TensorUint16   TensorMapDataType = 1
	TensorUint32   TensorMapDataType = 2
	TensorInt32    TensorMapDataType = 3
	TensorUint64   TensorMapDataType = 4
	TensorInt64    TensorMapDataType = 5
	TensorFloat16  TensorMapDataType = 6
	TensorFloat32  TensorMapDataType = 7
	TensorFloat64  TensorMapDataType = 8
	TensorBfloat16 TensorMapDataType = 9
)

var tensorElemSize = map[TensorMapDataType]int{0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2}

// TensorMapSwizzle is a CUtensorMapSwizzle: the shared-memory swizzle TMA applies.
type TensorMapSwizzle int32

const (
	SwizzleNone TensorMapSwizzle = 0
	Swizzle32B  TensorMapSwizzle = 1
	Swizzle64B  TensorMapSwizzle = 2
	Swizzle128B TensorMapSwizzle = 3
)

// TiledMap describes a tiled TMA descriptor (cuTensorMapEncodeTiled). Dimension 0 is the innermost
// (contiguous) one. Strides has Rank-1 entries: the byte stride of dimensions 1.., each a multiple
// of 16. Box is the tile one copy moves, in elements; ElementStrides nil means 1 in every dimension.
// Interleave, L2Promotion and OOBFill are the driver's enum values (0: none, 0: none, 0: zeros).
type TiledMap struct {
	DataType       TensorMapDataType
	Global         DevicePtr
	Dims           []uint64
	Strides        []uint64
	Box            []uint32
	ElementStrides []uint32
	Interleave     int32
	Swizzle        TensorMapSwizzle
	L2Promotion    int32
	OOBFill        int32
}

// check enforces the documented constraints of cuTensorMapEncodeTiled on a non-interleaved map so
// that a bad descriptor is a clear error here rather than CUDA_ERROR_INVALID_VALUE from the driver.
func (m *TiledMap) check() error {
	es, ok := tensorElemSize[m.DataType]
	if !ok {
		return fmt.Errorf("unsupported data type %d", m.DataType)
	}
	rank := len(m.Dims)
	if rank < 1 || rank > 5 {
		return fmt.Errorf("rank %d: must be 1..5", rank)
	}
	if len(m.Strides) != rank-1 || len(m.Box) != rank || (m.ElementStrides != nil && len(m.ElementStrides) != rank) {
		return fmt.Errorf("rank %d needs %d strides, %d box sides and 0 or %d element strides; got %d, %d, %d",
			rank, rank-1, rank, rank, len(m.Strides), len(m.Box), len(m.ElementStrides))
	}
	if m.Global%16 != 0 {
		return fmt.Errorf("global address %#x is not 16-byte aligned", m.Global)
	}
	for i, d := range m.Dims {
		if d == 0 || d > 1<<32 {
			return fmt.Errorf("Dims[%d] = %d: must be in [1, 2^32]", i, d)
		}
	}
	for i, s := range m.Strides {
		if s%16 != 0 || s >= 1<<40 {
			return fmt.Errorf("Strides[%d] = %d: must be a multiple of 16 below 2^40", i, s)
		}
	}
	for i, b := range m.Box {
		if b == 0 || b > 256 {
			return fmt.Errorf("Box[%d] = %d: must be in [1, 256]", i, b)
		}
	}
	for i, e := range m.ElementStrides {
		if e == 0 || e > 8 {
			return fmt.Errorf("ElementStrides[%d] = %d: must be in [1, 8]", i, e)
		}
	}
	if m.Interleave == 0 {
		inner := int(m.Box[0]) * es
		if inner%16 != 0 {
			return fmt.Errorf("Box[0] = %d elements is %d bytes: must be a multiple of 16", m.Box[0], inner)
		}
		if lim := map[TensorMapSwizzle]int{Swizzle32B: 32, Swizzle64B: 64, Swizzle128B: 128}[m.Swizzle]; lim > 0 && inner > lim {
			return fmt.Errorf("Box[0] = %d bytes exceeds the %d-byte swizzle span", inner, lim)
		}
	}
	return nil
}

// EncodeTiled builds a tiled TMA descriptor with cuTensorMapEncodeTiled (drivers for CUDA 12.0 and
// later). The map refers to device memory by address: it stays valid while that memory does.
func (c *Context) EncodeTiled(m TiledMap) (TensorMap, error) {
	var tm TensorMap
	if err := m.check(); err != nil {
		return tm, fmt.Errorf("cuda: EncodeTiled: %w", err)
	}
	if c.api().cuTensorMapEncodeTiled == nil {
		return tm, fmt.Errorf("cuda: EncodeTiled: the driver has no cuTensorMapEncodeTiled (needs CUDA 12.0 or later)")
	}
	es := m.ElementStrides
	if es == nil {
		es = make([]uint32, len(m.Dims))
		for i := range es {
			es[i] = 1
		}
	}
	// The driver writes the map with 64-byte aligned stores: give it aligned scratch space.
	scratch := make([]byte, 128+64)
	off := int((64 - uintptr(unsafe.Pointer(&scratch[0]))%64) % 64)
	var strides *uint64
	if len(m.Strides) > 0 {
		strides = &m.Strides[0]
	}
	err := c.do(func(a *api) error {
		return check("cuTensorMapEncodeTiled", a.cuTensorMapEncodeTiled(unsafe.Pointer(&scratch[off]), int32(m.DataType),
			uint32(len(m.Dims)), uint64(m.Global), &m.Dims[0], strides, &m.Box[0], &es[0],
			m.Interleave, int32(m.Swizzle), m.L2Promotion, m.OOBFill))
	})
	copy(tm[:], scratch[off:])
	return tm, err
}
