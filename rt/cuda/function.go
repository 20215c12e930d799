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
	mod    *Module
	h      uintptr
	name   string
	params []Param // nil when the driver cannot say (before CUDA 12.4)
}

// Param is one kernel parameter as the driver laid it out: its byte offset in the parameter
// buffer and its size.
type Param struct{ Offset, Size int }

// maxParams bounds the parameter query: 32 KiB of parameters (the sm_70+ limit) of 1 byte each.
const maxParams = 32 << 10

// readParams asks the driver for the kernel's parameter layout (cuFuncGetParamInfo, CUDA 12.4+):
// indices from 0 until CUDA_ERROR_INVALID_VALUE, which marks the end.
func (f *Function) readParams() error {
	return f.mod.ctx.do(func(a *api) error {
		if a.cuFuncGetParamInfo == nil {
			return nil
		}
		ps := []Param{}
		for i := 0; i < maxParams; i++ {
			var off, size uintptr
			r := a.cuFuncGetParamInfo(f.h, uintptr(i), &off, &size)
			if Result(r) == ErrorInvalidValue {
				break
			}
			if r != 0 {
				return checkf(r, "cuFuncGetParamInfo(%s, %d)", f.name, i)
			}
			ps = append(ps, Param{Offset: int(off), Size: int(size)})
		}
		f.params = ps
		return nil
	})
}

// Params returns the kernel's parameters as the driver reports them, and false when the driver is
// too old to say (cuFuncGetParamInfo needs CUDA 12.4); Launch then cannot check its arguments.
func (f *Function) Params() ([]Param, bool) { return f.params, f.params != nil }

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
