package passes

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
	"github.com/kgen-dev/kgen/target"
)

// TestVectorLanesMatchReplicated compiles every kernel of the library for targets of two vector widths
// and interprets the result twice: with the Vector loops the vectorize pass made (lane semantics), and
// with each replaced by an unrolled loop over its ir.ExpandLanes form (what the portable Go backend
// emits). Every output must be the same bit for bit, on random shapes with ragged lengths.
func TestVectorLanesMatchReplicated(t *testing.T) {
	for _, name := range []string{"go", "amd64"} {
		m, _ := target.Lookup(name)
		for _, k := range library(t) {
			f, err := Compile(k, m, Options{})
			if err != nil {
				t.Fatalf("%s: %v", k.Name, err)
			}
			vectors := 0
			ir.WalkNodes(f.Body, func(n ir.Node) bool {
				if l, ok := n.(*ir.Loop); ok && l.Kind == ir.Vector {
					vectors++
				}
				return true
			})
			if vectors == 0 {
				continue
			}
			rng := rand.New(rand.NewPCG(11, uint64(len(k.Name))))
			shapes := kgentest.Shapes(k, rng, 2)
			var lanes []ir.Args
			var inputs []ir.Args
			for si, dims := range shapes {
				args := kgentest.RandomArgs(k, dims, rng, si)
				got := args.Clone()
				if err := ir.RunFunc(f, ir.Storage, got, nil); err != nil {
					t.Fatalf("%s (%s) dims %v: %v", k.Name, name, dims, err)
				}
				inputs = append(inputs, args)
				lanes = append(lanes, got)
			}
			f.Body = ir.RewriteNodes(f.Body, func(n ir.Node) []ir.Node {
				l, ok := n.(*ir.Loop)
				if !ok || l.Kind != ir.Vector {
					return []ir.Node{n}
				}
				return []ir.Node{&ir.Loop{Var: l.Var, Lo: l.Lo, Hi: l.Hi, Step: l.Step, Kind: ir.Unrolled, Width: l.Width, Body: ir.ExpandLanes(l)}}
			})
			if err := ir.VerifyFunc(f); err != nil {
				t.Fatalf("%s (%s) replicated: %v", k.Name, name, err)
			}
			for si, args := range inputs {
				got := args.Clone()
				if err := ir.RunFunc(f, ir.Storage, got, nil); err != nil {
					t.Fatalf("%s (%s) replicated, dims %v: %v", k.Name, name, shapes[si], err)
				}
				for _, p := range k.Params {
					if p.Kind != ir.Out && p.Kind != ir.InOut {
						continue
					}
					for i, want := range lanes[si].Tensors[p.Name] {
						g := got.Tensors[p.Name][i]
						if math.Float64bits(g) != math.Float64bits(want) && !(g != g && want != want) {
							t.Fatalf("%s (%s) dims %v: %s[%d] = %v replicated, %v with lane semantics", k.Name, name, shapes[si], p.Name, i, g, want)
						}
					}
				}
			}
		}
	}
}
