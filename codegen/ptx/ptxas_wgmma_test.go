package ptx

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// ptxasSupports90a reports whether the ptxas at path is CUDA 12 or later (PTX ISA 8.0, sm_90a: wgmma);
// an older one makes the test skip, or fail under KGEN_REQUIRE_TOOLS=1 (scripts/setup.sh fetches 12.4).
func ptxasSupports90a(t *testing.T, path string) {
	t.Helper()
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", path, err, out)
	}
	m := regexp.MustCompile(`release (\d+)\.(\d+)`).FindStringSubmatch(string(out))
	if m != nil {
		if major, _ := strconv.Atoi(m[1]); major >= 12 {
			return
		}
	}
	msg := "ptxas " + strings.TrimSpace(string(out)) + " predates CUDA 12 (no PTX 8.0 / sm_90a); run scripts/setup.sh to fetch 12.4"
	if os.Getenv("KGEN_REQUIRE_TOOLS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// TestWGMMASass assembles the sm_90a module of kernels.kdsl and passes/testdata/mma.kdsl for sm_90a and
// checks the machine code of the 16-bit GEMMs (with epilogues up to bias+GELU): each issues HGMMA (wgmma) — four HGMMA.64x64x16.F32 with the transposed-B descriptor per K
// tile —, spills nothing, and ptxas does not warn that it serialized the wgmma pipeline (C7515).
func TestWGMMASass(t *testing.T) {
	ptxas := ptxasPath(t)
	ptxasSupports90a(t, ptxas)
	cuobjdump := toolPath(t, "cuobjdump", "KGEN_CUOBJDUMP")
	stats, funcs := sm90aSass(t, ptxas, cuobjdump, gemmModule(t, "sm_90a").Print())
	for _, name := range []string{"hgemm_0", "bgemm_0", "bgemm_bf16_0", "bgemm_tt_0", "hgemm_bias_gelu_0", "bgemm_scale_residual_0"} {
		code, ok := funcs[name]
		if !ok {
			t.Errorf("cuobjdump shows no function %s", name)
			continue
		}
		if n := strings.Count(code, "HGMMA.64x64x16.F32"); n != 4 || !strings.Contains(code, "tnspB") {
			t.Errorf("%s: %d HGMMA.64x64x16.F32 (want 4, with tnspB), wgmma not selected:\n%s", name, n, code)
		}
		if !strings.Contains(code, "WARPGROUP.ARRIVE") || !strings.Contains(code, "WARPGROUP.DEPBAR") {
			t.Errorf("%s: no WARPGROUP.ARRIVE / WARPGROUP.DEPBAR around the HGMMAs", name)
		}
		if strings.Contains(code, "HMMA") {
			t.Errorf("%s: still issues mma.sync (HMMA) besides wgmma", name)
		}
		s := stats[name]
		if s.SpillStores != 0 || s.SpillLoads != 0 {
			t.Errorf("%s spills (%d bytes stored, %d loaded)", name, s.SpillStores, s.SpillLoads)
		}
		t.Logf("%s: 4 HGMMA.64x64x16.F32 per K tile, %d registers, %d bytes smem, 0 spills", name, s.Regs, s.Smem)
	}
}

// sm90aSass assembles text for sm_90a with ptxas -v and returns the per-entry statistics and
// cuobjdump -sass's listing split by function; a ptxas warning that it serialized a wgmma pipeline
// (C7515) is an error.
func sm90aSass(t *testing.T, ptxas, cuobjdump, text string) (map[string]ptxasStats, map[string]string) {
	t.Helper()
	return archSass(t, ptxas, cuobjdump, "sm_90a", text)
}

// archSass is sm90aSass for any architecture ptxas accepts.
func archSass(t *testing.T, ptxas, cuobjdump, arch, text string) (map[string]ptxasStats, map[string]string) {
	t.Helper()
	stats, funcs, warn, err := sassOf(ptxas, cuobjdump, arch, text)
	if err != nil {
		t.Fatal(err)
	}
	if warn != "" {
		t.Errorf("ptxas serialized a wgmma pipeline:\n%s", warn)
	}
	return stats, funcs
}

// sassOf assembles text for arch with ptxas -v and returns the per-entry statistics, cuobjdump
// -sass's listing split by function, and ptxas's output when it warns that it serialized a wgmma
// pipeline (C7515). It may run on several goroutines.
func sassOf(ptxas, cuobjdump, arch, text string) (map[string]ptxasStats, map[string]string, string, error) {
	dir, err := os.MkdirTemp("", "kgen-sass-")
	if err != nil {
		return nil, nil, "", err
	}
	defer os.RemoveAll(dir)
	src, bin := filepath.Join(dir, "k.ptx"), filepath.Join(dir, "k.cubin")
	if err := os.WriteFile(src, []byte(text), 0o644); err != nil {
		return nil, nil, "", err
	}
	out, err := exec.Command(ptxas, "-arch="+arch, "-v", "-o", bin, src).CombinedOutput()
	if err != nil {
		return nil, nil, "", fmt.Errorf("ptxas -arch=%s: %v\n%s", arch, err, out)
	}
	warn := ""
	if strings.Contains(string(out), "C7515") || strings.Contains(string(out), "serialized") {
		warn = string(out)
	}
	sass, err := exec.Command(cuobjdump, "-sass", bin).CombinedOutput()
	if err != nil {
		return nil, nil, "", fmt.Errorf("cuobjdump -sass: %v\n%s", err, sass)
	}
	// Split the listing into functions ("Function : name").
	funcs := map[string]string{}
	cur := ""
	for _, line := range strings.Split(string(sass), "\n") {
		if i := strings.Index(line, "Function : "); i >= 0 {
			cur = strings.TrimSpace(line[i+len("Function : "):])
			continue
		}
		funcs[cur] += line + "\n"
	}
	return parsePtxasV(string(out)), funcs, warn, nil
}

// TestSM8xSass assembles the GEMMs of the sm_80 module of kernels.kdsl and passes/testdata/mma.kdsl
// for sm_80 and sm_90 and reads the machine code: the 16-bit GEMMs (epilogues and narrowing stores
// included) run on tensor cores — HMMA.16816.F32 fed by LDSM (ldmatrix) from shared tiles that LDGSTS
// (cp.async) fills —, the `precision tf32` GEMM on HMMA.1688.F32.TF32, and the f32 GEMMs stay exact:
// FFMA and no HMMA.
func TestSM8xSass(t *testing.T) {
	ptxas := ptxasPath(t)
	cuobjdump := toolPath(t, "cuobjdump", "KGEN_CUOBJDUMP")
	st := SubTargets["sm_80"]
	want := map[string][]string{}
	for _, n := range []string{"hgemm", "bgemm", "bgemm_bf16", "hlinear_gelu", "hgemm_bias_gelu", "bgemm_scale_residual"} {
		want[n+"_0"] = []string{"HMMA.16816.F32", "LDSM", "LDGSTS"}
	}
	// bgemm_tt (A stored K×M, B N×K): its stages keep the global orientation (passes.SM80TLayout),
	// filled by 16-byte cp.async chunks along M and K, and read with ldmatrix.x4.trans for A
	// (LDSM.16.MT88.4) and plain ldmatrix.x2 for B (LDSM.16.M88.2) — the other way round from hgemm
	want["bgemm_tt_0"] = []string{"HMMA.16816.F32.BF16", "LDSM.16.MT88.4", "LDSM.16.M88.2", "LDGSTS.E.BYPASS.128"}
	want["sgemm_tf32_0"] = []string{"HMMA.1688.F32.TF32"}
	f32 := []string{"sgemm_0", "sgemm_nt_0", "sgemm_tt_0", "linear_gelu_0", "linear_residual_0", "gemm_sigmoid_0", "gemm_bias_relu_0", "sgemm_sigmoid_0"}
	// a module of these GEMMs only (the rest of the module is TestPtxasLibrary's), assembled for the
	// architectures concurrently (ptxas is single-threaded)
	mod := gemmModule(t, "sm_80")
	mod.Entries = slices.DeleteFunc(mod.Entries, func(e *Entry) bool { return want[e.Name] == nil && !slices.Contains(f32, e.Name) })
	if len(mod.Entries) != len(want)+len(f32) {
		t.Fatalf("%d of the %d GEMM entries", len(mod.Entries), len(want)+len(f32))
	}
	text := mod.Print()
	// the oldest architecture and Hopper (where gpu-check.sh runs this module with KGEN_PTX_TARGET);
	// TestPtxasLibrary assembles every entry for all of st.Archs
	archs := []string{"sm_80", "sm_90"}
	if !slices.Contains(st.Archs, "sm_80") || !slices.Contains(st.Archs, "sm_90") {
		t.Fatalf("sm_80 claims %v", st.Archs)
	}
	funcs := make([]map[string]string, len(archs))
	errs := make([]error, len(archs))
	var wg sync.WaitGroup
	for i, arch := range archs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, funcs[i], _, errs[i] = sassOf(ptxas, cuobjdump, arch, text)
		}()
	}
	wg.Wait()
	for i, arch := range archs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		for name, insns := range want {
			code, ok := funcs[i][name]
			if !ok {
				t.Errorf("%s: cuobjdump shows no function %s", arch, name)
			}
			for _, in := range insns {
				if !strings.Contains(code, in) {
					t.Errorf("%s: %s has no %s", arch, name, in)
				}
			}
		}
		for _, name := range f32 {
			code, ok := funcs[i][name]
			if !ok || strings.Contains(code, "HMMA") || !strings.Contains(code, "FFMA") {
				t.Errorf("%s: f32 GEMM %s (found %v) is not an exact FFMA tile", arch, name, ok)
			}
		}
		t.Logf("%s: %d 16-bit GEMMs on HMMA.16816 with LDSM and LDGSTS, tf32 on HMMA.1688, %d f32 GEMMs on FFMA only", arch, len(want)-1, len(f32))
	}
}

// gemmModule is sub-target sub's module of every kernel of kernels.kdsl and passes/testdata/mma.kdsl
// (GEMMs with fused epilogues, precision tf32), all of which must lower.
func gemmModule(t *testing.T, sub string) *Module {
	t.Helper()
	fs := compileFile(t, "../../kernels.kdsl", "ptx:"+sub)
	fs = append(fs, compileFile(t, "../../passes/testdata/mma.kdsl", "ptx:"+sub)...)
	mod, _, unsup := Build(fs, SubTargets[sub], "kernels.kdsl")
	if len(unsup) != 0 {
		t.Fatalf("unsupported: %v", unsup)
	}
	return mod
}
