package arm64

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// textBlock returns the assembly of one TEXT symbol of asm.
func textBlock(t *testing.T, asm, name string) string {
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

// loopBody returns the instructions of body from label to the first branch back to it.
func loopBody(t *testing.T, body, label string) []string {
	t.Helper()
	i := strings.Index(body, "\n"+label+":\n")
	if i < 0 {
		t.Fatalf("no label %s", label)
	}
	var out []string
	for _, l := range strings.Split(body[i+len(label)+3:], "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "//") {
			continue
		}
		out = append(out, l)
		if f := strings.Fields(l); len(f) == 2 && f[1] == label {
			return out
		}
	}
	t.Fatalf("no branch back to %s", label)
	return nil
}

// TestRowsAsm checks the NEON rows kernels: the column loop of every m (1..4) with groups of 4 rows of
// B is 32-byte VLD1.P loads of B, by-element vector FMLAs (4s / 2d) only, no scalar FMADD, no call; the
// element tail uses the same by-element FMLA on lane 0; the FMLA words disassemble to their comments
// (llvm-mc); the output is deterministic. It logs the static figures quoted in docs/PERF.md.
func TestRowsAsm(t *testing.T) {
	ks := []RowsKernel{NewRowsKernel("f32"), NewRowsKernel("f64")}
	asm, stubs, err := GenerateAll("p", nil, nil, nil, ks)
	if err != nil {
		t.Fatal(err)
	}
	asm2, stubs2, err := GenerateAll("p", nil, nil, nil, ks)
	if err != nil || !bytes.Equal(asm, asm2) || !bytes.Equal(stubs, stubs2) {
		t.Fatalf("rows generation is not deterministic (%v)", err)
	}
	text := string(asm)
	fmla := regexp.MustCompile(`^WORD\s+\$0x[0-9a-f]{8} // fmla v\d+\.(4s|2d), v\d+\.(4s|2d), v\d+\.[sd]\[\d\]$`)
	bad := regexp.MustCompile(`(?i)fmadd|\bBL\b|CALL|FMULS|FMULD|FADDS|FADDD`)
	for _, k := range ks {
		body := textBlock(t, text, k.Name)
		if bad.MatchString(body) {
			t.Errorf("%s: scalar FMADD/FMUL/FADD or call in\n%s", k.Name, body)
		}
		if !strings.Contains(string(stubs), "func "+k.Name+k.Signature()) {
			t.Errorf("stub of %s missing:\n%s", k.Name, stubs)
		}
		cols := 32 / map[string]int{"f32": 4, "f64": 8}[k.Elem]
		for m := 1; m <= RowsMax; m++ {
			loop := loopBody(t, body, fmt.Sprintf("%s_m%d_g4v32", k.Name, m))
			var nf, nb, nc, other int
			for _, l := range loop {
				switch {
				case fmla.MatchString(l):
					nf++
				case strings.HasPrefix(l, "VLD1.P\t32(R1"): // the four B row pointers R12..R15
					nb++
				case strings.HasPrefix(l, "VLD1\t(R") || strings.HasPrefix(l, "VST1.P\t"):
					nc++
				default:
					other++
				}
			}
			if nf != 8*m || nb != 4 || nc != 2*m || other != 2 {
				t.Errorf("%s m=%d: column loop has %d FMLA, %d B loads, %d C loads/stores, %d other, want %d, 4, %d, 2:\n%s",
					k.Name, m, nf, nb, nc, other, 8*m, 2*m, strings.Join(loop, "\n"))
			}
			t.Logf("%s m=%d: %d instructions per %d columns × 4 rows of B (%d FMLA): %.2f per element of B",
				k.Name, m, len(loop), cols, nf, float64(len(loop))/float64(4*cols))
			tail := loopBody(t, body, fmt.Sprintf("%s_m%d_g4sl", k.Name, m))
			nt := 0
			for _, l := range tail {
				if fmla.MatchString(l) {
					nt++
				}
			}
			if nt != 4*m {
				t.Errorf("%s m=%d: element tail has %d by-element FMLAs, want %d", k.Name, m, nt, 4*m)
			}
		}
	}
	// The FMLA words decode to their comments.
	mc, err := exec.LookPath("llvm-mc")
	if err != nil {
		t.Log("llvm-mc not installed: FMLA words not disassembled")
		return
	}
	word := regexp.MustCompile(`WORD\s+\$0x([0-9a-f]{8}) // (.*)`)
	var in strings.Builder
	var want []string
	for _, m := range word.FindAllStringSubmatch(text, -1) {
		var w uint32
		fmt.Sscanf(m[1], "%x", &w)
		fmt.Fprintf(&in, "0x%02x 0x%02x 0x%02x 0x%02x\n", w&0xff, w>>8&0xff, w>>16&0xff, w>>24)
		want = append(want, m[2])
	}
	cmd := exec.Command(mc, "-triple=aarch64", "-disassemble")
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("llvm-mc: %v\n%s", err, out)
	}
	var got []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, ".") {
			got = append(got, strings.Join(strings.Fields(l), " "))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("llvm-mc gave %d lines for %d words", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("word %d: comment %q, llvm-mc %q", i, want[i], got[i])
		}
	}
	t.Logf("%d FMLA words checked against llvm-mc", len(want))
}
