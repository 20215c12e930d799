package cuda

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// JIT options of cuModuleLoadDataEx (CUjit_option in cuda.h).
const (
	jitInfoLogBuffer           = 3
	jitInfoLogBufferSizeBytes  = 4
	jitErrorLogBuffer          = 5
	jitErrorLogBufferSizeBytes = 6
)

// jitLogSize is the size of each JIT log buffer; longer logs are cut.
const jitLogSize = 16 << 10

// Module is a loaded module (CUmodule): PTX the driver compiled for the context's device.
type Module struct {
	ctx     *Context
	h       uintptr
	infoLog string

	mu       sync.Mutex
	unloaded bool
}

// LoadModule hands PTX text to the driver's JIT compiler (cuModuleLoadDataEx) for the context's
// device. On failure the error is an *Error whose Log is the JIT compiler's error log (for example
// "ptxas application ptx input, line 12; error : ..."); errors.Is(err, ErrorInvalidPTX) or
// ErrorUnsupportedPTXVersion tell the common causes apart. The PTX must not contain a NUL byte; a
// trailing NUL is added when missing.
func (c *Context) LoadModule(ptx []byte) (*Module, error) {
	if len(bytes.TrimSpace(ptx)) == 0 {
		return nil, fmt.Errorf("cuda: LoadModule: empty PTX")
	}
	if i := bytes.IndexByte(ptx, 0); i >= 0 && i != len(ptx)-1 {
		return nil, fmt.Errorf("cuda: LoadModule: PTX contains a NUL byte at offset %d", i)
	}
	image := ptx
	if image[len(image)-1] != 0 {
		image = append(append(make([]byte, 0, len(ptx)+1), ptx...), 0)
	}
	errLog := make([]byte, jitLogSize)
	infoLog := make([]byte, jitLogSize)
	// The driver reads each option value as a void*: buffers by address, sizes by value.
	opts := []int32{jitErrorLogBuffer, jitErrorLogBufferSizeBytes, jitInfoLogBuffer, jitInfoLogBufferSizeBytes}
	vals := []uintptr{
		uintptr(unsafe.Pointer(&errLog[0])), uintptr(len(errLog)),
		uintptr(unsafe.Pointer(&infoLog[0])), uintptr(len(infoLog)),
	}
	var h uintptr
	err := c.do(func(a *api) error {
		var pin runtime.Pinner
		defer pin.Unpin()
		pin.Pin(&errLog[0])
		pin.Pin(&infoLog[0])
		r := a.cuModuleLoadDataEx(&h, unsafe.Pointer(&image[0]), uint32(len(opts)), &opts[0], &vals[0])
		if r != 0 {
			return &Error{Op: "cuModuleLoadDataEx", Code: Result(r), Log: cString(errLog)}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Module{ctx: c, h: h, infoLog: cString(infoLog)}, nil
}

// cString returns b up to its first NUL, without trailing white space.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.TrimRight(string(b), " \t\r\n")
}

// InfoLog returns what the JIT compiler reported on success (may be empty).
func (m *Module) InfoLog() string { return m.infoLog }

// Unload unloads the module (cuModuleUnload); its Functions must not be launched afterwards.
// Unloading twice is a no-op.
func (m *Module) Unload() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unloaded {
		return nil
	}
	m.unloaded = true
	return m.ctx.do(func(a *api) error { return check("cuModuleUnload", a.cuModuleUnload(m.h)) })
}

func (m *Module) live() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unloaded {
		return ErrClosed
	}
	return nil
}

// Function returns the kernel (.entry) called name; CUDA_ERROR_NOT_FOUND (500) if there is none.
func (m *Module) Function(name string) (*Function, error) {
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return nil, fmt.Errorf("cuda: Function(%q): invalid kernel name", name)
	}
	if err := m.live(); err != nil {
		return nil, err
	}
	cname := append([]byte(name), 0)
	var h uintptr
	err := m.ctx.do(func(a *api) error {
		return checkf(a.cuModuleGetFunction(&h, m.h, &cname[0]), "cuModuleGetFunction(%q)", name)
	})
	if err != nil {
		return nil, err
	}
	f := &Function{mod: m, h: h, name: name}
	if err := f.readParams(); err != nil {
		return nil, err
	}
	return f, nil
}
