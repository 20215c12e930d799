package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestIntList(t *testing.T) {
	got, err := intList(" 256,512 ,,1024")
	if err != nil || len(got) != 3 || got[2] != 1024 {
		t.Errorf("%v %v", got, err)
	}
	for _, bad := range []string{"a", "0", "-5"} {
		if _, err := intList(bad); err == nil {
			t.Errorf("intList(%q) accepted", bad)
		}
	}
}

func TestBar(t *testing.T) {
	if got := bar(5, 10, 10); got != "[#####.....]" {
		t.Errorf("bar = %q", got)
	}
	if got := bar(12, 10, 4); got != "[####]" {
		t.Errorf("overfull bar = %q", got)
	}
	var b bytes.Buffer
	p := newProgress(&b, 2)
	p.step("one")
	p.step("two")
	p.finish()
	if lines := strings.Split(strings.TrimSpace(b.String()), "\n"); len(lines) != 3 || !strings.Contains(lines[2], "2/2") {
		t.Errorf("progress output:\n%s", b.String())
	}
}

func TestJobsAndEnv(t *testing.T) {
	c := config{sizes: []int{64}, dgemm: true, skinny: true, skinnyNK: 128, batch: true, batchCount: 10, batchSizes: []int{8}, threads: 2, coretype: "Zen"}
	js := c.jobs()
	if len(js) != 2+3+1 {
		t.Fatalf("%d jobs: %+v", len(js), js)
	}
	if js[5].Batch != 10 || js[2].M != 1 || js[2].K != 128 {
		t.Errorf("jobs %+v", js)
	}
	// The parent environment is given, not read: the test must not depend on
	// the caller's (CI hosts set OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE, and
	// variables whose values mention OPENBLAS_*).
	parent := []string{"PATH=/bin", "OPENBLAS_CORETYPE=Prescott", "OPENBLAS_L2_SIZE=512",
		"BLIS_ARCH_TYPE=7", "GOMAXPROCS=9", "TOX_TESTENV_PASSENV=OPENBLAS_*"}
	env := envMap(t, peerEnv(c, "openblas", "AMD EPYC", parent))
	for k, v := range map[string]string{"OPENBLAS_NUM_THREADS": "2", "OPENBLAS_CORETYPE": "Zen", "GOMAXPROCS": "2",
		"OMP_NUM_THREADS": "2", "PATH": "/bin", "TOX_TESTENV_PASSENV": "OPENBLAS_*"} {
		if env[k] != v {
			t.Errorf("openblas env: %s=%q, want %q", k, env[k], v)
		}
	}
	for _, k := range []string{"OPENBLAS_L2_SIZE", "BLIS_ARCH_TYPE"} {
		if _, ok := env[k]; ok {
			t.Errorf("parent's %s leaked into the openblas peer", k)
		}
	}
	env = envMap(t, peerEnv(c, "blis", "", parent))
	for k := range env {
		if strings.HasPrefix(k, "OPENBLAS_") {
			t.Errorf("blis env has %s", k)
		}
	}
	if env["BLIS_NUM_THREADS"] != "2" || env["GOMAXPROCS"] != "2" || env["TOX_TESTENV_PASSENV"] != "OPENBLAS_*" {
		t.Errorf("blis env: %v", env)
	}
	if _, ok := env["BLIS_ARCH_TYPE"]; ok {
		t.Error("parent's BLIS_ARCH_TYPE leaked into the blis peer")
	}
}

// envMap indexes an environment by name; a name given twice is an error,
// since the child would see only one of the two values.
func envMap(t *testing.T, env []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		if _, dup := m[k]; dup {
			t.Errorf("%s given twice", k)
		}
		m[k] = v
	}
	return m
}
