package arm64

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestPackAsm checks the NEON packing routines: packD transposes its blocks with VTRN1/VTRN2 (.S4 then
// .D2 for f32, .D2 for f64) on whole-Q loads and stores, packPB copies with 32-byte VLD1.P/VST1.P
// pairs; every instruction is native (no WORD), there is no call, and the output is deterministic. It
// logs the static figures quoted in docs/PERF.md.
func TestPackAsm(t *testing.T) {
	var ks []PackKernel
	for _, e := range []string{"f32", "f64"} {
		ks = append(ks, NewPackKernel(e, true), NewPackKernel(e, false))
	}
	asm, stubs, err := GenerateAll("p", nil, nil, nil, nil, ks...)
	if err != nil {
		t.Fatal(err)
	}
	asm2, stubs2, err := GenerateAll("p", nil, nil, nil, nil, ks...)
	if err != nil || !bytes.Equal(asm, asm2) || !bytes.Equal(stubs, stubs2) {
		t.Fatalf("pack generation is not deterministic (%v)", err)
	}
	text := string(asm)
	want := map[string]map[string]int{
		"packDf32NEON": {
			`VTRN1\s+V\d+\.S4, V\d+\.S4, V\d+\.S4`: 2, `VTRN2\s+V\d+\.S4, V\d+\.S4, V\d+\.S4`: 2,
			`VTRN1\s+V\d+\.D2, V\d+\.D2, V\d+\.D2`: 2, `VTRN2\s+V\d+\.D2, V\d+\.D2, V\d+\.D2`: 2,
			`VLD1\.P\s+16\(R\d+\), \[V\d+\.S4\]`: 5, `VST1\s+\[V\d+\.S4\], \(R\d+\)`: 5,
		},
		"packDf64NEON": {
			`VTRN1\s+V\d+\.D2, V\d+\.D2, V\d+\.D2`: 1, `VTRN2\s+V\d+\.D2, V\d+\.D2, V\d+\.D2`: 1,
			`VLD1\.P\s+16\(R\d+\), \[V\d+\.D2\]`: 3, `VST1\s+\[V\d+\.D2\], \(R\d+\)`: 3,
		},
		"packPBf32NEON": {`VLD1\.P\s+32\(R\d+\), \[V0\.S4, V1\.S4\]`: 2, `UDIV\s`: 1},
		"packPBf64NEON": {`VLD1\.P\s+32\(R\d+\), \[V0\.D2, V1\.D2\]`: 2, `UDIV\s`: 1},
	}
	for _, k := range ks {
		body := textBlock(t, text, k.Name)
		for re, n := range want[k.Name] {
			if got := len(regexp.MustCompile(re).FindAllString(body, -1)); got < n {
				t.Errorf("%s: %d matches of %s, want at least %d\n%s", k.Name, got, re, n, body)
			}
		}
		if strings.Contains(body, "WORD") || regexp.MustCompile(`\s(BL|CALL)\s`).MatchString(body) {
			t.Errorf("%s: WORD or call in\n%s", k.Name, body)
		}
		if !strings.Contains(string(stubs), "func "+k.Name+k.Signature()) {
			t.Errorf("stub of %s missing:\n%s", k.Name, stubs)
		}
		esz := map[string]int{"f32": 4, "f64": 8}[k.Elem]
		switch {
		case k.D:
			v := 16 / esz
			loop := loopBody(t, body, k.Name+"_block")
			t.Logf("%s: %d instructions per %d×%d block: %.2f per element", k.Name, len(loop), v, v, float64(len(loop))/float64(v*v))
		default:
			loop := loopBody(t, body, k.Name+"_f32")
			t.Logf("%s: %d instructions per 32 bytes: %.2f per element", k.Name, len(loop), float64(len(loop))/float64(32/esz))
		}
	}
	if _, err := buildPack(PackKernel{Name: "x", Elem: "f16"}); err == nil {
		t.Error("pack of f16 accepted")
	}
}
