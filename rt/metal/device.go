package metal

import (
	"fmt"
	"sync"
)

// DeviceInfo is what the device reports about itself.
type DeviceInfo struct {
	Name string // MTLDevice name, e.g. "Apple M2 Pro"
	// MaxThreadsPerThreadgroup is the per-dimension limit (maxThreadsPerThreadgroup); a pipeline's
	// MaxTotalThreadsPerThreadgroup bounds the product.
	MaxThreadsPerThreadgroup Size
	// MaxThreadgroupMemoryLength is the threadgroup memory available to one threadgroup, in bytes.
	MaxThreadgroupMemoryLength uint64
	// MaxBufferLength is the largest buffer newBufferWithLength:options: can make, in bytes.
	MaxBufferLength uint64
	// RecommendedMaxWorkingSetSize is the memory the device can use without hurting performance.
	RecommendedMaxWorkingSetSize uint64
	HasUnifiedMemory             bool // true on Apple silicon
}

// Device is an MTLDevice with its command queue. Its methods are safe for concurrent use, except
// that Close must not race with other uses.
type Device struct {
	drv driver

	mu     sync.Mutex
	closed bool
}

// Open returns the system's default Metal device (MTLCreateSystemDefaultDevice) with a new command
// queue. Without Metal it returns an error wrapping ErrNoDevice that says why.
func Open() (*Device, error) {
	drv, err := openDriver()
	if err != nil {
		return nil, err
	}
	return &Device{drv: drv}, nil
}

// Info returns the device's properties, read once at Open (zero for a nil Device).
func (d *Device) Info() DeviceInfo {
	if d == nil {
		return DeviceInfo{}
	}
	return d.drv.info()
}

// live returns ErrClosed after Close.
func (d *Device) live() error {
	if d == nil {
		return fmt.Errorf("metal: nil *Device")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	return nil
}

// Close releases the device and its command queue; closing twice is a no-op. Libraries, functions
// and buffers made from d refuse further use with ErrClosed, but each should still be closed (or
// freed): they hold their own references.
func (d *Device) Close() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.closed {
		d.closed = true
		d.drv.close()
	}
	return nil
}
