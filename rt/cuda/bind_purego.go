//go:build (linux || windows) && (amd64 || arm64) && !kgen_nocuda

package cuda

import (
	"unsafe"

	"github.com/ebitengine/purego"
)

// supported reports whether this build can load a CUDA driver at all.
const supported = true

// bind resolves every entry point of a in lib and makes each field call it through purego, which
// passes arguments by the platform's C calling convention (System V on linux/amd64, AAPCS64 on
// arm64, Microsoft x64 on windows/amd64). It fails, naming the symbol, if a
// required one is missing; a missing optional one leaves its field nil.
func bind(lib *library, a *api) error {
	for _, s := range a.symbols() {
		p, err := lib.lookup(s.name)
		if err != nil && s.fallback != "" {
			p, err = lib.lookup(s.fallback)
		}
		if err != nil && s.optional {
			continue
		}
		if err != nil {
			return err
		}
		purego.RegisterFunc(s.fn, p)
	}
	fastPath(lib, a)
	return nil
}

// fastPath replaces the two calls every launch makes with direct purego.SyscallN calls, which skip
// RegisterFunc's reflection (about a microsecond each). All their arguments are integers or
// pointers, the case SyscallN handles; results are the low 32 bits, the C int.
func fastPath(lib *library, a *api) {
	launch, err1 := lib.lookup("cuLaunchKernel")
	setCurrent, err2 := lib.lookup("cuCtxSetCurrent")
	if err1 != nil || err2 != nil {
		return // bind already failed on these
	}
	a.cuLaunchKernel = func(fn uintptr, gx, gy, gz, bx, by, bz, sharedBytes uint32, stream uintptr, params *uintptr, extra *uintptr) int32 {
		r, _, _ := purego.SyscallN(launch, fn, uintptr(gx), uintptr(gy), uintptr(gz), uintptr(bx), uintptr(by), uintptr(bz),
			uintptr(sharedBytes), stream, uintptr(unsafe.Pointer(params)), uintptr(unsafe.Pointer(extra)))
		return int32(r)
	}
	a.cuCtxSetCurrent = func(ctx uintptr) int32 {
		r, _, _ := purego.SyscallN(setCurrent, ctx)
		return int32(r)
	}
}
