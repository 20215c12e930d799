package target

import (
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

func TestLookupSpec(t *testing.T) {
	for _, c := range []struct{ spec, name, sub, mma string }{
		{"ptx", "ptx", "sm_80", "ptx:sm_80"},
		{"ptx:sm_80", "ptx", "sm_80", "ptx:sm_80"},
		{"ptx:sm_90a", "ptx", "sm_90a", "ptx:sm_90a"},
		{"msl", "msl", "3.0", "msl"},
		{"msl:3.1", "msl", "3.1", "msl"},
		{"amd64", "amd64", "", "amd64"},
		{"go", "go", "", "go"},
	} {
		m, err := Lookup(c.spec)
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		if m.Name != c.name || m.Sub != c.sub || m.MMAKey() != c.mma {
			t.Errorf("%s: got %s / %s / mma %s, want %s / %s / mma %s", c.spec, m.Name, m.Sub, m.MMAKey(), c.name, c.sub, c.mma)
		}
		if len(MMAShapes(m.MMAKey())) == 0 {
			t.Errorf("%s: no MMA shapes under %s", c.spec, m.MMAKey())
		}
		if want := c.name + map[bool]string{true: ":" + c.sub, false: ""}[c.sub != ""]; m.Spec() != want {
			t.Errorf("%s: Spec() = %s, want %s", c.spec, m.Spec(), want)
		}
	}
	// sm_90a's f16 GEMMs take the warpgroup wgmma shape, sm_80's the warp mma.sync one.
	for spec, insn := range map[string]string{"ptx:sm_80": "mma.sync", "ptx:sm_90a": "wgmma"} {
		m, _ := Lookup(spec)
		s, err := LookupMMA(m.MMAKey(), ir.F16, ir.F32, false)
		if err != nil || !strings.HasPrefix(s.Insn, insn) {
			t.Errorf("%s: f16 GEMM shape %v (%v), want %s", spec, s, err, insn)
		}
	}
	for spec, want := range map[string]string{
		"vax":        `unknown target "vax" (known: go, amd64`,
		"ptx:sm_70":  `unknown sub-target "sm_70" of ptx (known: ptx:sm_80, ptx:sm_90a)`,
		"msl:2.4":    `unknown sub-target "2.4" of msl (known: msl:3.0, msl:3.1)`,
		"amd64:avx2": `target amd64 has no sub-targets`,
		"ptx:":       `unknown sub-target "" of ptx`,
	} {
		_, err := Lookup(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", spec, err, want)
		}
		if _, err := Host(spec); err == nil {
			t.Errorf("Host(%s): no error", spec)
		}
	}
}

func TestParseSpecList(t *testing.T) {
	for list, want := range map[string]string{
		"go,amd64,arm64":            "go amd64 arm64",
		"go, ptx:sm_80,sm_90a ,msl": "go ptx:sm_80 ptx:sm_90a msl:3.0",
		"ptx,msl:3.1,3.0,amd64":     "ptx:sm_80 msl:3.1 msl:3.0 amd64",
		"llvm":                      "llvm:x86_64-unknown-linux-gnu",
		"llvm:aarch64-linux-gnu,riscv64-unknown-linux-gnu,go": "llvm:aarch64-linux-gnu llvm:riscv64-unknown-linux-gnu go",
		"ptx:sm_80,ptx:sm_80,,go":                             "ptx:sm_80 go",
	} {
		got, err := ParseSpecList(list)
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("%q: got %q (%v), want %q", list, strings.Join(got, " "), err, want)
		}
	}
	for list, want := range map[string]string{
		"go,sm_80":          `unknown target "sm_80"`,
		"ptx:sm_80,sm_70":   `unknown sub-target "sm_70" of ptx`,
		"amd64,avx2":        `unknown target "avx2"`,
		"llvm:x86_64":       `bad llvm sub-target "x86_64"`,
		"llvm:x86 64-linux": `bad llvm sub-target`,
	} {
		if _, err := ParseSpecList(list); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", list, err, want)
		}
	}
}
