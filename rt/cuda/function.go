package cuda

import (
	"fmt"
	"math"
)

// FuncAttribute is a CUfunction_attribute (cuda.h); the values are the driver's ABI.
type FuncAttribute int32

const (
	FuncMaxThreadsPerBlock         FuncAttribute = 0 // read-only: the most threads a block may have
	FuncSharedSizeBytes            FuncAttribute = 1 // read-only: static shared memory
	FuncLocalSizeBytes             FuncAttribute = 3 // read-only: local memory per thread (spills)
	FuncNumRegs                    FuncAttribute = 4 // read-only: registers per thread
	FuncPTXVersion                 FuncAttribute = 5 // read-only: 10*major+minor of the PTX ISA
	FuncBinaryVersion              FuncAttribute = 6 // read-only: 10*major+minor of the SASS target
	FuncMaxDynamicSharedSizeBytes  FuncAttribute = 8 // settable: dynamic shared memory limit
	FuncPreferredSharedMemCarveout FuncAttribute = 9 // settable: shared/L1 split hint, percent
)

// Function is a kernel of a loaded module (CUfunction).
type Function struct {
	mod  *Module
	h    uintptr
	name string
}

// Name returns the kernel's .entry name.
func (f *Function) Name() string { return f.name }

// Attribute reads a function attribute (cuFuncGetAttribute).
func (f *Function) Attribute(attr FuncAttribute) (int, error) {
	if err := f.mod.live(); err != nil {
		return 0, err
	}
	var v int32
	err := f.mod.ctx.do(func(a *api) error {
		return checkf(a.cuFuncGetAttribute(&v, int32(attr), f.h), "cuFuncGetAttribute(%s, %d)", f.name, attr)
	})
	return int(v), err
}

// SetAttribute sets a function attribute (cuFuncSetAttribute).
func (f *Function) SetAttribute(attr FuncAttribute, value int) error {
	if value < math.MinInt32 || value > math.MaxInt32 {
		return fmt.Errorf("cuda: SetAttribute(%s, %d): value %d does not fit 32 bits", f.name, attr, value)
	}
	if err := f.mod.live(); err != nil {
		return err
	}
	return f.mod.ctx.do(func(a *api) error {
		return checkf(a.cuFuncSetAttribute(f.h, int32(attr), int32(value)), "cuFuncSetAttribute(%s, %d, %d)", f.name, attr, value)
	})
}

// SetMaxDynamicSharedMemory allows launches of f with up to bytes of dynamic shared memory. Above
// 48 KiB a kernel must opt in this way; the device's limit is Props.SharedMemoryPerBlockOptin
// minus the kernel's static shared memory.
func (f *Function) SetMaxDynamicSharedMemory(bytes int) error {
	if bytes < 0 {
		return fmt.Errorf("cuda: SetMaxDynamicSharedMemory(%d): negative size", bytes)
	}
	return f.SetAttribute(FuncMaxDynamicSharedSizeBytes, bytes)
}
