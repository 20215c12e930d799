package passes

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
	"github.com/kgen-dev/kgen/target"
)

// TestPrintedGPUNests takes the nests `kgen ir -target T` prints (Compile with the target spec's
// pipeline: cmd/kgen's golden files show them) for an f32 GEMM, the f16-in/f32-accumulate GEMM with a
// bias+GELU epilogue and softmax, interprets them against the algorithm level on ragged shapes (ones,
// primes, non-multiples of the tiles) with the default and odd plans under the race check, then
// deletes the first barrier of each and expects the interpreter to report a race.
func TestPrintedGPUNests(t *testing.T) {
	ks := map[string]*ir.Kernel{}
	for _, k := range mmaKernels(t) {
		ks[k.Name] = k
	}
	for _, c := range []struct{ spec, kernel, scope string }{
		{"ptx:sm_80", "sgemm", "thread = 0"},
		{"ptx:sm_80", "hgemm_bias_gelu", "warp sm80.m16n8k16.c"},
		{"ptx:sm_80", "softmax", ""},
		{"ptx:sm_90a", "hgemm_bias_gelu", "warpgroup sm90a.m64n"},
		{"msl", "sgemm", "simdgroup metal.simdgroup8x8"},
	} {
		k := ks[c.kernel]
		m, err := target.Lookup(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Compile(k, m, Options{})
		if err != nil {
			t.Fatalf("%s %s: %v", c.spec, c.kernel, err)
		}
		if s := f.String(); !strings.Contains(s, "barrier block") || !strings.Contains(s, "alloc shared") || !strings.Contains(s, c.scope) {
			t.Fatalf("%s %s: not a staged GPU nest with %q:\n%s", c.spec, c.kernel, c.scope, s)
		}
		odd := withPlan(f, map[string]int{gpuW: 3, gpuBY: 3, gpuBX: 2, gpuBK: 3, gpuRW: 5, k.Name + ".mma.MR": 3, k.Name + ".mma.NR": 2})
		checkGPU(t, k, f, c.spec, []map[string]int{nil, odd}, 3)

		removed := false
		f.Body = ir.RewriteNodes(f.Body, func(n ir.Node) []ir.Node {
			if _, ok := n.(*ir.Barrier); ok && !removed {
				removed = true
				return nil
			}
			return []ir.Node{n}
		})
		if !removed {
			t.Fatalf("%s %s: no barrier", c.spec, c.kernel)
		}
		err = ir.RunFunc(f, ir.Storage, randomGPUArgs(k, 37), odd)
		if err == nil || !strings.Contains(err.Error(), "race on ") {
			t.Errorf("%s %s without its first barrier: %v, want a race", c.spec, c.kernel, err)
		}
	}
}

// TestEachPassPreservesResultsGPU runs checkPasses for the GPU pipelines (fusion, mmaform, gpumap,
// staging; ptx:sm_90a forms wgmma tiles): every pass on every kernel of kernels.kdsl, interpreted under
// the race check with the default and odd plans (odd block, warp and stage shapes) on two shapes from
// gpuShapes, since every thread of every block is interpreted.
func TestEachPassPreservesResultsGPU(t *testing.T) {
	for _, tgt := range []string{"ptx:sm_80", "ptx:sm_90a", "msl"} {
		t.Run(tgt, func(t *testing.T) { checkPasses(t, tgt, 2, false) })
	}
}

// gpuShapes draws the shapes checkPasses uses for the GPU pipelines: all ones, and of ten ragged
// kgentest.Shapes draws (primes, tile non-multiples) the one with the fewest dims of size 1 and then
// the fewest points, so that interpreting every thread of every block stays cheap while every loop,
// K stage and edge tile still runs more than once.
func gpuShapes(k *ir.Kernel, rng *rand.Rand) []map[string]int {
	draws := kgentest.Shapes(k, rng, 12)
	score := func(dims map[string]int) (ones, points int) {
		points = 1
		for _, v := range dims {
			points *= v
			if v == 1 {
				ones++
			}
		}
		return ones, points
	}
	best := draws[1]
	for _, d := range draws[2:11] {
		o, p := score(d)
		bo, bp := score(best)
		if o < bo || o == bo && p < bp {
			best = d
		}
	}
	return []map[string]int{draws[0], best}
}
