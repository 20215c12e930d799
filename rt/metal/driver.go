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
	// dispatch encodes one dispatchThreadgroups:threadsPerThreadgroup: with args bound at indices
	// 0, 1, ... in a new command buffer, commits it and waits for completion.
	dispatch(pso handle, grid, threads Size, args []binding) (Timing, error)
	// release sends release to h (h != 0).
	release(h handle)
	// close releases the device and its command queue.
	close()
}

// binding is one kernel argument as the driver binds it: a buffer (setBuffer:offset:atIndex:) or,
// when buf is 0, bytes (setBytes:length:atIndex:). Its index is its position in the slice.
type binding struct {
	buf   handle
	bytes []byte
}
