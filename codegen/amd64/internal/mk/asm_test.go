package mk

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen/amd64"
)

// These tests read the committed assembly text; they need no particular CPU.

// asmFunctions splits a Go assembly file into function bodies by TEXT symbol.
func asmFunctions(t *testing.T) map[string][]string {
	t.Helper()
	src, err := os.ReadFile("mk_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string][]string{}
	var cur string
	textRE := regexp.MustCompile(`^TEXT ·(\w+)\(SB\)`)
	for _, line := range strings.Split(string(src), "\n") {
		if m := textRE.FindStringSubmatch(line); m != nil {
			cur = m[1]
			continue
		}
		if cur != "" {
			funcs[cur] = append(funcs[cur], strings.TrimSpace(line))
		}
	}
	return funcs
}

// section returns the lines after label up to and including the first
// line that jumps back to it.
func section(lines []string, label string) []string {
	start := -1
	for i, l := range lines {
		if start < 0 && l == label+":" {
			start = i + 1
			continue
		}
		if start >= 0 {
			f := strings.Fields(l)
			if len(f) == 2 && strings.HasPrefix(f[0], "J") && f[1] == label {
				return lines[start : i+1]
			}
		}
	}
	return nil
}

func countMatch(lines []string, re *regexp.Regexp) int {
	n := 0
	for _, l := range lines {
		if re.MatchString(l) {
			n++
		}
	}
	return n
}

func TestAsmGemmKernels(t *testing.T) {
	funcs := asmFunctions(t)
	for _, k := range amd64.DefaultKernels() {
		t.Run(k.Name, func(t *testing.T) {
			body, ok := funcs[k.Name]
			if !ok {
				t.Fatalf("no TEXT ·%s in mk_amd64.s", k.Name)
			}
			v := "Y"
			if k.ISA == amd64.AVX512 {
				v = "Z"
			}
			p := "S"
			if k.Elem == amd64.F64 {
				p = "D"
			}
			vl := amd64.VecLen(k.Elem, k.ISA)
			nv := k.NR / vl
			u := k.KUnroll

			loop := section(body, "kloop")
			if loop == nil {
				t.Fatal("no unrolled k loop (kloop)")
			}
			fmaRE := regexp.MustCompile(`^VFMADD231P` + p + `\s+` + v + `\d+, ` + v + `\d+, ` + v + `\d+$`)
			loadRE := regexp.MustCompile(`^VMOVUP` + p + `\s+\d*\(DI\), ` + v + `\d+$`)
			bcastRE := regexp.MustCompile(`^(VBROADCASTS` + p + `\s+\d*\(SI\), ` + v + `\d+|VFMADD231P` + p + `\.BCST\s+\d*\(SI\), .*)$`)
			if got, want := countMatch(loop, fmaRE), u*k.MR*nv; got != want {
				t.Errorf("k loop: %d register VFMADD231P%s on %s registers, want %d", got, p, v, want)
			}
			if got := countMatch(loop, regexp.MustCompile(`^VFMADD`)); got != u*k.MR*nv {
				t.Errorf("k loop: %d FMAs in all, want %d (all on %s registers)", got, u*k.MR*nv, v)
			}
			if got, want := countMatch(loop, loadRE), u*nv; got != want {
				t.Errorf("k loop: %d vector loads of B̃, want %d", got, want)
			}
			if got, want := countMatch(loop, bcastRE), u*k.MR; got != want {
				t.Errorf("k loop: %d broadcasts of Ã, want %d", got, want)
			}
			if countMatch(loop, regexp.MustCompile(`^PREFETCHT0\s`)) == 0 {
				t.Error("k loop: no PREFETCHT0")
			}
			// The late C prefetch: one test of the iteration count, then both ends of each C row
			// (R13 walks the rows), 128 k steps (defaultPrefetchC) before the loop's end.
			if got, want := countMatch(loop, regexp.MustCompile(`^CMPQ\s+DX, \$0x0*`+strconv.FormatInt(int64(128/u), 16)+`$`)), 1; got != want {
				t.Errorf("k loop: %d tests for the late C prefetch at %d iterations left, want %d", got, 128/u, want)
			}
			if got, want := countMatch(loop, regexp.MustCompile(`^PREFETCHT0\s+\d*\(R13\)$`)), 2*k.MR; got != want {
				t.Errorf("k loop: %d prefetches of C rows, want %d", got, want)
			}
			if rem := section(body, "kloop1"); countMatch(rem, fmaRE) != k.MR*nv {
				t.Errorf("remainder loop: want %d FMAs", k.MR*nv)
			}
			checkCommon(t, body)
			// Edge stores are masked: opmask stores on AVX-512, VMASKMOV on AVX2.
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

func TestAsmPeakKernels(t *testing.T) {
	funcs := asmFunctions(t)
	for _, pk := range amd64.DefaultPeaks() {
		body, ok := funcs[pk.Name]
		if !ok {
			t.Errorf("no TEXT ·%s", pk.Name)
			continue
		}
		v, p := "Y", "S"
		if pk.ISA == amd64.AVX512 {
			v = "Z"
		}
		if pk.Elem == amd64.F64 {
			p = "D"
		}
		fmaRE := regexp.MustCompile(`^VFMADD231P` + p + `\s+` + v + `\d+, ` + v + `\d+, ` + v + `\d+$`)
		if got := countMatch(section(body, "loop"), fmaRE); got != pk.ChainsOrDefault() {
			t.Errorf("%s: %d FMAs in the loop, want %d", pk.Name, got, pk.ChainsOrDefault())
		}
		checkCommon(t, body)
	}
}

// checkCommon: no calls, no scalar FMAs, VZEROUPPER right before every RET.
func checkCommon(t *testing.T, body []string) {
	t.Helper()
	for i, l := range body {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		switch {
		case f[0] == "CALL":
			t.Errorf("CALL in kernel: %q", l)
		case strings.HasPrefix(f[0], "VFMADD") && (strings.HasSuffix(f[0], "SS") || strings.HasSuffix(f[0], "SD")):
			t.Errorf("scalar FMA in kernel: %q", l)
		case f[0] == "RET" && (i == 0 || body[i-1] != "VZEROUPPER"):
			t.Errorf("RET without VZEROUPPER before it")
		}
	}
}

// TestRegenerate checks that `go run ../gen` reproduces the committed files
// byte for byte (and that Generate is deterministic).
func TestRegenerate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "run", "../gen", "-out", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ../gen: %v\n%s", err, out)
	}
	for _, name := range []string{"mk_amd64.s", "stub_amd64.go"} {
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate in codegen/amd64/internal/mk", name)
		}
	}
}
