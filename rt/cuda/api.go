package cuda

import "unsafe"

// api holds one Go function per driver entry point this package calls; symbols lists the exported
// name each field is bound to, and bind fills every field or fails naming the missing symbol. The
// types follow cuda.h on 64-bit hosts: CUresult, CUdevice, enums and unsigned int are 32-bit;
// CUdeviceptr is 64-bit; size_t is uintptr; handles (CUcontext, CUmodule, CUfunction, CUstream,
// CUevent) are pointers, kept as uintptr because Go never dereferences them.
type api struct {
	cuInit               func(flags uint32) int32
	cuDriverGetVersion   func(version *int32) int32
	cuDeviceGetCount     func(count *int32) int32
	cuDeviceGet          func(dev *int32, ordinal int32) int32
	cuDeviceGetName      func(name *byte, length int32, dev int32) int32
	cuDeviceGetAttribute func(value *int32, attr int32, dev int32) int32
	cuDeviceTotalMem     func(bytes *uintptr, dev int32) int32

	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) int32
	cuDevicePrimaryCtxRelease func(dev int32) int32
	cuCtxSetCurrent           func(ctx uintptr) int32
	cuCtxSynchronize          func() int32

	cuModuleLoadDataEx  func(mod *uintptr, image unsafe.Pointer, numOptions uint32, options *int32, values *uintptr) int32
	cuModuleUnload      func(mod uintptr) int32
	cuModuleGetFunction func(fn *uintptr, mod uintptr, name *byte) int32
	cuFuncGetAttribute  func(value *int32, attr int32, fn uintptr) int32
	cuFuncSetAttribute  func(fn uintptr, attr int32, value int32) int32

	cuMemAlloc   func(dptr *uint64, bytes uintptr) int32
	cuMemFree    func(dptr uint64) int32
	cuMemcpyHtoD func(dst uint64, src unsafe.Pointer, bytes uintptr) int32
	cuMemcpyDtoH func(dst unsafe.Pointer, src uint64, bytes uintptr) int32
	cuMemsetD8   func(dst uint64, value uint8, count uintptr) int32

	cuLaunchKernel func(fn uintptr, gx, gy, gz, bx, by, bz, sharedBytes uint32, stream uintptr, params *uintptr, extra *uintptr) int32

	cuStreamCreate      func(stream *uintptr, flags uint32) int32
	cuStreamDestroy     func(stream uintptr) int32
	cuStreamSynchronize func(stream uintptr) int32

	cuEventCreate      func(event *uintptr, flags uint32) int32
	cuEventDestroy     func(event uintptr) int32
	cuEventRecord      func(event uintptr, stream uintptr) int32
	cuEventSynchronize func(event uintptr) int32
	cuEventElapsedTime func(ms *float32, start uintptr, end uintptr) int32

	// Optional: nil when the driver lacks them (cuTensorMapEncodeTiled: CUDA 12.0+; cuFuncGetParamInfo: 12.4+).
	cuFuncGetParamInfo     func(fn uintptr, index uintptr, offset *uintptr, size *uintptr) int32
	cuTensorMapEncodeTiled func(tmap unsafe.Pointer, dataType int32, rank uint32, global uint64, dims *uint64,
		strides *uint64, box *uint32, elemStrides *uint32, interleave, swizzle, l2Promotion, oobFill int32) int32
}

// symbols pairs each api field with the driver symbol it calls. The _v2 names are exactly the ones
// cuda.h #defines the plain names to; the plain symbols are older ABIs (32-bit sizes and device
// pointers, or different semantics) kept for old binaries. Other _v2 exports are different
// functions (cuCtxSynchronize_v2 takes a CUcontext) and must not be bound for the plain name.
// cuEventElapsedTime_v2 (CUDA 12.8+) and cuDevicePrimaryCtxRelease_v2 (11.0+) fall back to the
// plain names, which have the same signatures, on older drivers.
func (a *api) symbols() []symbol {
	return []symbol{
		{"cuInit", &a.cuInit, false, ""},
		{"cuDriverGetVersion", &a.cuDriverGetVersion, false, ""},
		{"cuDeviceGetCount", &a.cuDeviceGetCount, false, ""},
		{"cuDeviceGet", &a.cuDeviceGet, false, ""},
		{"cuDeviceGetName", &a.cuDeviceGetName, false, ""},
		{"cuDeviceGetAttribute", &a.cuDeviceGetAttribute, false, ""},
		{"cuDeviceTotalMem_v2", &a.cuDeviceTotalMem, false, ""},
		{"cuDevicePrimaryCtxRetain", &a.cuDevicePrimaryCtxRetain, false, ""},
		{"cuDevicePrimaryCtxRelease_v2", &a.cuDevicePrimaryCtxRelease, false, "cuDevicePrimaryCtxRelease"},
		{"cuCtxSetCurrent", &a.cuCtxSetCurrent, false, ""},
		{"cuCtxSynchronize", &a.cuCtxSynchronize, false, ""},
		{"cuModuleLoadDataEx", &a.cuModuleLoadDataEx, false, ""},
		{"cuModuleUnload", &a.cuModuleUnload, false, ""},
		{"cuModuleGetFunction", &a.cuModuleGetFunction, false, ""},
		{"cuFuncGetAttribute", &a.cuFuncGetAttribute, false, ""},
		{"cuFuncSetAttribute", &a.cuFuncSetAttribute, false, ""},
		{"cuMemAlloc_v2", &a.cuMemAlloc, false, ""},
		{"cuMemFree_v2", &a.cuMemFree, false, ""},
		{"cuMemcpyHtoD_v2", &a.cuMemcpyHtoD, false, ""},
		{"cuMemcpyDtoH_v2", &a.cuMemcpyDtoH, false, ""},
		{"cuMemsetD8_v2", &a.cuMemsetD8, false, ""},
		{"cuLaunchKernel", &a.cuLaunchKernel, false, ""},
		{"cuStreamCreate", &a.cuStreamCreate, false, ""},
		{"cuStreamDestroy_v2", &a.cuStreamDestroy, false, ""},
		{"cuStreamSynchronize", &a.cuStreamSynchronize, false, ""},
		{"cuEventCreate", &a.cuEventCreate, false, ""},
		{"cuEventDestroy_v2", &a.cuEventDestroy, false, ""},
		{"cuEventRecord", &a.cuEventRecord, false, ""},
		{"cuEventSynchronize", &a.cuEventSynchronize, false, ""},
		{"cuEventElapsedTime_v2", &a.cuEventElapsedTime, false, "cuEventElapsedTime"},
		{"cuTensorMapEncodeTiled", &a.cuTensorMapEncodeTiled, true, ""},
		{"cuFuncGetParamInfo", &a.cuFuncGetParamInfo, true, ""},
	}
}

// symbol is one entry of api.symbols: the exported name and a pointer to the func field. An
// optional symbol the driver lacks leaves the field nil instead of failing Open; fallback is an
// older name with the same C signature, bound when the driver predates name.
type symbol struct {
	name     string
	fn       any
	optional bool
	fallback string
}
