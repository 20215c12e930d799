package passes

import "github.com/kgen-dev/kgen/ir"

// Unroll replicates the body of each innermost serial loop named in an `unroll i U` directive U times
// (followed by a remainder loop), marking it Unrolled. Copies keep loop-carried locals shared, so the
// operations run in exactly the original order: the result is bit-identical.
func Unroll(f *ir.Func, c *Context) (bool, error) {
	if len(c.directive("unroll")) == 0 {
		return false, nil
	}
	changed := false
	n := funcNamer(f)
	f.Body = ir.RewriteNodes(f.Body, func(node ir.Node) []ir.Node {
		l, ok := node.(*ir.Loop)
		if !ok || l.Kind != ir.Serial || !innermost(l) || !unitStep(l) {
			return []ir.Node{node}
		}
		s, ok := c.sizes("unroll", l.Var.Name)
		if !ok {
			return []ir.Node{node}
		}
		u := 4
		if len(s) == 1 {
			u = s[0]
		}
		if u < 2 {
			return []ir.Node{node}
		}
		changed = true
		return replicate(l, u, ir.Unrolled, n)
	})
	return changed, nil
}
