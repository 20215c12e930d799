package passes

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestBalancedKBlocks checks that the packed GEMM nest splits K into ⌈K/KC⌉ blocks of one depth (a
// multiple of 8 up to KC; the last block the remainder), and that the result, epilogue included (bias
// and relu go on the last block only), matches the algorithm-level interpreter on reductions around
// the block boundaries.
func TestBalancedKBlocks(t *testing.T) {
	k, f := compiledKernel(t, "go", "gemm_bias_relu")
	var kb *ir.Loop
	ir.WalkNodes(f.Body, func(n ir.Node) bool {
		if l, ok := n.(*ir.Loop); ok && strings.HasSuffix(l.Var.Name, "_kb") {
			kb = l
		}
		return kb == nil
	})
	if kb == nil {
		t.Fatalf("no K-block depth loop in the packed nest:\n%s", f)
	}
	plan := oddPlan(f)
	for key := range plan {
		if strings.HasSuffix(key, ".KC") {
			plan[key] = 40
		}
	}
	// K → the balanced depth: 100 = 40+40+20 becomes 3 blocks of 34 → 40 (a multiple of 8 ≤ KC);
	// 1168-like splits: 90 → 3 × 30 → 32; 41 → 2 × 21 → 24
	want := map[int]int{1: 8, 7: 8, 40: 40, 41: 24, 80: 40, 81: 32, 90: 32, 100: 40, 121: 32}
	rng := rand.New(rand.NewPCG(3, 5))
	var shapes []map[string]int
	for K, depth := range want {
		dims := map[string]int{"M": 1 + rng.IntN(20), "N": 1 + rng.IntN(20), "K": K}
		env := ir.IEnv{Dims: map[*ir.Dim]int{}, Plan: plan}
		for _, d := range k.Dims {
			env.Dims[d] = dims[d.Name]
		}
		got, err := ir.EvalIndex(kb.Lo, env)
		if err != nil {
			t.Fatal(err)
		}
		if got != depth {
			t.Errorf("K = %d, KC = 40: block depth %d, want %d", K, got, depth)
		}
		shapes = append(shapes, dims)
	}
	runPlans(t, "gemm_bias_relu, KC = 40", k, f, shapes, []map[string]int{plan}, rng)
}

// rowsWidth keeps RowsNB for one and two rows and caps it at a page of B's row for three and four
// (the rows kernel's G = 2 groups); a RowsNB under the page stays.
func TestRowsWidth(t *testing.T) {
	m := &ir.Dim{Name: "M"}
	for _, c := range []struct {
		nb, esz int
		want    [4]int
	}{
		{4096, 4, [4]int{4096, 4096, 1024, 1024}},
		{4096, 8, [4]int{4096, 4096, 512, 512}},
		{1024, 4, [4]int{1024, 1024, 1024, 1024}},
		{768, 8, [4]int{768, 768, 512, 512}},
		{256, 4, [4]int{256, 256, 256, 256}},
	} {
		e := rowsWidth(ir.ISym{Name: "s.RowsNB"}, ir.IDim{D: m}, c.esz)
		for rows := 1; rows <= 4; rows++ {
			got, err := ir.EvalIndex(e, ir.IEnv{Dims: map[*ir.Dim]int{m: rows}, Plan: map[string]int{"s.RowsNB": c.nb}})
			if err != nil || got != c.want[rows-1] {
				t.Errorf("RowsNB %d, %d-byte elements, M = %d: %d %v, want %d", c.nb, c.esz, rows, got, err, c.want[rows-1])
			}
		}
	}
}
