package llvm

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// tool returns the path of an external program the test needs (the first of names found). It fails
// the test when KGEN_REQUIRE_TOOLS=1 and none is installed, and skips it otherwise.
func tool(t *testing.T, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := "needs " + strings.Join(names, " or ") + " (not on PATH; ./scripts/setup.sh installs it)"
	if os.Getenv("KGEN_REQUIRE_TOOLS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// run runs a command, failing the test with its output when it fails.
func run(t *testing.T, dir string, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}
