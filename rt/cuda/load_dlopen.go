//go:build linux && (amd64 || arm64) && !kgen_nocuda

package cuda

import (
	"fmt"

	"github.com/ebitengine/purego"
)

// defaultLibrary is the driver library's name as the NVIDIA driver installs it.
const defaultLibrary = "libcuda.so.1"

// library is a loaded shared object.
type library struct {
	path   string
	handle uintptr
}

// openLibrary dlopens path. Failure wraps ErrNoDriver with dlerror's message.
func openLibrary(path string) (*library, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot load %s: %v", ErrNoDriver, path, err)
	}
	return &library{path: path, handle: h}, nil
}

// lookup returns the address of the exported symbol name, or an error naming it.
func (l *library) lookup(name string) (uintptr, error) {
	p, err := purego.Dlsym(l.handle, name)
	if err != nil || p == 0 {
		return 0, fmt.Errorf("%w: %s has no symbol %s", ErrNoDriver, l.path, name)
	}
	return p, nil
}
