package codegen

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
)

// The variant registry: the Go identifiers of a generated package that one backend defines and others
// name. The portable backend (codegen/golang) defines the slots, the portable routines every slot
// starts with, the packing variables and the variant list; DispatchFile and the assembly backends
// (codegen/amd64, codegen/arm64, and later ones) point those at their own routines. Every backend takes
// these names from the functions below, never from a literal of its own (TestBackendsNameSharedIdents
// checks the non-test sources of codegen and its backend packages), so that renaming one here renames
// it everywhere and a new backend finds the whole contract in one place.

// elemSuffix is the suffix of the per-type names: "32" for f32, "64" for f64, "BF16" for bf16 sources.
func elemSuffix(t ir.DType) string {
	switch t {
	case ir.F64:
		return "64"
	case ir.BF16:
		return "BF16"
	}
	return "32"
}

// GemmSlotType is the struct type of a GEMM slot (Slot) of element type t: gemmSlot32 or gemmSlot64.
func GemmSlotType(t ir.DType) string { return "gemmSlot" + elemSuffix(t) }

// TransposeSlotType is the struct type of a transpose slot (TransposeSlot): transposeSlot32/64.
func TransposeSlotType(t ir.DType) string { return "transposeSlot" + elemSuffix(t) }

// TransposeGo is the portable transpose tile routine of element type t: transposeGo32/64.
func TransposeGo(t ir.DType) string { return "transposeGo" + elemSuffix(t) }

// TransposeFits is the overflow-safe check that a transpose tile lies inside its slices.
const TransposeFits = "transposeFits"

// MicroUGo is the portable unpacked microkernel of element type t (the MicroU a variant keeps when it
// has none of its own).
func MicroUGo(t ir.DType) string { return "microUGo" + elemSuffix(t) }

// MicroBGo is the portable batched unpacked microkernel of element type t (the MicroB a variant keeps
// when it has no unpacked kernel of its own).
func MicroBGo(t ir.DType) string { return "microBGo" + elemSuffix(t) }

// BatchSuffix names the batched twin of an unpacked assembly microkernel: KernelU + BatchSuffix, with
// the batched signature (the unpacked one plus cnt, sa, sb, sc).
const BatchSuffix = "B"

// RowsGo is the portable rows kernel (alpha, beta and epilogue included) of element type t.
func RowsGo(t ir.DType) string { return "rowsGo" + elemSuffix(t) }

// RowsCoreGo is the portable core of the rows kernel (C = A·B for a few rows, nothing else), which a
// variant's rows kernel falls back to above its row limit.
func RowsCoreGo(t ir.DType) string { return "rowsCoreGo" + elemSuffix(t) }

// RowsVia runs a rows core and applies alpha, beta and the epilogue around it.
func RowsVia(t ir.DType) string { return "rowsVia" + elemSuffix(t) }

// PackVar is the package variable through which the loop nests pack panels: packD (one panel, its
// rows contiguous in the source) or packPB (all the panels of a block, row by row), for sources of type
// t (packDBF16/packPBBF16 take bf16 sources and f32 or pair panels: bf16.go).
func PackVar(d bool, t ir.DType) string { return packStem(d) + elemSuffix(t) }

// PackGo is the portable routine a packing variable starts with (and an adapter falls back to).
func PackGo(d bool, t ir.DType) string { return packStem(d) + "Go" + elemSuffix(t) }

// PackPairBF16 is the portable routine that packs bf16 sources as pair panels (bf16.go), which a
// variant with pair microkernels installs in PackVar(d, ir.BF16).
func PackPairBF16(d bool) string { return packStem(d) + "PairBF16" }

func packStem(d bool) string {
	if d {
		return "packD"
	}
	return "packPB"
}

// Names of the variant machinery of the support file.
const (
	VariantType      = "variant"          // struct{name string; install func()}
	VariantList      = "variants"         // []variant, best first
	ResetVLoops      = "resetVLoops"      // sets every vector-loop slot back to nil (portable loops)
	ResetPacks       = "resetPacks"       // sets every packing variable back to its portable routine
	RegisterVariants = "registerVariants" // a dispatch file's function prepending its variants
	MachineClass     = "machineClass"     // a dispatch file's string: the kgen.lock class chosen for this machine
	MachineClasses   = "machineClasses"   // a dispatch file's []string: the kgen.lock classes it carries
	CacheClass       = "cacheClass"       // a dispatch file's string: MachineClass when its caches match this machine's, else ""
)

// VLoopVar is the variable of the n-th vector-loop slot of a kernel (VLoop).
func VLoopVar(kernel string, n int) string { return fmt.Sprintf("vloop_%s_%d", kernel, n) }

// CvtF16F32 is the Var of the synthetic vector loop that widens f16 runs for the packing code: the lane
// body `t1[i] = t0[i]` with t0 an f16 and t1 an f32 tensor, Width 4 (slot signature
// func(lo, hi int, t0 []f16.F16, o0 int, t1 []float32, o1 int) int). The portable backend wraps it in
// the package function cvtF16F32(dst []float32, src []f16.F16), which packs call for their contiguous
// f16 runs.
const CvtF16F32 = "vloop_cvtF16F32"

// sharedStems are the stems of the registry's names, for the test that no backend writes one itself.
var sharedStems = []string{"gemmSlot", "transposeSlot", "transposeGo", TransposeFits, "microUGo", "rowsGo",
	"rowsCoreGo", "rowsVia", "packD", "packPB", ResetVLoops, ResetPacks, RegisterVariants, "vloop_"}

// PackStem is the stem of the packing names, "packD" or "packPB" (see PackVar); an assembly backend
// names its own packing routines after it (packPB32AVX2, packDf32NEON).
func PackStem(d bool) string { return packStem(d) }
