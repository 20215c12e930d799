// Package ptx is kgen's PTX backend: it lowers the GPU-mapped loop IR (the ptx pipeline: fusion,
// mmaform, gpumap, staging) to PTX text for NVIDIA GPUs, one .entry per ir.Launch, and writes it into
// the generated Go package with a launch table.
//
// Layers, each a file or two:
//   - builder.go: a typed PTX builder. Registers carry types and are declared per class, instructions
//     are values (opcode, modifiers, types, operands, guard predicate, comment), labels are values;
//     Module.Print is the only place text is made, stable and commented with the kdsl source lines.
//   - lower.go, iexpr.go, expr.go, math.go, copy.go, mma.go, mma_warp.go: the lowering. Grid loops read
//     %ctaid (the innermost grid loop is x), thread loops %tid (innermost x), other loops are loops;
//     index arithmetic is 64-bit (floor division and modulo as the IR defines them); scalar arithmetic
//     uses the IEEE .rn forms so that it matches the interpreter bit for bit, except exp (≤ 2 ulp,
//     math.go); Copy nodes become cp.async.ca with zero fill (4- and 8-byte elements) or checked
//     loads and stores; thread-scope MMA is an FFMA register tile with an unguarded full-tile path
//     and a guarded edge path (16-byte shared vector loads on full tiles); warp-scope MMA is
//     mma.sync.aligned.m16n8k16 (f16/bf16 → f32) with fragment positions from the IR's fragment maps
//     and ldmatrix on full tiles; warpgroup-scope MMA (sm_90a's m64nNk16 tiles) is N/8 of those per
//     warp; a lane reduction (ir.WarpReduce, row kernels) is the IR's butterfly in shfl.sync.bfly
//     (reduce.go). exp, log, tanh, sigmoid have accurate expansions (math.go). Anything else is reported as
//     "not supported yet: ..." (never a panic, never partial output).
//   - module.go, backend.go, wgmma.go, tma.go: sub-targets (sm_80: PTX 7.0, runs on sm_80/86/89/90;
//     sm_90a: PTX 8.0, wgmma on shared-memory descriptors, TMA versions and the production version of
//     the 16-bit GEMMs), and the codegen.MultiBackend writing ptx_<sub>.ptx (embedded) and
//     ptx_kernels.go (the launch table a CUDA launcher reads).
//   - glue.go, glue_runtime.go, checks.go, gluetest.go: ptx_cuda.go, the launcher on rt/cuda:
//     OpenCUDA (device 0, the sm_90a module on 9.0, else sm_80 on 8.0+, KGEN_PTX_TARGET=sm_80 to run
//     the sm_80 module on Hopper, a clear error otherwise or without a driver) and per kernel a method on *CUDATensor[T] and a NameHost on slices, with the
//     CPU wrapper's checks and errors (checks.go mirrors the go backend's affine bounds checks) before
//     any launch; and ptx_cuda_test.go, each method against the interpreter on a GPU (skips without).
//
// Tests: ptxas -v for every architecture a sub-target claims on the modules kgen gen writes (no GEMM
// spills, registers fit the block) and their SASS (HMMA/LDSM/LDGSTS on sm_8x, HGMMA/UTMALDG on
// sm_90a, FFMA only in f32 GEMMs), an emulator of the emitted instructions (emu*.go; kgen tune runs
// GPU candidates in it too) that parses the printed PTX text back (emuparse.go), runs every kernel of
// kernels.kdsl against the reference interpreter on ragged shapes, refuses what it does not model and
// catches planted bugs, and exp's error bound; the generated package vets for 4 platforms with CGO_ENABLED=0 and its methods' launch
// sequences are checked against rt/cuda's mock driver (glue_test.go). What only a GPU can show: that the hardware agrees with the emulator's reading of the
// PTX ISA (fragment layouts, cp.async zero fill, barrier semantics, shfl.sync) and the kernels' speed.
// The emulator's shfl.sync (emu_shfl.go) follows the ISA's pseudocode for all four modes and
// refuses member masks that do not name exactly the lanes running it and reads of lanes outside them.
package ptx
