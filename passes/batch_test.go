package passes

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/target"
)

// TestBatch checks the batch pass on bmm: every copy of the product loop (the batch-parallel one and the
// per-product ones) is versioned: a loop over chunks of products (of its kind), each one batched Micro
// (strides M·K, K·N, M·N; count min(4, Bt − b_c); the whole M×N product), or the loop as it was; and
// the function computes what the algorithm-level interpreter does on shapes on both sides of
// each term of the version test (M against RowsMax, N against NR and 1, M·N·K against SmallWork), with
// batch counts that leave a partial chunk, on one and two workers.
func TestBatch(t *testing.T) {
	k, f := compiledKernel(t, "amd64", "bmm")
	var versions []*ir.If
	ir.WalkNodes(f.Body, func(n ir.Node) bool {
		if v, ok := n.(*ir.If); ok && len(v.Then) == 1 {
			if l, ok := v.Then[0].(*ir.Loop); ok && strings.HasPrefix(l.Var.Name, "b_c") {
				versions = append(versions, v)
			}
		}
		return true
	})
	if len(versions) != 3 {
		t.Fatalf("want the three copies of the product loop versioned, found %d:\n%s", len(versions), f)
	}
	for _, v := range versions {
		l := v.Then[0].(*ir.Loop)
		if s, ok := l.Step.(ir.IConst); !ok || s.V != batchChunk || len(l.Body) != 1 {
			t.Fatalf("chunk loop %s: step %v, %d nodes", l.Var.Name, l.Step, len(l.Body))
		}
		u, ok := l.Body[0].(*ir.Micro)
		if !ok || u.Kind() != ir.MicroBatched {
			t.Fatalf("chunk loop %s: its body is no batched micro", l.Var.Name)
		}
		if got, want := u.Batch.AStride.String()+" "+u.Batch.BStride.String()+" "+u.Batch.CStride.String(), "(M * K) (K * N) (M * N)"; got != want {
			t.Errorf("chunk loop %s: strides %s, want %s", l.Var.Name, got, want)
		}
		if got, want := u.Batch.Count.String(), "min(4, (Bt - "+l.Var.Name+"))"; got != want {
			t.Errorf("chunk loop %s: count %s, want %s", l.Var.Name, got, want)
		}
		if u.M.String() != "M" || u.N.String() != "N" || u.KC.String() != "K" {
			t.Errorf("chunk loop %s: a product is %s×%s×%s, want M×N×K", l.Var.Name, u.M, u.N, u.KC)
		}
		if len(v.Else) != 1 {
			t.Fatalf("chunk loop %s: no second version", l.Var.Name)
		}
		if old, ok := v.Else[0].(*ir.Loop); !ok || old.Var.Name != "b" || old.Kind != l.Kind {
			t.Errorf("chunk loop %s: the second version is not the product loop as it was", l.Var.Name)
		}
	}

	plans := batchPlans(f)
	var shapes []map[string]int
	for _, s := range [][4]int{ // Bt, M, N, K
		{1, 3, 5, 4}, {5, 3, 5, 4}, {9, 7, 4, 6}, {6, 2, 5, 4}, // batched; M = RowsMax: rows
		{7, 3, 6, 4}, {3, 8, 1, 9}, {4, 8, 5, 10}, {4, 8, 5, 11}, // N = NR + 1; N = 1; M·N·K = 400, 440
		{10, 13, 5, 0}, {2, 1, 1, 1}, // K = 0 (C = 0); a 1×1×1 product
	} {
		shapes = append(shapes, map[string]int{"Bt": s[0], "M": s[1], "N": s[2], "K": s[3]})
	}
	runPlans(t, "bmm, batch pass", k, f, shapes, plans, rand.New(rand.NewPCG(3, 5)))
}

// batchPlans returns f's plan with MR 3, NR 5, RowsMax 2 and SmallWork 400 (small shapes on both sides
// of the batch version's test), on one and on two workers.
func batchPlans(f *ir.Func) []map[string]int {
	var plans []map[string]int
	for _, w := range []int{1, 2} {
		p := map[string]int{}
		for key, v := range f.Plan {
			p[key] = v
			switch key[strings.LastIndexByte(key, '.')+1:] {
			case "MR":
				p[key] = 3
			case "NR":
				p[key] = 5
			case "RowsMax":
				p[key] = 2
			case "SmallWork":
				p[key] = 400
			case "SmallDeep":
				p[key] = 0 // the packed version past SmallWork, as these tests were written
			case "Workers":
				p[key] = w
			}
		}
		plans = append(plans, p)
	}
	return plans
}

// TestAffineCoef checks the coefficient the batch pass reads a product's stride from.
func TestAffineCoef(t *testing.T) {
	b := &ir.Var{Name: "b"}
	mv := &ir.Var{Name: "i"}
	M, K := ir.IDim{D: &ir.Dim{Name: "M"}}, ir.IDim{D: &ir.Dim{Name: "K"}}
	bv, iv := ir.IVar{V: b}, ir.IVar{V: mv}
	for _, c := range []struct {
		e    ir.IExpr
		want string // "" : not affine
	}{
		{ir.IMul(ir.IMul(bv, M), K), "(M * K)"},
		{ir.IAdd(ir.IMul(ir.IAdd(ir.IMul(bv, M), iv), K), ir.IConst{V: 3}), "(M * K)"},
		{ir.ISub(ir.IMul(M, bv), iv), "M"},
		{ir.IMul(iv, K), "0"},
		{ir.IMul(bv, bv), ""},
		{ir.IMin(bv, M), ""},
		{ir.IDiv(bv, ir.IConst{V: 2}), ""},
	} {
		d, ok := affineCoef(c.e, b)
		switch {
		case c.want == "" && ok:
			t.Errorf("%v: coefficient %v, want none (not affine in b)", c.e, d)
		case c.want != "" && (!ok || ir.Simplify(d).String() != c.want):
			t.Errorf("%v: coefficient %v (%v), want %s", c.e, d, ok, c.want)
		}
	}
}

const batchKernels = `
kernel bmm_ab(A: f32[Bt, M, K], B: f32[Bt, K, N], C: inout f32[Bt, M, N], alpha: f32, beta: f32) {
    C[b, i, j] = alpha * sum(k: A[b, i, k] * B[b, k, j]) + beta * C[b, i, j]
}
kernel bmm_tn(A: f32[Bt, K, M], B: f32[Bt, K, N], C: out f32[Bt, M, N]) {
    C[b, i, j] = sum(k: A[b, k, i] * B[b, k, j])
}
kernel bmm_bias(A: f64[Bt, M, K], B: f64[Bt, K, N], bias: f64[N], C: out f64[Bt, M, N]) {
    C[b, i, j] = relu(sum(k: A[b, i, k] * B[b, k, j]) + bias[j])
}
kernel bmm_bbias(A: f32[Bt, M, K], B: f32[Bt, K, N], bias: f32[Bt, N], C: out f32[Bt, M, N]) {
    C[b, i, j] = sum(k: A[b, i, k] * B[b, k, j]) + bias[b, j]
}
kernel bmm_sharedA(A: f32[M, K], B: f32[Bt, K, N], C: out f32[Bt, M, N]) {
    C[b, i, j] = sum(k: A[i, k] * B[b, k, j])
}
`

// TestBatchVariants runs the batch pass on batched GEMMs other than bmm: alpha and beta (C read per
// product), a transposed A (acs ≠ 1), a bias shared by the products and ReLU (in the microkernel's
// epilogue), a bias per product (added by the loop after the GEMM: the Micro has none, so it is batched
// too), and an A shared by every product (its stride 0). Each must have a batched Micro and interprets
// as the algorithm level does on shapes on both sides of the version test, on one and two workers.
func TestBatchVariants(t *testing.T) {
	ks, err := check.File("batch.kdsl", batchKernels)
	if err != nil {
		t.Fatal(err)
	}
	m, err := target.Lookup("amd64")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		f, err := Compile(k, m, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var batch *ir.MicroBatch
		ir.WalkNodes(f.Body, func(n ir.Node) bool {
			if u, ok := n.(*ir.Micro); ok && u.Kind() == ir.MicroBatched {
				batch = u.Batch
			}
			return true
		})
		if batch == nil {
			t.Errorf("%s: no batched micro", k.Name)
		} else if k.Name == "bmm_sharedA" && batch.AStride.String() != "0" {
			t.Errorf("%s: A's stride %s, want 0", k.Name, batch.AStride)
		}
		plans := batchPlans(f)
		var shapes []map[string]int
		for _, s := range [][4]int{{5, 7, 4, 6}, {6, 3, 5, 9}, {3, 8, 6, 4}, {4, 2, 5, 3}, {7, 8, 5, 11}} { // Bt, M, N, K
			shapes = append(shapes, map[string]int{"Bt": s[0], "M": s[1], "N": s[2], "K": s[3]})
		}
		runPlans(t, k.Name+", batch pass", k, f, shapes, plans, rand.New(rand.NewPCG(9, uint64(len(k.Name)))))
	}
}
