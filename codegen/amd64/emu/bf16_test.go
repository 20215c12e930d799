package emu

import (
	"strings"
	"testing"
)

// TestDecodeBytes: the EVEX lines kgen's bf16 generator writes decode to the
// operands llvm-mc gives for them (codegen/amd64 checks the generator's bytes
// against llvm-mc), and other byte sequences are refused.
func TestDecodeBytes(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"BYTE $0x62; BYTE $0xf2; BYTE $0x6e; BYTE $0x48; BYTE $0x52; BYTE $0xe0", "VDPBF16PS Z0, Z2, Z4"},
		{"BYTE $0x62; BYTE $0xf2; BYTE $0x66; BYTE $0x48; BYTE $0x52; BYTE $0xf0", "VDPBF16PS Z0, Z3, Z6"},
		// vdpbf16ps zmm31, zmm17, zmm25 (AT&T: %zmm25, %zmm17, %zmm31): 62 02 76 40 52 f9
		{"BYTE $0x62; BYTE $0x02; BYTE $0x76; BYTE $0x40; BYTE $0x52; BYTE $0xf9", "VDPBF16PS Z25, Z17, Z31"},
	} {
		got, err := decodeBytes(c.line)
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.line, got, err, c.want)
		}
	}
	for _, bad := range []string{
		"BYTE $0x62; BYTE $0xf2; BYTE $0x6e; BYTE $0x49; BYTE $0x52; BYTE $0xe0", // writemask K1
		"BYTE $0x62; BYTE $0xf2; BYTE $0x6e; BYTE $0xc8; BYTE $0x52; BYTE $0xe0", // zeroing
		"BYTE $0x62; BYTE $0xf2; BYTE $0x6e; BYTE $0x28; BYTE $0x52; BYTE $0xe0", // ymm
		"BYTE $0x62; BYTE $0xf2; BYTE $0x6e; BYTE $0x48; BYTE $0x52; BYTE $0x20", // memory operand
		"BYTE $0x62; BYTE $0xf2; BYTE $0x6e; BYTE $0x48; BYTE $0x72; BYTE $0xe0", // VCVTNE2PS2BF16
		"BYTE $0x62; BYTE $0xf2; BYTE $0x6f; BYTE $0x48; BYTE $0x52; BYTE $0xe0", // pp = F2 (VP4DPWSSD)
		"BYTE $0x90",
		"BYTE $0x62; WORD $0x1234",
	} {
		if got, err := decodeBytes(bad); err == nil {
			t.Errorf("%s decoded as %q, want an error", bad, got)
		}
	}
	// A program with an unmodeled byte sequence does not parse.
	if _, err := Parse("TEXT ·f(SB), $0-0\n\tBYTE $0x90\n\tRET\n"); err == nil || !strings.Contains(err.Error(), "not a modeled instruction") {
		t.Errorf("Parse: %v", err)
	}
}
