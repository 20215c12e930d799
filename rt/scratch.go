package rt

import (
	"math/bits"
	"sync"
)

// Scratch buffers (packed GEMM panels) are reused across calls: allocating and zeroing half a
// megabyte per call made repeated mid-size GEMMs spend their time in the allocator and the garbage
// collector. Buffers come from per-size-class pools (powers of two); their contents are undefined, as
// the loop IR's Alloc says, and every element a kernel reads it has written first.

const minClass = 6 // 64 elements

var pools32, pools64 [48]sync.Pool

// wraps32 and wraps64 hold empty buffer wrappers: a pooled buffer travels in a *buf, and reusing the
// wrappers keeps a Scratch/Release pair free of allocations.
var wraps32, wraps64 sync.Pool

type buf32 struct{ s []float32 }
type buf64 struct{ s []float64 }

func class(n int) int {
	if n <= 1<<minClass {
		return minClass
	}
	return bits.Len(uint(n - 1))
}

// Scratch32 returns a buffer of n float32 with undefined contents; give it back with Release32.
func Scratch32(n int) []float32 {
	c := class(n)
	if b, ok := pools32[c].Get().(*buf32); ok {
		s := b.s
		b.s = nil
		wraps32.Put(b)
		return s[:n]
	}
	return make([]float32, n, 1<<c)
}

// Release32 returns a buffer obtained from Scratch32.
func Release32(s []float32) {
	if cap(s) == 0 || cap(s)&(cap(s)-1) != 0 {
		return
	}
	b, _ := wraps32.Get().(*buf32)
	if b == nil {
		b = new(buf32)
	}
	b.s = s[:cap(s)]
	pools32[bits.Len(uint(cap(s)-1))].Put(b)
}

// Scratch64 returns a buffer of n float64 with undefined contents; give it back with Release64.
func Scratch64(n int) []float64 {
	c := class(n)
	if b, ok := pools64[c].Get().(*buf64); ok {
		s := b.s
		b.s = nil
		wraps64.Put(b)
		return s[:n]
	}
	return make([]float64, n, 1<<c)
}

// Release64 returns a buffer obtained from Scratch64.
func Release64(s []float64) {
	if cap(s) == 0 || cap(s)&(cap(s)-1) != 0 {
		return
	}
	b, _ := wraps64.Get().(*buf64)
	if b == nil {
		b = new(buf64)
	}
	b.s = s[:cap(s)]
	pools64[bits.Len(uint(cap(s)-1))].Put(b)
}

// Scratch returns a buffer of n elements of any other type (f16.F16, f16.BF16, int32, int8: a kernel's
// 16-bit or integer temporaries) with undefined contents, from per-type, per-size-class pools; give it
// back with Release. f32 and f64 buffers use Scratch32/Scratch64, which skip the per-type lookup.
func Scratch[T any](n int) []T {
	p := poolsOf[T]()
	c := class(n)
	if b, ok := p.bufs[c].Get().(*scratchBuf[T]); ok {
		s := b.s
		b.s = nil
		p.wraps.Put(b)
		return s[:n]
	}
	return make([]T, n, 1<<c)
}

// Release returns a buffer obtained from Scratch.
func Release[T any](s []T) {
	if cap(s) == 0 || cap(s)&(cap(s)-1) != 0 {
		return
	}
	p := poolsOf[T]()
	b, _ := p.wraps.Get().(*scratchBuf[T])
	if b == nil {
		b = new(scratchBuf[T])
	}
	b.s = s[:cap(s)]
	p.bufs[bits.Len(uint(cap(s)-1))].Put(b)
}

// typedPools are the size-class pools of one element type, and the wrappers that carry a buffer through
// them without an allocation per Release.
type typedPools[T any] struct {
	bufs  [48]sync.Pool
	wraps sync.Pool
}

type scratchBuf[T any] struct{ s []T }

// poolsByType maps a nil *T (an interface value that differs per T and costs no allocation) to T's pools.
var poolsByType sync.Map

func poolsOf[T any]() *typedPools[T] {
	key := any((*T)(nil))
	if p, ok := poolsByType.Load(key); ok {
		return p.(*typedPools[T])
	}
	p, _ := poolsByType.LoadOrStore(key, new(typedPools[T]))
	return p.(*typedPools[T])
}
