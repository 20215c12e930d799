package cuda

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/kgen-dev/kgen/rt"
)

// DevicePtr is a device address (CUdeviceptr), 64 bits on every platform.
type DevicePtr uint64

// Buffer is device memory allocated with cuMemAlloc_v2: a device pointer and its size in bytes.
// Its methods are safe for concurrent use; Free must not race with other uses.
type Buffer struct {
	ctx  *Context
	ptr  DevicePtr
	size int

	mu    sync.Mutex
	freed bool
}

// Alloc allocates size bytes of device memory (size > 0). The memory is not initialized.
func (c *Context) Alloc(size int) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("cuda: Alloc(%d): size must be positive", size)
	}
	var p uint64
	err := c.do(func(a *api) error {
		return checkf(a.cuMemAlloc(&p, uintptr(size)), "cuMemAlloc_v2(%d bytes)", size)
	})
	if err != nil {
		return nil, err
	}
	return &Buffer{ctx: c, ptr: DevicePtr(p), size: size}, nil
}

// Ptr returns the device address of the buffer's first byte.
func (b *Buffer) Ptr() DevicePtr { return b.ptr }

// Size returns the buffer's size in bytes.
func (b *Buffer) Size() int { return b.size }

func (b *Buffer) live() error {
	if b == nil {
		return fmt.Errorf("cuda: nil *Buffer")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed {
		return ErrClosed
	}
	return nil
}

// Free releases the buffer (cuMemFree_v2). Freeing twice is a no-op; using it afterwards is ErrClosed.
func (b *Buffer) Free() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed {
		return nil
	}
	b.freed = true
	return b.ctx.do(func(a *api) error { return check("cuMemFree_v2", a.cuMemFree(uint64(b.ptr))) })
}

// span checks that [off, off+n) lies inside the buffer.
func (b *Buffer) span(op string, off, n int) error {
	if b == nil {
		return fmt.Errorf("cuda: %s on a nil *Buffer", op)
	}
	if off < 0 || n < 0 || off > b.size || n > b.size-off {
		return fmt.Errorf("cuda: %s: %d bytes at offset %d do not fit a %d-byte buffer", op, n, off, b.size)
	}
	return b.live()
}

// WriteAt copies src to the buffer at byte offset off (cuMemcpyHtoD_v2, synchronous). The range
// must lie inside the buffer; nothing is copied otherwise.
func (b *Buffer) WriteAt(src []byte, off int) error {
	if err := b.span("WriteAt", off, len(src)); err != nil || len(src) == 0 {
		return err
	}
	return b.ctx.do(func(a *api) error {
		return check("cuMemcpyHtoD_v2", a.cuMemcpyHtoD(uint64(b.ptr)+uint64(off), unsafe.Pointer(&src[0]), uintptr(len(src))))
	})
}

// ReadAt copies len(dst) bytes from byte offset off of the buffer to dst (cuMemcpyDtoH_v2, which
// waits for earlier work in the context). The range must lie inside the buffer.
func (b *Buffer) ReadAt(dst []byte, off int) error {
	if err := b.span("ReadAt", off, len(dst)); err != nil || len(dst) == 0 {
		return err
	}
	return b.ctx.do(func(a *api) error {
		return check("cuMemcpyDtoH_v2", a.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), uint64(b.ptr)+uint64(off), uintptr(len(dst))))
	})
}

// Zero sets every byte of the buffer to 0 (cuMemsetD8_v2).
func (b *Buffer) Zero() error {
	if err := b.live(); err != nil {
		return err
	}
	return b.ctx.do(func(a *api) error { return check("cuMemsetD8_v2", a.cuMemsetD8(uint64(b.ptr), 0, uintptr(b.size))) })
}

// Scalar is the element types that copy to and from buffers as their in-memory bytes (rt.Scalar).
type Scalar = rt.Scalar

// Upload copies src to the start of b; src must fit.
func Upload[T Scalar](b *Buffer, src []T) error { return b.WriteAt(rt.Bytes(src), 0) }

// Download fills dst from the start of b; b must hold at least len(dst) elements.
func Download[T Scalar](dst []T, b *Buffer) error { return b.ReadAt(rt.Bytes(dst), 0) }

// AllocCopy allocates a buffer of exactly src's size and uploads src (len(src) > 0).
func AllocCopy[T Scalar](c *Context, src []T) (*Buffer, error) {
	b, err := c.Alloc(len(rt.Bytes(src)))
	if err != nil {
		return nil, err
	}
	if err := Upload(b, src); err != nil {
		b.Free()
		return nil, err
	}
	return b, nil
}
