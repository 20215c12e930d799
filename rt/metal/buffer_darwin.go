//go:build darwin && !kgen_nometal

package metal

import (
	"fmt"
	"unsafe"

	"github.com/ebitengine/purego/objc"
)

// Selectors of MTLDevice's buffer creation and MTLBuffer (MTLDevice.h, MTLBuffer.h).
var (
	selNewBufferWithLengthOptions = objc.RegisterName("newBufferWithLength:options:")
	selContents                   = objc.RegisterName("contents")
	selLength                     = objc.RegisterName("length")
)

// resourceStorageModeShared is MTLResourceStorageModeShared = MTLStorageModeShared (0) <<
// MTLResourceStorageModeShift (4), with MTLResourceCPUCacheModeDefaultCache (0): options 0.
const resourceStorageModeShared = 0 << 4

// newBuffer allocates an MTLBuffer (+1) of n bytes in shared storage and returns its contents.
func (m *mtlDriver) newBuffer(n int) (buf handle, contents unsafe.Pointer, err error) {
	withPool(func() {
		b := m.dev.Send(selNewBufferWithLengthOptions, uint64(n), uint64(resourceStorageModeShared))
		if b == 0 {
			err = errNil("newBufferWithLength:options:", fmt.Sprintf("%d bytes: out of memory?", n))
			return
		}
		if l := objc.Send[uint64](b, selLength); l < uint64(n) {
			b.Send(selRelease)
			err = &Error{Op: "newBufferWithLength:options:", Description: fmt.Sprintf("asked for %d bytes, got %d", n, l)}
			return
		}
		buf, contents = handle(b), objc.Send[unsafe.Pointer](b, selContents)
	})
	return buf, contents, err
}
