//go:build darwin && !kgen_nometal

package metal

import "github.com/ebitengine/purego/objc"

// Selectors of MTLCompileOptions and MTLDevice's library creation (MTLLibrary.h, MTLDevice.h).
var (
	selSetLanguageVersion               = objc.RegisterName("setLanguageVersion:")
	selSetFastMathEnabled               = objc.RegisterName("setFastMathEnabled:")
	selNewLibraryWithSourceOptionsError = objc.RegisterName("newLibraryWithSource:options:error:")
)

var classMTLCompileOptions objc.Class

// compile builds an MTLLibrary (+1) from src. The options: languageVersion v, and
// fastMathEnabled NO (its default is YES, which lets the compiler reassociate and drop IEEE 754
// special cases; kgen compares GPU results with its interpreter under tolerances derived from IEEE
// arithmetic). setFastMathEnabled: is deprecated from macOS 15 in favour of mathMode but still
// answered; it avoids depending on MTLMathMode's numbering. On success an NSError, if any, holds
// warnings.
func (m *mtlDriver) compile(src string, v LanguageVersion) (lib handle, warnings string, err error) {
	withPool(func() {
		source := nsString(src)
		if source == 0 {
			err = errNil("initWithBytes:length:encoding:", "the source is not valid UTF-8")
			return
		}
		defer source.Send(selRelease)
		opts := objc.ID(classMTLCompileOptions).Send(selAlloc).Send(selInit)
		if opts == 0 {
			err = errNil("MTLCompileOptions init", "no options object")
			return
		}
		defer opts.Send(selRelease)
		opts.Send(selSetLanguageVersion, uint64(v))
		opts.Send(selSetFastMathEnabled, false)

		var nserr objc.ID // autoreleased; valid until the pool drains
		l := m.dev.Send(selNewLibraryWithSourceOptionsError, objc.ID(source), objc.ID(opts), &nserr)
		if l == 0 {
			err = nsError("newLibraryWithSource:options:error:", nserr)
			return
		}
		lib = handle(l)
		if nserr != 0 {
			warnings = goString(nserr.Send(selLocalizedDescription))
		}
	})
	return lib, warnings, err
}
