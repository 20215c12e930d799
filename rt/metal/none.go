//go:build !darwin || kgen_nometal

package metal

import (
	"fmt"
	"runtime"
)

// supported reports whether this build can use Metal at all. Here it cannot: Metal exists only on
// Apple systems, or the build asked for none with -tags kgen_nometal (which keeps darwin binaries
// free of purego's Objective-C runtime, whose init dlopens libobjc).
const supported = false

// openDriver always fails with ErrNoDevice, saying why.
func openDriver() (driver, error) {
	if runtime.GOOS == "darwin" {
		return nil, fmt.Errorf("%w: this build has no Metal support (built with -tags kgen_nometal)", ErrNoDevice)
	}
	return nil, fmt.Errorf("%w: Metal exists only on Apple systems, this is %s/%s", ErrNoDevice, runtime.GOOS, runtime.GOARCH)
}
