// Package msl is kgen's Metal backend: it lowers the GPU-mapped loop IR of the msl pipeline
// (passes.Compile with the msl target: fusion, mmaform, gpumap, staging) to Metal Shading Language
// `kernel void` functions, one per ir.Launch, through a small typed syntax tree (ast.go) that only
// print.go turns into text. Backend writes NAME.metal and metal.go, which embeds it with a table of
// launches (function, buffer bindings, threadgroup size, grid as a Go function of the dims).
//
// # Host side (host.go, hostrt.go, hostcheck.go, hosttest.go)
//
// metal.go also holds OpenMetal (rt/metal: open the device, compile the embedded source once for the
// package's language version, build every pipeline) and, per kernel with a Metal version, two
// methods of *Metal with the CPU function's parameters: one on *MetalTensor[T] (shared-storage
// buffers), one ...Host on slices (upload, run, download the written tensors). Both first run
// <kernel>MetalCheck, the CPU function's checks (dims, lengths, affine index bounds) on lengths, with
// the same errors, then the CPU function's early return when every output is empty, then the Metal
// limit (dims and lengths up to 2^31-1: int32 dims, int offsets); only then is the device touched.
// A kernel's launches run in one command buffer (metal.Device.Run); temporaries are allocated per
// call. Kernels the backend refuses get no method and are listed in Metal's doc comment. With
// Backend.Tests, metal_test.go checks on any system that each Host method's errors equal the CPU
// function's (on a nil *Metal), and on a Mac runs each against the interpreter (kgentest.Run),
// skipping elsewhere saying why. None of it has run on a Mac.
//
// # Mapping
//
//   - Buffers are `device T*` (const when only read) in kernel-parameter order, scalars
//     `constant const T&`, the dims one `constant` struct of ints; every [[buffer(i)]] index is in the
//     launch table.
//   - The threadgroup is one-dimensional: the thread nest's variables are decoded from
//     thread_index_in_threadgroup in loop order (thread t, simdgroup t/32: Apple GPUs have 32-wide
//     simdgroups) and guarded by their loops' bounds; grid loops take threadgroup_position_in_grid
//     along x, y, z.
//   - Shared buffers are `threadgroup T name[N]` at kernel scope, N evaluated from the Func's plan
//     (at most 32 KiB in all, at most 1024 threads); barriers are threadgroup_barrier /
//     simdgroup_barrier, with mem_device as well when the launch reads a device tensor it writes
//     (a row reduction publishes m[i] through device memory).
//   - Copies are loops; an async copy (cp.async in the IR) is a plain copy, since Metal has no
//     asynchronous global-to-threadgroup copy: the IR's waits are then already satisfied.
//   - f16 and bf16 are storage types (half, bfloat: Metal 3.1, target msl:3.1); arithmetic is float,
//     and stores round to nearest even. f64 kernels are left out (Metal has no double) with a
//     "not supported yet" error in the table.
//   - A thread-scope MMA is a float register tile updated in the IR's summation order. A
//     simdgroup-scope MMA accumulates in a simdgroup_float8x8. Each K step, whole row-major tiles
//     (every valid extent at least 8: the interior of a staged GEMM) are simdgroup_load-ed where they
//     lie, in their own type (simdgroup_float8x8, simdgroup_half8x8, simdgroup_bfloat8x8 — bfloat
//     kernels need Metal 3.1 — multiplied into the float accumulator); edge tiles are widened by the
//     lanes into float scratch
//     in threadgroup memory, zeros beyond the valid extents so that ragged edges read nothing out of
//     range, and loaded from there; then simdgroup_multiply_accumulate. The accumulator leaves
//     through simdgroup_store into scratch, and each lane stores its elements of the epilogue. No
//     code depends on which lane holds which element of a simdgroup matrix.
//   - The beta rule: an epilogue with a scaled-output term beta·C is versioned on beta == 0, and the
//     beta == 0 version does not read C. max, min and relu keep NaN as the interpreter does (helper
//     functions), so the runtime must compile with fast math off.
//   - Lane reductions (ir.WarpReduce): a sum is the IR's butterfly in simd_shuffle_xor, max and min
//     are simd_max / simd_min guarded by simd_any(isnan) (docs/DESIGN.md, "GPU reductions").
//
// # Validation on Linux, and its limits
//
// There is no Mac in CI. The tests compile every emitted kernel of kernels.kdsl (and of the
// repository's other kdsl files, and GEMMs with register tiles) as C++20 with clang++-14 against
// testdata/metal_shim.h (the subset of <metal_stdlib> the emitter uses: address spaces as empty
// macros, half and bfloat as bit-exact software types, metal:: math, simdgroup matrices, barriers)
// into one driver (testdata/driver.cpp), after a syntax-only build in the shim's strict mode where
// device, constant and threadgroup are distinct clang address spaces (so a pointer into the wrong
// space is refused, as Apple's compiler would). Each kernel runs against ir.RunKernel on ragged
// shapes (all ones, primes, sizes that are no multiple of any tile; one with a NaN input), with
// tolerances from the precision (kgentest.Compare). The driver runs every MSL thread as a fiber,
// one at a time between rendezvous, lowest thread first or highest first (each shape runs both ways,
// and the two results must agree bit for bit: a difference is a race); fills threadgroup memory with
// NaN before each threadgroup; places every buffer against a guard page; and makes every barrier and
// simdgroup operation a rendezvous of its scope that checks all threads arrive at the same source
// line. TestPlantedBugs shows that missing barriers (before a threadgroup or a device read), a
// barrier or a simdgroup MMA in divergent control flow, a wrong simdgroup tile offset and an
// off-by-one edge each fail a run.
//
// This proves that the emitted text is valid C++ with Metal's spelling of the constructs used, that
// its index arithmetic, edges, staging, barriers and epilogues compute what the interpreter does
// under a deterministic schedule, and that no thread reads threadgroup memory nobody wrote or a
// buffer past its end. It cannot prove: that Apple's compiler accepts it (the strict mode checks
// address spaces, not Metal's other rules, and its half and bfloat are stand-ins); that a race
// between barriers is absent under every schedule (two schedules are compared; there is no
// access-level race detector here, the interpreter's race check covers the IR itself); anything
// about the simdgroup lane layout (the shim holds whole matrices per lane; the layout is
// unspecified by Apple); the GPU's numerics (fast math, fused multiply-add, exp accuracy);
// underruns before a buffer's start; 32-bit index overflow (offsets are int: tensors up to 2^31
// elements); performance. No Metal runtime runs here.
package msl
