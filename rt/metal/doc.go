// Package metal is Apple's Metal as kgen-generated packages use it to run their MSL kernels on a
// Mac's GPU, called without cgo: Metal.framework and CoreGraphics are loaded at run time with
// github.com/ebitengine/purego and messages are sent with its objc package, so packages importing
// it build with CGO_ENABLED=0 on every platform and run where Metal is absent, where Open reports
// why.
//
// The flow of generated code:
//
//	d, err := metal.Open()                        // ErrNoDevice off macOS, or without a GPU
//	lib, err := d.Compile(metalSource, metal.Metal30) // MSL compiled at run time; *Error holds the diagnostics
//	fn, err := lib.Function("saxpy")              // MTLFunction + MTLComputePipelineState
//	x, err := metal.NewBufferFrom(d, hostX)       // shared storage: a copy into its contents
//	y, err := metal.NewBufferFrom(d, hostY)
//	err = fn.Dispatch(grid, [3]int{256, 1, 1}, x, y, metal.Value(float32(a)), metal.Values(int32(n)))
//	err = metal.Download(hostY, y)                // Dispatch waited: the result is there
//
// # Arguments
//
// args[i] of Dispatch (and Launch.Args[i] of Run) binds the kernel parameter declared
// [[buffer(i)]]; kgen's MSL backend numbers a kernel's parameters 0, 1, ... in declaration order,
// so parameter position = buffer index = argument position. A *Buffer binds a `device T*` (offset
// 0); Bytes (Value, Values) a `constant T&` of at most 4 KiB, copied into the command. grid counts
// threadgroups (dispatchThreadgroups:threadsPerThreadgroup:), not threads. Everything is checked
// before it reaches Metal (see Dispatch); misuse is an error, never a crash.
//
// codegen/msl's launch table maps onto this directly: a "tensor" binding is a *Buffer
// (NewBufferFrom for inputs, NewBuffer of its byte size for a Temp; f16 and bf16 data as uint16),
// a "scalar" is Value(x) of its element type, "dims" is Values(int32(dim), ...) in Dims order;
// Threads becomes [3]int{Threads, 1, 1}, Grid(dims) the grid, and a kernel's launches, in order,
// one Run.
//
// Dispatch and Run are synchronous: they commit one command buffer and wait for it, so buffers may
// be read as soon as they return. Run puts several launches into one command buffer.
//
// Libraries are compiled with fastMathEnabled = NO (Metal's default is YES; on macOS 15 the same
// as mathMode MTLMathModeSafe), so the compiler may not reassociate or assume away NaN and
// infinity: the arithmetic kgen's interpreter and the MSL backend's CPU validation assume.
//
// # Objective-C
//
// objc_darwin.go (runtime helpers), device_darwin.go, library_darwin.go, pipeline_darwin.go,
// buffer_darwin.go and command_darwin.go send the selectors of Apple's headers, named exactly as
// there. Objects this package keeps are +1 references (alloc/init, new…, MTLCreateSystemDefaultDevice)
// released once by Close/Free; autoreleased ones (command buffers, encoders, NSErrors, NSStrings)
// are used inside an NSAutoreleasePool on a locked OS thread. MTLSize is passed by value as the
// platform's C ABI requires (see Size).
//
// # Platforms and build tags
//
// darwin/arm64 and darwin/amd64 use Metal; every other platform, and darwin with -tags
// kgen_nometal, compile to a stub whose Open returns ErrNoDevice. kgen_nometal keeps purego/objc
// out of a binary (its init dlopens libobjc).
//
// # What is proven here, without a Mac
//
// Nothing in this package has run on a Mac. What the tests show on Linux:
//   - the portable layer (argument checks, argument order, buffer copies, release of every
//     object exactly once, Run's ordering) against a fake driver that runs a Go vector add on
//     ragged sizes (1, 31, 1000, 65537) with sentinels past the end;
//   - the C ABI of every kind of value the darwin files pass or receive through objc_msgSend —
//     two MTLSize by value, an MTLSize result, NSUInteger, BOOL, double and NSInteger, a pointer to
//     Go bytes, an NSError** — against clang-built C functions with the IMP signatures, called
//     through purego exactly as purego/objc calls objc_msgSend (TestStructABI: on linux/amd64,
//     whose System V ABI darwin/amd64 shares, in every test run; on linux/arm64, whose AAPCS64
//     rules for these calls Apple silicon shares, run once by hand under qemu-aarch64 with a
//     cross-built imps.so, as its doc describes — it passed, and a 32-bit MTLSize made it fail);
//   - that every message the darwin files send has the argument count of its selector and the
//     argument and result types of Apple's headers, as transcribed in a table
//     (TestMessageSignatures parses the darwin files; objc's ...any would compile a mismatch),
//     and that every message is sent inside an autorelease pool;
//   - that the package and its tests vet with CGO_ENABLED=0 for darwin/arm64, darwin/amd64,
//     linux/amd64, linux/arm64 and windows/amd64 (TestCrossVet with KGEN_CROSS_VET=1).
//
// # What only a Mac can show
//
// TestGPUVectorAdd (skipped, saying why, without Metal; failing instead with KGEN_REQUIRE_GPU=1)
// must show on a Mac with a GPU: that the frameworks load and MTLCreateSystemDefaultDevice returns
// a device from a command-line binary, that the selectors and the argument types match the real
// classes, that testdata/vadd.metal compiles for Metal 3.0 and 3.1 and is exact on ragged sizes,
// that a broken source comes back as MTLLibraryErrorCompileFailure with the compiler's message, and
// that GPU timestamps are ordered. Build it with
// `CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 go test -c -o metal.test ./rt/metal` and run
// `./metal.test -test.v` there (the MSL source is embedded). Also unverified: Run's claim that a
// serial encoder orders the writes of one launch before the reads of the next (Apple's documented
// behaviour for tracked resources), and the autorelease-pool and release discipline under a leak
// checker (Instruments).
package metal
