package passes

import "github.com/kgen-dev/kgen/ir"

// rowsJamG is how many steps of the reduction RowsJam puts in one pass over the accumulator rows: the
// amd64 rows kernel's group of rows of B (codegen/amd64/rows.go, G = 4 for m ≤ 2).
const rowsJamG = 4

// RowsJam unrolls the reduction loop of a rows-form accumulator (the rows version of a GEMM, pack.go's
// rowsVersion, after mmalower: an accumulator of M·RowsNB elements, a length known only at run time,
// so a buffer in memory) by rowsJamG and jams the copies into its row and column loops:
//
//	for p { for i { for j { acc[i, j] = acc[i, j] + e(p, i, j) } } }
//
// becomes
//
//	for p = lo .. end step G { for i { for j { acc[i, j] += e(p, i, j); …; acc[i, j] += e(p+G-1, i, j) } } }
//	for p = end .. hi { for i { for j { acc[i, j] = acc[i, j] + e(p, i, j) } } }
//
// so each element of the accumulator is loaded and stored once per G steps of the reduction instead
// of once per step, while G rows of B are read side by side (G sequential streams, as the amd64 rows
// kernel reads them). Every element is still updated in increasing p order, and elements are
// independent of each other, so the result is bit-identical. Loops of any other shape are left alone;
// a register tile (constant size) is not this pass's: the LLVM backend keeps it in registers itself.
func RowsJam(f *ir.Func, c *Context) (bool, error) {
	n := funcNamer(f)
	changed := false
	f.Body = ir.RewriteNodes(f.Body, func(node ir.Node) []ir.Node {
		l, ok := node.(*ir.Loop)
		if !ok {
			return []ir.Node{node}
		}
		out := rowsJam(l, rowsJamG, n)
		if out == nil {
			return []ir.Node{node}
		}
		changed = true
		return out
	})
	return changed, nil
}

// rowsJam returns the jammed form of l (the main loop, then l itself as the remainder from the main
// loop's end), or nil when l is not a rows-form reduction loop.
func rowsJam(l *ir.Loop, g int, n namer) []ir.Node {
	serial := func(x *ir.Loop) bool { return x.Kind == ir.Serial && unitStep(x) }
	if !serial(l) || len(l.Body) != 1 {
		return nil
	}
	li, ok := l.Body[0].(*ir.Loop)
	if !ok || !serial(li) || len(li.Body) != 1 {
		return nil
	}
	lj, ok := li.Body[0].(*ir.Loop)
	if !ok || !serial(lj) || len(lj.Body) != 1 {
		return nil
	}
	st, ok := lj.Body[0].(*ir.Store)
	if !ok || st.T.Kind != ir.Scratch || st.T.Space != ir.Register || st.T.Size == nil || !hasDim(st.T.Size) {
		return nil
	}
	p := l.Var
	for _, e := range []ir.IExpr{li.Lo, li.Hi, lj.Lo, lj.Hi} {
		if iUses(e, p) {
			return nil
		}
	}
	for _, e := range st.Idx {
		if iUses(e, p) {
			return nil
		}
	}
	sum, ok := st.Value.(*ir.Binary)
	if !ok || sum.Op != ir.Add {
		return nil
	}
	if ld, ok := sum.X.(*ir.Load); !ok || ld.T != st.T || !sameIdx(ld.Idx, st.Idx) {
		return nil
	}
	bad := false
	ir.Walk(sum.Y, func(e ir.Expr) {
		switch e := e.(type) {
		case *ir.Load:
			bad = bad || e.T == st.T
		case *ir.VarVal:
			bad = bad || e.V == p // SubstVars cannot shift a loop variable used as a value
		}
	})
	if bad {
		return nil
	}
	pm := &ir.Var{Name: n.name(p.Name + "g")}
	im := &ir.Var{Name: n.name(li.Var.Name + "g")}
	jm := &ir.Var{Name: n.name(lj.Var.Name + "g")}
	rows := map[*ir.Var]ir.IExpr{li.Var: ir.IVar{V: im}}
	var body []ir.Node
	for k := 0; k < g; k++ {
		m := map[*ir.Var]ir.IExpr{p: ir.IAdd(ir.IVar{V: pm}, ir.IConst{V: k}), li.Var: ir.IVar{V: im}, lj.Var: ir.IVar{V: jm}}
		body = append(body, cloneBody(lj.Body, m, nil, n)...)
	}
	one := ir.IConst{V: 1}
	inner := &ir.Loop{Var: jm, Lo: ir.SubstIExpr(lj.Lo, rows), Hi: ir.SubstIExpr(lj.Hi, rows), Step: one, Body: body}
	mid := &ir.Loop{Var: im, Lo: li.Lo, Hi: li.Hi, Step: one, Body: []ir.Node{inner}}
	end := splitEnd(l, g)
	main := &ir.Loop{Var: pm, Lo: l.Lo, Hi: end, Step: ir.IConst{V: g}, Body: []ir.Node{mid}}
	l.Lo = end
	return []ir.Node{main, l}
}

// hasDim reports whether e mentions a dim (a run-time size).
func hasDim(e ir.IExpr) bool {
	switch e := e.(type) {
	case ir.IDim:
		return true
	case ir.IBin:
		return hasDim(e.X) || hasDim(e.Y)
	}
	return false
}

// iUses reports whether e mentions v.
func iUses(e ir.IExpr, v *ir.Var) bool {
	found := false
	ir.IVars(e, func(x *ir.Var) { found = found || x == v })
	return found
}

// sameIdx reports whether two index lists are the same expressions.
func sameIdx(a, b []ir.IExpr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].String() != b[i].String() {
			return false
		}
	}
	return true
}
