package passes

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
	"github.com/kgen-dev/kgen/target"
)

// jammedLoops counts the loops RowsJam makes: step rowsJamG, holding (through a row loop or not) a
// column loop whose body is a whole number of groups of rowsJamG stores into a scratch register buffer.
func jammedLoops(f *ir.Func) int {
	count := 0
	ir.WalkNodes(f.Body, func(n ir.Node) bool {
		l, ok := n.(*ir.Loop)
		if !ok || len(l.Body) != 1 {
			return true
		}
		if s, ok := l.Step.(ir.IConst); !ok || s.V != rowsJamG {
			return true
		}
		lj, ok := l.Body[0].(*ir.Loop)
		if ok && len(lj.Body) == 1 {
			if inner, ok := lj.Body[0].(*ir.Loop); ok {
				lj = inner
			}
		}
		if !ok || len(lj.Body) == 0 || len(lj.Body)%rowsJamG != 0 {
			return true
		}
		for _, b := range lj.Body {
			if st, ok := b.(*ir.Store); !ok || st.T.Kind != ir.Scratch || st.T.Space != ir.Register {
				return true
			}
		}
		count++
		return true
	})
	return count
}

// TestRowsJam checks that the llvm pipeline jams the rows form of the GEMM kernels (per kernel one
// jammed loop per row count 1…rowsJamRows and one with a row loop, none without the pass) and that the
// result is bit for bit the one without the pass (the order of every element's sum is unchanged) on
// few-row shapes whose K is below, at and past whole groups; RowsMax raised to 6 runs the version with
// a row loop.
func TestRowsJam(t *testing.T) {
	m, err := target.Lookup("llvm")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, k := range library(t) {
		switch k.Name {
		case "sgemm", "dgemm", "gemm_bias_relu", "sgemm_acc":
		default:
			continue
		}
		seen++
		jam, err := Compile(k, m, Options{})
		if err != nil {
			t.Fatal(err)
		}
		plain, err := Compile(k, m, Options{Skip: []string{"rowsjam"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := jammedLoops(jam); got != rowsJamRows+1 {
			t.Errorf("%s: %d jammed loops, want %d\n%s", k.Name, got, rowsJamRows+1, jam)
		}
		if got := jammedLoops(plain); got != 0 {
			t.Errorf("%s without rowsjam: %d jammed loops", k.Name, got)
		}
		rng := rand.New(rand.NewPCG(13, uint64(len(k.Name))))
		si := 0
		var rowsMax string
		for name := range jam.Plan {
			if strings.HasSuffix(name, ".RowsMax") {
				rowsMax = name
			}
		}
		if rowsMax == "" {
			t.Fatalf("%s: no RowsMax in the plan %v", k.Name, jam.Plan)
		}
		plan := map[string]int{}
		for name, v := range jam.Plan {
			plan[name] = v
		}
		plan[rowsMax] = 6
		for _, mm := range []int{1, 2, 3, 4, 5, 6} {
			for _, kk := range []int{1, 4, 7, 9} {
				dims := map[string]int{"M": mm, "N": 19, "K": kk}
				args := kgentest.RandomArgs(k, dims, rng, si)
				si++
				a, b := args.Clone(), args.Clone()
				if err := ir.RunFunc(jam, ir.Storage, a, plan); err != nil {
					t.Fatal(err)
				}
				if err := ir.RunFunc(plain, ir.Storage, b, plan); err != nil {
					t.Fatal(err)
				}
				for _, p := range k.Params {
					if p.Kind != ir.Out && p.Kind != ir.InOut {
						continue
					}
					x, y := a.Tensors[p.Name], b.Tensors[p.Name]
					for i := range x {
						if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
							t.Fatalf("%s %v: %s[%d] = %v with rowsjam, %v without", k.Name, dims, p.Name, i, x[i], y[i])
						}
					}
				}
			}
		}
		runEquiv(t, fmt.Sprintf("rowsjam %s", k.Name), k, jam, []map[string]int{{"M": 2, "N": 33, "K": 13}}, rng)
	}
	if seen != 4 {
		t.Fatalf("found %d of the 4 GEMM kernels", seen)
	}
}
