package passes

import (
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// staged maps and stages kernel name of the library (lowered, fused) with the given number of stages.
func staged(t *testing.T, name string, stages int) (*ir.Kernel, *ir.Func, bool) {
	t.Helper()
	for _, k := range library(t) {
		if k.Name != name {
			continue
		}
		f, _ := lowered(t, k, true)
		if _, err := GPUMap(f, nil); err != nil {
			t.Fatal(err)
		}
		did := stage(f, stages)
		if err := ir.VerifyFunc(f); err != nil {
			t.Fatalf("%s staged: %v\n%s", name, err, f)
		}
		return k, f, did
	}
	t.Fatalf("no kernel %s", name)
	return nil, nil, false
}

// TestStagingPreservesResults: the GEMM kernels of the library, mapped and staged through shared memory
// with 3 stages of async copies (sgemm and sgemm_tt also with 2 and 4), compute the algorithm-level result on ragged shapes with default
// and odd block and tile shapes, with the race check on; softmax (no contraction) is mapped and left
// unstaged.
func TestStagingPreservesResults(t *testing.T) {
	for _, c := range []struct {
		kernel string
		stage  bool
	}{
		{"sgemm", true}, {"sgemm_tn", true}, {"sgemm_nt", true}, {"sgemm_tt", true}, {"dgemm", true},
		{"hgemm", true}, {"gemm_bias_relu", true}, {"sgemm_acc", true}, {"softmax", false},
	} {
		for _, stages := range []int{2, 3, 4} {
			if stages != 3 && c.kernel != "sgemm" && c.kernel != "sgemm_tt" {
				continue // every kernel with the default depth; two and four stages on two of them
			}
			k, f, did := staged(t, c.kernel, stages)
			if did != c.stage {
				t.Fatalf("%s: staged = %v, want %v\n%s", c.kernel, did, c.stage, f)
			}
			plans := []map[string]int{
				withPlan(f, map[string]int{gpuBY: 3, gpuBX: 5, gpuBK: 4, gpuB1: 7}),
				withPlan(f, map[string]int{gpuBY: 4, gpuBX: 2, gpuBK: 3}),
			}
			if stages == 3 {
				plans = append(plans, nil)
			}
			checkGPU(t, k, f, "staged", plans, 3)
		}
	}
}

// TestStagingRaces: the staged sgemm without its barrier reports a race; with a wait that leaves the
// current tile in flight it reports the in-flight read.
func TestStagingRaces(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(l *ir.Loop)
		error string
	}{
		{"no barrier", func(l *ir.Loop) { l.Body = append(l.Body[:1:1], l.Body[2:]...) }, "race on shared "},
		{"lax wait", func(l *ir.Loop) { l.Body[0] = &ir.AsyncWait{N: 2} }, "async copy into it is in flight"},
	} {
		_, f, _ := staged(t, "sgemm", 3)
		ir.WalkNodes(f.Body, func(n ir.Node) bool {
			if l, ok := n.(*ir.Loop); ok && l.Var.Name == "kt" {
				c.edit(l)
			}
			return true
		})
		if err := ir.VerifyFunc(f); err != nil {
			t.Fatal(err)
		}
		plan := withPlan(f, map[string]int{gpuBY: 3, gpuBX: 5, gpuBK: 4})
		args := map[string]int{"M": 7, "N": 6, "K": 13}
		a := ir.Args{Tensors: map[string][]float64{"A": make([]float64, 7*13), "B": make([]float64, 13*6), "C": make([]float64, 7*6)},
			Scalars: map[string]float64{"alpha": 1, "beta": 0}, Dims: args}
		err := ir.RunFunc(f, ir.Storage, a, plan)
		if err == nil || !strings.Contains(err.Error(), c.error) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.error)
		}
	}
}

// TestStagingShape: what the staged sgemm looks like.
func TestStagingShape(t *testing.T) {
	_, f, _ := staged(t, "sgemm", 3)
	s := f.String()
	for _, want := range []string{
		"alloc shared As f32[(3 * (gpu.BY * gpu.BK))]",
		"for s = 0 .. 2 step 1",
		"copy 1xgpu.BK As+(((t % 3) * (gpu.BY * gpu.BK)) + (ra * gpu.BK)) rowmajor(ld=gpu.BK) <- A+",
		"async group t",
		"for kt = 0 .. ((K + (gpu.BK - 1)) / gpu.BK) step 1",
		"async.wait 1", "barrier block", "async.commit", "async.wait 0",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("staged sgemm lacks %q:\n%s", want, s)
		}
	}
}

// TestSM80TLayout: the stage of a transposed operand (SM80TLayout, rows a multiple of 16, depth
// columns) is a permutation of its rows·depth elements; every 8-row chunk of a column that the
// cp.async copies write is 8 contiguous elements starting 16-byte aligned; each 16-row panel read
// through SM80TView at the panel's offset gives the same elements; and the 8 columns of one chunk that
// an ldmatrix phase reads lie in 8 different 16-byte bank groups (no conflict).
func TestSM80TLayout(t *testing.T) {
	at := func(l ir.Layout, r, c int) int {
		o, err := ir.EvalIndex(l.Offset(ir.IConst{V: r}, ir.IConst{V: c}), ir.IEnv{})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	view := SM80TView()
	for _, depth := range []int{8, 16} {
		for _, panels := range []int{1, 3} {
			rows, lay := 16*panels, SM80TLayout(ir.IConst{V: depth})
			seen := map[int]bool{}
			for r := 0; r < rows; r++ {
				for c := 0; c < depth; c++ {
					o := at(lay, r, c)
					if o < 0 || o >= rows*depth || seen[o] {
						t.Fatalf("%v %d rows: (%d, %d) at %d: outside or twice", lay, rows, r, c, o)
					}
					seen[o] = true
					if r%8 == 0 && o%8 != 0 {
						t.Errorf("%v: chunk at (%d, %d) starts at %d, not 16-byte aligned", lay, r, c, o)
					}
					if o0 := at(lay, r-r%8, c); o != o0+r%8 {
						t.Errorf("%v: (%d, %d) at %d, not %d past its chunk's start %d", lay, r, c, o, r%8, o0)
					}
					p := r / 16
					if v := p*16*depth + at(view, r%16, c); v != o {
						t.Errorf("%v: (%d, %d) read at %d, written at %d", view, r, c, v, o)
					}
				}
			}
			for r := 0; r < rows; r += 8 {
				for c0 := 0; c0 < depth; c0 += 8 {
					groups := map[int]bool{}
					for c := c0; c < c0+8; c++ {
						groups[(2*at(lay, r, c)/16)%8] = true
					}
					if len(groups) != 8 {
						t.Errorf("%v: the chunk of rows %d.. in columns %d..%d takes %d bank groups, want 8", lay, r, c0, c0+7, len(groups))
					}
				}
			}
		}
	}
}
