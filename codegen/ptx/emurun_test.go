package ptx

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
)

// TestEmulatedLibrary runs the PTX of every kernel of kernels.kdsl that lowers, in the emulator, on
// ragged shapes (all ones, then random primes and sizes that are not multiples of any tile, with NaN
// and Inf inputs on two of them), against the reference interpreter, with kgentest's tolerances.
func TestEmulatedLibrary(t *testing.T) {
	fs := compileFile(t, "../../kernels.kdsl", "ptx:sm_80")
	for _, f := range fs {
		k, err := Lower(f, "sm_80")
		if err != nil {
			t.Logf("%v", err)
			continue
		}
		t.Run(f.Kernel.Name, func(t *testing.T) { emulateShapes(t, k, f, 4) })
	}
}

func emulateShapes(t *testing.T, k *Kernel, f *ir.Func, nshapes int) {
	if err := checkShapes(k, f, nshapes); err != nil {
		t.Error(err)
	}
}

// checkShapes runs k on nshapes small ragged shapes against the interpreter; it returns the first
// difference or emulator error.
func checkShapes(k *Kernel, f *ir.Func, nshapes int) error {
	kern := f.Kernel
	rng := rand.New(rand.NewPCG(7, uint64(len(kern.Name))))
	// Small shapes only: every thread is emulated. The first (all ones) always; then ragged ones whose
	// tensors hold at most 1<<15 elements.
	var shapes []map[string]int
	cands := kgentest.Shapes(kern, rng, 4*nshapes)
	// After all ones, for GEMMs: every dim the same size, past the K tile and the register, warp or
	// warpgroup tile but no multiple of either (the GEMMs' full-tile path), as large as the budget
	// allows.
	hasMMA, tile := false, 16
	ir.WalkNodes(f.Body, func(n ir.Node) bool {
		if m, ok := n.(*ir.MMA); ok {
			hasMMA = true
			if m.Acc.Scope == ir.ScopeWarpgroup {
				tile = 64
			}
		}
		return true
	})
	for _, n := range []int{tile + 21, 19, 11} {
		if !hasMMA {
			break
		}
		dims := map[string]int{}
		for _, d := range kern.Dims {
			dims[d.Name] = n
		}
		if elements(kern, dims) <= 1<<15 {
			cands = append(cands[:1], append([]map[string]int{dims}, cands[1:]...)...)
			break
		}
	}
	for _, dims := range cands {
		if len(shapes) < nshapes && (len(shapes) == 0 || elements(kern, dims) <= 1<<15) {
			shapes = append(shapes, dims)
		}
	}
	return checkDims(k, f, shapes, rng)
}

// checkDims runs k on the given shapes (random arguments from rng) against the interpreter; it returns
// the first difference or emulator error.
func checkDims(k *Kernel, f *ir.Func, shapes []map[string]int, rng *rand.Rand) error {
	kern := f.Kernel
	for si, dims := range shapes {
		args := kgentest.RandomArgs(kern, dims, rng, si)
		ref := args.Clone()
		if err := ir.RunKernel(kern, ir.Storage, ref); err != nil {
			return err
		}
		mag := kgentest.Magnitude(kern, args)
		got := args.Clone()
		if err := emulate(k, f, got); err != nil {
			return fmt.Errorf("dims %v: %v", dims, err)
		}
		for _, p := range kern.Params {
			if p.Kind == ir.Out || p.Kind == ir.InOut {
				if err := kgentest.Compare(kern, dims, p, got.Tensors[p.Name], ref.Tensors[p.Name], mag[p.Name]); err != nil {
					return fmt.Errorf("dims %v: %v", dims, err)
				}
			}
		}
	}
	return nil
}

// elements counts the elements of k's tensors at dims.
func elements(k *ir.Kernel, dims map[string]int) int {
	total := 0
	for _, t := range append(append([]*ir.Tensor{}, k.Params...), k.Temps...) {
		n := 1
		for _, d := range t.Shape {
			n *= dims[d.Name]
		}
		total += n
	}
	return total
}

// TestEmulatedOddPlans lowers some kernels with odd plan values (block sizes that are not powers of
// two, a K tile of 7, a 3×5 register tile, 3 warps) and runs them in the emulator: the lowering must
// follow the plan, not assume the default tiles.
func TestEmulatedOddPlans(t *testing.T) {
	odd := map[string]int{"gpu.RW": 3, "gpu.B1": 33, "gpu.BX": 3, "gpu.BY": 5, "gpu.BK": 7, "gpu.W": 3}
	want := map[string]bool{"saxpy": true, "softmax": true, "layernorm": true, "transpose": true, "colsum": true, "sgemm": true, "dgemm_tn": true, "sgemm_nt": true, "hgemm": true, "bgemm_tt": true, "sgemv": true}
	for _, f := range compileFile(t, "../../kernels.kdsl", "ptx:sm_80") {
		if !want[f.Kernel.Name] {
			continue
		}
		g := *f
		g.Plan = map[string]int{}
		for k, v := range f.Plan {
			switch {
			case odd[k] != 0:
				v = odd[k]
			case strings.HasSuffix(k, ".MR"):
				v = 3
			case strings.HasSuffix(k, ".NR"):
				v = 5
			}
			g.Plan[k] = v
		}
		t.Run(f.Kernel.Name, func(t *testing.T) {
			k, err := Lower(&g, "sm_80")
			if err != nil {
				t.Fatal(err)
			}
			if b := k.Launches[0].Block; g.Kernel.Name == "sgemm" && (b[0] != (ir.IConst{V: 3}) || b[1] != (ir.IConst{V: 5})) {
				t.Fatalf("sgemm block %v, want the plan's 3×5", b)
			}
			if err := checkShapes(k, &g, 3); err != nil {
				t.Errorf("plan %v: %v", g.Plan, err)
			}
		})
	}
}

// TestEmulatedWarpgroup runs the sm_90a pipeline's warpgroup GEMMs (the 16-bit ones of kernels.kdsl, and
// passes/testdata/mma.kdsl's bias+GELU and scale+residual+tanh epilogues, one with B transposed: all on
// wgmma) in the emulator against the interpreter.
func TestEmulatedWarpgroup(t *testing.T) {
	n := 0
	fs := compileFile(t, "../../kernels.kdsl", "ptx:sm_90a")
	fs = append(fs, compileFile(t, "../../passes/testdata/mma.kdsl", "ptx:sm_90a")...)
	for _, f := range fs {
		wg := false
		ir.WalkNodes(f.Body, func(x ir.Node) bool {
			if d, ok := x.(*ir.AccDecl); ok && d.Acc.Scope == ir.ScopeWarpgroup {
				wg = true
			}
			return true
		})
		if !wg {
			continue
		}
		n++
		t.Run(f.Kernel.Name, func(t *testing.T) {
			k, err := Lower(f, "sm_90a")
			if err != nil {
				t.Fatal(err)
			}
			if err := checkShapes(k, f, 2); err != nil {
				t.Error(err)
			}
		})
	}
	if n == 0 {
		t.Fatal("no warpgroup kernels in the sm_90a pipeline's output")
	}
}
