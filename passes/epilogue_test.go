package passes

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
	"github.com/kgen-dev/kgen/target"
)

// epilogueKernels are GEMM-like statements whose epilogue the microkernel contract does not cover whole.
const epilogueKernels = `
kernel gelu_bias(A: f32[M, K], B: f32[K, N], bias: f32[N], C: out f32[M, N]) {
    C[i, j] = 0.5 * (sum(k: A[i, k] * B[k, j]) + bias[j]) * (1 + tanh(0.7978845608 * (sum(k: A[i, k] * B[k, j]) + bias[j])))
}
kernel sig_beta(A: f32[M, K], B: f32[K, N], C: inout f32[M, N], alpha: f32, beta: f32) {
    C[i, j] = sigmoid(alpha * sum(k: A[i, k] * B[k, j]) + beta * C[i, j])
}
kernel tanh_resid(A: f32[M, K], B: f32[K, N], C: inout f32[M, N], beta: f32) {
    C[i, j] = tanh(sum(k: A[i, k] * B[k, j])) + beta * C[i, j]
}
kernel h_sig(A: f16[M, K], B: f16[K, N], C: out f16[M, N], s: f32) {
    C[i, j] = f16(sigmoid(s * sum(k: A[i, k] * B[k, j])))
}
kernel rowbias(A: f32[M, K], B: f32[N, K], r: f32[M], C: out f32[M, N]) {
    C[i, j] = sum(k: A[i, k] * B[j, k]) + r[i]
}
kernel bmm_relu_scale(A: f32[Bt, M, K], B: f32[Bt, K, N], C: out f32[Bt, M, N], s: f32) {
    C[b, i, j] = s * relu(sum(k: A[b, i, k] * B[b, k, j]))
}
`

// TestEpilogueSplit checks which part of each statement the microkernel takes (its alpha, beta, bias and
// the tensor it writes) and what the epilogue loop stores.
func TestEpilogueSplit(t *testing.T) {
	ks, err := check.File("epilogue.kdsl", epilogueKernels)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ c, alpha, beta, bias, store string }{
		// bias taken by the microkernel, GELU in place
		"gelu_bias": {"C", "1:f32", "select((pc:i32 == 0:i32), 0:f32, 1:f32)", "bias", "((0.5:f32 * C[i, j]) * (1:f32 + tanh((0.7978845608:f32 * C[i, j]))))"},
		// alpha and beta taken (C not read when beta = 0), sigmoid in place
		"sig_beta": {"C", "alpha", "select((pc:i32 == 0:i32), beta, 1:f32)", "", "sigmoid(C[i, j])"},
		// E reads C: the sum goes to a scratch buffer, beta·C stays in the epilogue
		"tanh_resid": {"cwide", "1:f32", "select((pc:i32 == 0:i32), 0:f32, 1:f32)", "", "(tanh(cwide[((i * N) + j)]) + (beta * C[i, j]))"},
		// narrower output: scratch
		"h_sig": {"cwide", "s", "select((pc:i32 == 0:i32), 0:f32, 1:f32)", "", "f16(sigmoid(cwide[((i * N) + j)]))"},
		// a row bias is not the contract's: the epilogue adds it
		"rowbias": {"C", "1:f32", "select((pc:i32 == 0:i32), 0:f32, 1:f32)", "", "(C[i, j] + r[i])"},
		// ReLU is the contract's (its EP bit on the last K block), the scale after it the epilogue's
		"bmm_relu_scale": {"C", "1:f32", "select((pc:i32 == 0:i32), 0:f32, 1:f32)", "", "(s * C[b, i, j])"},
	}
	m, _ := target.Lookup("go")
	for _, k := range ks {
		names := Names(m)
		f, err := Compile(k, m, Options{Skip: names[slices.Index(names, "bindmicro")+1:]}) // the triples bound
		if err != nil {
			t.Fatal(err)
		}
		var micros []*ir.Micro
		var stores []*ir.Store
		ir.WalkNodes(f.Body, func(n ir.Node) bool {
			switch x := n.(type) {
			case *ir.Micro:
				micros = append(micros, x)
			case *ir.Store:
				stores = append(stores, x)
			}
			return true
		})
		w := want[k.Name]
		if len(micros) != 1 || len(stores) != 1 {
			t.Errorf("%s: %d micro tiles and %d stores, want 1 and 1 (the epilogue)\n%s", k.Name, len(micros), len(stores), f)
			continue
		}
		u := micros[0]
		bias := ""
		if u.Bias != nil {
			bias = u.Bias.Name
		}
		got := []string{u.C.Name, ir.FormatExpr(u.Alpha), ir.FormatExpr(u.Beta), bias, ir.FormatExpr(stores[0].Value)}
		if relu := strings.Contains(ir.FormatExpr(u.EP), "2:i32"); relu != (k.Name == "bmm_relu_scale") {
			t.Errorf("%s: ep = %s", k.Name, ir.FormatExpr(u.EP))
		}
		exp := []string{w.c, w.alpha, w.beta, w.bias, w.store}
		for i := range got {
			if got[i] != exp[i] {
				t.Errorf("%s: field %d = %s, want %s", k.Name, i, got[i], exp[i])
			}
		}
	}
}

// TestEpilogueCPUPipelines interprets the whole go, amd64, arm64 and llvm pipelines on the kernels above
// and testdata/mma.kdsl (ones, ragged primes, a NaN and an Inf input; default and odd plans, which take
// the GEMMs through their rows, unpacked and packed versions) against the algorithm level.
func TestEpilogueCPUPipelines(t *testing.T) {
	ks, err := check.File("epilogue.kdsl", epilogueKernels)
	if err != nil {
		t.Fatal(err)
	}
	ks = append(ks, kdslFile(t, "testdata/mma.kdsl")...)
	for _, tgt := range []string{"go", "amd64", "arm64", "llvm"} {
		m, err := target.Lookup(tgt)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ks {
			rng := rand.New(rand.NewPCG(5, uint64(len(k.Name))))
			shapes := kgentest.Shapes(k, rng, 5)[:4] // 2: a NaN input, 3: an Inf; not the large one
			f, err := Compile(k, m, Options{})
			if err != nil {
				t.Fatalf("%s: %s: %v", tgt, k.Name, err)
			}
			micro := false
			ir.WalkNodes(f.Body, func(n ir.Node) bool {
				_, ok := n.(*ir.Micro)
				micro = micro || ok
				return true
			})
			if tgt != "llvm" && !micro {
				t.Errorf("%s: %s was not tensorized", tgt, k.Name)
			}
			runEquiv(t, fmt.Sprintf("%s: %s", tgt, k.Name), k, f, shapes, rng)
		}
	}
}
