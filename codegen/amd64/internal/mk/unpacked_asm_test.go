package mk

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/kgen-dev/kgen/codegen/amd64"
)

// TestAsmGemmKernelsU checks the k loops of the unpacked kernels in the
// committed assembly: register FMAs on Y/Z only, NR/VL B loads per step
// (unmasked on the full path; the last one masked on the edge paths, with
// vectors past it neither loaded nor multiplied), MR broadcasts of A per step
// from row pointers (AVX-512 edge loops: m broadcasts, one loop per m), B prefetches, and the common rules (no CALL, no scalar
// FMA, VZEROUPPER before RET).
func TestAsmGemmKernelsU(t *testing.T) {
	funcs := asmFunctions(t)
	for _, k := range amd64.DefaultKernelsU() {
		t.Run(k.Name, func(t *testing.T) {
			body, ok := funcs[k.Name]
			if !ok {
				t.Fatalf("no TEXT ·%s in mk_amd64.s", k.Name)
			}
			v, p := "Y", "S"
			if k.ISA == amd64.AVX512 {
				v = "Z"
			}
			if k.Elem == amd64.F64 {
				p = "D"
			}
			vl := amd64.VecLen(k.Elem, k.ISA)
			nv := k.NR / vl
			u := k.KUnroll

			fmaRE := regexp.MustCompile(`^VFMADD231P` + p + `\s+` + v + `\d+, ` + v + `\d+, ` + v + `\d+$`)
			anyFMA := regexp.MustCompile(`^VFMADD`)
			loadRE := regexp.MustCompile(`^VMOVUP` + p + `\s+\d*\(DI\), ` + v + `\d+$`)
			maskedRE := regexp.MustCompile(`^VMASKMOVP` + p + `\s+\d*\(DI\), Y\d+, Y\d+$`)
			if k.ISA == amd64.AVX512 {
				maskedRE = regexp.MustCompile(`^VMOVUP` + p + `\.Z\s+\d*\(DI\), K[1-7], Z\d+$`)
			}
			bcastRE := regexp.MustCompile(`^VBROADCASTS` + p + `\s+\d*\(R\d+\)(\((R\d+|AX)\*[124]\))?, ` + v + `\d+$`)
			pfRE := regexp.MustCompile(`^PREFETCHT0\s+\d*\(DI\)\(R14\*1\)$`) // B row PrefetchB rows ahead (R14 = distance in bytes)

			type want struct{ steps, fmas, loads, masked, bcasts int }
			check := func(label string, w want) {
				t.Helper()
				sec := section(body, label)
				if sec == nil {
					t.Errorf("no loop %s", label)
					return
				}
				if got := countMatch(sec, fmaRE); got != w.fmas {
					t.Errorf("%s: %d register VFMADD231P%s on %s registers, want %d", label, got, p, v, w.fmas)
				}
				if got := countMatch(sec, anyFMA); got != w.fmas {
					t.Errorf("%s: %d FMAs in all, want %d", label, got, w.fmas)
				}
				if got := countMatch(sec, loadRE); got != w.loads {
					t.Errorf("%s: %d unmasked B loads, want %d", label, got, w.loads)
				}
				if got := countMatch(sec, maskedRE); got != w.masked {
					t.Errorf("%s: %d masked B loads, want %d", label, got, w.masked)
				}
				if got := countMatch(sec, bcastRE); got != w.bcasts {
					t.Errorf("%s: %d broadcasts of A, want %d", label, got, w.bcasts)
				}
				if got := countMatch(sec, pfRE); got < w.steps {
					t.Errorf("%s: %d B prefetches, want >= %d", label, got, w.steps)
				}
			}
			full := want{u, u * k.MR * nv, u * nv, 0, u * k.MR}
			check("full_acs1", full)
			check("full_gen", full)
			check("full_rem1", want{1, k.MR * nv, nv, 0, k.MR})
			if k.MR <= 6 {
				for q := 0; q < nv; q++ {
					e := want{u, u * k.MR * (q + 1), u * q, u, u * k.MR}
					check(fmt.Sprintf("edge%d_gen", q), e)
					check(fmt.Sprintf("edge%d_rem1", q), want{1, k.MR * (q + 1), q, 1, k.MR})
				}
			} else {
				// Index mode: one edge loop per row count m, reading and multiplying rows i < m only.
				for m := 1; m <= k.MR; m++ {
					for q := 0; q < nv; q++ {
						e := want{u, u * m * (q + 1), u * q, u, u * m}
						check(fmt.Sprintf("m%d_edge%d_gen", m, q), e)
						check(fmt.Sprintf("m%d_edge%d_rem1", m, q), want{1, m * (q + 1), q, 1, m})
					}
				}
			}
			// The acs == 1 loop addresses A by displacements: no per-step A
			// pointer update, one ADDQ $u*esz per iteration.
			acs1 := section(body, "full_acs1")
			esz := 4
			if k.Elem == amd64.F64 {
				esz = 8
			}
			if got := countMatch(acs1, regexp.MustCompile(fmt.Sprintf(`^ADDQ\s+\$0x%08x, `, u*esz))); got == 0 {
				t.Errorf("full_acs1: no ADDQ $%d advancing A", u*esz)
			}
			if got := countMatch(acs1, regexp.MustCompile(`^ADDQ\s+BX, `)); got != 0 {
				t.Errorf("full_acs1: %d per-step ADDQ BX (acs) updates, want 0", got)
			}
			checkCommon(t, body)
			maskedStore := regexp.MustCompile(`^VMASKMOVP` + p + `\s+Y\d+, Y\d+, \d*\(R13\)$`)
			if k.ISA == amd64.AVX512 {
				maskedStore = regexp.MustCompile(`^VMOVUP` + p + `\s+Z\d+, K[1-7], \d*\(R13\)$`)
			}
			if got := countMatch(body, maskedStore); got != k.MR*nv {
				t.Errorf("%d masked stores of C, want %d", got, k.MR*nv)
			}
		})
	}
}

// TestGenerateMixedU checks that Generate accepts packed and unpacked kernels
// mixed, deterministically, that Validate rejects bad unpacked kernels, and
// (unless -short) that non-default unpacked shapes (every row-addressing mode
// on both ISAs, KUnroll 1, other prefetch distances) assemble and pass go vet.
func TestGenerateMixedU(t *testing.T) {
	mixed := []amd64.GemmKernel{
		amd64.NewGemmKernelU(amd64.F32, amd64.AVX2),
		amd64.NewGemmKernel(amd64.F32, amd64.AVX2),
		amd64.NewGemmKernelU(amd64.F64, amd64.AVX512),
		amd64.NewGemmKernel(amd64.F64, amd64.AVX512),
	}
	asm1, stubs1, err := amd64.Generate("p", mixed)
	if err != nil {
		t.Fatal(err)
	}
	asm2, stubs2, err := amd64.Generate("p", mixed)
	if err != nil {
		t.Fatal(err)
	}
	if string(asm1) != string(asm2) || string(stubs1) != string(stubs2) {
		t.Fatal("Generate is not deterministic on mixed kernels")
	}
	for _, k := range mixed {
		if !regexp.MustCompile(`(?m)^TEXT ·` + k.Name + `\(SB\)`).Match(asm1) {
			t.Errorf("no TEXT ·%s", k.Name)
		}
	}
	if !regexp.MustCompile(`func sgemm6x16AVX2U\(kc int, a \*float32, ars int, acs int, b \*float32, ldb int, c \*float32, ldc int, m int, n int, alpha float32, beta float32, bias \*float32, ep int\)`).Match(stubs1) {
		t.Errorf("unexpected unpacked signature in stubs:\n%s", stubs1)
	}

	bad := map[string]amd64.GemmKernel{}
	k := amd64.NewGemmKernelU(amd64.F32, amd64.AVX2)
	k.PrefetchB = 5000
	bad["PrefetchB 5000"] = k
	k = amd64.NewGemmKernelU(amd64.F64, amd64.AVX512)
	k.MR, k.NR = 15, 8
	bad["MR 15"] = k
	for name, k := range bad {
		if err := k.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, k)
		}
	}

	var odd []amd64.GemmKernel
	add := func(name, elem, isa string, mr, nr, u, pfb int) {
		k := amd64.NewGemmKernelU(elem, isa)
		k.Name, k.MR, k.NR, k.KUnroll, k.PrefetchB = name, mr, nr, u, pfb
		if err := k.Validate(); err != nil {
			t.Fatal(err)
		}
		odd = append(odd, k)
	}
	add("uAVX2x12x4", amd64.F64, amd64.AVX2, 12, 4, 2, 2)      // index + table modes on AVX2, nv = 1
	add("uAVX2x7x8", amd64.F32, amd64.AVX2, 7, 8, 1, -1)       // 7 rows (no second base), no unroll, no prefetch
	add("uAVX2x3x24", amd64.F32, amd64.AVX2, 3, 24, 8, 1)      // nv = 3
	add("uAVX512x6x32", amd64.F32, amd64.AVX512, 6, 32, 4, 4)  // register rows on AVX-512
	add("uAVX512x8x48", amd64.F32, amd64.AVX512, 8, 48, 2, 0)  // nv = 3, second base with one row
	add("uAVX512x14x8", amd64.F64, amd64.AVX512, 14, 8, 16, 8) // nv = 1, unroll 16
	asm, stubs, err := amd64.Generate("odd", append(odd, amd64.NewGemmKernel(amd64.F32, amd64.AVX2)))
	if err != nil {
		t.Fatal(err)
	}
	if testing.Short() {
		return
	}
	dir := t.TempDir()
	files := map[string][]byte{
		"go.mod":        []byte("module odd\n\ngo 1.26\n"),
		"odd_amd64.s":   asm,
		"stub_amd64.go": stubs,
		"doc.go":        []byte("package odd\n"),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"build", "."}, {"vet", "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOARCH=amd64", "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s of the generated odd shapes: %v\n%s", args[0], err, out)
		}
	}
}
