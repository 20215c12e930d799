package msl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
)

// TestRowReductionsRunOnCPU runs every row-reduction kernel of kernels.kdsl and testdata/rows.kdsl
// (simd_shuffle_xor /
// simd_max butterflies and the threadgroup tree) on rows of 1, 31, 33 and 1000 elements, three rows
// (other dims 3), with random, NaN-holding and Inf-holding inputs, in both thread orders, against the
// interpreter; where the kernel computes no transcendental function also bit for bit against the
// interpreter running the GPU-mapped IR, whose ir.WarpReduce fixes the order of the sums.
func TestRowReductionsRunOnCPU(t *testing.T) {
	t.Parallel()
	s := getSuite(t)
	n := 0
	for _, k := range append(append([]codegen.Kernel{}, s.library...), s.extra...) {
		row, exact := rowReduction(k.F)
		if row == nil {
			continue
		}
		if _, ok := s.src.Unsupported[k.K.Name]; ok {
			continue
		}
		n++
		t.Run(k.K.Name, func(t *testing.T) {
			t.Parallel()
			launches := launchesOf(s.src, k.K)
			for si, length := range []int{1, 31, 33, 1000} {
				for _, special := range []int{0, 2, 3} { // kgentest.RandomArgs: 2 puts a NaN, 3 an Inf in
					dims := map[string]int{}
					for _, d := range k.K.Dims {
						dims[d.Name] = 3
					}
					dims[row.Name] = length
					rng := rand.New(rand.NewPCG(uint64(si), uint64(special)))
					for _, err := range shapeErrors(s.driver, k.K, launches, dims, rng, special) {
						t.Error(err)
					}
					if !exact {
						continue
					}
					rng = rand.New(rand.NewPCG(uint64(si), uint64(special)))
					if err := sameAsMappedIR(s.driver, k.F, launches, dims, rng, special); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	if n < 5 {
		t.Fatalf("only %d row-reduction kernels run", n)
	}
}

// rowReduction returns the dim f's warps reduce along (nil when f has no lane reduction), and whether
// f computes no transcendental function (so that the CPU run must equal the interpreter's bit for bit).
func rowReduction(f *ir.Func) (*ir.Dim, bool) {
	var d *ir.Dim
	red, exact := false, true
	ir.WalkNodes(f.Body, func(n ir.Node) bool {
		switch n := n.(type) {
		case *ir.WarpReduce:
			red = true
		case *ir.Loop:
			if hi, ok := n.Hi.(ir.IDim); ok && n.Kind == ir.Serial && strings.Contains(n.Step.String(), "gpu.RW") {
				d = hi.D
			}
		}
		ir.NodeExprs(n, func(e ir.Expr) {
			ir.Walk(e, func(x ir.Expr) {
				if u, ok := x.(*ir.Unary); ok && (u.Op == ir.Exp || u.Op == ir.Log || u.Op == ir.Tanh || u.Op == ir.Sigmoid) {
					exact = false
				}
			})
		})
		return true
	})
	if !red {
		return nil, false
	}
	return d, exact
}

func sameAsMappedIR(driver string, f *ir.Func, launches []*Launch, dims map[string]int, rng *rand.Rand, si int) error {
	args := kgentest.RandomArgs(f.Kernel, dims, rng, si)
	want := args.Clone()
	if err := ir.RunFunc(f, ir.Storage, want, f.Plan); err != nil {
		return fmt.Errorf("%s %v: interpreting the mapped IR: %v", f.Kernel.Name, dims, err)
	}
	got := args.Clone()
	if err := runOnCPU(driver, f.Kernel, launches, got, false); err != nil {
		return err
	}
	for _, p := range f.Kernel.Params {
		if p.Kind != ir.Out && p.Kind != ir.InOut {
			continue
		}
		for i, v := range got.Tensors[p.Name] {
			w := want.Tensors[p.Name][i]
			if math.Float64bits(v) != math.Float64bits(w) && !(v != v && w != w) {
				return fmt.Errorf("%s %v: %s[%d] = %v, the mapped IR's interpreter gives %v (not the same tree)", f.Kernel.Name, dims, p.Name, i, v, w)
			}
		}
	}
	return nil
}
