package passes

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
	"github.com/kgen-dev/kgen/target"
)

func library(t *testing.T) []*ir.Kernel { return kdslFile(t, "../kernels.kdsl") }

// compiledKernel compiles the library kernel name for the target tgt.
func compiledKernel(t *testing.T, tgt, name string) (*ir.Kernel, *ir.Func) {
	t.Helper()
	m, err := target.Lookup(tgt)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range library(t) {
		if k.Name == name {
			f, err := Compile(k, m, Options{})
			if err != nil {
				t.Fatal(err)
			}
			return k, f
		}
	}
	t.Fatalf("%s is not in the library", name)
	return nil, nil
}

// kdslFile checks the kernels of a kdsl file.
func kdslFile(t *testing.T, path string) []*ir.Kernel {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := check.File(filepath.Base(path), string(src))
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// oddPlan gives every plan symbol of f a small odd value, so that every cache-block and register-tile
// edge is hit (and the rows and unpacked versions of GEMMs are chosen for other shapes).
func oddPlan(f *ir.Func) map[string]int {
	odd := map[string]int{}
	for key := range f.Plan {
		switch field := key[strings.LastIndexByte(key, '.')+1:]; field {
		case "MR", "CB":
			odd[key] = 3
		case "NR", "RB":
			odd[key] = 5
		case "MC":
			odd[key] = 6
		case "KC":
			odd[key] = 7
		case "NC":
			odd[key] = 10
		case "Workers": // the parallel row-block version's worker count (its blocks: a multiple of it)
			odd[key] = 3
		case "SmallWork":
			odd[key] = 1 // the packed version from M·N·K = 2 on
		case "SmallDeep":
			odd[key] = 60 // deep products up to 60 multiply-adds unpacked (deepGemm), larger ones packed
		case "RowBlocks":
			odd[key] = 18 // row blocks in parallel from M = 1 on (RowBlocks·M ≥ Workers·MC = 3·6)
		case "RowsMax":
			odd[key] = 2
		case "RowsNB":
			odd[key] = 7
		case "BY", "W", "RW": // GPU block rows, warps per block (gpumap), warps per row block (gpurow)
			odd[key] = 3
		case "BX", "BK": // GPU block columns, staged K depth (gpumap, staging)
			odd[key] = 2
		case "B1": // GPU threads per 1-D block
			odd[key] = 5
		default:
			odd[key] = f.Plan[key]
		}
	}
	return odd
}

// checkPasses interprets the loop IR of every kernel of the library after lowering and after every
// pass of target tgt's pipeline, on random shapes (ones, primes, ragged; with large, long reductions), with the
// default plan, each variant's plan and odd plan values, and compares it with the algorithm-level
// interpreter.
func checkPasses(t *testing.T, tgt string, nshapes int, large bool) {
	m, err := target.Lookup(tgt)
	if err != nil {
		t.Fatal(err)
	}
	names := Names(m)
	for _, k := range library(t) {
		rng := rand.New(rand.NewPCG(7, uint64(len(k.Name))))
		shapes := kgentest.Shapes(k, rng, nshapes)
		if !large {
			shapes = shapes[:len(shapes)-1] // the last is large enough for the packed GEMM path
		}
		if m.Name == "ptx" || m.Name == "msl" {
			shapes = gpuShapes(k, rng) // every thread of every block is interpreted
		}
		for upto := 0; upto < len(names); upto++ {
			f, err := Compile(k, m, Options{Skip: names[upto+1:]})
			if err != nil {
				t.Fatalf("%s: %s up to %s: %v", tgt, k.Name, names[upto], err)
			}
			var variants []map[string]int
			for _, v := range f.Variants {
				variants = append(variants, f.PlanOf(v.Name))
			}
			runEquiv(t, fmt.Sprintf("%s: %s after %s", tgt, k.Name, names[upto]), k, f, shapes, rng, variants...)
		}
	}
}

// runEquiv verifies f and interprets it on every shape, with its default plan, oddPlan's and the extra
// plans, comparing every output with the algorithm level's within kgentest.Compare's tolerance, which
// is derived from the precision.
func runEquiv(t *testing.T, what string, k *ir.Kernel, f *ir.Func, shapes []map[string]int, rng *rand.Rand, extra ...map[string]int) {
	t.Helper()
	if err := ir.VerifyFunc(f); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, f)
	}
	plans := []map[string]int{nil}
	if len(f.Plan) > 0 {
		plans = append(plans, oddPlan(f))
	}
	runPlans(t, what, k, f, shapes, append(plans, extra...), rng)
}

// runPlans interprets f on every shape under each plan and compares every output with the algorithm
// level's within kgentest.Compare's precision-derived tolerance.
func runPlans(t *testing.T, what string, k *ir.Kernel, f *ir.Func, shapes []map[string]int, plans []map[string]int, rng *rand.Rand) {
	t.Helper()
	for si, dims := range shapes {
		args := kgentest.RandomArgs(k, dims, rng, si)
		ref := args.Clone()
		if err := ir.RunKernel(k, ir.Storage, ref); err != nil {
			t.Fatal(err)
		}
		mag := kgentest.Magnitude(k, args)
		for _, plan := range plans {
			got := args.Clone()
			if err := ir.RunFunc(f, ir.Storage, got, plan); err != nil {
				t.Fatalf("%s, dims %v, plan %v: %v\n%s", what, dims, plan, err, f)
			}
			for _, p := range k.Params {
				if p.Kind == ir.Out || p.Kind == ir.InOut {
					if err := kgentest.Compare(k, dims, p, got.Tensors[p.Name], ref.Tensors[p.Name], mag[p.Name]); err != nil {
						t.Errorf("%s, dims %v, plan %v: %v", what, dims, plan, err)
					}
				}
			}
		}
	}
}

// TestEachPassPreservesResults runs checkPasses for the portable target on four shapes per kernel.
func TestEachPassPreservesResults(t *testing.T) { checkPasses(t, "go", 4, true) }

// TestEachPassPreservesResultsTargets runs checkPasses for the other CPU targets, whose pipelines run
// with another vector width, other caches and per-variant plans, on two small shapes per kernel (all
// ones, and random ragged sizes): the passes are the portable target's, which the test above also runs
// on large shapes, and the odd plan values take the GEMMs through their packed version.
func TestEachPassPreservesResultsTargets(t *testing.T) {
	for _, tgt := range []string{"amd64", "arm64"} {
		t.Run(tgt, func(t *testing.T) { checkPasses(t, tgt, 3, false) })
	}
}

// TestPipelineOrder checks every target's pass list against the declared ordering constraints, and that
// the check rejects a list that breaks one.
func TestPipelineOrder(t *testing.T) {
	for _, name := range target.Names() {
		m, _ := target.Lookup(name)
		list, err := Pipeline(m)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(list) == 0 || len(Names(m)) != len(list)+1 {
			t.Fatalf("%s: %d passes, names %v", name, len(list), Names(m))
		}
	}
	for name, p := range passes {
		if p.Name != name {
			t.Errorf("pass registered as %s is named %s", name, p.Name)
		}
		for _, b := range p.After {
			if _, ok := passes[b]; !ok {
				t.Errorf("%s: after unknown pass %s", name, b)
			}
		}
	}
	for _, c := range []struct {
		list []string
		want string
	}{
		{[]string{"pack", "tensorize"}, "pass pack must run after tensorize"},
		{[]string{"tensorize", "beta", "parallel"}, "pass beta must run after parallel"},
		{[]string{"fusion", "fusion"}, "pass fusion listed twice"},
		{[]string{"vectorize", "fuse"}, `unknown pass "fuse"`},
		{[]string{"unroll", "vectorize"}, "pass unroll must run after vectorize"},
	} {
		if _, err := pipelineOf(c.list); err == nil || err.Error() != c.want {
			t.Errorf("%v: got %v, want %q", c.list, err, c.want)
		}
	}
	if _, err := Pipeline(target.Machine{Name: "tpu"}); err == nil {
		t.Error("a target without a pipeline was accepted")
	}
}

// TestPassesDoTheirJob checks that each pass changes what it should on the library.
func TestPassesDoTheirJob(t *testing.T) {
	m, _ := target.Lookup("go")
	changed := map[string]map[string]bool{}
	for _, k := range library(t) {
		changed[k.Name] = map[string]bool{}
		_, err := Compile(k, m, Options{After: func(pass string, f *ir.Func, c bool) { changed[k.Name][pass] = c }})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		kernel, pass string
		want         bool
	}{
		{"softmax", "fusion", true}, {"layernorm", "fusion", true}, {"sgemm", "fusion", false},
		{"sgemm", "tensorize", true}, {"bmm", "tensorize", true}, {"gemm_bias_relu", "tensorize", true}, {"sgemm_acc", "tensorize", true},
		{"conv2d", "tensorize", false}, {"hgemm", "tensorize", true}, {"sgemm", "pack", true}, {"transpose", "tensorize", true}, {"transpose", "tile", false}, {"transpose", "parallel", true}, {"sgemm", "tile", false},
		{"colsum", "interchange", true}, {"sum_mid", "interchange", true}, {"batch_stats", "interchange", true},
		{"softmax", "interchange", false}, {"layernorm", "interchange", false}, {"sgemv", "interchange", false}, {"conv2d", "interchange", false}, {"sdot", "interchange", false},
		{"sdot", "vectorize", true}, {"saxpy", "vectorize", true}, {"sgemm", "parallel", true}, {"conv2d", "parallel", true},
	} {
		if changed[c.kernel][c.pass] != c.want {
			t.Errorf("%s: pass %s changed = %v, want %v", c.kernel, c.pass, changed[c.kernel][c.pass], c.want)
		}
	}
}

// TestPrecisionDirective: `precision f64` makes a float32 dot product accumulate in f64.
func TestPrecisionDirective(t *testing.T) {
	src := "kernel d(x: f32[N], y: f32[N], r: out f32[]) {\n r[] = sum(i: x[i] * y[i])\n}\nschedule d { precision f64 }\n"
	ks, err := check.File("d.kdsl", src)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := target.Lookup("go")
	f, err := Compile(ks[0], m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.String(), "f64") {
		t.Fatalf("no f64 accumulator:\n%s", f)
	}
	// 1 + 2^-30 summed in f32 loses the small parts; in f64 it keeps them.
	n := 1 << 10
	x, y := make([]float64, n), make([]float64, n)
	x[0], y[0] = 1, 1
	for i := 1; i < n; i++ {
		x[i], y[i] = 0x1p-15, 0x1p-15
	}
	args := ir.Args{Tensors: map[string][]float64{"x": x, "y": y, "r": {0}}, Dims: map[string]int{"N": n}}
	if err := ir.RunFunc(f, ir.Storage, args, nil); err != nil {
		t.Fatal(err)
	}
	want := float64(float32(1 + float64(n-1)*0x1p-30))
	if args.Tensors["r"][0] != want {
		t.Fatalf("r = %v, want %v", args.Tensors["r"][0], want)
	}
}

// TestParallelDirectiveOnTensorized: a `parallel i` directive names a loop that tensorize renames away in
// a GEMM; the nest must keep the default parallel loops rather than lose them all.
func TestParallelDirectiveOnTensorized(t *testing.T) {
	src := "kernel mm(A: f32[M, K], B: f32[K, N], C: out f32[M, N]) {\n C[i, j] = sum(k: A[i, k] * B[k, j])\n}\nschedule mm { parallel i }\n"
	ks, err := check.File("mm.kdsl", src)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := target.Lookup("go")
	f, err := Compile(ks[0], m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.String(), "parallel jr") {
		t.Fatalf("no parallel panel loop left:\n%s", f)
	}
}
