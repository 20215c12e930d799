package msl

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// hostKdsl exercises the Metal methods' corners: a scalar before the tensors, a rank-0 output, a
// window (bounds checks), temporaries, a kernel of two launches (colnorm), a bf16 kernel (a method only with msl:3.1) and an f64 one
// (never a method).
const hostKdsl = `kernel scale_first(a: f32, x: f32[N], y: out f32[N]) {
    y[i] = a * x[i]
}
kernel dot(x: f32[N], y: f32[N], r: out f32[]) {
    r[] = sum(i: x[i] * y[i])
}
kernel window(I: f32[H, W], F: f32[KH, KW], O: out f32[OH, OW]) {
    O[y, x] = sum(ky, kx: I[2*y + ky, x + kx + 1] * F[ky, kx])
}
kernel rownorm(X: f32[M, N], Y: out f32[M, N]) {
    let m[i] = max(j: X[i, j])
    Y[i, j] = exp(X[i, j] - m[i])
    let s[i] = sum(j: Y[i, j])
    Y[i, j] = Y[i, j] / s[i]
}
kernel colnorm(A: f32[M, N], Y: out f32[M, N]) {
    let s[j] = sum(i: A[i, j])
    Y[i, j] = A[i, j] / s[j]
}
kernel bscale(x: bf16[N], y: out f32[N], a: f32) {
    y[i] = a * x[i]
}
kernel dscale(x: f64[N], y: out f64[N]) {
    y[i] = 2 * x[i]
}
`

// TestGeneratedMetalPackages generates a package from kernels.kdsl (-targets go,amd64,arm64,msl)
// and one from hostKdsl (go,msl:3.1) with kgen, and checks that both vet with CGO_ENABLED=0 for
// linux/amd64, linux/arm64, darwin/arm64 and windows/amd64, that their generated Metal tests pass
// here (OpenMetal fails saying why, every method checks its arguments exactly as the CPU function
// does before touching the device, the device tests skip saying why), and that the kernels Metal
// refuses are listed in the doc comment and get no method.
func TestGeneratedMetalPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kgen and vets generated packages for four platforms")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := moduleTempDir(t)
	kgen := filepath.Join(t.TempDir(), "kgen")
	run := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(goBin, args...)
		cmd.Dir = root
		cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS="), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s go %s: %v\n%s", strings.Join(env, " "), strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run(nil, "build", "-o", kgen, "./cmd/kgen")
	in := filepath.Join(dir, "host.kdsl")
	if err := os.WriteFile(in, []byte(hostKdsl), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, g := range [][]string{
		{"-targets", "go,amd64,arm64,msl", "-o", filepath.Join(dir, "lib"), filepath.Join(root, "kernels.kdsl")},
		{"-targets", "go,msl:3.1", "-o", filepath.Join(dir, "host"), in},
	} {
		cmd := exec.Command(kgen, append([]string{"gen"}, g...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kgen gen %s: %v\n%s", strings.Join(g, " "), err, out)
		}
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		t.Fatal(err)
	}
	lib, host := "./"+filepath.ToSlash(filepath.Join(rel, "lib")), "./"+filepath.ToSlash(filepath.Join(rel, "host"))

	// What the doc comment and the methods say about refused kernels.
	for _, c := range []struct {
		pkg, version string
		methods, not []string
	}{
		{"lib", "metal.Metal30", []string{"Saxpy", "Softmax", "Conv2d", "Hgemm"}, []string{"Dgemm", "Bgemm", "BgemmBf16"}},
		{"host", "metal.Metal31", []string{"ScaleFirst", "Dot", "Window", "Rownorm", "Colnorm", "Bscale"}, []string{"Dscale"}},
	} {
		src, err := os.ReadFile(filepath.Join(dir, c.pkg, "metal.go"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), "dev.Compile(metalSource, "+c.version+")") {
			t.Errorf("%s: source not compiled for %s", c.pkg, c.version)
		}
		for _, m := range c.methods {
			for _, s := range []string{"func (m_ *Metal) " + m + "(", "func (m_ *Metal) " + m + "Host("} {
				if !strings.Contains(string(src), s) {
					t.Errorf("%s: no %q", c.pkg, s)
				}
			}
		}
		for _, m := range c.not {
			if strings.Contains(string(src), "func (m_ *Metal) "+m+"(") {
				t.Errorf("%s: method %s for a refused kernel", c.pkg, m)
			}
			if !strings.Contains(string(src), "//   - "+m+": ") {
				t.Errorf("%s: refused kernel %s not listed in the doc comment", c.pkg, m)
			}
		}
	}

	// colnorm's column sums must be complete before any row divides: two launches, which its methods
	// run in order in one command buffer (one metalLaunches entry each, found by kernel name).
	if src, err := os.ReadFile(filepath.Join(dir, "host", "metal.go")); err != nil {
		t.Fatal(err)
	} else if n := strings.Count(string(src), `{Kernel: "colnorm", Function: "colnorm_`); n != 2 {
		t.Errorf("colnorm has %d launches, want 2", n)
	}

	// The platforms vet in parallel; each go command uses the build cache.
	var wg sync.WaitGroup
	for _, p := range []string{"linux/amd64", "linux/arm64", "darwin/arm64", "windows/amd64"} {
		goos, goarch, _ := strings.Cut(p, "/")
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(goBin, "vet", lib, host)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOOS="+goos, "GOARCH="+goarch)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s: go vet: %v\n%s", p, err, out)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	out := run(nil, "test", "-count=1", "-v", "-run", "^TestMetal", lib, host)
	for _, want := range []string{
		"--- PASS: TestMetalOpen", "--- PASS: TestMetalChecks",
		"Metal exists only on Apple systems", "--- SKIP: TestMetalSaxpy", "--- SKIP: TestMetalRownorm",
		"--- SKIP: TestMetalColnorm",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("generated Metal tests: no %q in\n%s", want, out)
		}
	}
}

// TestHostNameCollisions: kernels whose Go names would clash with metal.go's (a Host method, a
// type, a method of Metal) are refused with an error naming both, instead of a package that does
// not compile.
func TestHostNameCollisions(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"kernel saxpy(x: f32[N], y: inout f32[N]) {\n y[i] = x[i] + y[i]\n}\nkernel saxpy_host(x: f32[N], y: inout f32[N]) {\n y[i] = x[i] * y[i]\n}\n",
			"kernel saxpy_host: its Metal method SaxpyHost collides with a Metal method of kernel saxpy"},
		{"kernel open_metal(x: f32[N], y: out f32[N]) {\n y[i] = x[i]\n}\n", "kernel open_metal: its function OpenMetal collides with metal.go's OpenMetal"},
		{"kernel device(x: f32[N], y: out f32[N]) {\n y[i] = x[i]\n}\n", "kernel device: its Metal method Device collides with (*Metal).Device"},
	} {
		p := compilePackage(t, "names.kdsl", c.src, "msl")
		_, err := Backend{}.Generate(p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}
