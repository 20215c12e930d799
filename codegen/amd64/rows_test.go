package amd64

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestRowsAsmAVX512 checks the AVX-512 rows kernels: zmm FMAs and loads, the last n%lanes columns under
// the opmask K1 (zero-masking loads of B and C, masked stores of C) instead of the scalar VMOVSS/VMOVSD
// loop of the AVX2 kernels, and no ymm register.
func TestRowsAsmAVX512(t *testing.T) {
	ks := []RowsKernel{NewRowsKernelISA(F32, AVX512), NewRowsKernelISA(F64, AVX512)}
	asm, _, err := GenerateAll("p", nil, nil, []TransposeKernel{NewTransposeKernel(F32)}, ks)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, s string }{{"sgemmRowsAVX512", "PS"}, {"dgemmRowsAVX512", "PD"}} {
		body := funcText(t, string(asm), c.name)
		for _, re := range []string{
			`VFMADD231` + c.s + `\s+Z\d+, Z\d+, Z\d+`, `KMOVW\s+R15, K1`,
			`VMOVU` + c.s + `\.Z\s+\S+, K1, Z\d+`, `VMOVU` + c.s + `\s+Z\d+, K1, \S+`,
		} {
			if !regexp.MustCompile(re).MatchString(body) {
				t.Errorf("%s: no match for %q", c.name, re)
			}
		}
		if regexp.MustCompile(`\bY\d+\b|VMOVS[SD]`).MatchString(body) || strings.Contains(body, "CALL") {
			t.Errorf("%s uses a ymm register, scalar moves or a call:\n%s", c.name, body)
		}
	}
}

// TestRowsPrefetch: the m = 3 and m = 4 paths read B in groups of two rows, and their vector loops
// prefetch the next group's two rows at the column they read (R13, R14 = the group's rows + 2·ldb,
// AX the column's byte offset); the m = 2 path (groups of four, no register left) does not prefetch,
// nor does m = 1, whose loop reads eight rows of B, by FMAs from memory.
func TestRowsPrefetch(t *testing.T) {
	ks := []RowsKernel{NewRowsKernelISA(F32, AVX2), NewRowsKernelISA(F64, AVX2), NewRowsKernelISA(F32, AVX512), NewRowsKernelISA(F64, AVX512)}
	asm, _, err := GenerateAll("p", nil, nil, []TransposeKernel{NewTransposeKernel(F32)}, ks)
	if err != nil {
		t.Fatal(err)
	}
	pf := regexp.MustCompile(`(?m)^\s*PREFETCHT0\s+\((R13|R14)\)\(AX\*1\)$`)
	fmaMem := regexp.MustCompile(`(?m)^\s*VFMADD231P[SD]\s+\(\w+\)\(AX\*1\), [XYZ]\d+, [XYZ]12$`)
	for _, k := range ks {
		body := funcText(t, string(asm), k.Name)
		for m := 1; m <= RowsMax; m++ {
			loop := rowsSection(body, fmt.Sprintf("%s_m%d_g_v:", k.Name, m))
			if !strings.Contains(loop, "FMADD231") {
				t.Fatalf("%s, m = %d: no vector loop %s_m%d_g_v with FMAs", k.Name, m, k.Name, m)
			}
			want := 0
			if m > 2 {
				want = 2
			}
			if got := len(pf.FindAllString(loop, -1)); got != want {
				t.Errorf("%s, m = %d: %d prefetches of the next rows of B in the vector loop, want %d", k.Name, m, got, want)
			}
			if got, want := len(fmaMem.FindAllString(loop, -1)), map[bool]int{true: 8, false: 0}[m == 1]; got != want {
				t.Errorf("%s, m = %d: %d FMAs reading B from memory in the vector loop, want %d", k.Name, m, got, want)
			}
		}
	}
}

// rowsSection returns the text of body from label to the next label.
func rowsSection(body, label string) string {
	i := strings.Index(body, label)
	if i < 0 {
		return ""
	}
	rest := body[i+len(label):]
	if j := regexp.MustCompile(`(?m)^\w+:`).FindStringIndex(rest); j != nil {
		rest = rest[:j[0]]
	}
	return rest
}
