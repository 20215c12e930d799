package cuda

import (
	"fmt"
	"runtime"
	"sync"
)

// Context is a device's primary context (the one the CUDA runtime and PyTorch share). Every
// method makes it current on the calling OS thread for the duration of the call, so a Context can
// be used from any goroutine; methods are safe for concurrent use, except Close.
type Context struct {
	dev *Device
	h   uintptr

	mu     sync.Mutex
	closed bool
}

// PrimaryContext retains the device's primary context (cuDevicePrimaryCtxRetain). Close releases it.
func (dev *Device) PrimaryContext() (*Context, error) {
	var h uintptr
	if err := check("cuDevicePrimaryCtxRetain", dev.d.api.cuDevicePrimaryCtxRetain(&h, dev.h)); err != nil {
		return nil, err
	}
	if h == 0 {
		return nil, fmt.Errorf("cuda: cuDevicePrimaryCtxRetain returned a null context")
	}
	return &Context{dev: dev, h: h}, nil
}

// Device returns the context's device.
func (c *Context) Device() *Device { return c.dev }

func (c *Context) api() *api { return c.dev.d.api }

// do runs f with the context current on a locked OS thread and returns f's error. Contexts are
// current per CPU thread, so the goroutine must not migrate between cuCtxSetCurrent and f.
func (c *Context) do(f func(a *api) error) error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return ErrClosed
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a := c.api()
	if err := check("cuCtxSetCurrent", a.cuCtxSetCurrent(c.h)); err != nil {
		return err
	}
	return f(a)
}

// Synchronize waits until all work queued in the context has finished (cuCtxSynchronize) and
// returns the first asynchronous error, e.g. CUDA_ERROR_ILLEGAL_ADDRESS from a kernel.
func (c *Context) Synchronize() error {
	return c.do(func(a *api) error { return check("cuCtxSynchronize", a.cuCtxSynchronize()) })
}

// Close releases the primary context (cuDevicePrimaryCtxRelease_v2); the driver destroys it when
// the last user lets go, freeing its memory and modules. Later calls on the context, or on its
// buffers, modules, streams and events, return ErrClosed. Closing twice is a no-op.
func (c *Context) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return check("cuDevicePrimaryCtxRelease_v2", c.api().cuDevicePrimaryCtxRelease(c.dev.h))
}
