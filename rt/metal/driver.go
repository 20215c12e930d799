package metal

import "unsafe"

// handle is an Objective-C object pointer (id) that this package owns one reference to (+1, from
// a new…/alloc/MTLCreateSystemDefaultDevice call) and releases exactly once.
type handle uintptr

// driver is the Objective-C side of a Device: objc_darwin.go and its neighbours implement it with
// purego/objc on macOS; tests on other systems use a fake that records the calls. The portable
// types (Device, Library, Function, Buffer) check every argument before calling it, so a driver
// sees only valid requests: positive sizes, valid handles, at most MaxArgs bindings.
type driver interface {
	// info reports the device's properties.
	info() DeviceInfo
	// compile is newLibraryWithSource:options:error: with the given language version; warnings
	// holds the compiler's output when it succeeded with diagnostics.
	compile(src string, v LanguageVersion) (lib handle, warnings string, err error)
	// pipeline is newFunctionWithName: then newComputePipelineStateWithFunction:error:.
	pipeline(lib handle, name string) (fn, pso handle, info PipelineInfo, err error)
	// newBuffer is newBufferWithLength:options: with shared storage; contents is its CPU address.
	newBuffer(n int) (buf handle, contents unsafe.Pointer, err error)
	// run encodes the launches in order in one compute command encoder of a new command buffer
	// (each a dispatchThreadgroups:threadsPerThreadgroup: with its args bound at indices 0, 1,
	// ...), commits it and waits for completion. len(ls) >= 1.
	run(ls []launch) (Timing, error)
	// release sends release to h (h != 0).
	release(h handle)
	// close releases the device and its command queue.
	close()
}

// launch is one checked dispatch: a pipeline state, a nonempty grid, threads per threadgroup.
type launch struct {
	pso           handle
	grid, threads Size
	args          []binding
}

// binding is one kernel argument as the driver binds it: a buffer (setBuffer:offset:atIndex:) or,
// when buf is 0, bytes (setBytes:length:atIndex:). Its index is its position in the slice.
type binding struct {
	buf   handle
	bytes []byte
}
