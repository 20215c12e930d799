package passes

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
	"github.com/kgen-dev/kgen/target"
)

func mmaKernels(t *testing.T) []*ir.Kernel {
	return append(library(t), kdslFile(t, "testdata/mma.kdsl")...)
}

// The GEMM family of kernels.kdsl and testdata/mma.kdsl: each must be formed (a matcher that stops
// recognising one fails here), and nothing else may be.
var mmaFamily = map[string]bool{
	"sgemm": true, "dgemm": true, "sgemm_tn": true, "sgemm_nt": true, "sgemm_tt": true, "dgemm_tn": true,
	"dgemm_nt": true, "dgemm_tt": true, "sgemv": true, "sdot": true, "gemm_bias_relu": true, "sgemm_acc": true,
	"bmm": true, "hgemm": true, "bgemm": true, "bgemm_bf16": true, "bgemm_tt": true,
	"hgemm_bias_gelu": true, "bgemm_scale_residual": true, "sgemm_sigmoid": true, "sgemm_tf32": true,
	"linear_gelu": true, "hlinear_gelu": true, "linear_residual": true, "gemm_sigmoid": true,
}

// TestMMAFormLower checks, on every target model and every GEMM-family kernel, that the algorithm
// level, the formed IR (MMA nodes with the target's tile) and the lowered IR (scalar loops) interpret
// to the same results on ragged shapes (ones, primes, non-multiples of every tile), with register
// tiles also at odd plan values, and that the tile is the target's MMA shape.
func TestMMAFormLower(t *testing.T) {
	ks := mmaKernels(t)
	formed := map[string]bool{}
	// the target models, and two feature levels the models do not name yet (the MMA table does)
	for _, tname := range []string{"go", "amd64", "arm64", "ptx", "msl", "ptx:sm_90a", "amd64:avx512"} {
		base, _, _ := strings.Cut(tname, ":")
		m, err := target.Lookup(base)
		if err != nil {
			t.Fatal(err)
		}
		m.Name = tname
		for _, k := range ks {
			c := &Context{Machine: m, Directives: k.Directives(m.Name)}
			f, err := Lower(k, c)
			if err != nil {
				t.Fatal(err)
			}
			changed, err := MMAForm(f, c)
			if err != nil {
				t.Fatalf("%s %s: %v", tname, k.Name, err)
			}
			if !changed {
				if mmaFamily[k.Name] {
					t.Errorf("%s %s: not formed", tname, k.Name)
				}
				continue
			}
			if !mmaFamily[k.Name] {
				t.Errorf("%s %s: formed, but it is not a GEMM\n%s", tname, k.Name, f)
			}
			formed[k.Name] = true
			text := f.String()
			if !strings.Contains(text, "mma %acc") || !strings.Contains(text, "accstore") {
				t.Fatalf("%s %s: no MMA in\n%s", tname, k.Name, text)
			}
			wantScope := ""
			switch {
			case tname == "ptx" && (strings.HasPrefix(k.Name, "hgemm") || strings.HasPrefix(k.Name, "bgemm")):
				wantScope = "] warp sm80.m16n8k16.c"
			case tname == "msl" && !strings.HasPrefix(k.Name, "d"):
				wantScope = "] simdgroup metal.simdgroup8x8"
			case tname == "ptx:sm_90a" && (strings.HasPrefix(k.Name, "hgemm") || strings.HasPrefix(k.Name, "bgemm")):
				wantScope = "[64 x 64] warpgroup sm90a.m64n64k16.d"
			case tname == "ptx" && k.Name == "sgemm_tf32":
				wantScope = "mma %acc2 += A·B f32 (tf32) k=8"
			case tname == "amd64" && strings.HasPrefix(k.Name, "sgemm"):
				wantScope = ".mma.MR = 6\n"
			case tname == "amd64:avx512" && strings.HasPrefix(k.Name, "sgemm"):
				wantScope = ".mma.NR = 32\n"
			}
			if tname != "ptx" && strings.Contains(text, "(tf32)") {
				t.Errorf("%s %s: a tf32 MMA outside the ptx block that asked for it\n%s", tname, k.Name, text)
			}
			if !strings.Contains(text, wantScope) {
				t.Errorf("%s %s: want an accumulator %q in\n%s", tname, k.Name, wantScope, text)
			}
			rng := rand.New(rand.NewPCG(11, uint64(len(k.Name))))
			// ones and random primes/ragged sizes (not Shapes' large last one: the interpreter is slow
			// and the tiles here are small), then twice 17 everywhere: past every MMA tile (16, 8, 14)
			// with a ragged edge in M, N and K
			shapes := kgentest.Shapes(k, rng, 3)[:2]
			odd := map[string]int{}
			for _, d := range k.Dims {
				odd[d.Name] = 17
			}
			shapes = append(shapes, odd, odd) // RandomArgs puts a NaN in the third, an Inf in the fourth
			runEquiv(t, tname+" "+k.Name+" formed", k, f, shapes, rng)
			if _, err := MMALower(f, c); err != nil {
				t.Fatalf("%s %s: lower: %v", tname, k.Name, err)
			}
			if strings.Contains(f.String(), "mma ") {
				t.Fatalf("%s %s: MMA left after lowering\n%s", tname, k.Name, f)
			}
			runEquiv(t, tname+" "+k.Name+" lowered", k, f, shapes, rng)
		}
	}
	for name := range mmaFamily {
		if !formed[name] {
			t.Errorf("%s is missing from the kernels", name)
		}
	}
}

// TestMMABetaZero: with beta = 0 the formed and the lowered GEMMs do not read C, so a NaN or an Inf in
// C does not reach the result (the beta rule, applied by the AccStore and by mmalower's versioning).
func TestMMABetaZero(t *testing.T) {
	for _, k := range mmaKernels(t) {
		if k.Name != "sgemm" && k.Name != "sgemm_sigmoid" && k.Name != "bgemm" {
			continue
		}
		for _, tname := range []string{"go", "ptx"} {
			m, _ := target.Lookup(tname)
			c := &Context{Machine: m}
			f, err := Lower(k, c)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := MMAForm(f, c); err != nil {
				t.Fatal(err)
			}
			dims := map[string]int{"M": 9, "N": 10, "K": 11}
			for _, lowered := range []bool{false, true} {
				if lowered {
					if _, err := MMALower(f, c); err != nil {
						t.Fatal(err)
					}
				}
				args := kgentest.RandomArgs(k, dims, rand.New(rand.NewPCG(1, 2)), 0)
				args.Scalars["beta"] = 0
				cs := args.Tensors["C"]
				for i := range cs {
					cs[i] = [2]float64{math.NaN(), math.Inf(-1)}[i%2]
				}
				ref := args.Clone()
				if err := ir.RunKernel(k, ir.Storage, ref); err != nil {
					t.Fatal(err)
				}
				if err := ir.RunFunc(f, ir.Storage, args, nil); err != nil {
					t.Fatal(err)
				}
				for i, v := range args.Tensors["C"] {
					if math.IsNaN(v) || math.IsInf(v, 0) || v != ref.Tensors["C"][i] {
						t.Fatalf("%s %s lowered=%v: C[%d] = %v, want %v", tname, k.Name, lowered, i, v, ref.Tensors["C"][i])
					}
				}
			}
		}
	}
}

// TestMicroToMMA: every microkernel call of the CPU pipelines, written as MMA nodes (the contract in
// MMA terms) and then expanded by MMALower, interprets to the algorithm level's result, with the
// default, odd and per-variant plans.
func TestMicroToMMA(t *testing.T) {
	for _, tname := range []string{"go", "amd64"} {
		m, err := target.Lookup(tname)
		if err != nil {
			t.Fatal(err)
		}
		converted := 0
		for _, k := range library(t) {
			f, err := Compile(k, m, Options{})
			if err != nil {
				t.Fatal(err)
			}
			c := &Context{Machine: m}
			changed, err := MicroToMMA(f, c)
			if err != nil || !changed {
				continue
			}
			converted++
			if strings.Contains(f.String(), "micro ") {
				t.Errorf("%s %s: a Micro left\n%s", tname, k.Name, f)
			}
			rng := rand.New(rand.NewPCG(5, uint64(len(k.Name))))
			// ones and random sizes; the odd plan takes them through the packed version (Shapes' large
			// last shape makes this test minutes long in the interpreter)
			shapes := kgentest.Shapes(k, rng, 3)[:2]
			runEquiv(t, tname+" "+k.Name+" micro as mma", k, f, shapes, rng)
			if _, err := MMALower(f, c); err != nil {
				t.Fatal(err)
			}
			runEquiv(t, tname+" "+k.Name+" micro as mma, lowered", k, f, shapes, rng)
		}
		if converted < 10 {
			t.Errorf("%s: only %d kernels had their microkernel calls written as MMA", tname, converted)
		}
	}
}

// TestTF32Rounds: with `precision tf32` the ptx MMA and its expansion round every f32 input to tf32
// (ir.RoundTF32Value) and accumulate in f32 in K order — checked bit for bit against that computation
// written out here — which differs from the exact-f32 product on inputs with low mantissa bits; the
// Exact mode (the ideal result) does not round.
func TestTF32Rounds(t *testing.T) {
	var k *ir.Kernel
	for _, c := range mmaKernels(t) {
		if c.Name == "sgemm_tf32" {
			k = c
		}
	}
	m, _ := target.Lookup("ptx")
	c := &Context{Machine: m, Directives: k.Directives(m.Name)}
	f, err := Lower(k, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := MMAForm(f, c); err != nil {
		t.Fatal(err)
	}
	dims := map[string]int{"M": 19, "N": 11, "K": 23}
	M, N, K := dims["M"], dims["N"], dims["K"]
	args := kgentest.RandomArgs(k, dims, rand.New(rand.NewPCG(3, 4)), 0)
	a, b := args.Tensors["A"], args.Tensors["B"]
	want := make([]float64, M*N)
	exact32 := make([]float64, M*N)
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			var s, e float32
			for p := 0; p < K; p++ {
				s += float32(ir.RoundTF32Value(a[i*K+p])) * float32(ir.RoundTF32Value(b[p*N+j]))
				e += float32(a[i*K+p]) * float32(b[p*N+j])
			}
			want[i*N+j], exact32[i*N+j] = float64(s), float64(e)
		}
	}
	check := func(what string, f *ir.Func) {
		got := args.Clone()
		if err := ir.RunFunc(f, ir.Storage, got, nil); err != nil {
			t.Fatal(err)
		}
		differs := 0
		for i, v := range got.Tensors["C"] {
			if v != want[i] {
				t.Fatalf("%s: C[%d] = %v, want %v (inputs rounded to tf32)", what, i, v, want[i])
			}
			if v != exact32[i] {
				differs++
			}
		}
		if differs < len(want)/2 {
			t.Errorf("%s: only %d of %d elements differ from the exact-f32 product: tf32 rounding not applied?", what, differs, len(want))
		}
		ideal := args.Clone()
		if err := ir.RunFunc(f, ir.Exact, ideal, nil); err != nil {
			t.Fatal(err)
		}
		ref := args.Clone()
		if err := ir.RunKernel(k, ir.Exact, ref); err != nil {
			t.Fatal(err)
		}
		for i, v := range ideal.Tensors["C"] {
			if w := ref.Tensors["C"][i]; math.Abs(v-w) > 1e-9*math.Abs(w) {
				t.Fatalf("%s, Exact mode: C[%d] = %v, want the ideal %v (no tf32 rounding)", what, i, v, w)
			}
		}
	}
	check("formed", f)
	if _, err := MMALower(f, c); err != nil {
		t.Fatal(err)
	}
	check("lowered", f)
}
