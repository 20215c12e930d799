package llvm

import (
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/passes"
	"github.com/kgen-dev/kgen/target"
)

const saxpySrc = `kernel saxpy(x: f32[N], y: inout f32[N], alpha: f32) {
    y[i] = alpha * x[i] + y[i]
}
kernel hdot(x: f16[N], y: bf16[N], r: out f32[]) {
    r[] = sum(i: x[i] * y[i])
}
`

// pkg compiles src with target's pipeline into a package for spec.
func pkg(t *testing.T, src, pipeline, spec string) *codegen.Package {
	t.Helper()
	ks, err := check.File("t.kdsl", src)
	if err != nil {
		t.Fatal(err)
	}
	m, err := target.Lookup(pipeline)
	if err != nil {
		t.Fatal(err)
	}
	p := &codegen.Package{Name: "ex", Source: "t.kdsl", Target: spec}
	for _, k := range ks {
		f, err := passes.Compile(k, m, passes.Options{})
		if err != nil {
			t.Fatal(err)
		}
		p.Kernels = append(p.Kernels, codegen.Kernel{K: k, F: f})
	}
	return p
}

// TestFiles checks the three files: the module's triple and functions, the header's prototypes (the
// C types of every element type) and the build commands for the triple.
func TestFiles(t *testing.T) {
	files, err := Backend{}.Generate(pkg(t, saxpySrc, "llvm", "llvm:riscv64-unknown-linux-gnu"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 || files[0].Name != "ex.ll" || files[1].Name != "ex.h" || files[2].Name != "ex.build.txt" {
		t.Fatalf("files: %v", files)
	}
	ll, h, build := string(files[0].Data), string(files[1].Data), string(files[2].Data)
	for _, want := range []string{
		`target triple = "riscv64-unknown-linux-gnu"`,
		`define i32 @ex_saxpy(i64 %N, float* noalias nocapture readonly %x, i64 %x_len, float* noalias nocapture %y, i64 %y_len, float %alpha)`,
		`define i32 @ex_hdot(i64 %N, i16* noalias nocapture readonly %x, i64 %x_len, i16* noalias nocapture readonly %y, i64 %y_len, float* noalias nocapture %r, i64 %r_len)`,
	} {
		if !strings.Contains(ll, want) {
			t.Errorf("module lacks %q", want)
		}
	}
	for _, want := range []string{
		"int32_t ex_saxpy(int64_t N, const float *x, int64_t x_len, float *y, int64_t y_len, float alpha);",
		"int32_t ex_hdot(int64_t N, const uint16_t *x, int64_t x_len, const uint16_t *y, int64_t y_len, float *r, int64_t r_len);",
		"#define KGEN_ELEN 2", "extern \"C\"",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("header lacks %q", want)
		}
	}
	if !strings.Contains(build, "llc -O3 -mtriple=riscv64-unknown-linux-gnu -mcpu=native -relocation-model=pic -filetype=obj ex.bc -o ex.o") {
		t.Errorf("build commands:\n%s", build)
	}
}

// TestTriple checks the target specs the backend takes.
func TestTriple(t *testing.T) {
	for spec, want := range map[string]string{"llvm": DefaultTriple, "llvm:aarch64-linux-gnu": "aarch64-linux-gnu", "": DefaultTriple} {
		if got, err := Triple(spec); err != nil || got != want {
			t.Errorf("Triple(%q) = %q, %v; want %q", spec, got, err, want)
		}
	}
	if _, err := Triple("ptx:sm_80"); err == nil {
		t.Error("Triple accepted a ptx spec")
	}
}

// TestUnsupportedNodes checks that loop IR the backend does not implement (the CPU pipeline's
// microkernel calls and packing) is an error naming the node, not a panic or a partial module.
func TestUnsupportedNodes(t *testing.T) {
	src := `kernel sgemm(A: f32[M, K], B: f32[K, N], C: out f32[M, N]) {
    C[i, j] = sum(k: A[i, k] * B[k, j])
}
`
	files, err := Backend{}.Generate(pkg(t, src, "amd64", "llvm"))
	if err == nil || !strings.Contains(err.Error(), "not implemented by the llvm backend") {
		t.Fatalf("Generate on the amd64 pipeline's IR: files %d, error %v", len(files), err)
	}
}
