package arm64

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// llvmMC returns the llvm-mc path, skipping the test when it is missing unless KGEN_REQUIRE_TOOLS=1.
func llvmMC(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("llvm-mc")
	if err != nil {
		if os.Getenv("KGEN_REQUIRE_TOOLS") == "1" {
			t.Fatalf("llvm-mc not found and KGEN_REQUIRE_TOOLS=1: %v", err)
		}
		t.Skip("llvm-mc not installed (set KGEN_REQUIRE_TOOLS=1 to make this fatal)")
	}
	return p
}

var encRE = regexp.MustCompile(`encoding: \[0x([0-9a-f]{2}),0x([0-9a-f]{2}),0x([0-9a-f]{2}),0x([0-9a-f]{2})\]`)

// llvmEncode assembles one instruction per line and returns the little-endian words.
func llvmEncode(t *testing.T, mc string, lines []string) []uint32 {
	t.Helper()
	cmd := exec.Command(mc, "-triple=aarch64", "-mattr=+fullfp16,+bf16", "-show-encoding")
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("llvm-mc: %v\n%s", err, out)
	}
	var words []uint32
	for _, m := range encRE.FindAllStringSubmatch(string(out), -1) {
		var w uint32
		for i := 4; i >= 1; i-- {
			b, _ := strconv.ParseUint(m[i], 16, 8)
			w = w<<8 | uint32(b)
		}
		words = append(words, w)
	}
	if len(words) != len(lines) {
		t.Fatalf("llvm-mc gave %d encodings for %d lines:\n%s", len(words), len(lines), out)
	}
	return words
}

// encodingCases enumerates every WORD-encoded form over a spread of registers and lanes.
func encodingCases(t *testing.T) []Encoding {
	t.Helper()
	regs := []int{0, 1, 7, 15, 16, 30, 31}
	var out []Encoding
	add := func(e Encoding, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	vec3 := []func(d, n, m Vec) (Encoding, error){EncFMLA, EncFADD, EncFMUL, EncFMAX, EncFMIN, EncFADDP,
		EncFSUB, EncFDIV, EncFMAXP, EncFMINP, EncFCMEQ}
	for _, f := range vec3 {
		for _, arr := range []Arrangement{H4, H8, S2, S4, D2} {
			for i, d := range regs {
				n, m := regs[(i+2)%len(regs)], regs[(i+5)%len(regs)]
				add(f(V(d).arr(arr), V(n).arr(arr), V(m).arr(arr)))
			}
		}
	}
	for _, f := range []func(d, n Vec) (Encoding, error){EncFNEG, EncFABS, EncFSQRT, EncFRINTN, EncFCVTZS} {
		for _, arr := range []Arrangement{H4, H8, S2, S4, D2} {
			for i, d := range regs {
				add(f(V(d).arr(arr), V(regs[(i+3)%len(regs)]).arr(arr)))
			}
		}
	}
	for _, arr := range []Arrangement{B8, B16, H4, H8, S2, S4, D2} {
		bits := 8 * arr.LaneBytes()
		for i, d := range regs {
			n := regs[(i+1)%len(regs)]
			for _, sh := range []int{1, 2, bits / 2, bits - 1, bits} {
				add(EncSSHR(V(d).arr(arr), V(n).arr(arr), sh))
			}
		}
	}
	for _, f := range []func(d, n Vec, m Elem) (Encoding, error){EncFMLAElem, EncFMULElem} {
		for i, d := range regs {
			n := regs[(i+3)%len(regs)]
			for _, m := range regs {
				for lane := 0; lane < 4; lane++ {
					add(f(V(d).S4(), V(n).S4(), V(m).S(lane)))
					add(f(V(d).S2(), V(n).S2(), V(m).S(lane)))
				}
				for lane := 0; lane < 2; lane++ {
					add(f(V(d).D2(), V(n).D2(), V(m).D(lane)))
				}
				if m < 16 {
					for lane := 0; lane < 8; lane++ {
						add(f(V(d).H8(), V(n).H8(), V(m).H(lane)))
						add(f(V(d).H4(), V(n).H4(), V(m).H(lane)))
					}
				}
			}
		}
	}
	for i, d := range regs {
		n := regs[(i+1)%len(regs)]
		add(EncFCVTL(V(d).S4(), V(n).H4()))
		add(EncFCVTL(V(d).S4(), V(n).H8()))
		add(EncFCVTL(V(d).D2(), V(n).S2()))
		add(EncFCVTL(V(d).D2(), V(n).S4()))
		add(EncFCVTN(V(d).H4(), V(n).S4()))
		add(EncFCVTN(V(d).H8(), V(n).S4()))
		add(EncFCVTN(V(d).S2(), V(n).D2()))
		add(EncFCVTN(V(d).S4(), V(n).D2()))
		m := regs[(i+4)%len(regs)]
		add(EncBFDOT(V(d).S4(), V(n).H8(), V(m).H8()))
		add(EncBFDOT(V(d).S2(), V(n).H4(), V(m).H4()))
		for lane := 0; lane < 4; lane++ {
			add(EncBFDOTElem(V(d).S4(), V(n).H8(), V(m).S(lane)))
			add(EncBFDOTElem(V(d).S2(), V(n).H4(), V(m).S(lane)))
		}
	}
	return out
}

func (v VReg) arr(a Arrangement) Vec { return Vec{v, a} }

func TestEncodingsMatchLLVM(t *testing.T) {
	mc := llvmMC(t)
	cases := encodingCases(t)
	lines := make([]string, len(cases))
	for i, c := range cases {
		lines[i] = c.Text
	}
	words := llvmEncode(t, mc, lines)
	bad := 0
	for i, c := range cases {
		if words[i] != c.Word {
			bad++
			if bad < 20 {
				t.Errorf("%s: kgen 0x%08x, llvm-mc 0x%08x", c.Text, c.Word, words[i])
			}
		}
	}
	t.Logf("%d encodings checked against llvm-mc, %d mismatches", len(cases), bad)
}

func TestEncodingErrors(t *testing.T) {
	bad := []func() (Encoding, error){
		func() (Encoding, error) { return EncFMLAElem(V(1).H8(), V(2).H8(), V(16).H(0)) }, // Rm > 15 for FP16
		func() (Encoding, error) { return EncFMLAElem(V(1).S4(), V(2).S4(), V(3).S(4)) },
		func() (Encoding, error) { return EncFMLAElem(V(1).D2(), V(2).D2(), V(3).D(2)) },
		func() (Encoding, error) { return EncFMLAElem(V(1).S4(), V(2).S4(), V(3).D(0)) },
		func() (Encoding, error) { return EncFADD(V(1).S4(), V(2).S2(), V(3).S4()) },
		func() (Encoding, error) { return EncFADD(V(1).B16(), V(2).B16(), V(3).B16()) },
		func() (Encoding, error) { return EncFCVTL(V(1).S4(), V(2).S4()) },
		func() (Encoding, error) { return EncFCVTN(V(1).D2(), V(2).S4()) },
		func() (Encoding, error) { return EncBFDOT(V(1).S4(), V(2).H4(), V(3).H4()) },
		func() (Encoding, error) { return EncFSUB(V(1).S4(), V(2).D2(), V(3).S4()) },
		func() (Encoding, error) { return EncFNEG(V(1).S4(), V(2).S2()) },
		func() (Encoding, error) { return EncFSQRT(V(1).B16(), V(2).B16()) },
		func() (Encoding, error) { return EncSSHR(V(1).S4(), V(2).S4(), 0) },
		func() (Encoding, error) { return EncSSHR(V(1).S4(), V(2).S4(), 33) },
		func() (Encoding, error) { return EncSSHR(V(1).D1(), V(2).D1(), 1) },
	}
	for i, f := range bad {
		if e, err := f(); err == nil {
			t.Errorf("case %d: want error, got %s", i, e.Text)
		}
	}
}

// TestDisassemblyMatchesComment checks, through llvm-mc's disassembler, that each WORD's
// comment text is what the word decodes to.
func TestDisassemblyMatchesComment(t *testing.T) {
	mc := llvmMC(t)
	cases := encodingCases(t)
	var in strings.Builder
	for _, c := range cases {
		fmt.Fprintf(&in, "0x%02x 0x%02x 0x%02x 0x%02x\n", c.Word&0xff, c.Word>>8&0xff, c.Word>>16&0xff, c.Word>>24)
	}
	cmd := exec.Command(mc, "-triple=aarch64", "-mattr=+fullfp16,+bf16", "-disassemble")
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("llvm-mc -disassemble: %v\n%s", err, out)
	}
	var got []string
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, ".") {
			continue
		}
		got = append(got, strings.Join(strings.Fields(l), " "))
	}
	if len(got) != len(cases) {
		t.Fatalf("got %d lines for %d words:\n%s", len(got), len(cases), out)
	}
	for i, c := range cases {
		if got[i] != c.Text {
			t.Errorf("0x%08x: comment %q, llvm-mc disassembles %q", c.Word, c.Text, got[i])
		}
	}
}
