package metal

import (
	"fmt"
	"sync"
)

// PipelineInfo is what a compute pipeline state reports.
type PipelineInfo struct {
	// MaxTotalThreadsPerThreadgroup bounds the product of a dispatch's threads per threadgroup; it
	// depends on the kernel's register and threadgroup-memory use and can be below the device's.
	MaxTotalThreadsPerThreadgroup int
	// ThreadExecutionWidth is the SIMD width (32 on Apple GPUs).
	ThreadExecutionWidth int
	// StaticThreadgroupMemoryLength is the threadgroup memory the kernel declares, in bytes.
	StaticThreadgroupMemoryLength int
}

// Function is a kernel function of a Library with its MTLComputePipelineState: what Dispatch runs.
type Function struct {
	dev     *Device
	name    string
	fn, pso handle
	info    PipelineInfo

	mu     sync.Mutex
	closed bool
}

// Function looks up the kernel function name (newFunctionWithName:) and builds its compute pipeline
// state (newComputePipelineStateWithFunction:error:). A name the library lacks is an error naming it.
func (l *Library) Function(name string) (*Function, error) {
	if err := l.live(); err != nil {
		return nil, err
	}
	if name == "" {
		return nil, fmt.Errorf("metal: Function: empty name")
	}
	fn, pso, info, err := l.dev.drv.pipeline(l.h, name)
	if err != nil {
		return nil, err
	}
	return &Function{dev: l.dev, name: name, fn: fn, pso: pso, info: info}, nil
}

// Name returns the kernel function's name.
func (f *Function) Name() string { return f.name }

// Info returns the pipeline state's limits.
func (f *Function) Info() PipelineInfo { return f.info }

func (f *Function) live() error {
	if f == nil {
		return fmt.Errorf("metal: nil *Function")
	}
	if err := f.dev.live(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	return nil
}

// Close releases the pipeline state and the function. Closing twice is a no-op.
func (f *Function) Close() error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		f.dev.drv.release(f.pso)
		f.dev.drv.release(f.fn)
	}
	return nil
}
