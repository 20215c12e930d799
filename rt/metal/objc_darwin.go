//go:build darwin && !kgen_nometal

package metal

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego/objc"
)

// The Objective-C runtime helpers the other *_darwin.go files share: autorelease pools, NSString
// in and out, NSError to *Error, release. Messages go through purego/objc's objc_msgSend with the
// argument types of Apple's headers: id and SEL as pointers, NSUInteger as uint64, NSInteger as
// int, BOOL as bool (one byte), CFTimeInterval as float64, MTLSize by value (see Size).
//
// Ownership: this package holds exactly one reference to each object it keeps (from alloc/init,
// new…, or MTLCreateSystemDefaultDevice, which return +1) and releases it once. Objects returned
// +0 and autoreleased (commandBuffer, computeCommandEncoder, NSError out-parameters, NSStrings
// from name/localizedDescription) are used only inside withPool, whose pool frees them. Every
// message is sent inside withPool: Go's threads never exit, so anything Metal autoreleases
// outside a pool would leak.

// Selectors of NSObject, NSString, NSError and NSAutoreleasePool (Foundation).
var (
	selAlloc                       = objc.RegisterName("alloc")
	selInit                        = objc.RegisterName("init")
	selNew                         = objc.RegisterName("new")
	selRelease                     = objc.RegisterName("release")
	selDrain                       = objc.RegisterName("drain")
	selRespondsToSelector          = objc.RegisterName("respondsToSelector:")
	selInitWithBytesLengthEncoding = objc.RegisterName("initWithBytes:length:encoding:")
	selUTF8String                  = objc.RegisterName("UTF8String")
	selLocalizedDescription        = objc.RegisterName("localizedDescription")
	selDomain                      = objc.RegisterName("domain")
	selCode                        = objc.RegisterName("code")
)

// nsUTF8StringEncoding is NSUTF8StringEncoding (NSString.h).
const nsUTF8StringEncoding = 4

// classes are looked up after loadFrameworks (NSAutoreleasePool and NSString come with
// Foundation, which Metal.framework loads).
var classNSAutoreleasePool, classNSString objc.Class

// withPool runs f on a locked OS thread inside an NSAutoreleasePool, drained when f returns.
// Autorelease pools belong to a thread, so the goroutine must not move while one is open.
func withPool(f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pool := objc.ID(classNSAutoreleasePool).Send(selNew)
	defer pool.Send(selDrain)
	f()
}

// nsString returns a new NSString (+1: release it) holding s, which must be valid UTF-8
// (checkSource); 0 if NSString refused it.
func nsString(s string) objc.ID {
	str := objc.ID(classNSString).Send(selAlloc)
	str = str.Send(selInitWithBytesLengthEncoding, unsafe.Pointer(unsafe.StringData(s)), uint64(len(s)), uint64(nsUTF8StringEncoding))
	runtime.KeepAlive(s)
	return str
}

// goString copies an NSString's UTF-8 bytes (purego copies the C string UTF8String returns).
func goString(ns objc.ID) string {
	if ns == 0 {
		return ""
	}
	return objc.Send[string](ns, selUTF8String)
}

// nsError converts the NSError an op returned (possibly nil) into an *Error.
func nsError(op string, err objc.ID) *Error {
	if err == 0 {
		return &Error{Op: op, Description: "failed without an NSError"}
	}
	return &Error{
		Op:          op,
		Domain:      goString(err.Send(selDomain)),
		Code:        objc.Send[int](err, selCode),
		Description: goString(err.Send(selLocalizedDescription)),
	}
}

// respondsTo reports whether obj implements sel (for properties newer than macOS 11).
func respondsTo(obj objc.ID, sel objc.SEL) bool {
	return objc.Send[bool](obj, selRespondsToSelector, objc.SEL(sel))
}

// release drops this package's reference to h (inside a pool: dealloc may autorelease).
func (m *mtlDriver) release(h handle) {
	if h != 0 {
		withPool(func() { objc.ID(h).Send(selRelease) })
	}
}

// errNil is the error of a new… selector that returned nil without an NSError out-parameter.
func errNil(op, what string) error {
	return &Error{Op: op, Description: fmt.Sprintf("returned nil (%s)", what)}
}
