package passes

import "github.com/kgen-dev/kgen/ir"

// Fusion merges consecutive nests whose outermost loops run over the same whole dim, so that a row-wise
// sequence (max, subtract/exp, sum, divide in softmax; mean, variance, normalize in layernorm) runs in
// one pass over the rows while each row is in cache. It assumes nests fresh from Lower (outer loop
// 0..dim step 1). It fuses two nests only when every tensor that one writes and the other touches is
// indexed, in both, with the outer loop variable at the same position: then iteration r of the fused
// loop depends only on iteration r of each part, and the interpreted result is unchanged.
func Fusion(f *ir.Func, c *Context) (bool, error) {
	changed := false
	var out []ir.Node
	for _, n := range f.Body {
		cur, ok := n.(*ir.Nest)
		if ok && len(out) > 0 {
			if prev, ok := out[len(out)-1].(*ir.Nest); ok && fusable(prev, cur) {
				fuse(prev, cur)
				changed = true
				continue
			}
		}
		out = append(out, n)
	}
	f.Body = out
	return changed, nil
}

func outerLoop(n *ir.Nest) *ir.Loop {
	if len(n.Body) != 1 {
		return nil
	}
	l, ok := n.Body[0].(*ir.Loop)
	if !ok || l.Kind != ir.Serial {
		return nil
	}
	if c, ok := l.Lo.(ir.IConst); !ok || c.V != 0 {
		return nil
	}
	if c, ok := l.Step.(ir.IConst); !ok || c.V != 1 {
		return nil
	}
	if _, ok := l.Hi.(ir.IDim); !ok {
		return nil
	}
	return l
}

// accesses lists, for each tensor touched in body, the index lists used (reads and writes), and
// which tensors are written.
func accesses(body []ir.Node) (map[*ir.Tensor][][]ir.IExpr, map[*ir.Tensor]bool) {
	acc := map[*ir.Tensor][][]ir.IExpr{}
	written := map[*ir.Tensor]bool{}
	ir.WalkNodes(body, func(n ir.Node) bool {
		if s, ok := n.(*ir.Store); ok {
			acc[s.T] = append(acc[s.T], s.Idx)
			written[s.T] = true
		}
		if m, ok := n.(*ir.Micro); ok {
			written[m.C] = true
			acc[m.C] = append(acc[m.C], nil) // unanalysable
		}
		if t, ok := n.(*ir.Transpose); ok {
			written[t.Dst] = true
			acc[t.Dst] = append(acc[t.Dst], nil) // unanalysable
			acc[t.Src] = append(acc[t.Src], nil)
		}
		ir.NodeExprs(n, func(e ir.Expr) {
			ir.Walk(e, func(x ir.Expr) {
				if l, ok := x.(*ir.Load); ok {
					acc[l.T] = append(acc[l.T], l.Idx)
				}
			})
		})
		return true
	})
	return acc, written
}

func fusable(a, b *ir.Nest) bool {
	la, lb := outerLoop(a), outerLoop(b)
	if la == nil || lb == nil || la.Hi.(ir.IDim).D != lb.Hi.(ir.IDim).D {
		return false
	}
	accA, wA := accesses(a.Body)
	accB, wB := accesses(b.Body)
	for t := range accA {
		if _, shared := accB[t]; !shared || (!wA[t] && !wB[t]) {
			continue
		}
		pos := -1
		for _, idx := range append(append([][]ir.IExpr(nil), accA[t]...), accB[t]...) {
			p := -1
			for i, e := range idx {
				if v, ok := e.(ir.IVar); ok && (v.V == la.Var || v.V == lb.Var) {
					p = i
				}
			}
			if p < 0 || (pos >= 0 && p != pos) {
				return false
			}
			pos = p
		}
	}
	return true
}

// fuse appends b's outer-loop body to a's, renaming b's outer variable.
func fuse(a, b *ir.Nest) {
	la, lb := outerLoop(a), outerLoop(b)
	m := map[*ir.Var]ir.IExpr{lb.Var: ir.IVar{V: la.Var}}
	substNodes(lb.Body, m)
	la.Body = append(la.Body, lb.Body...)
	a.Stmts = append(a.Stmts, b.Stmts...)
}

// substNodes replaces index variables throughout a node list (in place).
func substNodes(body []ir.Node, m map[*ir.Var]ir.IExpr) {
	ir.WalkNodes(body, func(n ir.Node) bool {
		switch n := n.(type) {
		case *ir.Loop:
			n.Lo, n.Hi = ir.SubstIExpr(n.Lo, m), ir.SubstIExpr(n.Hi, m)
		case *ir.Store:
			for i, e := range n.Idx {
				n.Idx[i] = ir.SubstIExpr(e, m)
			}
			n.Value = ir.SubstVars(n.Value, m)
		case *ir.Decl:
			n.Init = ir.SubstVars(n.Init, m)
		case *ir.Assign:
			n.Value = ir.SubstVars(n.Value, m)
		}
		return true
	})
}
