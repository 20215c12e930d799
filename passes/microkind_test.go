package passes

import (
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/target"
)

// The CPU pipelines leave every GEMM as Micros whose operand layouts select the kernel: sgemm's rows
// version reads A and B in place (strided layouts) in a tile as high as the problem, its small version
// reads them in place in the register tile, and its blocked version reads packed panels; hgemm, whose
// operands convert f16 to f32, has only the packed version (a conversion is no layout: Pack does it).
func TestPipelinesSelectMicroKindsByLayout(t *testing.T) {
	all := []ir.MicroKind{ir.MicroRows, ir.MicroUnpacked, ir.MicroPacked}
	want := map[string][]ir.MicroKind{"sgemm": all, "sgemm_tn": all, "hgemm": {ir.MicroPacked}}
	for _, tgt := range []string{"go", "amd64", "arm64"} {
		m, err := target.Lookup(tgt)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range library(t) {
			kinds, ok := want[k.Name]
			if !ok {
				continue
			}
			f, err := Compile(k, m, Options{})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[ir.MicroKind]int{}
			ir.WalkNodes(f.Body, func(n ir.Node) bool {
				if u, ok := n.(*ir.Micro); ok {
					seen[u.Kind()]++
					checkMicroOperands(t, tgt+" "+k.Name, u)
				}
				return true
			})
			for _, kind := range kinds {
				if seen[kind] == 0 {
					t.Errorf("%s %s: no %s micro (%v)", tgt, k.Name, kind, seen)
				}
				delete(seen, kind)
			}
			if len(seen) > 0 {
				t.Errorf("%s %s: unexpected micros %v", tgt, k.Name, seen)
			}
		}
	}
}

// checkMicroOperands checks that a packed Micro reads panels, the others strided tiles, and that a rows
// Micro does the whole reduction in one call.
func checkMicroOperands(t *testing.T, what string, u *ir.Micro) {
	t.Helper()
	k := u.Kind()
	_, strided := u.A.Layout.(*ir.Strided)
	_, panel := u.A.Layout.(*ir.Panel)
	if (k == ir.MicroPacked && !panel) || (k != ir.MicroPacked && !strided) {
		t.Errorf("%s: a %s micro reads A through %s", what, k, u.A)
	}
	if k == ir.MicroRows && u.KC.String() != "K" {
		t.Errorf("%s: a rows micro does K in blocks of %s", what, u.KC)
	}
}
