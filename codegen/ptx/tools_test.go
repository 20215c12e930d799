package ptx

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// ptxasPath finds NVIDIA's assembler: $KGEN_PTXAS, ptxas on PATH, or the repository's .tools/ptxas
// (scripts/setup.sh fetches it). Without one the test skips, or fails when KGEN_REQUIRE_TOOLS=1.
func ptxasPath(t *testing.T) string { return toolPath(t, "ptxas", "KGEN_PTXAS") }

// toolPath finds one of NVIDIA's tools (ptxas, cuobjdump) as ptxasPath does: $env, PATH, .tools/.
func toolPath(t *testing.T, name, env string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			p := filepath.Join(d, ".tools", name)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if os.Getenv("KGEN_REQUIRE_TOOLS") == "1" {
		t.Fatalf("%s not found (PATH, $%s, .tools/%s) and KGEN_REQUIRE_TOOLS=1; run scripts/setup.sh", name, env, name)
	}
	t.Skipf("%s not found (run scripts/setup.sh, or set KGEN_REQUIRE_TOOLS=1 to make this fatal)", name)
	return ""
}

// ptxasStats is what ptxas -v reports for one entry function.
type ptxasStats struct {
	Regs, Smem              int
	SpillStores, SpillLoads int
	Stack                   int
}

var (
	reFunc  = regexp.MustCompile(`Compiling entry function '([^']+)'`)
	reSpill = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	reRegs  = regexp.MustCompile(`Used (\d+) registers`)
	reSmem  = regexp.MustCompile(`(\d+) bytes smem`)
)

// assemble runs ptxas -v for arch on text and returns the statistics per entry; it fails the test
// with ptxas's message when the text does not assemble.
func assemble(t *testing.T, ptxas, arch, text string) map[string]ptxasStats {
	t.Helper()
	st, err := runPtxas(ptxas, arch, text)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// runPtxas is assemble without a testing.T (safe to call from several goroutines).
func runPtxas(ptxas, arch, text string) (map[string]ptxasStats, error) {
	dir, err := os.MkdirTemp("", "kgen-ptx-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "k.ptx")
	if err := os.WriteFile(src, []byte(text), 0o644); err != nil {
		return nil, err
	}
	out, err := exec.Command(ptxas, "-arch="+arch, "-v", "-o", filepath.Join(dir, "k.cubin"), src).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("ptxas -arch=%s: %v\n%s\n--- PTX ---\n%s", arch, err, out, numbered(text))
	}
	return parsePtxasV(string(out)), nil
}

// parsePtxasV reads ptxas -v output (one "Compiling entry function" block per entry).
func parsePtxasV(out string) map[string]ptxasStats {
	stats := map[string]ptxasStats{}
	cur := ""
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	for _, line := range regexp.MustCompile(`\r?\n`).Split(out, -1) {
		if m := reFunc.FindStringSubmatch(line); m != nil {
			cur = m[1]
			stats[cur] = ptxasStats{}
			continue
		}
		if cur == "" {
			continue
		}
		s := stats[cur]
		if m := reSpill.FindStringSubmatch(line); m != nil {
			s.Stack, s.SpillStores, s.SpillLoads = atoi(m[1]), atoi(m[2]), atoi(m[3])
		}
		if m := reRegs.FindStringSubmatch(line); m != nil {
			s.Regs = atoi(m[1])
			if m := reSmem.FindStringSubmatch(line); m != nil {
				s.Smem = atoi(m[1])
			}
		}
		stats[cur] = s
	}
	return stats
}

func numbered(text string) string {
	var out []byte
	line := 1
	out = append(out, []byte(strconv.Itoa(line)+"\t")...)
	for i := 0; i < len(text); i++ {
		out = append(out, text[i])
		if text[i] == '\n' && i+1 < len(text) {
			line++
			out = append(out, []byte(strconv.Itoa(line)+"\t")...)
		}
	}
	return string(out)
}
