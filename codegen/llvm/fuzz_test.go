package llvm

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// randomKernels writes n random small kernels: elementwise expressions, row reductions and GEMM-like
// contractions with a random epilogue, over f32 or f64, with operands plain or transposed. The
// expressions use continuous operations only (no select), so that a product fused by one path and not
// the other cannot flip a branch.
func randomKernels(rng *rand.Rand, n int) string {
	var b strings.Builder
	for k := 0; k < n; k++ {
		t := []string{"f32", "f64"}[rng.IntN(2)]
		switch k % 3 {
		case 0:
			leaves := []string{"x[i]", "y[i]", "a", "0.5", "x[i]"}
			fmt.Fprintf(&b, "kernel ew%d(x: %s[N], y: %s[N], z: out %s[N], a: %s) {\n    z[i] = %s\n}\n", k, t, t, t, t, randExpr(rng, leaves, 3))
		case 1:
			red := []string{"sum", "max", "min"}[rng.IntN(3)]
			leaves := []string{"X[i, j]", "X[i, j]", "w[j]", "2"}
			fmt.Fprintf(&b, "kernel red%d(X: %s[M, N], w: %s[N], s: out %s[M]) {\n    s[i] = %s(j: %s) * 0.5 + w[0]\n}\n",
				k, t, t, t, red, randExpr(rng, leaves, 2))
		default:
			a := []string{"A[i, k]", "A[k, i]"}[rng.IntN(2)]
			bb := []string{"B[k, j]", "B[j, k]"}[rng.IntN(2)]
			sa := map[string]string{"A[i, k]": "M, K", "A[k, i]": "K, M"}[a]
			sb := map[string]string{"B[k, j]": "K, N", "B[j, k]": "N, K"}[bb]
			epi := randExpr(rng, []string{"C[i, j]", "bias[j]", "alpha"}, 2)
			fmt.Fprintf(&b, "kernel mm%d(A: %s[%s], B: %s[%s], bias: %s[N], C: inout %s[M, N], alpha: %s) {\n    C[i, j] = alpha * sum(k: %s * %s) + %s\n}\n",
				k, t, sa, t, sb, t, t, t, a, bb, epi)
		}
	}
	return b.String()
}

// randExpr is a random expression of the leaves, depth at most d.
func randExpr(rng *rand.Rand, leaves []string, d int) string {
	if d == 0 || rng.IntN(4) == 0 {
		return leaves[rng.IntN(len(leaves))]
	}
	x, y := randExpr(rng, leaves, d-1), randExpr(rng, leaves, d-1)
	switch rng.IntN(9) {
	case 0:
		return "(" + x + " + " + y + ")"
	case 1:
		return "(" + x + " - " + y + ")"
	case 2, 3:
		return "(" + x + " * " + y + ")"
	case 4:
		return "max(" + x + ", " + y + ")"
	case 5:
		return "min(" + x + ", " + y + ")"
	case 6:
		return "abs(" + x + ")"
	case 7:
		return "relu(" + x + ")"
	}
	return "sqrt(abs(" + x + "))"
}

// TestDifferentialFuzz compiles random kernels (elementwise, reductions, GEMM-like) through the LLVM
// path and compares them with the interpreter on ragged shapes. KGEN_LLVM_FUZZ_SEED picks other
// kernels than the default seed.
func TestDifferentialFuzz(t *testing.T) {
	clang := tool(t, "clang-14", "clang")
	opt, llc := tool(t, "opt", "opt-14"), tool(t, "llc", "llc-14")
	seed := uint64(20261202)
	if s := os.Getenv("KGEN_LLVM_FUZZ_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("KGEN_LLVM_FUZZ_SEED: %v", err)
		}
		seed = v
	}
	src := randomKernels(rand.New(rand.NewPCG(seed, 1)), 12)
	t.Logf("seed %d:\n%s", seed, src)
	checkPackage(t, pkg(t, src, "llvm", "llvm"), opt, llc, clang)
}
