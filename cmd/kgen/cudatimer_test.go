package main

import (
	"runtime"
	"testing"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/codegen/ptx"
	"github.com/kgen-dev/kgen/passes"
	"github.com/kgen-dev/kgen/rt/cuda"
	"github.com/kgen-dev/kgen/rt/cuda/mockdriver"
)

// The GPU tuner's timer against rt/cuda's mock driver (an sm_90 device of 132 SMs): it opens the
// device that runs sm_90a code with its class, loads two production candidates, encodes their tensor
// maps, allows their dynamic shared memory and launches them with the parameters their PTX declares
// (the mock checks the count, sizes and the shared memory against the attribute), and returns one
// positive time a pair for each; the mock's events count calls, so the times mean nothing.
func TestCUDATimerMock(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the mock driver is built for linux/amd64")
	}
	t.Setenv(cuda.LibraryEnv, mockdriver.Build(t))
	if tm, _, why := openGPUTimer("sm_80"); tm != nil || why != "no GPU runs sm_80 code (devices: sm_90)" {
		t.Errorf("sm_80: %v, %q", tm, why)
	}
	tm, class, why := openGPUTimer("sm_90a")
	if tm == nil || class != "cuda-sm90-132sm" {
		t.Fatalf("sm_90a: %v, %q, %q", tm, class, why)
	}
	defer tm.Close()
	ks, err := check.File("h.kdsl", hgemmKdsl)
	if err != nil {
		t.Fatal(err)
	}
	var cands []*ptx.Kernel
	for _, plan := range []map[string]int{ptx.ProdPlan,
		{passes.PlanTMA: 3, passes.PlanWG: 1, passes.PlanWGN: 128, passes.PlanStages: 3}} {
		pk, err := ptx.ProdCandidate(ks[0], plan)
		if err != nil || pk == nil {
			t.Fatal(pk, err)
		}
		cands = append(cands, pk)
	}
	ta, tb, err := tm.Time(ks[0], cands[0], cands[1], map[string]int{"M": 300, "N": 520, "K": 264}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(ta) != 3 || len(tb) != 3 || ta[0] <= 0 || tb[0] <= 0 {
		t.Errorf("times %v %v", ta, tb)
	}
}
