package llvm

import (
	"github.com/kgen-dev/kgen/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/value"
)

// tileMax is the largest constant c for which a tile bound min(c, e) is versioned.
const tileMax = 64

// tileMins finds the tile bounds of loop l's body that versioning makes constant: index expressions
// min(c, e) (either order) with a constant c in [1, tileMax] (a register tile or vector width) and e
// depending on l's variable and on no variable bound inside the body, so that e ≥ c is decided once
// per iteration of l. Distinct bounds, in first-appearance order.
func (g *fn) tileMins(l *ir.Loop) []ir.IBin {
	inner := map[*ir.Var]bool{}
	ir.WalkNodes(l.Body, func(n ir.Node) bool {
		if x, ok := n.(*ir.Loop); ok {
			inner[x.Var] = true
		}
		return true
	})
	var out []ir.IBin
	seen := map[string]bool{}
	var visit func(e ir.IExpr)
	visit = func(e ir.IExpr) {
		b, ok := e.(ir.IBin)
		if !ok {
			return
		}
		if b.Op == 'm' && !seen[g.keyOf(b)] {
			if _, _, ok := g.tileBound(b, l.Var, inner); ok {
				seen[g.keyOf(b)] = true
				out = append(out, b)
				return
			}
		}
		visit(b.X)
		visit(b.Y)
	}
	ir.WalkNodes(l.Body, func(n ir.Node) bool {
		switch n := n.(type) {
		case *ir.Loop:
			visit(n.Lo)
			visit(n.Hi)
		case *ir.Store:
			for _, ix := range n.Idx {
				visit(ix)
			}
		}
		ir.NodeExprs(n, func(e ir.Expr) {
			ir.Walk(e, func(x ir.Expr) {
				if ld, ok := x.(*ir.Load); ok {
					for _, ix := range ld.Idx {
						visit(ix)
					}
				}
			})
		})
		return true
	})
	return out
}

// tileBound splits a versionable min(c, e) into c and e (see tileMins).
func (g *fn) tileBound(b ir.IBin, v *ir.Var, inner map[*ir.Var]bool) (int64, ir.IExpr, bool) {
	c, ok := g.constIndex(b.X)
	e := b.Y
	if !ok {
		c, ok = g.constIndex(b.Y)
		e = b.X
	}
	if !ok || c < 1 || c > tileMax {
		return 0, nil, false
	}
	usesV, usesInner := false, false
	ir.IVars(e, func(w *ir.Var) {
		usesV = usesV || w == v
		usesInner = usesInner || inner[w]
	})
	return c, e, usesV && !usesInner
}

// versioned emits body twice when loop l's body has tile bounds (tileMins): once for whole tiles, where
// every bound min(c, e) has e ≥ c and is the constant c (so LLVM unrolls the tile loops completely and
// keeps the register tile in registers), and once as it is for the edge tiles. Both compute what the
// body computes. It reports false, emitting nothing, when there is nothing to version.
func (g *fn) versioned(l *ir.Loop) (bool, error) {
	mins := g.tileMins(l)
	if len(mins) == 0 || len(mins) > 2 {
		return false, nil
	}
	inner := map[*ir.Var]bool{}
	var whole value.Value = constant.True
	for _, m := range mins {
		c, e, _ := g.tileBound(m, l.Var, inner)
		x, err := g.iexpr(e)
		if err != nil {
			return false, err
		}
		whole = g.cur.NewAnd(whole, g.cur.NewICmp(enum.IPredSGE, x, i64(c)))
	}
	full, edge, join := g.block("whole."+l.Var.Name), g.block("edge."+l.Var.Name), g.block("tiled."+l.Var.Name)
	g.cur.NewCondBr(whole, full, edge)
	g.cur = full
	for _, m := range mins {
		c, _, _ := g.tileBound(m, l.Var, inner)
		g.fixed[g.keyOf(m)] = c
	}
	err := g.nodes(l.Body)
	for _, m := range mins {
		delete(g.fixed, g.keyOf(m))
	}
	if err != nil {
		return false, err
	}
	g.cur.NewBr(join)
	g.cur = edge
	if err := g.nodes(l.Body); err != nil {
		return false, err
	}
	g.cur.NewBr(join)
	g.cur = join
	return true, nil
}
