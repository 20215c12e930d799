//go:build darwin && !kgen_nometal

package metal

import (
	"fmt"

	"github.com/ebitengine/purego/objc"
)

// Selectors of MTLLibrary, MTLDevice and MTLComputePipelineState (MTLLibrary.h, MTLDevice.h,
// MTLComputePipeline.h).
var (
	selNewFunctionWithName                      = objc.RegisterName("newFunctionWithName:")
	selNewComputePipelineStateWithFunctionError = objc.RegisterName("newComputePipelineStateWithFunction:error:")
	selMaxTotalThreadsPerThreadgroup            = objc.RegisterName("maxTotalThreadsPerThreadgroup")
	selThreadExecutionWidth                     = objc.RegisterName("threadExecutionWidth")
	selStaticThreadgroupMemoryLength            = objc.RegisterName("staticThreadgroupMemoryLength")
)

// pipeline returns the MTLFunction name of lib and its compute pipeline state, both +1.
func (m *mtlDriver) pipeline(lib handle, name string) (fn, pso handle, info PipelineInfo, err error) {
	withPool(func() {
		ns := nsString(name)
		if ns == 0 {
			err = errNil("initWithBytes:length:encoding:", "the name is not valid UTF-8")
			return
		}
		defer ns.Send(selRelease)
		f := objc.ID(lib).Send(selNewFunctionWithName, objc.ID(ns))
		if f == 0 {
			err = &Error{Op: "newFunctionWithName:", Description: fmt.Sprintf("the library has no function %q", name)}
			return
		}
		var nserr objc.ID
		p := m.dev.Send(selNewComputePipelineStateWithFunctionError, objc.ID(f), &nserr)
		if p == 0 {
			f.Send(selRelease)
			err = nsError("newComputePipelineStateWithFunction:error:", nserr)
			return
		}
		fn, pso = handle(f), handle(p)
		info = PipelineInfo{
			MaxTotalThreadsPerThreadgroup: int(objc.Send[uint64](p, selMaxTotalThreadsPerThreadgroup)),
			ThreadExecutionWidth:          int(objc.Send[uint64](p, selThreadExecutionWidth)),
		}
		if respondsTo(p, selStaticThreadgroupMemoryLength) { // macOS 11+
			info.StaticThreadgroupMemoryLength = int(objc.Send[uint64](p, selStaticThreadgroupMemoryLength))
		}
	})
	return fn, pso, info, err
}
