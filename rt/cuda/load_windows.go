//go:build windows && (amd64 || arm64) && !kgen_nocuda

package cuda

import (
	"fmt"
	"strings"

	"golang.org/x/sys/windows"
)

// defaultLibrary is the driver library's name as the NVIDIA driver installs it (in System32).
const defaultLibrary = "nvcuda.dll"

// library is a loaded DLL.
type library struct {
	path   string
	handle windows.Handle
}

// openLibrary loads path. A bare name is looked up in System32 only, so that a DLL of the same
// name in the current or the executable's directory cannot stand in for the driver; a path is
// loaded as given. Failure wraps ErrNoDriver with the system's message.
func openLibrary(path string) (*library, error) {
	var h windows.Handle
	var err error
	if strings.ContainsAny(path, `\/`) {
		h, err = windows.LoadLibrary(path)
	} else {
		h, err = windows.LoadLibraryEx(path, 0, windows.LOAD_LIBRARY_SEARCH_SYSTEM32)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: cannot load %s: %v", ErrNoDriver, path, err)
	}
	return &library{path: path, handle: h}, nil
}

// lookup returns the address of the exported symbol name, or an error naming it.
func (l *library) lookup(name string) (uintptr, error) {
	p, err := windows.GetProcAddress(l.handle, name)
	if err != nil || p == 0 {
		return 0, fmt.Errorf("%w: %s has no symbol %s", ErrNoDriver, l.path, name)
	}
	return p, nil
}
