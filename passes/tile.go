package passes

import "github.com/kgen-dev/kgen/ir"

// Tile splits every full-range loop whose index is named in a `tile` directive into an outer loop over
// tiles and the original loop over one tile (x in [xo, min(xo+T, X))); with two sizes it makes three
// levels. Afterwards, in a perfect nest of tiled loops the tile loops move outside the point loops
// (i, j → io, jo, i, j), which is what makes a blocked transpose or stencil cache-friendly. Contraction
// nests are tiled by Tensorize instead. The inner loop keeps its variable, so bodies are unchanged and
// every point runs exactly once in the same per-point order: the result is unchanged.
func Tile(f *ir.Func, c *Context) (bool, error) {
	if len(c.directive("tile")) == 0 {
		return false, nil
	}
	changed := false
	n := funcNamer(f)
	var split func(body []ir.Node) []ir.Node
	split = func(body []ir.Node) []ir.Node {
		for i, node := range body {
			switch x := node.(type) {
			case *ir.Nest:
				x.Body = split(x.Body)
				x.Body = hoistTiles(x.Body)
			case *ir.Loop:
				x.Body = split(x.Body)
				sizes, ok := c.sizes("tile", x.Var.Name)
				if !ok || x.Kind != ir.Serial || !isUnitFrom0(x) {
					continue
				}
				body[i] = tileLoop(x, sizes, n)
				changed = true
			}
		}
		return body
	}
	f.Body = split(f.Body)
	return changed, nil
}

func isUnitFrom0(l *ir.Loop) bool {
	lo, ok1 := l.Lo.(ir.IConst)
	st, ok2 := l.Step.(ir.IConst)
	return ok1 && ok2 && lo.V == 0 && st.V == 1
}

// tileLoop makes the tile loops around l; each made loop is marked as a tile loop by its Width = -1
// until hoistTiles has run (it resets the mark).
func tileLoop(l *ir.Loop, sizes []int, n namer) ir.Node {
	hi := l.Hi
	var outer []*ir.Loop
	lo := ir.IExpr(ir.IConst{V: 0})
	bound := hi
	for _, t := range sizes {
		v := &ir.Var{Name: n.name(l.Var.Name + "t")}
		tl := &ir.Loop{Var: v, Lo: lo, Hi: bound, Step: ir.IConst{V: t}, Width: -1}
		outer = append(outer, tl)
		lo = ir.IVar{V: v}
		bound = ir.IMin(ir.IAdd(ir.IVar{V: v}, ir.IConst{V: t}), hi)
	}
	l.Lo, l.Hi = lo, bound
	var node ir.Node = l
	for i := len(outer) - 1; i >= 0; i-- {
		outer[i].Body = []ir.Node{node}
		node = outer[i]
	}
	return node
}

// hoistTiles reorders a perfect nest so that tile loops (Width -1) come before point loops, keeping the
// relative order within each group. A loop may only move outside loops whose bounds it does not use.
func hoistTiles(body []ir.Node) []ir.Node {
	if len(body) != 1 {
		return clearMarks(body)
	}
	var chain []*ir.Loop
	node := body[0]
	for {
		l, ok := node.(*ir.Loop)
		if !ok {
			break
		}
		chain = append(chain, l)
		if len(l.Body) != 1 {
			break
		}
		node = l.Body[0]
	}
	if len(chain) < 2 {
		return clearMarks(body)
	}
	inner := chain[len(chain)-1].Body
	var tiles, points []*ir.Loop
	for _, l := range chain {
		if l.Width == -1 {
			tiles = append(tiles, l)
		} else {
			points = append(points, l)
		}
	}
	order := append(tiles, points...)
	// legality: each loop's bounds may only use variables of loops before it in the new order
	pos := map[*ir.Var]int{}
	for i, l := range order {
		pos[l.Var] = i
	}
	for i, l := range order {
		ok := true
		for _, e := range []ir.IExpr{l.Lo, l.Hi} {
			ir.IVars(e, func(v *ir.Var) {
				if p, in := pos[v]; in && p >= i {
					ok = false
				}
			})
		}
		if !ok {
			return clearMarks(body)
		}
	}
	for i := 0; i < len(order)-1; i++ {
		order[i].Body = []ir.Node{order[i+1]}
	}
	order[len(order)-1].Body = inner
	return clearMarks([]ir.Node{order[0]})
}

func clearMarks(body []ir.Node) []ir.Node {
	ir.WalkNodes(body, func(n ir.Node) bool {
		if l, ok := n.(*ir.Loop); ok && l.Width == -1 {
			l.Width = 0
		}
		return true
	})
	return body
}
