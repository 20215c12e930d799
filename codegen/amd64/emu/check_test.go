package emu

import (
	"os"
	"testing"
)

// TestCommittedFilesParse: every routine of the committed amd64 assembly is modeled.
func TestCommittedFilesParse(t *testing.T) {
	for _, path := range []string{"../internal/mk/mk_amd64.s", "../../../kernels/kgen_amd64.s"} {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Parse(string(src))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for name, err := range p.Check() {
			t.Errorf("%s: %s: %v", path, name, err)
		}
		if len(p.Functions()) == 0 {
			t.Errorf("%s: no functions", path)
		}
	}
}
