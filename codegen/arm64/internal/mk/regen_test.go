package mk

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen/arm64"
	"github.com/kgen-dev/kgen/codegen/arm64/internal/mkspec"
)

// TestGeneratedFilesUpToDate checks that the committed files equal the generator's output
// (run `go generate ./codegen/arm64/internal/mk` after changing the generator).
func TestGeneratedFilesUpToDate(t *testing.T) {
	files, err := mkspec.Files()
	if err != nil {
		t.Fatal(err)
	}
	again, err := mkspec.Files()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		if !bytes.Equal(want, again[name]) {
			t.Errorf("%s: generator output is not deterministic", name)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate ./codegen/arm64/internal/mk", name)
		}
		if !bytes.HasPrefix(got, []byte(arm64.Header+"\n")) {
			t.Errorf("%s: first line is not %q", name, arm64.Header)
		}
	}
}

var (
	textRE  = regexp.MustCompile(`^TEXT ·(\w+)\(SB\)`)
	fmlaRE  = regexp.MustCompile(`^\s*(WORD\s+\$0x[0-9a-f]{8} // fmla v\d+\.(4s|2d), v\d+\.(4s|2d), v\d+\.[sd]\[\d\]|VFMLA\s)`)
	scalarF = regexp.MustCompile(`^\s*(F(N?M(ADD|SUB)[SD]|MUL[SD]|ADD[SD])|FMADD|FMSUB)\s`)
	callRE  = regexp.MustCompile(`^\s*(CALL|BL|BLR|JMP\s+\w+\(SB\))\b`)
)

// TestAsmShape is an asmcheck-style test over mk_arm64.s: each kernel's unrolled k loop and its
// remainder loop consist of vector FMLAs (MR·NR/lanes per k step) fed by VLD1 loads, with no scalar
// FP arithmetic, and no kernel calls anything.
func TestAsmShape(t *testing.T) {
	src, err := os.ReadFile("mk_arm64.s")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range checkAsm(string(src), mkspec.Kernels()) {
		t.Error(e)
	}
}

// TestAsmShapeCatches checks that checkAsm notices scalar FMAs, calls and missing FMLAs.
func TestAsmShapeCatches(t *testing.T) {
	src, err := os.ReadFile("mk_arm64.s")
	if err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(string) string{
		"scalar fma": func(s string) string {
			return strings.Replace(s, "sgemm8x12_tailloop:\n", "sgemm8x12_tailloop:\n\tFMADDS\tF1, F2, F3, F4\n", 1)
		},
		"call": func(s string) string {
			return strings.Replace(s, "sgemm8x12_done:\n", "sgemm8x12_done:\n\tCALL\truntime·f(SB)\n", 1)
		},
		"missing fmla": func(s string) string {
			i := strings.Index(s, "dgemm6x8_kloop:")
			j := i + strings.Index(s[i:], "\tWORD")
			k := j + strings.Index(s[j:], "\n")
			return s[:j] + s[k+1:]
		},
	} {
		if errs := checkAsm(mutate(string(src)), mkspec.Kernels()); len(errs) == 0 {
			t.Errorf("%s: not detected", name)
		}
	}
}

func checkAsm(src string, ks []arm64.GemmKernel) (errs []string) {
	kernels := map[string]arm64.GemmKernel{}
	for _, k := range ks {
		kernels[k.Name] = k
	}
	var cur string
	var region string // "kloop", "tailloop" or ""
	fmla := map[string]int{}
	for i, line := range strings.Split(src, "\n") {
		if m := textRE.FindStringSubmatch(line); m != nil {
			cur = m[1]
			if _, ok := kernels[cur]; !ok {
				errs = append(errs, fmt.Sprintf("line %d: unexpected function %s", i+1, cur))
			}
			continue
		}
		if callRE.MatchString(line) {
			errs = append(errs, fmt.Sprintf("line %d: %s: call in a leaf kernel: %q", i+1, cur, line))
		}
		switch strings.TrimSpace(line) {
		case cur + "_kloop:":
			region = "kloop"
			continue
		case cur + "_tailloop:":
			region = "tailloop"
			continue
		}
		if region == "" {
			continue
		}
		if strings.Contains(line, "BNE\t"+cur+"_"+region) {
			region = ""
			continue
		}
		if scalarF.MatchString(line) {
			errs = append(errs, fmt.Sprintf("line %d: %s %s: scalar FP arithmetic %q", i+1, cur, region, line))
		}
		if fmlaRE.MatchString(line) {
			fmla[cur+"/"+region]++
		}
	}
	for name, k := range kernels {
		lanes := 4
		if k.Elem == "f64" {
			lanes = 2
		}
		perStep := k.MR * k.NR / lanes
		u := k.KUnroll
		if u == 0 {
			u = 4
		}
		if got := fmla[name+"/kloop"]; got != perStep*u {
			errs = append(errs, fmt.Sprintf("%s: k loop has %d vector FMLAs, want %d", name, got, perStep*u))
		}
		if got := fmla[name+"/tailloop"]; got != perStep {
			errs = append(errs, fmt.Sprintf("%s: remainder loop has %d vector FMLAs, want %d", name, got, perStep))
		}
	}
	return errs
}
