package passes

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
	"github.com/kgen-dev/kgen/target"
)

// lowered compiles k through Lower and, if fuse, Fusion: the input of the GPU passes. It reports
// whether fusion changed anything.
func lowered(t *testing.T, k *ir.Kernel, fuse bool) (*ir.Func, bool) {
	t.Helper()
	m, _ := target.Lookup("go")
	skip := Names(m)[1:]
	if fuse {
		skip = slices.DeleteFunc(skip, func(s string) bool { return s == "fusion" })
	}
	fused := false
	f, err := Compile(k, m, Options{Skip: skip, After: func(pass string, _ *ir.Func, changed bool) { fused = fused || pass == "fusion" && changed }})
	if err != nil {
		t.Fatal(err)
	}
	return f, fused
}

// checkGPU runs f (GPU-mapped) on nshapes ragged shapes of k (all ones, then random sizes from
// kgentest's list of primes and tile non-multiples; not its large last shape: every thread of a block
// is interpreted), with each plan and the race check on, against the algorithm-level interpreter.
func checkGPU(t *testing.T, k *ir.Kernel, f *ir.Func, what string, plans []map[string]int, nshapes int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(11, uint64(len(k.Name))))
	runPlans(t, k.Name+" "+what, k, f, kgentest.Shapes(k, rng, nshapes+1)[:nshapes], plans, rng)
}

// withPlan returns f's plan with the given values replaced.
func withPlan(f *ir.Func, set map[string]int) map[string]int {
	p := map[string]int{}
	for k, v := range f.Plan {
		p[k] = v
	}
	for k, v := range set {
		if _, ok := p[k]; ok {
			p[k] = v
		}
	}
	return p
}

// TestGPUMapPreservesResults maps every kernel of the library, lowered and unfused, onto GPU launches
// and interprets them with the race check on, with the default block shapes and with odd ones, against
// the algorithm level (TestGPUPipeline covers the fused nests).
func TestGPUMapPreservesResults(t *testing.T) {
	for _, k := range library(t) {
		f, _ := lowered(t, k, false)
		if _, err := GPUMap(f, nil); err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		if err := ir.VerifyFunc(f); err != nil {
			t.Fatalf("%s after gpumap: %v\n%s", k.Name, err, f)
		}
		launches := 0
		ir.WalkNodes(f.Body, func(n ir.Node) bool {
			if _, ok := n.(*ir.Launch); ok {
				launches++
				return false
			}
			return true
		})
		if launches != len(f.Body) {
			t.Fatalf("%s: %d launches for %d nests", k.Name, launches, len(f.Body))
		}
		checkGPU(t, k, f, "after gpumap", []map[string]int{nil, withPlan(f, map[string]int{gpuBY: 3, gpuBX: 5, gpuB1: 7, gpuRW: 3})}, 2)
	}
}

// TestGPUPipeline compiles every kernel of the library for the GPU targets (fusion, gpumap, staging)
// and interprets the result with the race check on, with odd block and tile shapes; every plain GEMM
// is staged.
func TestGPUPipeline(t *testing.T) {
	for _, tgt := range []string{"ptx", "msl"} {
		m, _ := target.Lookup(tgt)
		for _, k := range library(t) {
			stagedGEMM := false
			f, err := Compile(k, m, Options{After: func(pass string, _ *ir.Func, changed bool) { stagedGEMM = stagedGEMM || pass == "staging" && changed }})
			if err != nil {
				t.Fatalf("%s: %v", tgt, err)
			}
			if strings.HasPrefix(k.Name, "sgemm") && !stagedGEMM {
				t.Errorf("%s: %s not staged", tgt, k.Name)
			}
			if tgt == "msl" {
				continue // the same passes: compiling is the check
			}
			checkGPU(t, k, f, tgt, []map[string]int{withPlan(f, map[string]int{gpuBY: 3, gpuBX: 5, gpuBK: 4, gpuB1: 7, gpuRW: 5})}, 2)
		}
	}
}

// TestGPUMapShapes: sgemm maps onto a 2-D grid of 2-D blocks, fused softmax onto one block per row
// (reductions through shared memory), an elementwise loop onto 1-D blocks, a dot product onto one
// thread.
func TestGPUMapShapes(t *testing.T) {
	ks := map[string]*ir.Kernel{}
	for _, k := range library(t) {
		ks[k.Name] = k
	}
	for _, c := range []struct {
		kernel string
		fuse   bool
		want   []string
	}{
		{"sgemm", false, []string{"launch sgemm_0 grid(((M + (gpu.BY - 1)) / gpu.BY), ((N + (gpu.BX - 1)) / gpu.BX)) block(gpu.BY, gpu.BX) reads(A, B, alpha, beta, C) writes(C)", "gpu.block tj = 0 .. gpu.BX step 1", "for i = (bi + ti) .. min(((bi + ti) + 1), M) step 1"}},
		{"softmax", true, []string{"launch softmax_0 grid(M) block(gpu.RW, 32) reads(X, m, Y, s) writes(m, Y, s)", "alloc shared red f32[gpu.RW]",
			"for j = ((wi * 32) + lane) .. N step (gpu.RW * 32)", "warp.reduce max %acc\n                  if (lane:i32 == 0:i32)\n                    red[wi] = %acc\n                  else\n                  barrier block",
			"for u = lane .. gpu.RW step 32\n                      %acc = max(%acc, red[u])\n                    warp.reduce max %acc"}},
		{"saxpy", false, []string{"block(gpu.B1)"}},
		{"sdot", false, []string{"grid(1) block(1)"}},
	} {
		f, _ := lowered(t, ks[c.kernel], c.fuse)
		if _, err := GPUMap(f, nil); err != nil {
			t.Fatal(err)
		}
		s := f.String()
		for _, w := range c.want {
			if !strings.Contains(s, w) {
				t.Errorf("%s: mapped IR lacks %q:\n%s", c.kernel, w, s)
			}
		}
	}
}

// TestGPURowRace: the block-per-row softmax without the barrier that publishes a row's maximum (or
// the one that puts the partials in shared memory) races.
func TestGPURowRace(t *testing.T) {
	var k *ir.Kernel
	for _, x := range library(t) {
		if x.Name == "softmax" {
			k = x
		}
	}
	for drop := 0; drop < 2; drop++ {
		f, _ := lowered(t, k, true)
		if _, err := GPUMap(f, nil); err != nil {
			t.Fatal(err)
		}
		seen := 0
		ir.WalkNodes(f.Body, func(n ir.Node) bool {
			if l, ok := n.(*ir.Loop); ok && l.Var.Name == "i" {
				for at, x := range l.Body {
					if _, ok := x.(*ir.Barrier); ok {
						if seen == drop {
							l.Body = append(l.Body[:at:at], l.Body[at+1:]...)
							break
						}
						seen++
					}
				}
			}
			return true
		})
		args := randomGPUArgs(k, 7)
		err := ir.RunFunc(f, ir.Storage, args, withPlan(f, map[string]int{gpuRW: 3}))
		if err == nil || !strings.Contains(err.Error(), "race on ") {
			t.Errorf("softmax without barrier %d: %v", drop, err)
		}
	}
}
