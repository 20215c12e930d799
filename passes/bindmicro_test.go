package passes

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
	"github.com/kgen-dev/kgen/target"
)

// cpuTargets are the targets whose pipelines run tensorize and bindmicro.
var cpuTargets = []string{"go", "amd64", "arm64", "llvm"}

// micros returns the Micro nodes of body.
func micros(body []ir.Node) []*ir.Micro {
	var out []*ir.Micro
	ir.WalkNodes(body, func(n ir.Node) bool {
		if u, ok := n.(*ir.Micro); ok {
			out = append(out, u)
		}
		return true
	})
	return out
}

// countNodes counts the AccDecl, MMA and AccStore nodes of body.
func countNodes(body []ir.Node) (decls, mmas, stores int) {
	ir.WalkNodes(body, func(n ir.Node) bool {
		switch n.(type) {
		case *ir.AccDecl:
			decls++
		case *ir.MMA:
			mmas++
		case *ir.AccStore:
			stores++
		}
		return true
	})
	return
}

// TestBindMicroRoundTrip: for every Micro the CPU pipelines produce for every kernel of kernels.kdsl —
// the view-form ones bindmicro makes from tensorize's triples and the packed, unpacked and rows ones the
// backends bind — writing it as MMA nodes (ir.Micro.AsMMA) and binding them (ir.BindMicro) gives the
// same Micro, field for field.
func TestBindMicroRoundTrip(t *testing.T) {
	names := func(base string) string { return base + "_rt" }
	for _, tgt := range []string{"go", "amd64", "arm64"} {
		m, err := target.Lookup(tgt)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[ir.MicroKind]int{}
		for _, k := range library(t) {
			early, err := Compile(k, m, Options{Skip: Names(m)[4:]}) // lower, fusion, tensorize, bindmicro
			if err != nil {
				t.Fatal(err)
			}
			final, err := Compile(k, m, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range append(micros(early.Body), micros(final.Body)...) {
				seen[u.Kind()]++
				if u.Kind() == ir.MicroBatched {
					if u.AsMMA(names) != nil {
						t.Errorf("%s %s: a batched micro has an MMA form (a batch is a loop of products)", tgt, k.Name)
					}
					continue
				}
				nodes := u.AsMMA(names)
				if len(nodes) != 3 {
					t.Errorf("%s %s: a %s micro has no MMA form", tgt, k.Name, u.Kind())
					continue
				}
				got, ok := ir.BindMicro(nodes[0].(*ir.AccDecl), nodes[1].(*ir.MMA), nodes[2].(*ir.AccStore))
				if !ok {
					t.Errorf("%s %s: the MMA form of a %s micro does not bind:\n%s", tgt, k.Name, u.Kind(), (&ir.Func{Kernel: k, Body: nodes}).String())
					continue
				}
				if !reflect.DeepEqual(got, u) {
					t.Errorf("%s %s: a %s micro binds back as another:\n%#v\nwant\n%#v", tgt, k.Name, u.Kind(), got, u)
				}
			}
		}
		for _, kind := range []ir.MicroKind{ir.MicroUnbound, ir.MicroPacked, ir.MicroUnpacked, ir.MicroRows} {
			if seen[kind] < 5 {
				t.Errorf("%s: only %d %s micros checked (%v)", tgt, seen[kind], kind, seen)
			}
		}
	}
}

// TestBindMicroPreservesResults: on every CPU pipeline and every kernel, tensorize's MMA triples, the
// Micros bindmicro binds them to (every triple of the library binds), and the loops MMALower makes of
// triples planted so that they do not match the contract (alpha·acc written acc·alpha: the same value,
// no microkernel form) all interpret to the algorithm level's result, with the default, odd and
// per-variant plans.
func TestBindMicroPreservesResults(t *testing.T) {
	for _, tgt := range cpuTargets {
		m, err := target.Lookup(tgt)
		if err != nil {
			t.Fatal(err)
		}
		tensorized := 0
		for _, k := range library(t) {
			upto := func() *ir.Func {
				f, err := Compile(k, m, Options{Skip: Names(m)[3:]}) // lower, fusion, tensorize
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
			f := upto()
			decls, mmas, stores := countNodes(f.Body)
			if decls != mmas || mmas != stores {
				t.Fatalf("%s %s: tensorize left %d AccDecl, %d MMA, %d AccStore", tgt, k.Name, decls, mmas, stores)
			}
			if decls == 0 {
				continue
			}
			tensorized++
			rng := rand.New(rand.NewPCG(11, uint64(len(k.Name))))
			shapes := kgentest.Shapes(k, rng, 3)[:2]
			var variants []map[string]int
			for _, v := range f.Variants {
				variants = append(variants, f.PlanOf(v.Name))
			}
			runEquiv(t, tgt+" "+k.Name+" triples", k, f, shapes, rng, variants...)
			c := &Context{Machine: m}
			if changed, err := BindMicro(f, c); err != nil || !changed {
				t.Fatalf("%s %s: bindmicro changed nothing (%v)", tgt, k.Name, err)
			}
			if d, _, _ := countNodes(f.Body); d != 0 || len(micros(f.Body)) != decls {
				t.Errorf("%s %s: %d triples, %d micros bound, %d triples left\n%s", tgt, k.Name, decls, len(micros(f.Body)), d, f)
			}
			runEquiv(t, tgt+" "+k.Name+" bound", k, f, shapes, rng, variants...)

			f = upto()
			planted := 0
			ir.WalkNodes(f.Body, func(n ir.Node) bool {
				if s, ok := n.(*ir.AccStore); ok {
					s.Value = ir.Rewrite(s.Value, func(e ir.Expr) ir.Expr {
						if b, ok := e.(*ir.Binary); ok && b.Op == ir.Mul {
							if _, acc := b.Y.(*ir.AccVal); acc {
								planted++
								return &ir.Binary{Op: ir.Mul, X: b.Y, Y: b.X, T: b.T}
							}
						}
						return e
					})
				}
				return true
			})
			if planted == 0 {
				t.Fatalf("%s %s: nothing planted", tgt, k.Name)
			}
			if changed, err := BindMicro(f, c); err != nil || !changed {
				t.Fatalf("%s %s: bindmicro changed nothing on the planted triples (%v)", tgt, k.Name, err)
			}
			if d, mm, _ := countNodes(f.Body); d != 0 || mm != 0 || len(micros(f.Body)) != 0 {
				t.Errorf("%s %s: planted triples bound or left: %d micros, %d AccDecl, %d MMA", tgt, k.Name, len(micros(f.Body)), d, mm)
			}
			runEquiv(t, tgt+" "+k.Name+" planted, lowered", k, f, shapes, rng, variants...)
		}
		if tensorized < 10 {
			t.Errorf("%s: only %d kernels had MMA triples", tgt, tensorized)
		}
	}
}
