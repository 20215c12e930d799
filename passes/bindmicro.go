package passes

import "github.com/kgen-dev/kgen/ir"

// BindMicro binds the MMA triples of the CPU pipelines (AccDecl, MMA, AccStore in one block, as
// tensorize emits them: ir.Micro.AsMMA) to the microkernels: each triple that matches the microkernel
// contract (ir.BindMicro: a thread-scope register tile of a slot, operands a microkernel or pack reads,
// the epilogue alpha·acc, the beta select, the bias and ReLU bits) becomes the ir.Micro call that pack,
// precision, parallel and the backends consume; a triple that does not match is expanded by MMALower
// into scalar register-tile loops, so correctness never depends on the match.
// Assumes: nothing between tensorize and this pass reshaped the triples. Guarantees: the interpreted
// result is unchanged (a bound Micro is the very call the triple is the MMA form of; MMALower keeps the
// MMA's operations and order).
func BindMicro(f *ir.Func, c *Context) (bool, error) {
	changed, unbound := false, false
	var bind func(body []ir.Node) []ir.Node
	bind = func(body []ir.Node) []ir.Node {
		var out []ir.Node
		for i := 0; i < len(body); i++ {
			n := body[i]
			for _, b := range childBodies(n) {
				*b = bind(*b)
			}
			if d, ok := n.(*ir.AccDecl); ok && i+2 < len(body) {
				m, okM := body[i+1].(*ir.MMA)
				s, okS := body[i+2].(*ir.AccStore)
				if okM && okS {
					if u, ok := ir.BindMicro(d, m, s); ok {
						out = append(out, u)
						changed = true
						i += 2
						continue
					}
				}
			}
			if _, ok := n.(*ir.AccDecl); ok {
				unbound = true
			}
			out = append(out, n)
		}
		return out
	}
	f.Body = bind(f.Body)
	if unbound {
		lowered, err := MMALower(f, c)
		if err != nil {
			return false, err
		}
		changed = changed || lowered
	}
	return changed, nil
}
