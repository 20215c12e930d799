package passes

import (
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/target"
)

// MMAPlan sets the plan of every microkernel slot to the register tile of the target's MMA shape for
// its element type (target.LookupMMA: llvm's fmuladd tiles, 6×16 f32, 6×8 f64) and the cache blocks
// the analytical model gives for that tile on the target's caches (target.GemmBlocks), replacing the
// portable variant's defaults Tensorize set (tile directives do not reach these blocks). A slot whose
// element type has no MMA shape keeps its plan. The plan symbols stay symbols in the IR: a backend reads their values from the plan, so
// this pass changes what the loops compute by nothing but their blocking.
// For targets whose GEMMs run as loops (MicroToMMA, MMALower) rather than a backend's microkernel.
func MMAPlan(f *ir.Func, c *Context) (bool, error) {
	changed := false
	done := map[string]bool{}
	ir.WalkNodes(f.Body, func(n ir.Node) bool {
		u, ok := n.(*ir.Micro)
		if !ok || done[u.Slot] {
			return true
		}
		done[u.Slot] = true
		s, err := target.LookupMMA(c.Machine.MMAKey(), u.Elem, u.Elem, false)
		if err != nil || s.Scope != ir.ScopeThread {
			return true
		}
		b := target.GemmBlocks(c.Machine, s.M, s.N, u.Elem.Size())
		for name, v := range map[string]int{"MR": b.MR, "NR": b.NR, "MC": b.MC, "KC": b.KC, "NC": b.NC} {
			key := u.Slot + "." + name
			if f.Plan[key] != v {
				f.Plan[key] = v
				changed = true
			}
		}
		return true
	})
	return changed, nil
}
