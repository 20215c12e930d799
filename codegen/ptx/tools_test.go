package ptx

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// ptxasPath finds NVIDIA's assembler: $KGEN_PTXAS, ptxas on PATH, or the repository's .tools/ptxas
// (scripts/setup.sh fetches it). Without one the test skips, or fails when KGEN_REQUIRE_TOOLS=1.
func ptxasPath(t *testing.T) string { return toolPath(t, "ptxas", "KGEN_PTXAS") }

// toolPath finds one of NVIDIA's tools (ptxas, cuobjdump) as ptxasPath does: $env, PATH, .tools/.
func toolPath(t *testing.T, name, env string) string {
	t.Helper()
	p, err := FindTool(name, env, ".")
	if err == nil {
		return p
	}
	if os.Getenv("KGEN_REQUIRE_TOOLS") == "1" {
		t.Fatalf("%s not found (PATH, $%s, .tools/%s) and KGEN_REQUIRE_TOOLS=1; run scripts/setup.sh", name, env, name)
	}
	t.Skipf("%s not found (run scripts/setup.sh, or set KGEN_REQUIRE_TOOLS=1 to make this fatal)", name)
	return ""
}

// ptxasStats is what ptxas -v reports for one entry function.
type ptxasStats = PtxasStats

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

// runPtxas is assemble without a testing.T (safe to call from several goroutines); its error also
// lists the PTX with line numbers.
func runPtxas(ptxas, arch, text string) (map[string]ptxasStats, error) {
	st, err := RunPtxas(ptxas, arch, text)
	if err != nil {
		return nil, fmt.Errorf("%v\n--- PTX ---\n%s", err, numbered(text))
	}
	return st, nil
}

// parsePtxasV reads ptxas -v output (one "Compiling entry function" block per entry).
func parsePtxasV(out string) map[string]ptxasStats { return ParsePtxasV(out) }

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
