package metal

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/kgen-dev/kgen/rt"
)

// Buffer is an MTLBuffer in shared storage (MTLResourceStorageModeShared): the CPU and the GPU see
// the same memory, so copies in and out are plain memory copies through its contents pointer.
// Dispatch waits for the GPU, so what a kernel wrote is visible as soon as Dispatch returns, and
// what the CPU wrote before Dispatch is visible to the kernel. Do not write a buffer from the CPU
// while a Dispatch that uses it runs on another goroutine.
type Buffer struct {
	dev  *Device
	h    handle
	mem  []byte // the contents, len = the size asked for
	size int

	mu    sync.Mutex
	freed bool
}

// NewBuffer allocates size bytes (at most the device's MaxBufferLength) of shared storage,
// zero-filled as Metal returns new shared buffers. size 0 is allowed, so that an empty tensor needs
// no special case: a 1-byte Metal buffer backs it, Size reports 0, and no copy can touch it.
func (d *Device) NewBuffer(size int) (*Buffer, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	if size < 0 {
		return nil, fmt.Errorf("metal: NewBuffer(%d): negative size", size)
	}
	if max := d.Info().MaxBufferLength; max != 0 && uint64(size) > max {
		return nil, fmt.Errorf("metal: NewBuffer(%d): above the device's maxBufferLength %d", size, max)
	}
	h, p, err := d.drv.newBuffer(max(size, 1))
	if err != nil {
		return nil, err
	}
	if p == nil {
		d.drv.release(h)
		return nil, fmt.Errorf("metal: NewBuffer(%d): contents is NULL (not shared storage?)", size)
	}
	return &Buffer{dev: d, h: h, mem: unsafe.Slice((*byte)(p), size), size: size}, nil
}

// Size returns the buffer's size in bytes (0 for a nil Buffer).
func (b *Buffer) Size() int {
	if b == nil {
		return 0
	}
	return b.size
}

func (b *Buffer) live() error {
	if b == nil {
		return fmt.Errorf("metal: nil *Buffer")
	}
	if err := b.dev.live(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.freed {
		return ErrClosed
	}
	return nil
}

// Free releases the buffer. Freeing twice is a no-op; using it afterwards is ErrClosed.
func (b *Buffer) Free() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.freed {
		b.freed = true
		b.mem = nil
		b.dev.drv.release(b.h)
	}
	return nil
}

// span checks that [off, off+n) lies inside the buffer.
func (b *Buffer) span(op string, off, n int) error {
	if err := b.live(); err != nil {
		return err
	}
	if off < 0 || n < 0 || off > b.size || n > b.size-off {
		return fmt.Errorf("metal: %s: %d bytes at offset %d outside a buffer of %d bytes", op, n, off, b.size)
	}
	return nil
}

// WriteAt copies src into the buffer at byte offset off; the whole range must fit.
func (b *Buffer) WriteAt(src []byte, off int) error {
	if err := b.span("WriteAt", off, len(src)); err != nil {
		return err
	}
	copy(b.mem[off:], src)
	return nil
}

// ReadAt fills dst from the buffer at byte offset off; the whole range must lie inside.
func (b *Buffer) ReadAt(dst []byte, off int) error {
	if err := b.span("ReadAt", off, len(dst)); err != nil {
		return err
	}
	copy(dst, b.mem[off:])
	return nil
}

// Zero sets every byte of the buffer to 0.
func (b *Buffer) Zero() error {
	if err := b.live(); err != nil {
		return err
	}
	clear(b.mem)
	return nil
}

// Scalar is the element types that copy to and from buffers as their in-memory bytes (rt.Scalar).
type Scalar = rt.Scalar

// Upload copies src to the start of b; src must fit.
func Upload[T Scalar](b *Buffer, src []T) error { return b.WriteAt(rt.Bytes(src), 0) }

// Download fills dst from the start of b; b must hold at least len(dst) elements.
func Download[T Scalar](dst []T, b *Buffer) error { return b.ReadAt(rt.Bytes(dst), 0) }

// NewBufferFrom allocates a buffer of exactly src's size and copies src into it.
func NewBufferFrom[T Scalar](d *Device, src []T) (*Buffer, error) {
	b, err := d.NewBuffer(len(rt.Bytes(src)))
	if err != nil {
		return nil, err
	}
	if err := Upload(b, src); err != nil {
		b.Free()
		return nil, err
	}
	return b, nil
}
