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
	kernels := map[string]*ir.Kernel{}
	for _, k := range library(t) {
		kernels[k.Name] = k
	}
	for _, tgt := range []string{"go", "amd64", "arm64"} {
		m, err := target.Lookup(tgt)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			kernel string
			want   []ir.MicroKind
		}{
			{"sgemm", []ir.MicroKind{ir.MicroRows, ir.MicroUnpacked, ir.MicroPacked}},
			{"sgemm_tn", []ir.MicroKind{ir.MicroRows, ir.MicroUnpacked, ir.MicroPacked}},
			{"hgemm", []ir.MicroKind{ir.MicroPacked}},
		} {
			f, err := Compile(kernels[c.kernel], m, Options{})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[ir.MicroKind]int{}
			ir.WalkNodes(f.Body, func(n ir.Node) bool {
				u, ok := n.(*ir.Micro)
				if !ok {
					return true
				}
				k := u.Kind()
				seen[k]++
				_, strided := u.A.Layout.(*ir.Strided)
				_, panel := u.A.Layout.(*ir.Panel)
				switch {
				case k == ir.MicroPacked && !panel, k != ir.MicroPacked && !strided:
					t.Errorf("%s %s: a %s micro reads A through %s", tgt, c.kernel, k, u.A)
				case k == ir.MicroRows && u.KC.String() != "K":
					t.Errorf("%s %s: a rows micro does K in blocks of %s", tgt, c.kernel, u.KC)
				}
				return true
			})
			for _, k := range c.want {
				if seen[k] == 0 {
					t.Errorf("%s %s: no %s micro (%v)", tgt, c.kernel, k, seen)
				}
				delete(seen, k)
			}
			if len(seen) > 0 {
				t.Errorf("%s %s: unexpected micros %v", tgt, c.kernel, seen)
			}
		}
	}
}
