package passes

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
	"github.com/kgen-dev/kgen/target"
)

// tmaCompiled compiles kernel name of the library for ptx:sm_90a with gpu.tma = 1 set before staging.
func tmaCompiled(t *testing.T, name string) (*ir.Kernel, *ir.Func) {
	return tmaCompiledWith(t, name, 1)
}

// tmaCompiledWith compiles kernel name of the library for ptx:sm_90a with gpu.tma = mode.
func tmaCompiledWith(t *testing.T, name string, mode int) (*ir.Kernel, *ir.Func) {
	t.Helper()
	return compiledWithPlan(t, name, map[string]int{PlanTMA: mode})
}

// compiledWithPlan compiles kernel name of the library for ptx:sm_90a with plan.
func compiledWithPlan(t *testing.T, name string, plan map[string]int) (*ir.Kernel, *ir.Func) {
	t.Helper()
	m, err := target.Lookup("ptx:sm_90a")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range library(t) {
		if k.Name != name {
			continue
		}
		f, err := Compile(k, m, Options{Plan: plan})
		if err != nil {
			t.Fatal(err)
		}
		return k, f
	}
	t.Fatalf("no kernel %s", name)
	return nil, nil
}

// TestTMAStaging: with gpu.tma = 1 the wgmma GEMMs whose operands TMA can load (A K-major, B N-major)
// are staged by bulk copies on per-stage mbarriers, and compute the algorithm-level result on ragged
// shapes (1, primes, non-multiples of 64) under the interpreter's race and mbarrier checks; bgemm_tt
// (B transposed: its rows are not N-contiguous) keeps the cp.async staging.
func TestTMAStaging(t *testing.T) {
	for _, c := range []struct {
		name string
		tma  bool
	}{{"hgemm", true}, {"bgemm", true}, {"bgemm_bf16", true}, {"bgemm_tt", false}} {
		k, f := tmaCompiled(t, c.name)
		s := f.String()
		got := strings.Contains(s, "async mbarrier") && strings.Contains(s, "mbarrier.wait full")
		if got != c.tma || strings.Contains(s, "async.wait") == c.tma {
			t.Fatalf("%s: TMA staging = %v, want %v:\n%s", c.name, got, c.tma, s)
		}
		if !c.tma {
			continue
		}
		for _, w := range []string{"mbarrier.init full", "count 1", "expect_tx 16384", "copy 64x64"} {
			if !strings.Contains(s, w) {
				t.Errorf("%s lacks %q:\n%s", c.name, w, s)
			}
		}
		rng := rand.New(rand.NewPCG(5, 11))
		var shapes []map[string]int
		for _, mnk := range [][3]int{{1, 1, 1}, {17, 13, 67}, {65, 130, 129}, {64, 64, 192}} {
			shapes = append(shapes, gemmDims(k, mnk))
		}
		runPlans(t, c.name+" tma", k, f, shapes, []map[string]int{nil, withPlan(f, map[string]int{})}, rng)
	}
}

// gemmDims names M, N, K for GEMM kernel k (whose dims are those).
func gemmDims(k *ir.Kernel, s [3]int) map[string]int {
	d := map[string]int{}
	for _, dim := range k.Dims {
		d[dim.Name] = map[string]int{"M": s[0], "N": s[1], "K": s[2]}[dim.Name]
	}
	return d
}

// TestTMAPlantedBugs: each broken TMA pipeline fails in the interpreter with the error that names it.
func TestTMAPlantedBugs(t *testing.T) {
	k, _ := tmaCompiled(t, "hgemm")
	dims := gemmDims(k, [3]int{70, 65, 200}) // 4 K tiles: every stage is refilled once
	for _, c := range []struct {
		name, want string
		plant      func(n ir.Node) []ir.Node
	}{
		{"wrong parity", "deadlock: thread 0 waits for phase 1 of mbarrier full[0]", func(n ir.Node) []ir.Node {
			if w, ok := n.(*ir.MbarWait); ok {
				w.Phase = ir.IAdd(w.Phase, ir.IConst{V: 1})
			}
			return []ir.Node{n}
		}},
		{"missing expect_tx", "while a bulk copy into it is in flight", func(n ir.Node) []ir.Node {
			if a, ok := n.(*ir.MbarArrive); ok {
				a.Tx = nil
			}
			return []ir.Node{n}
		}},
		{"short expect_tx", "beyond the expect_tx count", func(n ir.Node) []ir.Node {
			if a, ok := n.(*ir.MbarArrive); ok {
				a.Tx = ir.IConst{V: TMABytes - 2}
			}
			return []ir.Node{n}
		}},
		{"long expect_tx", "never completes", func(n ir.Node) []ir.Node {
			if a, ok := n.(*ir.MbarArrive); ok {
				a.Tx = ir.IConst{V: TMABytes + 2}
			}
			return []ir.Node{n}
		}},
		{"no wait", "without waiting for phase", func(n ir.Node) []ir.Node {
			if _, ok := n.(*ir.MbarWait); ok {
				return nil
			}
			return []ir.Node{n}
		}},
		{"stage refilled before every thread waited for it", "the parity wait names phase 2", func(n ir.Node) []ir.Node {
			if l, ok := n.(*ir.Loop); ok && len(l.Body) > 1 {
				if _, ok := l.Body[0].(*ir.MbarWait); ok {
					l.Body = append(l.Body[:1], l.Body[2:]...) // the block barrier after the wait
				}
			}
			return []ir.Node{n}
		}},
	} {
		_, f := tmaCompiled(t, "hgemm")
		f.Body = ir.RewriteNodes(f.Body, c.plant)
		args := kgentest.RandomArgs(k, dims, rand.New(rand.NewPCG(1, 2)), 0)
		err := ir.RunFunc(f, ir.Storage, args, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestTMASpecialised: with gpu.tma = 2 the TMA GEMMs run as a producer warpgroup (thread 0 loading,
// waiting on the empty barriers before refilling) and a consumer warpgroup (full waits, MMA, empty
// arrivals), equal to the algorithm level on ragged shapes; a consumer that releases its stage before
// the MMA read it, a producer that does not wait for the release, and a wrong empty phase each fail.
func TestTMASpecialised(t *testing.T) {
	for _, name := range []string{"hgemm", "bgemm", "bgemm_bf16"} {
		k, f := tmaCompiledWith(t, name, 2)
		s := f.String()
		for _, w := range []string{"block(8, 32)", "mbarrier.init empty", "count 128", "mbarrier.arrive empty", "mbarrier.wait empty", "if (w:i32 < 4:i32)"} {
			if !strings.Contains(s, w) {
				t.Fatalf("%s lacks %q:\n%s", name, w, s)
			}
		}
		var shapes []map[string]int
		for _, mnk := range [][3]int{{1, 1, 1}, {17, 13, 67}, {65, 130, 129}, {64, 64, 256}} {
			shapes = append(shapes, gemmDims(k, mnk))
		}
		runPlans(t, name+" specialised", k, f, shapes, []map[string]int{nil}, rand.New(rand.NewPCG(5, 11)))
	}
	k, _ := tmaCompiledWith(t, "hgemm", 2)
	dims := gemmDims(k, [3]int{70, 65, 200})
	for _, c := range []struct {
		name, want string
		plant      func(n ir.Node) []ir.Node
	}{
		{"stage released before the MMA", "race on shared", func(n ir.Node) []ir.Node {
			if l, ok := n.(*ir.Loop); ok && len(l.Body) == 3 {
				if a, ok := l.Body[2].(*ir.MbarArrive); ok {
					l.Body = []ir.Node{l.Body[0], a, l.Body[1]}
				}
			}
			return []ir.Node{n}
		}},
		{"producer does not wait for the release", "the parity wait names phase 2", func(n ir.Node) []ir.Node {
			if w, ok := n.(*ir.If); ok && len(w.Then) == 1 {
				if _, ok := w.Then[0].(*ir.MbarWait); ok {
					return nil
				}
			}
			return []ir.Node{n}
		}},
		{"empty phase one too late", "the parity wait returns at once", func(n ir.Node) []ir.Node {
			if w, ok := n.(*ir.MbarWait); ok && strings.HasPrefix(w.Bar.T.Name, "empty") {
				w.Phase = ir.IAdd(w.Phase, ir.IConst{V: 1})
			}
			return []ir.Node{n}
		}},
	} {
		_, f := tmaCompiledWith(t, "hgemm", 2)
		f.Body = ir.RewriteNodes(f.Body, c.plant)
		args := kgentest.RandomArgs(k, dims, rand.New(rand.NewPCG(1, 2)), 0)
		err := ir.RunFunc(f, ir.Storage, args, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}
