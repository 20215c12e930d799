package passes

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kgen-dev/kgen/kgentest"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/target"
)

// TestLLVMPipelinePreservesResults interprets every kernel of the library as the llvm pipeline leaves
// it after mmalower (microkernel calls expanded, packs still Pack nodes) and after its last pass (packs
// and transposes expanded too), on two small shapes per kernel (all ones, random ragged sizes) under
// the default plan (llvm's 6×16 / 6×8 tiles) and odd plan values (which take GEMMs through their packed
// and rows versions, with edge panels and edge tiles everywhere), against the algorithm-level
// interpreter. The passes before mmalower are the CPU pipeline's, which checkPasses tests after each;
// the large shape is left out (minutes in the interpreter), codegen/llvm's tests run it compiled.
func TestLLVMPipelinePreservesResults(t *testing.T) {
	m, err := target.Lookup("llvm")
	if err != nil {
		t.Fatal(err)
	}
	names := Names(m)
	stop := slices.Index(names, "mmalower")
	for _, k := range library(t) {
		rng := rand.New(rand.NewPCG(11, uint64(len(k.Name))))
		shapes := kgentest.Shapes(k, rng, 3)
		shapes = shapes[:len(shapes)-1]
		for _, skip := range [][]string{names[stop+1:], nil} {
			f, err := Compile(k, m, Options{Skip: skip})
			if err != nil {
				t.Fatalf("%s (skipping %v): %v", k.Name, skip, err)
			}
			runEquiv(t, fmt.Sprintf("llvm: %s skipping %v", k.Name, skip), k, f, shapes, rng)
		}
	}
}

// TestLLVMPipelineLeavesLoops checks that the llvm pipeline leaves nothing but loops for the backend
// (no Micro, Pack, Transpose or MMA node), that GEMM slots get llvm's MMA tile and the model's cache
// blocks, and that the packed version of sgemm copies its panels (packlower ran).
func TestLLVMPipelineLeavesLoops(t *testing.T) {
	m, err := target.Lookup("llvm")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range library(t) {
		f, err := Compile(k, m, Options{})
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		packed := false
		ir.WalkNodes(f.Body, func(n ir.Node) bool {
			switch x := n.(type) {
			case *ir.Micro, *ir.Pack, *ir.Transpose, *ir.MMA, *ir.AccDecl, *ir.AccStore:
				t.Errorf("%s: %T left for the backend", k.Name, n)
			case *ir.Alloc:
				packed = packed || x.T.Space == ir.Packed
			}
			return true
		})
		want := map[string][2]int{"sgemm": {6, 16}, "dgemm": {6, 8}}[k.Name]
		if want[0] == 0 {
			continue
		}
		if !packed {
			t.Errorf("%s: no packed panel buffer", k.Name)
		}
		b := target.GemmBlocks(m, want[0], want[1], map[string]int{"sgemm": 4, "dgemm": 8}[k.Name])
		got := [5]int{f.Plan[k.Name+".MR"], f.Plan[k.Name+".NR"], f.Plan[k.Name+".MC"], f.Plan[k.Name+".KC"], f.Plan[k.Name+".NC"]}
		if got != [5]int{b.MR, b.NR, b.MC, b.KC, b.NC} || b.MR != want[0] || b.NR != want[1] {
			t.Errorf("%s: plan MR, NR, MC, KC, NC = %v, want %v", k.Name, got, b)
		}
	}
}
