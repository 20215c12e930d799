package passes

import (
	"maps"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestParallelBatch checks bmm's batch versioning: the batch loop runs parallel (whole products per
// worker) exactly when Bt ≥ W and the last round leaves at most a quarter of Bt idle, and both versions
// compute what the algorithm-level interpreter does for worker counts that pick either one.
func TestParallelBatch(t *testing.T) {
	k, f := compiledKernel(t, "amd64", "bmm")
	var wloop, flag *ir.Loop
	var batch *ir.Loop
	ir.WalkNodes(f.Body, func(n ir.Node) bool {
		if l, ok := n.(*ir.Loop); ok {
			if l.Var.Name == "b_w" {
				wloop = l
			}
			if strings.HasSuffix(l.Var.Name, "_par") {
				flag = l
			}
			if l.Var.Name == "b" && l.Kind == ir.Parallel && batch == nil {
				batch = l
			}
		}
		return true
	})
	if wloop == nil || flag == nil || batch == nil {
		t.Fatalf("no batch versioning (worker loop %v, flag loop %v, parallel b loop %v):\n%s", wloop != nil, flag != nil, batch != nil, f)
	}
	// the parallel copy has no parallel loop inside: a worker computes its products alone
	ir.WalkNodes(batch.Body, func(n ir.Node) bool {
		if l, ok := n.(*ir.Loop); ok && l.Kind == ir.Parallel {
			t.Errorf("loop %s inside the parallel batch loop is parallel too", l.Var.Name)
		}
		return true
	})
	// Bt, W → whether the batch loop is the parallel one
	want := []struct{ bt, w, par int }{
		{1, 1, 1}, {3, 1, 1}, {1, 2, 0}, {2, 2, 1}, {3, 2, 0}, {4, 2, 1}, {5, 2, 1}, {1000, 2, 1},
		{7, 4, 1}, {5, 4, 0}, {4, 5, 0}, {3, 4, 0}, {9, 8, 0}, {1001, 16, 1},
	}
	plan := oddPlan(f)
	var workers string
	for key := range f.Plan {
		if strings.HasSuffix(key, ".Workers") {
			workers = key
		}
	}
	if workers == "" {
		t.Fatalf("no Workers plan value:\n%s", f)
	}
	for _, c := range want {
		env := ir.IEnv{Dims: map[*ir.Dim]int{}, Plan: map[string]int{workers: c.w}}
		for _, d := range k.Dims {
			env.Dims[d] = map[string]int{"Bt": c.bt, "M": 5, "N": 5, "K": 5}[d.Name]
		}
		w, err := ir.EvalIndex(wloop.Lo, env)
		if err != nil {
			t.Fatal(err)
		}
		env.Vars = map[*ir.Var]int{wloop.Var: w}
		got, err := ir.EvalIndex(flag.Lo, env)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.par {
			t.Errorf("Bt = %d, W = %d: batch flag %d, want %d", c.bt, c.w, got, c.par)
		}
	}
	rng := rand.New(rand.NewPCG(7, 11))
	var shapes []map[string]int
	for _, bt := range []int{1, 2, 3, 5} {
		shapes = append(shapes, map[string]int{"Bt": bt, "M": 1 + rng.IntN(12), "N": 1 + rng.IntN(12), "K": 1 + rng.IntN(12)})
	}
	var plans []map[string]int
	for _, w := range []int{1, 2, 3} {
		p := map[string]int{}
		for key, v := range plan {
			p[key] = v
		}
		p[workers] = w
		plans = append(plans, p)
	}
	runPlans(t, "bmm, W = 1, 2, 3", k, f, shapes, plans, rng)
}

// TestPrivateB checks privateB on sgemm, dgemm and bmm: the packed nest has a parallel loop over the
// workers whose body packs B̃ into a buffer of its own (not the shared one) and runs a serial ic loop
// over the worker's rows, and the nest computes what the algorithm-level interpreter does on one, two
// (the private B̃: RowBlocks 18 takes the row-block version for every M; with MC 64 and RowBlocks 1,
// the shapes with M ≥ N − M) and three workers, on shapes
// with several row blocks per worker (M up to 41 rows with MC 6), several K and column blocks, and
// ragged edges.
func TestPrivateB(t *testing.T) {
	for _, name := range []string{"sgemm", "dgemm", "bmm"} {
		k, f := compiledKernel(t, "amd64", name)
		found := false
		ir.WalkNodes(f.Body, func(n ir.Node) bool {
			l, ok := n.(*ir.Loop)
			if !ok || !strings.HasSuffix(l.Var.Name, "_t") {
				return true
			}
			found = true
			if l.Kind != ir.Parallel || len(l.Body) != 1 {
				t.Errorf("%s: worker loop %s is not a parallel loop of one node", name, l.Var.Name)
				return false
			}
			a, ok := l.Body[0].(*ir.Alloc)
			if !ok || len(a.Body) != 2 {
				t.Errorf("%s: worker loop %s does not allocate its B̃", name, l.Var.Name)
				return false
			}
			p, ok := a.Body[0].(*ir.Pack)
			ic, isLoop := a.Body[1].(*ir.Loop)
			if !ok || p.Dst != a.T || !isLoop {
				t.Errorf("%s: worker loop %s: want pack into its own buffer, then the ic loop", name, l.Var.Name)
				return false
			}
			ir.WalkNodes(ic.Body, func(x ir.Node) bool {
				if u, ok := x.(*ir.Micro); ok && u.B.T != a.T {
					t.Errorf("%s: a microkernel of worker loop %s reads %s, not its own B̃ %s", name, l.Var.Name, u.B.T.Name, a.T.Name)
				}
				if x, ok := x.(*ir.Loop); ok && x.Kind == ir.Parallel {
					t.Errorf("%s: loop %s inside worker loop %s is parallel", name, x.Var.Name, l.Var.Name)
				}
				return true
			})
			return false
		})
		if !found {
			t.Fatalf("%s: no worker loop with a private B̃:\n%s", name, f)
		}
		plan := oddPlan(f)
		var workers string
		for key := range f.Plan {
			if strings.HasSuffix(key, ".Workers") {
				workers = key
			}
		}
		var plans []map[string]int
		for _, w := range []int{1, 2, 3} {
			p := maps.Clone(plan)
			p[workers] = w
			plans = append(plans, p)
		}
		// two workers below the R·M ≥ W·MC line (MC 64, R 1): M ≥ N − M alone picks the row blocks
		slot := strings.TrimSuffix(workers, ".Workers")
		half := maps.Clone(plan)
		half[workers], half[slot+".MC"], half[slot+".RowBlocks"] = 2, 64, 1
		plans = append(plans, half)
		rng := rand.New(rand.NewPCG(3, uint64(len(name))))
		var shapes []map[string]int
		for _, mkn := range [][3]int{{1, 1, 1}, {7, 9, 11}, {13, 15, 21}, {41, 23, 17}, {30, 8, 12}, {9, 13, 40}} {
			shapes = append(shapes, map[string]int{"Bt": 1, "M": mkn[0], "K": mkn[1], "N": mkn[2]})
		}
		runPlans(t, name+", W = 1, 2, 3, 2 (M ≥ N − M)", k, f, shapes, plans, rng)
	}
}

// TestStripVector checks the strip-mined one-dimensional kernels: each has a parallel chunk loop whose
// body is its vector loop, and computes what the algorithm-level interpreter does at lengths around
// the SIMD group, the 256-element chunk grain and the eight-chunk threshold (gelu: 17476 elements).
func TestStripVector(t *testing.T) {
	for _, name := range []string{"gelu", "saxpy", "cvt_f32_f16", "hadd"} {
		k, f := compiledKernel(t, "amd64", name)
		found := false
		ir.WalkNodes(f.Body, func(n ir.Node) bool {
			if l, ok := n.(*ir.Loop); ok && l.Kind == ir.Parallel && len(l.Body) == 1 {
				if v, ok := l.Body[0].(*ir.Loop); ok && v.Kind == ir.Vector {
					found = true
				}
			}
			return !found
		})
		if !found {
			t.Fatalf("%s: no parallel chunk loop around a vector loop:\n%s", name, f)
		}
		rng := rand.New(rand.NewPCG(7, uint64(len(name))))
		var shapes []map[string]int
		for _, n := range []int{1, 3, 4, 5, 255, 256, 257, 17475, 17476, 20001} {
			shapes = append(shapes, map[string]int{"N": n})
		}
		runPlans(t, name, k, f, shapes, []map[string]int{f.Plan}, rng)
	}
}
