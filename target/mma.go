package target

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/ir"
)

// MMAShape is one native matrix multiply-accumulate of a target: the ir.MMA tile (M×N×K) it does in one
// step, the input and accumulator types, the threads that do it, and where its operands live.
//
// On CPUs the "instruction" is the microkernel's rank-1 update of an MR×NR register tile (K = 1 per
// step: MR broadcasts times NR/VL vector FMAs), with A and B read from packed panels; on GPUs it is one
// tensor-core or simdgroup instruction with its register fragments.
type MMAShape struct {
	Target  string // "amd64:avx2", "ptx:sm_80", ... (Lookup's key)
	Insn    string // the instruction or microkernel family
	M, N, K int
	// NStep > 0 says N may be any multiple of NStep up to N (wgmma m64nNk16).
	NStep int
	In    ir.DType // type of A and B
	Acc   ir.DType
	Scope ir.Scope
	// TF32 marks a shape that rounds f32 inputs to tf32 (10-bit mantissa); it is chosen only when the
	// schedule asks `precision tf32`, since it does not compute f32 products exactly.
	TF32 bool
	// Frag gives the register fragment of an operand ('A', 'B', 'C') for an N (the shape's own N for
	// fixed shapes); nil means the operand is read from memory (packed panels on CPUs, shared-memory
	// tiles through a descriptor for wgmma A and B) or, for C, a register tile of one thread.
	Frag func(which byte, n int) *ir.Fragment
}

// AccLayout is the accumulator layout of an n-wide tile: the fragment, or the thread's register tile.
func (s MMAShape) AccLayout(n int) *ir.Fragment {
	if s.Frag != nil {
		if f := s.Frag('C', n); f != nil {
			return f
		}
	}
	return ir.RegisterTile(s.M, n)
}

func (s MMAShape) String() string {
	n := fmt.Sprint(s.N)
	if s.NStep > 0 {
		n = fmt.Sprintf("{%d..%d step %d}", s.NStep, s.N, s.NStep)
	}
	tf := ""
	if s.TF32 {
		tf = " tf32"
	}
	return fmt.Sprintf("%s %s %dx%sx%d %s->%s%s %s", s.Target, s.Insn, s.M, n, s.K, s.In, s.Acc, tf, s.Scope)
}

// frags is the Frag function of a fixed shape whose operands are all register fragments.
func frags(a, b, c func() *ir.Fragment) func(byte, int) *ir.Fragment {
	return func(which byte, _ int) *ir.Fragment {
		switch which {
		case 'A':
			return a()
		case 'B':
			return b()
		}
		return c()
	}
}

var (
	sm80Frag      = frags(ir.FragSM80A, ir.FragSM80B, ir.FragSM80C)
	tf32Frag      = frags(ir.FragSM80TF32A, ir.FragSM80TF32B, ir.FragSM80C)
	simdgroupFrag = frags(ir.FragSimdgroup8x8, ir.FragSimdgroup8x8, ir.FragSimdgroup8x8)
)

func wgmmaFrag(which byte, n int) *ir.Fragment {
	if which == 'C' {
		return ir.FragWGMMAAcc(n)
	}
	return nil // A and B from shared memory (128-byte swizzled, K-major) through matrix descriptors
}

// ffma is a GPU thread's register tile of scalar FMAs: what f32 GEMMs run on sm_80/sm_90a without
// `precision tf32` (exact f32 products, like the CPU path) and what any type without a tensor-core
// shape falls back to.
func ffma(t string, in, acc ir.DType) MMAShape {
	return MMAShape{Target: t, Insn: "fma register tile", M: 8, N: 8, K: 1, In: in, Acc: acc, Scope: ir.ScopeThread}
}

// mmaTable lists each target's shapes, best first for a given pair of types.
var mmaTable = []MMAShape{
	// CPU microkernels (codegen/amd64 TileFor, codegen/arm64 TileFor): the register tiles the
	// hand-scheduled generators implement. 16-bit inputs are widened to f32 when packed.
	{Target: "amd64:avx2", Insn: "vfmadd231ps ymm", M: 6, N: 16, K: 1, In: ir.F32, Acc: ir.F32, Scope: ir.ScopeThread},
	{Target: "amd64:avx2", Insn: "vfmadd231pd ymm", M: 6, N: 8, K: 1, In: ir.F64, Acc: ir.F64, Scope: ir.ScopeThread},
	{Target: "amd64:avx512", Insn: "vfmadd231ps zmm", M: 14, N: 32, K: 1, In: ir.F32, Acc: ir.F32, Scope: ir.ScopeThread},
	{Target: "amd64:avx512", Insn: "vfmadd231pd zmm", M: 14, N: 16, K: 1, In: ir.F64, Acc: ir.F64, Scope: ir.ScopeThread},
	{Target: "amd64:avx512", Insn: "vdpbf16ps zmm", M: 14, N: 32, K: 2, In: ir.BF16, Acc: ir.F32, Scope: ir.ScopeThread},
	{Target: "arm64:neon", Insn: "fmla v.4s", M: 8, N: 12, K: 1, In: ir.F32, Acc: ir.F32, Scope: ir.ScopeThread},
	{Target: "arm64:neon", Insn: "fmla v.2d", M: 6, N: 8, K: 1, In: ir.F64, Acc: ir.F64, Scope: ir.ScopeThread},
	// The LLVM IR backend: mmalower's register tile, completely unrolled and kept in SSA values by
	// codegen/llvm, vectorised by LLVM (the AVX2 microkernel's shape: 12 ymm accumulators with
	// -mcpu=native on x86-64).
	{Target: "llvm", Insn: "fmuladd register tile", M: 6, N: 16, K: 1, In: ir.F32, Acc: ir.F32, Scope: ir.ScopeThread},
	{Target: "llvm", Insn: "fmuladd register tile", M: 6, N: 8, K: 1, In: ir.F64, Acc: ir.F64, Scope: ir.ScopeThread},
	{Target: "llvm", Insn: "fmuladd register tile", M: 6, N: 16, K: 1, In: ir.F16, Acc: ir.F32, Scope: ir.ScopeThread},
	{Target: "llvm", Insn: "fmuladd register tile", M: 6, N: 16, K: 1, In: ir.BF16, Acc: ir.F32, Scope: ir.ScopeThread},
	// With 64-byte vectors (Machine.MMAKey, kgen gen -host on an AVX-512 machine): 8 rows of two zmm
	// (f32) or two zmm of f64, 16 accumulators + 2 B̃ + 1 broadcast, which llc allocates without a spill
	// in the k loop. Not the avo kernels' 14 rows: measured against 14×32 / 14×16 (docs/PERF.md) 8 rows
	// won sgemm 256 and the 16-row skinny product and lost dgemm 1024, by about 10% each.
	{Target: "llvm:avx512", Insn: "fmuladd register tile", M: 8, N: 32, K: 1, In: ir.F32, Acc: ir.F32, Scope: ir.ScopeThread},
	{Target: "llvm:avx512", Insn: "fmuladd register tile", M: 8, N: 16, K: 1, In: ir.F64, Acc: ir.F64, Scope: ir.ScopeThread},
	{Target: "llvm:avx512", Insn: "fmuladd register tile", M: 8, N: 32, K: 1, In: ir.F16, Acc: ir.F32, Scope: ir.ScopeThread},
	{Target: "llvm:avx512", Insn: "fmuladd register tile", M: 8, N: 32, K: 1, In: ir.BF16, Acc: ir.F32, Scope: ir.ScopeThread},
	// The portable Go backend: the expansion of MMA into scalar FMAs (passes/mmalower.go).
	{Target: "go", Insn: "scalar fma", M: 4, N: 4, K: 1, In: ir.F32, Acc: ir.F32, Scope: ir.ScopeThread},
	{Target: "go", Insn: "scalar fma", M: 4, N: 4, K: 1, In: ir.F64, Acc: ir.F64, Scope: ir.ScopeThread},

	// sm_80: mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 (PTX ISA 7.0), one warp.
	{Target: "ptx:sm_80", Insn: "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", M: 16, N: 8, K: 16, In: ir.F16, Acc: ir.F32, Scope: ir.ScopeWarp, Frag: sm80Frag},
	{Target: "ptx:sm_80", Insn: "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", M: 16, N: 8, K: 16, In: ir.BF16, Acc: ir.F32, Scope: ir.ScopeWarp, Frag: sm80Frag},
	{Target: "ptx:sm_80", Insn: "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", M: 16, N: 8, K: 8, In: ir.F32, Acc: ir.F32, Scope: ir.ScopeWarp, TF32: true, Frag: tf32Frag},
	ffma("ptx:sm_80", ir.F32, ir.F32),
	ffma("ptx:sm_80", ir.F64, ir.F64),

	// sm_90a: wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16} (PTX ISA 8.0), one
	// warpgroup, N = 8..256 by 8; mma.sync stays available.
	{Target: "ptx:sm_90a", Insn: "wgmma.mma_async.sync.aligned.m64nNk16.f32.f16.f16", M: 64, N: 256, NStep: 8, K: 16, In: ir.F16, Acc: ir.F32, Scope: ir.ScopeWarpgroup, Frag: wgmmaFrag},
	{Target: "ptx:sm_90a", Insn: "wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16", M: 64, N: 256, NStep: 8, K: 16, In: ir.BF16, Acc: ir.F32, Scope: ir.ScopeWarpgroup, Frag: wgmmaFrag},
	{Target: "ptx:sm_90a", Insn: "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", M: 16, N: 8, K: 16, In: ir.F16, Acc: ir.F32, Scope: ir.ScopeWarp, Frag: sm80Frag},
	{Target: "ptx:sm_90a", Insn: "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", M: 16, N: 8, K: 16, In: ir.BF16, Acc: ir.F32, Scope: ir.ScopeWarp, Frag: sm80Frag},
	ffma("ptx:sm_90a", ir.F32, ir.F32),
	ffma("ptx:sm_90a", ir.F64, ir.F64),

	// Metal: simdgroup_multiply_accumulate on simdgroup_{float,half,bfloat}8x8 (bfloat: Metal 3.1), one
	// simdgroup; fragments opaque. Metal has no f64.
	{Target: "msl", Insn: "simdgroup_multiply_accumulate float8x8", M: 8, N: 8, K: 8, In: ir.F32, Acc: ir.F32, Scope: ir.ScopeSimdgroup, Frag: simdgroupFrag},
	{Target: "msl", Insn: "simdgroup_multiply_accumulate half8x8", M: 8, N: 8, K: 8, In: ir.F16, Acc: ir.F32, Scope: ir.ScopeSimdgroup, Frag: simdgroupFrag},
	{Target: "msl", Insn: "simdgroup_multiply_accumulate bfloat8x8", M: 8, N: 8, K: 8, In: ir.BF16, Acc: ir.F32, Scope: ir.ScopeSimdgroup, Frag: simdgroupFrag},
}

// MMATargets lists the keys of the MMA table: a target, or target:feature.
func MMATargets() []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range mmaTable {
		if !seen[s.Target] {
			seen[s.Target] = true
			out = append(out, s.Target)
		}
	}
	return out
}

// MMAShapes returns every shape of target (a key of MMATargets; "amd64" means amd64:avx2, "arm64"
// arm64:neon, "ptx" ptx:sm_80).
func MMAShapes(target string) []MMAShape {
	target = mmaKey(target)
	var out []MMAShape
	for _, s := range mmaTable {
		if s.Target == target {
			out = append(out, s)
		}
	}
	return out
}

func mmaKey(t string) string {
	switch t {
	case "amd64":
		return "amd64:avx2"
	case "arm64":
		return "arm64:neon"
	case "ptx":
		return "ptx:sm_80"
	}
	return t
}

// LookupMMA returns the best shape of target for inputs in accumulating in acc. tf32 allows shapes that
// round f32 inputs to tf32 (the schedule's `precision tf32`); without it an f32 GEMM on a GPU runs
// thread-scope FMA tiles, exact in f32. An error names the pair when the target has no shape for it.
func LookupMMA(target string, in, acc ir.DType, tf32 bool) (MMAShape, error) {
	shapes := MMAShapes(target)
	if len(shapes) == 0 {
		return MMAShape{}, fmt.Errorf("no MMA shapes for target %q (known: %s)", target, strings.Join(MMATargets(), ", "))
	}
	for _, s := range shapes {
		if s.In == in && s.Acc == acc && (!s.TF32 || tf32) {
			return s, nil
		}
	}
	return MMAShape{}, fmt.Errorf("target %s has no MMA with %s inputs and a %s accumulator", mmaKey(target), in, acc)
}
