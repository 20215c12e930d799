package llvm

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
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
			body := randExpr(rng, leaves, 2)
			if !strings.Contains(body, "j]") { // kdsl infers j's range from its use as an index
				body = "(" + body + " * X[i, j])"
			}
			fmt.Fprintf(&b, "kernel red%d(X: %s[M, N], w: %s[N], s: out %s[M]) {\n    s[i] = %s(j: %s) * 0.5 + w[0]\n}\n",
				k, t, t, t, red, body)
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

// FuzzDifferential compiles random kernels (elementwise, reductions, GEMM-like) from a seed through
// both of kgen's CPU paths and compares each with the interpreter on ragged shapes: the LLVM path (opt,
// llc, the C driver) and the Go/avo path (kgen gen -targets amd64 into a package inside the module,
// whose generated tests check every kernel and variant against the interpreter). CI runs the seed
// corpus (one seed, 12 kernels); go test -fuzz=FuzzDifferential tries other seeds, as does
// KGEN_LLVM_FUZZ_SEED for one run.
func FuzzDifferential(f *testing.F) {
	f.Add(uint64(20261202))
	if s := os.Getenv("KGEN_LLVM_FUZZ_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			f.Fatalf("KGEN_LLVM_FUZZ_SEED: %v", err)
		}
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		clang := tool(t, "clang-14", "clang")
		opt, llc := tool(t, "opt", "opt-14"), tool(t, "llc", "llc-14")
		src := randomKernels(rand.New(rand.NewPCG(seed, 1)), 12)
		t.Logf("seed %d:\n%s", seed, src)
		checkPackage(t, pkg(t, src, "llvm", "llvm"), opt, llc, clang)
		if testing.Short() {
			return // the Go/avo half builds and tests a generated package
		}
		goPath(t, src)
	})
}

// goPath generates src as a Go package with the amd64 (avo) and portable backends inside the module
// (testdata/tmp-*, so that it imports kgen's packages) and runs its generated tests, which compare
// every kernel, and on amd64 every assembly variant this CPU runs, with the interpreter.
func goPath(t *testing.T, src string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("testdata", "tmp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	in := filepath.Join(dir, "fuzz.kdsl")
	if err := os.WriteFile(in, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	pkgDir := filepath.Join(dir, "fuzz")
	for _, c := range [][]string{
		{"go", "run", "./cmd/kgen", "gen", "-o", filepath.Join("codegen/llvm", pkgDir), "-targets", "amd64", filepath.Join("codegen/llvm", in)},
		{"go", "test", "-count=1", "./" + filepath.ToSlash(filepath.Join("codegen/llvm", pkgDir))},
	} {
		cmd := exec.Command(c[0], c[1:]...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(c, " "), err, out)
		}
	}
}
