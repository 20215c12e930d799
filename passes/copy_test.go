package passes

import (
	"math/rand/v2"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
	"github.com/kgen-dev/kgen/target"
)

// TestPacksAreCopies: every Pack the CPU pipeline makes for the library is a Copy into a panel layout
// (ir.PackCopy): the function with its packs replaced by those copies verifies and computes the same
// bits, with default and odd plan values.
func TestPacksAreCopies(t *testing.T) {
	m, _ := target.Lookup("go")
	packs := 0
	for _, k := range library(t) {
		f, err := Compile(k, m, Options{})
		if err != nil {
			t.Fatal(err)
		}
		g, err := Compile(k, m, Options{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		g.Body = ir.RewriteNodes(g.Body, func(x ir.Node) []ir.Node {
			if p, ok := x.(*ir.Pack); ok {
				c, ok := ir.PackCopy(p)
				if !ok {
					t.Errorf("%s: pack into %s is not a copy: %s", k.Name, p.Dst.Name, ir.FormatExpr(p.Value))
					return []ir.Node{x}
				}
				n++
				return []ir.Node{c}
			}
			return []ir.Node{x}
		})
		if n == 0 {
			continue
		}
		packs += n
		if err := ir.VerifyFunc(g); err != nil {
			t.Fatalf("%s with copies: %v", k.Name, err)
		}
		odd := withPlan(f, map[string]int{})
		for key := range odd {
			odd[key] = map[bool]int{true: 3, false: 7}[len(key)%2 == 0]
		}
		rng := rand.New(rand.NewPCG(5, uint64(len(k.Name))))
		for si, dims := range kgentest.Shapes(k, rng, 2) {
			args := kgentest.RandomArgs(k, dims, rng, si)
			for _, plan := range []map[string]int{nil, odd} {
				a, b := args.Clone(), args.Clone()
				if err := ir.RunFunc(f, ir.Storage, a, plan); err != nil {
					t.Fatal(err)
				}
				if err := ir.RunFunc(g, ir.Storage, b, plan); err != nil {
					t.Fatalf("%s with copies, dims %v, plan %v: %v", k.Name, dims, plan, err)
				}
				for name, want := range a.Tensors {
					for i, w := range want {
						if got := b.Tensors[name][i]; got != w && (got == got || w == w) {
							t.Fatalf("%s with copies, dims %v, plan %v: %s[%d] = %v, want %v", k.Name, dims, plan, name, i, got, w)
						}
					}
				}
			}
		}
	}
	if packs == 0 {
		t.Fatal("no pack in the library")
	}
}
