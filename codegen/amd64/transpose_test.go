package amd64

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// funcText returns the assembly of one TEXT block of asm.
func funcText(t *testing.T, asm, name string) string {
	t.Helper()
	i := strings.Index(asm, "TEXT ·"+name+"(SB)")
	if i < 0 {
		t.Fatalf("no TEXT block for %s", name)
	}
	body := asm[i:]
	if j := strings.Index(body[1:], "\nTEXT "); j >= 0 {
		body = body[:j+1]
	}
	return body
}

// TestTransposeAsm checks the emitted transpose routines: the in-register transpose uses the unpack,
// shuffle and lane-permute instructions on Y registers, the stores are whole-vector runs, there is no
// CALL, and the output is deterministic.
func TestTransposeAsm(t *testing.T) {
	ks := []TransposeKernel{NewTransposeKernel(F32), NewTransposeKernel(F64)}
	asm, stubs, err := GenerateAll("p", nil, nil, ks, nil)
	if err != nil {
		t.Fatal(err)
	}
	asm2, stubs2, err := GenerateAll("p", nil, nil, ks, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(asm, asm2) || !bytes.Equal(stubs, stubs2) {
		t.Fatal("transpose generation is not deterministic")
	}
	count := func(body, re string) int { return len(regexp.MustCompile(re).FindAllString(body, -1)) }
	for _, c := range []struct {
		name string
		want map[string]int // instruction regexp -> minimum count
	}{
		{"transposeF32AVX2", map[string]int{
			`VUNPCKLPS\s+Y\d+, Y\d+, Y\d+`: 4, `VUNPCKHPS\s+Y\d+, Y\d+, Y\d+`: 4,
			`VSHUFPS\s+\$0x44, Y\d+, Y\d+, Y\d+`: 2, `VSHUFPS\s+\$0xee, Y\d+, Y\d+, Y\d+`: 2,
			`VPERM2F128\s+\$0x20, Y\d+, Y\d+, Y\d+`: 4, `VPERM2F128\s+\$0x31, Y\d+, Y\d+, Y\d+`: 4,
			`VMOVUPS\s+\(.*\), Y\d+`: 8, `VMOVUPS\s+Y\d+, \(`: 8, `VINSERTPS`: 6, `VZEROUPPER`: 1,
		}},
		{"transposeF64AVX2", map[string]int{
			`VUNPCKLPD\s+Y\d+, Y\d+, Y\d+`: 2, `VUNPCKHPD\s+Y\d+, Y\d+, Y\d+`: 2,
			`VPERM2F128\s+\$0x20, Y\d+, Y\d+, Y\d+`: 2, `VPERM2F128\s+\$0x31, Y\d+, Y\d+, Y\d+`: 2,
			`VMOVUPD\s+\(.*\), Y\d+`: 4, `VMOVUPD\s+Y\d+, \(`: 4, `VMOVHPD`: 2, `VZEROUPPER`: 1,
		}},
	} {
		body := funcText(t, string(asm), c.name)
		for re, n := range c.want {
			if got := count(body, re); got < n {
				t.Errorf("%s: %d matches of %s, want at least %d\n%s", c.name, got, re, n, body)
			}
		}
		if strings.Contains(body, "CALL") {
			t.Errorf("%s calls a function", c.name)
		}
		if !strings.Contains(string(stubs), "func "+c.name+"(rows int, cols int, src *") {
			t.Errorf("stub of %s missing:\n%s", c.name, stubs)
		}
	}
	if _, _, err := GenerateAll("p", nil, nil, []TransposeKernel{{Name: "x", Elem: "f16"}}, nil); err == nil {
		t.Error("an f16 transpose kernel was accepted")
	}
}

// TestTransposeAsmAVX512 checks the AVX-512 transpose routines: zmm only (no ymm register), the
// in-lane unpack/shuffle steps and two rounds of VSHUFF32X4, full blocks stored unmasked, and edge
// blocks loaded under K1 (zero-masking) and stored under K2.
func TestTransposeAsmAVX512(t *testing.T) {
	ks := []TransposeKernel{NewTransposeKernelISA(F32, AVX512), NewTransposeKernelISA(F64, AVX512)}
	asm, stubs, err := GenerateAll("p", nil, nil, ks, nil)
	if err != nil {
		t.Fatal(err)
	}
	count := func(body, re string) int { return len(regexp.MustCompile(re).FindAllString(body, -1)) }
	for _, c := range []struct {
		name string
		want map[string]int // instruction regexp -> exact count (the full and the edge block each transpose)
	}{
		{"transposeF32AVX512", map[string]int{
			`VUNPCKLPS\s+Z\d+, Z\d+, Z\d+`: 16, `VUNPCKHPS\s+Z\d+, Z\d+, Z\d+`: 16,
			`VSHUFPS\s+\$0x44, Z\d+, Z\d+, Z\d+`: 16, `VSHUFPS\s+\$0xee, Z\d+, Z\d+, Z\d+`: 16,
			`VSHUFF32X4\s+\$0x(44|ee|88|dd), Z\d+, Z\d+, Z\d+`: 64,
			`VMOVUPS\s+\S+, Z\d+`:                              16, `VMOVUPS\s+Z\d+, \(`: 16,
			`VMOVUPS\.Z\s+\S+, K1, Z\d+`: 16, `VMOVUPS\s+Z\d+, K2, \(`: 16, `KMOVW\s+DX, K[12]`: 2,
		}},
		{"transposeF64AVX512", map[string]int{
			`VUNPCKLPD\s+Z\d+, Z\d+, Z\d+`: 8, `VUNPCKHPD\s+Z\d+, Z\d+, Z\d+`: 8,
			`VSHUFF32X4\s+\$0x(44|ee|88|dd), Z\d+, Z\d+, Z\d+`: 32,
			`VMOVUPD\s+\S+, Z\d+`:                              8, `VMOVUPD\s+Z\d+, \(`: 8,
			`VMOVUPD\.Z\s+\S+, K1, Z\d+`: 8, `VMOVUPD\s+Z\d+, K2, \(`: 8, `KMOVW\s+DX, K[12]`: 2,
		}},
	} {
		body := funcText(t, string(asm), c.name)
		for re, n := range c.want {
			if got := count(body, re); got != n {
				t.Errorf("%s: %d matches of %s, want %d\n%s", c.name, got, re, n, body)
			}
		}
		if regexp.MustCompile(`\bY\d+\b`).MatchString(body) || strings.Contains(body, "CALL") {
			t.Errorf("%s uses a ymm register or calls a function", c.name)
		}
		if !strings.Contains(string(stubs), "func "+c.name+"(rows int, cols int, src *") {
			t.Errorf("stub of %s missing:\n%s", c.name, stubs)
		}
	}
	if _, _, err := GenerateAll("p", nil, nil, []TransposeKernel{{Name: "x", Elem: F32, ISA: "sse"}}, nil); err == nil {
		t.Error("a transpose kernel for an unknown ISA was accepted")
	}
}
