//go:build windows && (amd64 || arm64) && !kgen_nocuda

package cuda

import (
	"fmt"
	"syscall"
)

// defaultLibrary is the driver library's name as the NVIDIA driver installs it.
const defaultLibrary = "nvcuda.dll"

// library is a loaded DLL.
type library struct {
	path   string
	handle syscall.Handle
}

// openLibrary loads path with LoadLibrary. Failure wraps ErrNoDriver with the system's message.
func openLibrary(path string) (*library, error) {
	h, err := syscall.LoadLibrary(path)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot load %s: %v", ErrNoDriver, path, err)
	}
	return &library{path: path, handle: h}, nil
}

// lookup returns the address of the exported symbol name, or an error naming it.
func (l *library) lookup(name string) (uintptr, error) {
	p, err := syscall.GetProcAddress(l.handle, name)
	if err != nil || p == 0 {
		return 0, fmt.Errorf("%w: %s has no symbol %s", ErrNoDriver, l.path, name)
	}
	return p, nil
}
