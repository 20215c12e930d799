package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const mmKdsl = `kernel mm(A: f32[M, K], B: f32[K, N], C: out f32[M, N]) {
    C[i, j] = sum(k: A[i, k] * B[k, j])
}
`

// genFiles runs kgen gen for targets on src and returns the generated files by name.
func genFiles(t *testing.T, src, targets string) map[string]string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "pkg")
	if code, _, errOut := runKgen("gen", "-o", out, "-pkg", "pkg", "-tests=false", "-targets", targets, write(t, "mm.kdsl", src)); code != 0 {
		t.Fatalf("kgen gen: exit %d: %s", code, errOut)
	}
	return readFiles(t, out)
}

// readFiles returns the files of directory out by name.
func readFiles(t *testing.T, out string) map[string]string {
	t.Helper()
	files := map[string]string{}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(out, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	return files
}

// A `for amd64 { tile ... }` block sets the register tile and cache blocks of the amd64 variants: the
// generated microkernels are built for that tile and the dispatch installs the planned blocks instead of
// probing the host's caches; the portable code keeps its plan. Without the block the target table's
// tiles are used. kgen ir -target amd64 shows the same plan.
func TestTargetTileReachesAmd64(t *testing.T) {
	plain := genFiles(t, mmKdsl, "go,amd64,arm64")
	for _, want := range []string{"TEXT ·sgemm6x16AVX2(SB)", "TEXT ·sgemm14x32AVX512(SB)"} {
		if !strings.Contains(plain["kgen_amd64.s"], want) {
			t.Errorf("without a schedule: no %s", want)
		}
	}
	if !strings.Contains(plain["kgen_amd64.go"], "target.HostGemmBlocks(6, 16, 4)") {
		t.Errorf("without a schedule the avx2 blocks are not probed at init:\n%s", plain["kgen_amd64.go"])
	}
	sched := mmKdsl + "schedule mm {\n    for amd64 { tile i 96 4, j 1024 16, k 192 }\n    for arm64 { tile i 64 4, j 512 8 }\n}\n"
	tiled := genFiles(t, sched, "go,amd64,arm64")
	asm, disp := tiled["kgen_amd64.s"], tiled["kgen_amd64.go"]
	for _, want := range []string{"TEXT ·sgemm4x16AVX2(SB)", "TEXT ·sgemm4x16AVX512(SB)", "TEXT ·sgemm4x16AVX2U(SB)"} {
		if !strings.Contains(asm, want) {
			t.Errorf("for amd64 { tile }: no %s", want)
		}
	}
	if strings.Contains(asm, "sgemm6x16AVX2") || strings.Contains(asm, "sgemm14x32") {
		t.Errorf("for amd64 { tile }: the table's kernels are still generated")
	}
	for _, want := range []string{`Name: "avx2", MR: 4, NR: 16, MC: 96, KC: 192, NC: 1024`, `Name: "avx512", MR: 4, NR: 16, MC: 96, KC: 192, NC: 1024`} {
		if !strings.Contains(disp, want) {
			t.Errorf("kgen_amd64.go does not install %s:\n%s", want, disp)
		}
	}
	if strings.Contains(disp, "HostGemmBlocks") {
		t.Errorf("blocks fixed by the schedule are probed at init")
	}
	if !strings.Contains(tiled["kgen_arm64.s"], "sgemm4x8NEON") || strings.Contains(tiled["kgen_arm64.s"], "sgemm8x12NEON") {
		t.Errorf("for arm64 { tile }: not the planned NEON kernel")
	}
	// the portable code is the same: the target blocks do not change its plan
	if plain["kgen.go"] != tiled["kgen.go"] {
		t.Errorf("a target block changed the portable code")
	}
	code, out, errOut := runKgen("ir", "-target", "amd64", write(t, "mm.kdsl", sched))
	if code != 0 {
		t.Fatal(errOut)
	}
	for _, want := range []string{"plan mm.MR = 3\n", "plan[avx2] mm.MR = 4\n", "plan[avx512] mm.NR = 16\n", "plan[avx2] mm.KC = 192\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("kgen ir -target amd64: no %q in\n%s", want, out)
		}
	}
	code, out, _ = runKgen("ir", "-target", "amd64", write(t, "mm.kdsl", mmKdsl))
	if code != 0 || !strings.Contains(out, "plan[avx512] mm.MR = 14\n") || !strings.Contains(out, "plan[avx2] mm.KC = 256 (static model; host caches at init)\n") {
		t.Errorf("kgen ir -target amd64 without a schedule:\n%s", out)
	}
}

// A target tile the generator cannot build is a clear error, not a panic or a silent other tile.
func TestTargetTileInvalid(t *testing.T) {
	for _, c := range []struct{ sched, want string }{
		{"for amd64 { tile i 96 4, j 1020 12 }", "amd64: slot mm, variant avx512: the planned tile 4x12"},
		{"for amd64 { tile i 96 12, j 1024 32 }", "amd64: slot mm, variant avx2: the planned tile 12x32: gemm kernel sgemm12x32AVX2: tile 12x32 needs 48 accumulators"},
		{"for arm64 { tile i 96 3, j 1024 8 }", "arm64: slot mm, variant neon: the planned tile 3x8"},
	} {
		src := mmKdsl + "schedule mm {\n    " + c.sched + "\n}\n"
		out := filepath.Join(t.TempDir(), "pkg")
		code, _, errOut := runKgen("gen", "-o", out, "-targets", "go,amd64,arm64", write(t, "mm.kdsl", src))
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want %q", c.sched, code, errOut, c.want)
		}
	}
}

// Directives of a target block that the package's one loop nest cannot take are reported, not dropped
// silently.
func TestTargetDirectiveWarning(t *testing.T) {
	src := "kernel ax(x: f32[N], y: inout f32[N]) {\n    y[i] = x[i] + y[i]\n}\nschedule ax {\n    for amd64 { unroll i 4 }\n}\n"
	out := filepath.Join(t.TempDir(), "pkg")
	code, _, errOut := runKgen("gen", "-o", out, "-targets", "go,amd64", write(t, "ax.kdsl", src))
	if code != 0 || !strings.Contains(errOut, "warning: kernel ax: for amd64 { unroll ... } changes kgen ir -target amd64 only") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	// the unrolled loop is not a vector loop for amd64: its backend still implements the portable one
	if !strings.Contains(errOut, "warning: target amd64: the target's loop nest has other slots") {
		t.Errorf("no warning about the slots: %q", errOut)
	}
	if b, err := os.ReadFile(filepath.Join(out, "kgen_amd64.go")); err != nil || !strings.Contains(string(b), "vloop_ax_0 = ") {
		t.Errorf("the portable nest's vector loop has no amd64 routine: %v", err)
	}
	code, _, errOut = runKgen("gen", "-o", out, "-targets", "go,amd64", write(t, "mm.kdsl", mmKdsl+"schedule mm {\n    for amd64 { tile i 96 4, j 1024 16 }\n}\n"))
	if code != 0 || errOut != "" {
		t.Errorf("a GEMM tile warned: exit %d, stderr %q", code, errOut)
	}
}
