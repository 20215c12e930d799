//go:build darwin && !kgen_nometal

package metal

import (
	"fmt"
	"sync"

	"github.com/ebitengine/purego"
	"github.com/ebitengine/purego/objc"
)

// supported reports whether this build can use Metal at all.
const supported = true

// The frameworks: MTLCreateSystemDefaultDevice is a C function of Metal.framework; command-line
// programs (no AppKit) must also load CoreGraphics, or it returns nil on some systems. Since
// macOS 11 both live in the dyld shared cache, which dlopen searches under these paths.
const (
	metalPath        = "/System/Library/Frameworks/Metal.framework/Metal"
	coreGraphicsPath = "/System/Library/Frameworks/CoreGraphics.framework/CoreGraphics"
)

// Selectors of MTLDevice (MTLDevice.h).
var (
	selName                         = objc.RegisterName("name")
	selMaxThreadsPerThreadgroup     = objc.RegisterName("maxThreadsPerThreadgroup")
	selMaxThreadgroupMemoryLength   = objc.RegisterName("maxThreadgroupMemoryLength")
	selMaxBufferLength              = objc.RegisterName("maxBufferLength")
	selRecommendedMaxWorkingSetSize = objc.RegisterName("recommendedMaxWorkingSetSize")
	selHasUnifiedMemory             = objc.RegisterName("hasUnifiedMemory")
	selNewCommandQueue              = objc.RegisterName("newCommandQueue")
)

var (
	loadOnce                     sync.Once
	loadErr                      error
	mtlCreateSystemDefaultDevice func() objc.ID // id<MTLDevice> MTLCreateSystemDefaultDevice(void), returns +1
)

// loadFrameworks dlopens CoreGraphics and Metal once and binds MTLCreateSystemDefaultDevice.
// Failure wraps ErrNoDevice with dlerror's message.
func loadFrameworks() error {
	loadOnce.Do(func() {
		if _, err := purego.Dlopen(coreGraphicsPath, purego.RTLD_NOW|purego.RTLD_GLOBAL); err != nil {
			loadErr = fmt.Errorf("%w: cannot load CoreGraphics: %v", ErrNoDevice, err)
			return
		}
		h, err := purego.Dlopen(metalPath, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			loadErr = fmt.Errorf("%w: cannot load Metal.framework: %v", ErrNoDevice, err)
			return
		}
		sym, err := purego.Dlsym(h, "MTLCreateSystemDefaultDevice")
		if err != nil || sym == 0 {
			loadErr = fmt.Errorf("%w: Metal.framework has no MTLCreateSystemDefaultDevice: %v", ErrNoDevice, err)
			return
		}
		purego.RegisterFunc(&mtlCreateSystemDefaultDevice, sym)
		classNSAutoreleasePool = objc.GetClass("NSAutoreleasePool")
		classNSString = objc.GetClass("NSString")
		classMTLCompileOptions = objc.GetClass("MTLCompileOptions")
		if classNSAutoreleasePool == 0 || classNSString == 0 || classMTLCompileOptions == 0 {
			loadErr = fmt.Errorf("%w: Foundation or Metal classes missing after loading Metal.framework", ErrNoDevice)
		}
	})
	return loadErr
}

// mtlDriver is the driver of one MTLDevice and the command queue Dispatch uses.
type mtlDriver struct {
	dev, queue objc.ID
	inf        DeviceInfo
}

// openDriver creates the system default device and its command queue.
func openDriver() (driver, error) {
	if err := loadFrameworks(); err != nil {
		return nil, err
	}
	var m *mtlDriver
	var err error
	withPool(func() {
		dev := mtlCreateSystemDefaultDevice()
		if dev == 0 {
			err = fmt.Errorf("%w: MTLCreateSystemDefaultDevice returned nil (no Metal GPU, or this session has no access to one)", ErrNoDevice)
			return
		}
		q := dev.Send(selNewCommandQueue)
		if q == 0 {
			dev.Send(selRelease)
			err = errNil("newCommandQueue", "no command queue")
			return
		}
		m = &mtlDriver{dev: dev, queue: q}
		m.inf = m.readInfo()
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// readInfo reads the device's properties; those a system lacks stay zero.
func (m *mtlDriver) readInfo() DeviceInfo {
	inf := DeviceInfo{
		Name:                       goString(m.dev.Send(selName)),
		MaxThreadsPerThreadgroup:   objc.Send[Size](m.dev, selMaxThreadsPerThreadgroup),
		MaxThreadgroupMemoryLength: objc.Send[uint64](m.dev, selMaxThreadgroupMemoryLength),
	}
	if respondsTo(m.dev, selMaxBufferLength) {
		inf.MaxBufferLength = objc.Send[uint64](m.dev, selMaxBufferLength)
	}
	if respondsTo(m.dev, selRecommendedMaxWorkingSetSize) {
		inf.RecommendedMaxWorkingSetSize = objc.Send[uint64](m.dev, selRecommendedMaxWorkingSetSize)
	}
	if respondsTo(m.dev, selHasUnifiedMemory) {
		inf.HasUnifiedMemory = objc.Send[bool](m.dev, selHasUnifiedMemory)
	}
	return inf
}

func (m *mtlDriver) info() DeviceInfo { return m.inf }

// close releases the queue, then the device.
func (m *mtlDriver) close() {
	withPool(func() {
		m.queue.Send(selRelease)
		m.dev.Send(selRelease)
	})
}
