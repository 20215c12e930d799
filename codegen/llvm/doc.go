// Package llvm is kgen's LLVM IR backend: every kernel of a package becomes one function with a C ABI
// in one LLVM module (NAME.ll), built with the typed API of github.com/llir/llvm, plus a C header
// (NAME.h) and the commands that turn the module into an object or a shared library (NAME.build.txt).
// The module reaches every language with a C FFI (C, C++, Fortran through bind(C), Rust) and every CPU
// LLVM knows.
//
// # What it consumes
//
// The loop IR of the "llvm" pass pipeline (passes.Pipeline): the CPU pipeline's BLIS structure
// (fusion, tensorize, pack, precision) with the register tile and cache blocks of llvm's MMA shape
// (mmaplan: 6×16 f32, 6×8 f64; 8×32 and 8×16 for a machine with 64-byte vectors, which target.Host
// gives on an AVX-512 host: kgen gen -host; plan constants in the module), then written as loops: microtomma and
// mmalower turn each microkernel call into a register-tile accumulator updated from the packed panels,
// packlower and transposelower turn panel packs and transpose tiles into copy loops; tile, interchange,
// vectorize and beta follow (no parallel: the code runs serially). GEMMs are thus cache-blocked loops
// that LLVM's optimiser vectorises; there are no Micro, Pack or Transpose nodes, which only the assembly
// backends implement (Generate rejects them with an error).
//
// # The C ABI
//
// For kernel k of package NAME the function is NAME_k. Its parameters are the dims (int64_t, in the
// kernel's dim order), then the kernel's parameters in declared order: a tensor as a pointer to its
// row-major elements plus an int64_t element count, a scalar by value. Element types: f32 float, f64
// double, f16 and bf16 uint16_t (their bits), i32 int32_t, i8 and bool int8_t. Tensors must not
// overlap (the pointers are noalias, C's restrict). It returns an int32_t status, and writes nothing
// unless it is 0:
//
//	0  done
//	1  a dim is negative or above 2^61-1 (rt.MaxDim)
//	2  a tensor's element count is not the product of its dims
//	3  an index of the kernel reaches outside a dim (the window and convolution checks of the Go wrapper)
//	4  a temporary could not be allocated (malloc returned NULL)
//
// These are the checks of the Go wrapper (codegen/golang), in the same order.
//
// # Loops and memory
//
// Loops become header/body/latch blocks over an i64 counter kept in an alloca, which mem2reg (opt or
// clang at -O1 and above; llc alone does not run it) turns into phis; index arithmetic is i64.
// Parallel loops run serially: the module has no thread runtime. Vector loops become <W x T>
// operations where the lane body allows (vector.go; W from the target's vector width), reductions on
// vector accumulators, and their remainders one more group under a mask (llvm.masked.load and
// llvm.masked.store, masked.go); others run lane by lane, for LLVM's vectoriser to widen. GEMM
// register tiles are versioned into whole and edge tiles, completely unrolled with the accumulator in
// SSA vector values, one vector operation per 64-byte group of a tile row (version.go, unroll.go): an
// edge tile's missing rows are skipped by guards, its missing columns masked; the packed k loop
// prefetches its panels and the C tile as the amd64 microkernels do (llvm.prefetch, prefetch.go).
//
// Temporaries (let tensors) and scratch buffers whose size depends only on dims are allocated with
// malloc once, after the argument checks and before anything is written, and freed before returning;
// scratch buffers of a constant size up to 16 KiB (register tiles) are allocas in the entry block.
//
// # Arithmetic
//
// f16 and bf16 values are widened to float when loaded and rounded to nearest even when stored or cast,
// with integer code (f16.go) rather than LLVM's half type, so no target needs a conversion library
// call. The f32 exp is the SIMD backends' expansion (exp.go), with no libm call and a short path for
// groups that need no subnormal or overflow handling; sqrt and fabs are LLVM intrinsics; the f64 exp
// and every log call llvm.exp / llvm.log (libm on CPUs; NVPTX has no such routine, so kernels using
// them compile only for CPUs); sigmoid is 1/(1+exp(−x)) and tanh an expansion
// over exp (computed in double for f32); max and min propagate NaN as the interpreter does (selects,
// not llvm.maxnum). No fast-math flags are set. Results round as the interpreter's storage mode says,
// except that x + y·z is llvm.fmuladd (the target may fuse it into one FMA, as the assembly backends
// do) and vectorised reductions sum in their lane order (ir/vector.go).
package llvm
