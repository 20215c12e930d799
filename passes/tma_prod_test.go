package passes

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
)

// prodCompiled compiles kernel name of the library for ptx:sm_90a as the production version: g
// consumer warpgroups, wgmma N = n, the given stages.
func prodCompiled(t *testing.T, name string, g, n, stages int) (*ir.Kernel, *ir.Func) {
	t.Helper()
	return compiledWithPlan(t, name, map[string]int{PlanTMA: 3, PlanWG: g, PlanWGN: n, PlanStages: stages})
}

// TestTMAProduction: the production staging (two consumer warpgroups of 64×128 or 64×256 tiles, a
// producer warpgroup, 3–4 stages of 64×64 boxes, stages released one K tile late) computes the
// algorithm-level result on ragged shapes under the interpreter's race and mbarrier checks, and
// planted schedule bugs fail there.
func TestTMAProduction(t *testing.T) {
	for _, c := range []struct {
		name            string
		g, n, stages    int
		block, tx, wave string
	}{
		{"hgemm", 2, 128, 4, "block(12, 32)", "expect_tx 32768", "count 256"},
		{"bgemm", 2, 128, 3, "block(12, 32)", "expect_tx 32768", "count 256"},
		{"bgemm_bf16", 2, 256, 3, "block(12, 32)", "expect_tx 49152", "count 256"},
		{"hgemm", 1, 128, 4, "block(8, 32)", "expect_tx 24576", "count 128"},
	} {
		k, f := prodCompiled(t, c.name, c.g, c.n, c.stages)
		s := f.String()
		for _, w := range []string{c.block, c.tx, c.wave, "mbarrier.arrive empty", "mbarrier.wait empty", "if (w:i32 < " + map[int]string{1: "4", 2: "8"}[c.g] + ":i32)"} {
			if !strings.Contains(s, w) {
				t.Fatalf("%s %+v lacks %q:\n%s", c.name, c, w, s)
			}
		}
		var shapes []map[string]int
		for _, mnk := range [][3]int{{1, 1, 1}, {17, 13, 67}, {130, 200, 260}} {
			shapes = append(shapes, gemmDims(k, mnk))
		}
		runPlans(t, c.name+" production", k, f, shapes, []map[string]int{nil}, rand.New(rand.NewPCG(5, 11)))
	}
	k, _ := prodCompiled(t, "hgemm", 2, 128, 3)
	dims := gemmDims(k, [3]int{130, 140, 400})
	for _, c := range []struct {
		name, want string
		plant      func(n ir.Node) []ir.Node
	}{
		{"stage released before its MMA", "race on shared", func(n ir.Node) []ir.Node {
			if l, ok := n.(*ir.Loop); ok && len(l.Body) == 3 {
				w, ok1 := l.Body[0].(*ir.MbarWait)
				rel, ok2 := l.Body[2].(*ir.If)
				if ok1 && ok2 && len(rel.Then) == 1 {
					if a, ok := rel.Then[0].(*ir.MbarArrive); ok {
						a.Bar.Idx = w.Bar.Idx
						l.Body = []ir.Node{w, a, l.Body[1]}
					}
				}
			}
			return []ir.Node{n}
		}},
		{"producer does not wait for the release", "the parity wait names phase", func(n ir.Node) []ir.Node {
			if w, ok := n.(*ir.If); ok && len(w.Then) == 1 {
				if mw, ok := w.Then[0].(*ir.MbarWait); ok && strings.HasPrefix(mw.Bar.T.Name, "empty") {
					return nil
				}
			}
			return []ir.Node{n}
		}},
		{"full phase one too late", "parity", func(n ir.Node) []ir.Node {
			if w, ok := n.(*ir.MbarWait); ok && strings.HasPrefix(w.Bar.T.Name, "full") {
				w.Phase = ir.IAdd(w.Phase, ir.IConst{V: 1})
			}
			return []ir.Node{n}
		}},
	} {
		_, f := prodCompiled(t, "hgemm", 2, 128, 3)
		f.Body = ir.RewriteNodes(f.Body, c.plant)
		args := kgentest.RandomArgs(k, dims, rand.New(rand.NewPCG(1, 2)), 0)
		err := ir.RunFunc(f, ir.Storage, args, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}
