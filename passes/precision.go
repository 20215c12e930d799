package passes

import "github.com/kgen-dev/kgen/ir"

// Precision fixes where values change precision. Packed panels hold the microkernel's element type, so a
// 16-bit (or otherwise narrower) operand is converted once, when it is packed, never in the inner loop.
// A `precision f64` directive widens f32 reduction accumulators to f64: the update runs in f64 and the
// result is rounded back once, where it is used. Guarantees: with no directive the result is unchanged;
// with one, every accumulated sum is at least as accurate.
func Precision(f *ir.Func, c *Context) (bool, error) {
	changed := false
	acc := ir.Invalid
	for _, d := range c.directive("precision") {
		if t := ir.ParseDType(d.Args[0].Name); t != ir.Invalid { // tf32 is mmaform's (pickTile), not a type
			acc = t
		}
	}
	promoted := map[*ir.LocalVar]ir.DType{}
	ir.WalkNodes(f.Body, func(n ir.Node) bool {
		switch n := n.(type) {
		case *ir.Pack:
			if n.Value.Type() != n.Dst.Type {
				n.Value = &ir.Cast{X: n.Value, T: n.Dst.Type}
				changed = true
			}
		case *ir.Assign:
			b, ok := n.Value.(*ir.Binary)
			if acc != ir.Invalid && ok && n.L.T != acc && ir.Widens(n.L.T, acc) && (b.Op == ir.Add || b.Op == ir.Max || b.Op == ir.Min) {
				if l, ok := b.X.(*ir.Local); ok && l.L == n.L {
					if _, done := promoted[n.L]; !done {
						promoted[n.L] = n.L.T
						n.L.T = acc
					}
					b.T = acc
					changed = true
				}
			}
		}
		return true
	})
	if len(promoted) == 0 {
		return changed, nil
	}
	// Reads of a promoted accumulator outside its own update see the original type.
	ir.WalkNodes(f.Body, func(n ir.Node) bool {
		switch n := n.(type) {
		case *ir.Decl:
			if _, ok := promoted[n.L]; ok {
				if c, ok := n.Init.(*ir.Const); ok {
					n.Init = &ir.Const{Val: c.Val, T: n.L.T}
				}
				return true
			}
			n.Init = narrowReads(n.Init, promoted)
		case *ir.Assign:
			if b, ok := n.Value.(*ir.Binary); ok {
				if l, ok := b.X.(*ir.Local); ok && l.L == n.L {
					if _, ok := promoted[n.L]; ok {
						b.Y = widen(narrowReads(b.Y, promoted), n.L.T)
						return true
					}
				}
			}
			n.Value = narrowReads(n.Value, promoted)
		case *ir.Store:
			n.Value = narrowReads(n.Value, promoted)
		}
		return true
	})
	return true, nil
}

func widen(e ir.Expr, t ir.DType) ir.Expr {
	if e.Type() == t {
		return e
	}
	return &ir.Cast{X: e, T: t}
}

func narrowReads(e ir.Expr, promoted map[*ir.LocalVar]ir.DType) ir.Expr {
	return ir.Rewrite(e, func(x ir.Expr) ir.Expr {
		if l, ok := x.(*ir.Local); ok {
			if t, ok := promoted[l.L]; ok {
				return &ir.Cast{X: l, T: t}
			}
		}
		return x
	})
}
