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
	t.Setenv("OPENBLAS_CORETYPE", "Prescott")
	env := strings.Join(peerEnv(c, "openblas", "AMD EPYC"), "\n")
	for _, want := range []string{"OPENBLAS_NUM_THREADS=2", "OPENBLAS_CORETYPE=Zen", "GOMAXPROCS=2", "OMP_NUM_THREADS=2"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %s", want)
		}
	}
	if strings.Contains(env, "Prescott") {
		t.Error("parent's OPENBLAS_CORETYPE leaked into the peer")
	}
	if env := strings.Join(peerEnv(c, "blis", ""), "\n"); strings.Contains(env, "OPENBLAS_") || !strings.Contains(env, "BLIS_NUM_THREADS=2") {
		t.Errorf("blis env:\n%s", env)
	}
}
