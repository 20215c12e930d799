package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/probe"
)

// staticMeasure stands in for probe.Measure: the static facts and one figure of each kind.
func staticMeasure(o probe.Options) (*probe.Profile, error) {
	p := probe.Static()
	p.Peak = map[string]float64{"go/f32/1c": 1}
	p.Bandwidth = map[string]float64{"DRAM/read/1c": 1}
	return p, nil
}

// listDir returns the names in dir (temporaries included).
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestProbeCommand: a profile is written whole and loads back; a bad flag, a stray argument, a bad
// -cores, an unwritable or a directory destination fail with a clear message and leave nothing behind
// (not even a temporary).
func TestProbeCommand(t *testing.T) {
	defer func(m func(probe.Options) (*probe.Profile, error)) { measure = m }(measure)
	measure = staticMeasure
	dir := t.TempDir()
	out := filepath.Join(dir, "profile.json")
	code, stdout, stderr := runKgen("probe", "-quick", "-o", out)
	if code != 0 || !strings.Contains(stdout, "wrote the profile") {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	if p, err := probe.Load(out); err != nil || p.Peak["go/f32/1c"] != 1 {
		t.Fatalf("Load: %v, %+v", err, p)
	}
	if names := listDir(t, dir); len(names) != 1 {
		t.Errorf("files left: %v", names)
	}
	type tc struct {
		args []string
		code int
		msg  string
	}
	cases := []tc{
		{[]string{"-bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"-cores", "-3"}, 2, "-cores -3: want a count from 1 to 4096"},
		{[]string{"-cores", "x"}, 2, `invalid value "x" for flag -cores`},
		{[]string{"extra"}, 2, `unexpected argument "extra"`},
		{[]string{"-o", filepath.Join(dir, "nosuch", "p.json")}, 1, "cannot write " + filepath.Join(dir, "nosuch", "p.json")},
		{[]string{"-o", dir}, 1, dir + " is a directory"},
	}
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o555)
	if os.Geteuid() != 0 { // root writes into a read-only directory
		cases = append(cases, tc{[]string{"-o", filepath.Join(ro, "p.json")}, 1, "cannot write " + filepath.Join(ro, "p.json")})
	}
	for _, c := range cases {
		called := false
		measure = func(o probe.Options) (*probe.Profile, error) { called = true; return staticMeasure(o) }
		code, _, stderr := runKgen(append([]string{"probe"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.msg) || !strings.Contains(stderr, "kgen probe: ") {
			t.Errorf("probe %q: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr, c.code, c.msg)
		}
		if called {
			t.Errorf("probe %q measured before failing", c.args)
		}
	}
	if names := listDir(t, ro); len(names) != 0 {
		t.Errorf("read-only directory holds %v", names)
	}
	if names := listDir(t, dir); len(names) != 2 {
		t.Errorf("files left after the failures: %v", names)
	}
}

// TestReportCommand: the roofline files from a profile and a result file; a missing file and a
// malformed result line are errors naming the file (and line), and leave no output.
func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	prof := &probe.Profile{Version: probe.Version, GOOS: "linux", GOARCH: "amd64", ISA: "avx2", Cores: 1,
		Caches:    []probe.Cache{{Level: 1, Size: 32 << 10}, {Level: 2, Size: 1 << 20}},
		Peak:      map[string]float64{"avx2/f32/1c": 50},
		Bandwidth: map[string]float64{"DRAM/read/1c": 10}}
	b, _ := prof.Marshal()
	pf := write(t, "p.json", string(b))
	bench := write(t, "bench.txt", "BenchmarkSgemm/avx2/512  10  3000000 ns/op\n")
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runKgen("report", "-profile", pf, "-bench", bench, "-base", bench, "-o", out)
	if code != 0 || !strings.Contains(stdout, "placed 1 points") {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	md, _ := os.ReadFile(filepath.Join(out, "roofline.md"))
	if !strings.Contains(string(md), "| 1 | sgemm | 512 | avx2 | 1 | 89.5 |") || !strings.Contains(string(md), "1.00×") {
		t.Errorf("roofline.md:\n%s", md)
	}
	if svg, _ := os.ReadFile(filepath.Join(out, "roofline.svg")); !strings.HasPrefix(string(svg), "<svg") {
		t.Errorf("roofline.svg:\n%.200s", svg)
	}
	bad := write(t, "bad.txt", "goos: linux\nBenchmarkSgemm/avx2/512  10  3000000 nsop 7\n")
	empty := filepath.Join(dir, "empty")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-profile", pf}, 2, "-profile and -bench are required"},
		{[]string{"-profile", filepath.Join(dir, "nosuch.json"), "-bench", bench}, 1, "nosuch.json: no such file"},
		{[]string{"-profile", pf, "-bench", filepath.Join(dir, "nosuch.txt")}, 1, "nosuch.txt: no such file"},
		{[]string{"-profile", pf, "-bench", bad}, 1, bad + `:2:43: malformed benchmark line: value "7" has no unit`},
		{[]string{"-profile", bench, "-bench", bench}, 1, "not a kgen machine profile"},
	} {
		code, _, stderr := runKgen(append(append([]string{"report"}, c.args...), "-o", empty)...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("report %q: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr, c.code, c.msg)
		}
	}
	if _, err := os.Stat(empty); !os.IsNotExist(err) {
		t.Errorf("a failed report created %s", empty)
	}
}
