package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// shapesKdsl holds kernels whose generated wrappers once failed go vet or overflowed, one kernel per
// shape class of the beta rule, and f16 and i32 temporaries (pooled through the generic rt.Scratch):
// each generated package must build, pass go vet (amd64 and arm64) and pass its own generated
// kgen_test.go (the interpreter comparison under every variant, the beta rule, the variant selection,
// and the wrapper fuzzer's seed corpus). bgemm's target blocks give the assembly variants small tiles
// and blocks of their own, so their edges run too.
const shapesKdsl = `// Shapes that stress the generated wrappers.
kernel square(A: f32[N, N], B: out f32[N, N]) {
    B[i, j] = A[j, i] + A[i, j]
}
kernel cube(A: f64[N, N, N], B: inout f64[N, N, N]) {
    B[i, j, k] = A[k, j, i] - B[i, j, k]
}
kernel scalars(a: f32, b: f32, r: out f32[]) {
    r[] = a * b + 1
}
kernel rank0(x: f32[], y: inout f32[], s: f64) {
    y[] = x[] * f32(s) + y[]
}
kernel six(A: f32[D1, D2, D3, D4, D5, D6], B: f32[D6], C: out f32[D1, D2, D3, D4, D5, D6]) {
    C[a, b, c, d, e, f] = A[a, b, c, d, e, f] * B[f]
}
kernel reverse(X: f32[N], Y: out f32[N]) {
    Y[i] = X[N - 1 - i]
}
kernel window(I: f32[H, W], F: f32[KH, KW], O: out f32[OH, OW]) {
    O[y, x] = sum(ky, kx: I[2*y + ky, x + kx + 1] * F[ky, kx])
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
kernel bgemm(A: f32[Bt, M, K], B: f32[Bt, K, N], C: inout f32[Bt, M, N], beta: f32) {
    C[b, i, j] = sum(k: A[b, i, k] * B[b, k, j]) + beta * C[b, i, j]
}
kernel hscale(x: f16[N], y: inout f16[N], beta: f16) {
    y[i] = f16(x[i] + beta * y[i])
}
kernel htemp(x: f16[N], y: out f32[N]) {
    let h[i] = f16(x[i] * 2)
    y[i] = h[i] + 1
}
kernel itemp(x: f32[N], y: out f32[N]) {
    let q[i] = i32(x[i] * 4)
    y[i] = f32(q[i]) / 4
}
schedule bgemm {
    for amd64 { tile i 24 4, j 64 16, k 40 }
    for arm64 { tile i 24 4, j 64 8, k 40 }
}
`

// edgesKdsl has accesses whose valid shapes kgentest.Shapes does not find (a negative coefficient with
// a bound on M, large strides): only the wrapper fuzzer (its seeds) and the variant test run on them.
const edgesKdsl = `kernel backwards(X: f32[N], Y: out f32[M]) {
    Y[i] = X[2 - i]
}
kernel strided(X: f32[N], Y: out f32[M, P]) {
    Y[i, j] = X[1000000*i - 999999*j + N - 7]
}
`

// TestGeneratedPackagesBuild generates packages from shapesKdsl and edgesKdsl into a directory inside
// the module and runs go vet (amd64 and arm64) and go test on them.
func TestGeneratedPackagesBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a generated package")
	}
	root, dir := pkgTempDir(t)
	pkg := map[string]string{}
	for name, src := range map[string]string{"shapes": shapesKdsl, "edges": edgesKdsl} {
		pkgDir := filepath.Join(dir, name)
		in := write(t, name+".kdsl", src)
		if code, _, errOut := runKgen("gen", "-o", pkgDir, "-targets", "go,amd64,arm64", in); code != 0 {
			t.Fatal(errOut)
		}
		pkg[name] = "./" + filepath.ToSlash(filepath.Join("cmd/kgen", pkgDir))
	}
	for _, c := range [][]string{
		{"go", "vet", pkg["shapes"], pkg["edges"]},
		{"env", "GOOS=linux", "GOARCH=arm64", "go", "vet", pkg["shapes"], pkg["edges"]},
		{"go", "test", "-count=1", pkg["shapes"]},
		{"go", "test", "-count=1", "-tags", "purego", pkg["shapes"]},
		{"go", "test", "-count=1", "-run", "^(Fuzz|TestVariants_)", pkg["edges"]},
	} {
		cmd := exec.Command(c[0], c[1:]...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", strings.Join(c, " "), err, out)
		}
	}
}

// pkgTempDir returns the module's root and a temporary directory inside the module (removed after the
// test) for generated packages that import kgen's packages.
func pkgTempDir(t *testing.T) (root, dir string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir, err = os.MkdirTemp("testdata", "tmp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return root, dir
}

// An empty or comment-only file generates nothing, with a clear message (docs/LANGUAGE.md).
func TestGenNoKernels(t *testing.T) {
	for _, src := range []string{"", "// only a comment\n\n// and another\n"} {
		in := write(t, "empty.kdsl", src)
		out := filepath.Join(t.TempDir(), "pkg")
		code, _, errOut := runKgen("gen", "-o", out, in)
		if code != 1 || !strings.Contains(errOut, "empty.kdsl: no kernels: nothing to generate") {
			t.Errorf("%q: exit %d, stderr %q", src, code, errOut)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%q: output directory written", src)
		}
		if code, _, errOut := runKgen("check", in); code != 0 {
			t.Errorf("check %q: exit %d, %s", src, code, errOut)
		}
	}
}
