package arm64

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestTransposeAsm checks the emitted NEON transpose routines: the in-register transpose is VTRN1/VTRN2
// (.S4 then .D2 for f32, .D2 for f64), loads and stores are whole Q registers, every instruction is
// native (no WORD), there is no call, and the output is deterministic.
func TestTransposeAsm(t *testing.T) {
	ks := []TransposeKernel{NewTransposeKernel("f32"), NewTransposeKernel("f64")}
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
	text := string(asm)
	for _, c := range []struct {
		name string
		want map[string]int
	}{
		{"transposeF32NEON", map[string]int{
			`VTRN1\s+V\d+\.S4, V\d+\.S4, V\d+\.S4`: 2, `VTRN2\s+V\d+\.S4, V\d+\.S4, V\d+\.S4`: 2,
			`VTRN1\s+V\d+\.D2, V\d+\.D2, V\d+\.D2`: 2, `VTRN2\s+V\d+\.D2, V\d+\.D2, V\d+\.D2`: 2,
			`VLD1\.P\s+16\(R\d+\), \[V\d+\.S4\]`: 4, `VST1\s+\[V\d+\.S4\], \(R\d+\)`: 5,
		}},
		{"transposeF64NEON", map[string]int{
			`VTRN1\s+V\d+\.D2, V\d+\.D2, V\d+\.D2`: 1, `VTRN2\s+V\d+\.D2, V\d+\.D2, V\d+\.D2`: 1,
			`VLD1\.P\s+16\(R\d+\), \[V\d+\.D2\]`: 2, `VST1\s+\[V\d+\.D2\], \(R\d+\)`: 3,
		}},
	} {
		i := strings.Index(text, "TEXT ·"+c.name+"(SB)")
		if i < 0 {
			t.Fatalf("no TEXT block for %s", c.name)
		}
		body := text[i:]
		if j := strings.Index(body[1:], "\nTEXT "); j >= 0 {
			body = body[:j+1]
		}
		for re, n := range c.want {
			if got := len(regexp.MustCompile(re).FindAllString(body, -1)); got < n {
				t.Errorf("%s: %d matches of %s, want at least %d\n%s", c.name, got, re, n, body)
			}
		}
		if strings.Contains(body, "WORD") || regexp.MustCompile(`\s(BL|CALL)\s`).MatchString(body) {
			t.Errorf("%s: WORD or call in\n%s", c.name, body)
		}
		if !strings.Contains(string(stubs), "func "+c.name+"(rows, cols int, src *") {
			t.Errorf("stub of %s missing:\n%s", c.name, stubs)
		}
	}
	var b Builder
	b.VTRN1(V(1).S4(), V(2).D2(), V(3).S4())
	if b.Err() == nil {
		t.Error("VTRN1 with mixed arrangements accepted")
	}
}
