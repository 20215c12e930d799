package ptx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/f16"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
)

// evalIExpr evaluates a launch dimension (plan substituted) for the given dims.
func evalIExpr(e ir.IExpr, dims map[string]int) (int, error) {
	switch x := e.(type) {
	case ir.IConst:
		return x.V, nil
	case ir.IDim:
		return dims[x.D.Name], nil
	case ir.IBin:
		a, err := evalIExpr(x.X, dims)
		if err != nil {
			return 0, err
		}
		b, err := evalIExpr(x.Y, dims)
		if err != nil {
			return 0, err
		}
		v, msg := ir.IBinOp(x.Op, a, b)
		if msg != "" {
			return 0, fmt.Errorf("%s", msg)
		}
		return v, nil
	}
	return 0, fmt.Errorf("launch dimension %s", e)
}

func encode(t ir.DType, v float64) (uint64, int) {
	switch t {
	case ir.F64:
		return math.Float64bits(v), 8
	case ir.F32:
		return uint64(math.Float32bits(float32(v))), 4
	case ir.F16:
		return uint64(f16.FromFloat64(v)), 2
	case ir.BF16:
		return uint64(f16.BF16FromFloat64(v)), 2
	case ir.I32:
		return uint64(uint32(int32(v))), 4
	}
	panic("type " + t.String())
}

func decode(t ir.DType, v uint64) float64 {
	switch t {
	case ir.F64:
		return math.Float64frombits(v)
	case ir.F32:
		return float64(math.Float32frombits(uint32(v)))
	case ir.F16:
		return float64(f16.F16(uint16(v)).Float32())
	case ir.BF16:
		return float64(f16.BF16(uint16(v)).Float32())
	case ir.I32:
		return float64(int32(uint32(v)))
	}
	panic("type " + t.String())
}

// emulate runs every launch of k (lowered from f) on args in the emulator and writes the outputs back
// into args.
func emulate(k *Kernel, f *ir.Func, args ir.Args) error {
	kern := f.Kernel
	tensors := map[string]*ir.Tensor{}
	for _, t := range append(append([]*ir.Tensor{}, kern.Params...), kern.Temps...) {
		tensors[t.Name] = t
	}
	params := map[string]uint64{}
	tmaps := map[string][]byte{}
	var global []*emuBuf
	byName := map[string]*emuBuf{}
	for _, p := range k.Params {
		switch p.Kind {
		case PTensor, PTemp:
			t := tensors[p.Name]
			n := 1
			for _, d := range p.Shape {
				n *= args.Dims[d]
			}
			size := t.Type.Size()
			b := &emuBuf{name: p.Name, data: make([]byte, n*size)}
			if p.Kind == PTensor {
				for i, v := range args.Tensors[p.Name] {
					bits, _ := encode(t.Type, v)
					storeBytes(b.data[i*size:], size, bits)
				}
			} else {
				for i := range b.data {
					b.data[i] = 0xFF
				}
			}
			global = append(global, b)
			byName[p.Name] = b
			params["p_"+p.Name] = uint64(len(global)) << globalShift
		case PScalar:
			bits, _ := encode(p.Elem, args.Scalars[p.Name])
			params["p_"+p.Name] = bits
		case PDim:
			params["p_"+p.Name] = uint64(args.Dims[p.Name])
		case PTensorMap:
			tm := emuTensorMap(p, tensors[p.Name], uint64(slices.Index(global, byName[p.Name])+1)<<globalShift, args.Dims)
			if emuMapHook != nil {
				emuMapHook(&tm)
			}
			tmaps[string(tmapSym(tensors[p.Name]))] = encodeMockTensorMap(tm)
		}
	}
	for i, e := range k.Entries {
		info := k.Launches[i]
		var grid, block [3]int
		empty := false
		for j := range 3 {
			g, err := evalIExpr(info.Grid[j], args.Dims)
			if err != nil {
				return err
			}
			grid[j] = g
			block[j] = info.Block[j].(ir.IConst).V
			empty = empty || g <= 0
		}
		if empty {
			continue
		}
		m := &emulator{e: e, params: params, global: global, tmaps: tmaps}
		if err := m.run(grid, block); err != nil {
			return fmt.Errorf("%s grid %v block %v: %v", e.Name, grid, block, err)
		}
	}
	for _, p := range k.Params {
		if p.Kind != PTensor {
			continue
		}
		t := tensors[p.Name]
		if t.Kind != ir.Out && t.Kind != ir.InOut {
			continue
		}
		size := t.Type.Size()
		out := args.Tensors[p.Name]
		for j := range out {
			out[j] = decode(t.Type, load(byName[p.Name].data[j*size:], size))
		}
	}
	return nil
}

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
