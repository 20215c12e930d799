//go:build !((linux || windows) && (amd64 || arm64)) || kgen_nocuda

package cuda

import (
	"fmt"
	"runtime"
)

// supported reports whether this build can load a CUDA driver at all. Here it cannot: NVIDIA ships
// no CUDA driver for this GOOS/GOARCH (macOS has none since CUDA 10.2), or the build asked for none
// with -tags kgen_nocuda (which keeps binaries free of purego's dynamic loader import, e.g. to run
// under qemu-user or in a static container). Open always fails with ErrNoDriver.
const supported = false

const defaultLibrary = "libcuda.so.1"

type library struct{}

func openLibrary(path string) (*library, error) { return nil, bind(nil, nil) }

func bind(lib *library, a *api) error {
	return fmt.Errorf("%w: this build has no CUDA support (%s/%s, or -tags kgen_nocuda)", ErrNoDriver, runtime.GOOS, runtime.GOARCH)
}
