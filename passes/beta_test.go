package passes

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
	"github.com/kgen-dev/kgen/target"
)

// betaKernels has one kernel per shape class with a scaled-output term beta·C (the beta rule,
// docs/LANGUAGE.md): each writes its output from alpha·(something) + beta·out, so with beta = 0 the
// result is alpha·(something) whatever out held.
const betaKernels = `
kernel gemm(A: f32[M, K], B: f32[K, N], C: inout f32[M, N], alpha: f32, beta: f32) {
    C[i, j] = alpha * sum(k: A[i, k] * B[k, j]) + beta * C[i, j]
}
kernel gemm_rowbias(A: f32[M, K], B: f32[K, N], r: f32[M], C: inout f32[M, N], alpha: f32, beta: f32) {
    C[i, j] = alpha * sum(k: A[i, k] * B[k, j]) + beta * C[i, j] + r[i]
}
kernel gemv(A: f64[M, N], x: f64[N], y: inout f64[M], alpha: f64, beta: f64) {
    y[i] = alpha * sum(j: A[i, j] * x[j]) + beta * y[i]
}
kernel axpby(x: f32[N], y: inout f32[N], alpha: f32, beta: f32) {
    y[i] = alpha * x[i] + y[i] * beta
}
kernel axmby(x: f32[N], y: inout f32[N], alpha: f32, beta: f32) {
    y[i] = alpha * x[i] - beta * y[i]
}
kernel bgemm(A: f32[Bt, M, K], B: f32[Bt, K, N], C: inout f32[Bt, M, N], beta: f32) {
    C[b, i, j] = sum(k: A[b, i, k] * B[b, k, j]) + beta * C[b, i, j]
}
kernel hscale(x: f16[N], y: inout f16[N], beta: f16) {
    y[i] = f16(x[i] + beta * y[i])
}
kernel gemm_sigmoid(A: f32[M, K], B: f32[K, N], C: inout f32[M, N], alpha: f32, beta: f32) {
    C[i, j] = sigmoid(alpha * sum(k: A[i, k] * B[k, j]) + beta * C[i, j])
}
kernel gemm_tanh_beta(A: f32[M, K], B: f32[K, N], C: inout f32[M, N], beta: f32) {
    C[i, j] = tanh(sum(k: A[i, k] * B[k, j])) + beta * C[i, j]
}
`

// TestBetaRule runs each class through the algorithm-level interpreter and the loop-level one after the
// whole pipeline, with NaN and ±Inf in every output element: beta = 0 (and -0) must give exactly the
// result without the term, with no NaN, at both levels; beta = 1.5 must propagate them.
func TestBetaRule(t *testing.T) {
	ks, err := check.File("beta.kdsl", betaKernels)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := target.Lookup("go")
	for _, k := range ks {
		f, err := Compile(k, m, Options{})
		if err != nil {
			t.Fatal(err)
		}
		out := k.Stmts[0].Out
		rng := rand.New(rand.NewPCG(3, uint64(len(k.Name))))
		for _, dims := range kgentest.Shapes(k, rng, 4) {
			for _, beta := range []float64{0, math.Copysign(0, -1), 1.5} {
				args := kgentest.RandomArgs(k, dims, rng, 0)
				args.Scalars["beta"] = beta
				for i := range args.Tensors[out.Name] {
					args.Tensors[out.Name][i] = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[i%3]
				}
				// The expected result without the term: the same kernel with beta·out dropped.
				want := args.Clone()
				if beta == 0 {
					dropped := *k
					s := *k.Stmts[0]
					s.Value = ir.DropBeta(s.Value, out, ir.BetaFactors(s.Value, out)[0])
					dropped.Stmts = []*ir.Stmt{&s}
					if err := ir.RunKernel(&dropped, ir.Storage, want); err != nil {
						t.Fatal(err)
					}
				}
				algo, loop := args.Clone(), args.Clone()
				if err := ir.RunKernel(k, ir.Storage, algo); err != nil {
					t.Fatal(err)
				}
				if err := ir.RunFunc(f, ir.Storage, loop, nil); err != nil {
					t.Fatal(err)
				}
				for level, got := range map[string][]float64{"algorithm": algo.Tensors[out.Name], "loop": loop.Tensors[out.Name]} {
					switch {
					case beta == 0 && level == "algorithm" && !slices.Equal(got, want.Tensors[out.Name]):
						t.Errorf("%s %v, beta = %v: the algorithm level differs from the kernel without beta·%s", k.Name, dims, beta, out.Name)
					case beta == 0 && level == "loop":
						// A GEMM's loops sum in blocks: within rounding of the algorithm level, NaN for NaN.
						if err := kgentest.Compare(k, dims, out, got, want.Tensors[out.Name], kgentest.Magnitude(k, args)[out.Name]); err != nil {
							t.Errorf("%s %v, beta = %v, loop level: %v", k.Name, dims, beta, err)
						}
					case beta != 0 && len(got) > 0 && !slices.ContainsFunc(got, math.IsNaN):
						t.Errorf("%s %v, beta = %v, %s level: the NaNs of %s did not propagate", k.Name, dims, beta, level, out.Name)
					}
				}
			}
		}
	}
}

// The pass versions the non-GEMM loops and leaves the tensorized GEMMs (whose microkernels skip C
// themselves) alone; a GEMM whose epilogue keeps the beta term (gemm_tanh_beta: E reads C, so the sum
// goes to a scratch buffer and beta·C stays in the epilogue loop) has that loop versioned.
func TestBetaPassVersions(t *testing.T) {
	ks, err := check.File("beta.kdsl", betaKernels)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := target.Lookup("go")
	for _, k := range ks {
		changed := false
		if _, err := Compile(k, m, Options{After: func(pass string, _ *ir.Func, c bool) {
			if pass == "beta" {
				changed = c
			}
		}}); err != nil {
			t.Fatal(err)
		}
		// gemm_rowbias and gemm_sigmoid: the microkernel takes alpha·Σ + beta·C, the epilogue the rest
		want := !map[string]bool{"gemm": true, "bgemm": true, "gemm_rowbias": true, "gemm_sigmoid": true}[k.Name]
		if changed != want {
			t.Errorf("%s: beta pass changed = %v, want %v", k.Name, changed, want)
		}
	}
}
