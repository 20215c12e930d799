package ptx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
)

// rowDim returns the dim a row kernel reduces along — the range of the first reduction of its
// algorithm-level statements — or nil when f's PTX has no warp reduction.
func rowDim(f *ir.Func) *ir.Dim {
	lanes := 0
	ir.WalkNodes(f.Body, func(n ir.Node) bool {
		if _, ok := n.(*ir.WarpReduce); ok {
			lanes++
		}
		return true
	})
	for _, st := range f.Kernel.Stmts {
		var d *ir.Dim
		ir.Walk(st.Value, func(e ir.Expr) {
			if r, ok := e.(*ir.Reduce); ok && d == nil && r.Vars[0].Range != nil {
				d = r.Vars[0].Range
			}
		})
		if d != nil && lanes > 0 {
			return d
		}
	}
	return nil
}

// transcendental reports whether f computes exp, log, tanh or sigmoid, whose PTX expansions are within
// a few ulp of the interpreter's math rather than equal to it.
func transcendental(f *ir.Func) bool {
	found := false
	ir.WalkNodes(f.Body, func(n ir.Node) bool {
		ir.NodeExprs(n, func(e ir.Expr) {
			ir.Walk(e, func(x ir.Expr) {
				if u, ok := x.(*ir.Unary); ok && (u.Op == ir.Exp || u.Op == ir.Log || u.Op == ir.Tanh || u.Op == ir.Sigmoid) {
					found = true
				}
			})
		})
		return !found
	})
	return found
}

// TestEmulatedRowReductions runs every row-reduction kernel of kernels.kdsl (softmax, layernorm, the
// column and batch sums: the warp-shuffle + shared-memory tree) in the emulator on rows of 1, 31, 33
// and 1000 elements (one partial warp's worth, a warp ± 1, many trips), three rows (other dims 3),
// random, NaN-holding and Inf-holding inputs, and plans of 2 (the default) and 3 warps. It compares
// with the algorithm level within kgentest's bounds and, where the kernel has no transcendental
// function, bit for bit with the interpreter running the GPU-mapped IR itself: the butterfly and the
// second level reduce in the order ir.WarpReduce defines.
func TestEmulatedRowReductions(t *testing.T) {
	n := 0
	for _, f := range compileFile(t, "../../kernels.kdsl", "ptx:sm_80") {
		row := rowDim(f)
		if row == nil {
			continue
		}
		n++
		t.Run(f.Kernel.Name, func(t *testing.T) {
			for _, warps := range []int{2, 3} {
				g := *f
				g.Plan = map[string]int{}
				for k, v := range f.Plan {
					g.Plan[k] = v
				}
				g.Plan["gpu.RW"] = warps
				k, err := Lower(&g, "sm_80")
				if err != nil {
					t.Fatal(err)
				}
				for si, length := range []int{1, 31, 33, 1000} {
					for _, special := range []int{0, 2, 3} { // kgentest.RandomArgs: 2 puts a NaN, 3 an Inf in
						if err := checkRows(k, &g, row, length, si*7+special, special); err != nil {
							t.Errorf("%d warps, rows of %d: %v", warps, length, err)
						}
					}
				}
			}
		})
	}
	if n < 4 {
		t.Fatalf("only %d row-reduction kernels found", n)
	}
}

func checkRows(k *Kernel, f *ir.Func, row *ir.Dim, length, seed, special int) error {
	kern := f.Kernel
	dims := map[string]int{}
	for _, d := range kern.Dims {
		dims[d.Name] = 3
	}
	dims[row.Name] = length
	rng := rand.New(rand.NewPCG(uint64(seed), 11))
	args := kgentest.RandomArgs(kern, dims, rng, special)
	ref := args.Clone()
	if err := ir.RunKernel(kern, ir.Storage, ref); err != nil {
		return err
	}
	mapped := args.Clone()
	if err := ir.RunFunc(f, ir.Storage, mapped, f.Plan); err != nil {
		return fmt.Errorf("interpreting the mapped IR: %v", err)
	}
	got := args.Clone()
	if err := emulate(k, f, got); err != nil {
		return err
	}
	mag := kgentest.Magnitude(kern, args)
	exact := !transcendental(f)
	for _, p := range kern.Params {
		if p.Kind != ir.Out && p.Kind != ir.InOut {
			continue
		}
		if err := kgentest.Compare(kern, dims, p, got.Tensors[p.Name], ref.Tensors[p.Name], mag[p.Name]); err != nil {
			return err
		}
		for i, v := range got.Tensors[p.Name] {
			w := mapped.Tensors[p.Name][i]
			if exact && math.Float64bits(v) != math.Float64bits(w) && !(v != v && w != w) {
				return fmt.Errorf("%s[%d] = %v, the mapped IR's interpreter gives %v (not the same tree)", p.Name, i, v, w)
			}
		}
	}
	return nil
}
