package amd64

import (
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
