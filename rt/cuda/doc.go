// Package cuda is the CUDA driver API as kgen-generated packages use it to run their PTX kernels,
// called without cgo: the driver library (libcuda.so.1 on Linux, nvcuda.dll on Windows) is loaded
// at run time with github.com/ebitengine/purego, so packages importing it build with
// CGO_ENABLED=0 on every platform and run on machines without a GPU, where Open reports why not.
//
// The flow of generated code:
//
//	d, err := cuda.Open()                 // ErrNoDriver, or cuInit's CUresult (CUDA_ERROR_NO_DEVICE (100))
//	dev, err := d.Device(0)
//	props, err := dev.Props()             // compute capability, SMs, shared memory limits
//	err = cuda.CheckTarget(props, "sm_90a")
//	ctx, err := dev.PrimaryContext()
//	mod, err := ctx.LoadModule(ptx)       // JIT; on failure the *Error carries the JIT error log
//	fn, err := mod.Function("sgemm")
//	err = fn.SetMaxDynamicSharedMemory(n) // above 48 KiB
//	a, err := cuda.AllocCopy(ctx, hostA)  // *Buffer: device pointer + size
//	tm, err := ctx.EncodeTiled(cuda.TiledMap{...}) // TMA descriptor (sm_90), passed to Launch by value
//	err = fn.Launch(grid, block, n, a, b, c, int32(m), float32(alpha))
//	err = ctx.Synchronize()
//	err = cuda.Download(hostC, c)
//
// Every method makes its context current on a locked OS thread first (CUDA contexts are per CPU
// thread), so objects may be used from any goroutine. Kernel arguments are Go values whose width
// must match the PTX parameter (*Buffer and DevicePtr for .u64 pointers, int32, float32, ..., Raw
// for structs such as a CUtensorMap); Go's int is refused rather than guessed. Where the driver
// reports the kernel's parameter layout (cuFuncGetParamInfo, CUDA 12.4+), Launch refuses a wrong
// number of arguments or a wrong width instead of letting the driver read past them.
//
// # Platforms and build tags
//
// linux/amd64, linux/arm64, windows/amd64 and windows/arm64 load the driver; every other platform
// (darwin: no CUDA driver exists) and any build with -tags kgen_nocuda compile to a stub whose Open
// returns ErrNoDriver. kgen_nocuda exists because purego's import of the dynamic loader makes Linux
// binaries dynamically linked against glibc: qemu-user without an aarch64 sysroot, or a static
// container, cannot run them. KGEN_CUDA_LIBRARY names another driver library (tests use a mock).
//
// # What is proven without a GPU
//
// testdata/mockcuda.c, built with clang by the tests, is a libcuda.so.1 that implements every entry
// point this package binds with cuda.h's C signatures. Loaded through the same Open path, it checks
// the ABI for real: it records the grid, block, shared memory and stream of each cuLaunchKernel
// (11 arguments, five of them on the stack on amd64), reads every kernel parameter through the
// void** array as the driver does (sizes from the .entry declaration in the PTX, 1 to 128 bytes),
// copies memory between host and its host-backed "device" allocations with bounds checks, fills the
// JIT log buffers passed through cuModuleLoadDataEx's option array, keeps the current context per
// thread, reports parameter layouts as cuFuncGetParamInfo does, encodes TMA descriptors so that each of cuTensorMapEncodeTiled's 12 arguments can be
// checked, and returns real CUresult codes on its error paths; variants without
// cuTensorMapEncodeTiled or cuLaunchKernel check how Open treats old or broken libraries. A vector add that the mock computes
// on the host checks the whole sequence end to end. The hand-written PTX of the GPU test is
// assembled with ptxas for sm_80 and sm_90. The package vets with CGO_ENABLED=0 for linux/amd64,
// linux/arm64, darwin/arm64 and windows/amd64 (scripts/test.sh; TestCrossVet with KGEN_CROSS_VET=1).
//
// # What only a real GPU can show
//
// TestGPUVectorAdd (skipped, saying why, without a driver; failing instead with KGEN_REQUIRE_GPU=1)
// must show on a machine with an NVIDIA GPU: that the real libcuda.so.1 accepts these calls (the
// mock follows cuda.h but is not the driver), that the driver JITs the PTX and the kernel's result
// is exact on ragged sizes, that a broken PTX returns CUDA_ERROR_INVALID_PTX with a non-empty JIT
// log, that it accepts the TMA descriptor EncodeTiled builds (sm_90+), and how long launches take (BenchmarkGPULaunch for the host side). Build it with
// `CGO_ENABLED=0 go test -c -o cuda.test ./rt/cuda` and run `./cuda.test -test.run GPU -test.v`
// there; the PTX is embedded. The Windows loader (nvcuda.dll) is compiled and vetted but has never
// run; nor has linux/arm64 against a real driver.
package cuda
