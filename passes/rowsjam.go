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
		if usesVar(e, p) {
			return nil
		}
	}
	for _, e := range st.Idx {
		if usesVar(e, p) {
			return nil
		}
	}
	sum, ok := st.Value.(*ir.Binary)
	if !ok || sum.Op != ir.Add {
		return nil
	}
	if ld, ok := sum.X.(*ir.Load); !ok || ld.T != st.T || !sameIndex(ld.Idx, st.Idx) {
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
	end := splitEnd(l, g)
	general := jamLoop(l, li, lj, g, end, -1, n)
	var main ir.Node = general
	if rows, ok := rowsDim(li); ok && !usesVar(lj.Lo, li.Var) && !usesVar(lj.Hi, li.Var) {
		// One version per row count up to rowsJamRows, its rows unrolled in the column loop: each
		// column group of the G rows of B is loaded once for all rows (as the amd64 rows kernel does)
		// instead of once per row.
		for r := rowsJamRows; r >= 1; r-- {
			eq := &ir.Binary{Op: ir.Eq, X: &ir.DimVal{D: rows, T: ir.F64}, Y: &ir.Const{Val: float64(r), T: ir.F64}, T: ir.Bool}
			main = &ir.If{Cond: eq, Then: []ir.Node{jamLoop(l, li, lj, g, end, r, n)}, Else: []ir.Node{main}}
		}
	}
	l.Lo = end
	return []ir.Node{main, l}
}

// rowsJamRows is the most rows RowsJam writes a version with unrolled rows for (the amd64 rows
// kernels' RowsMax); more rows run the version with a row loop.
const rowsJamRows = 4

// rowsDim is the dim D of a row loop over 0 .. D (or 0 .. min(D, D), as mmalower writes it).
func rowsDim(li *ir.Loop) (*ir.Dim, bool) {
	if c, ok := li.Lo.(ir.IConst); !ok || c.V != 0 {
		return nil, false
	}
	hi := li.Hi
	if b, ok := hi.(ir.IBin); ok && b.Op == 'm' {
		x, okx := b.X.(ir.IDim)
		y, oky := b.Y.(ir.IDim)
		if !okx || !oky || x.D != y.D {
			return nil, false
		}
		hi = x
	}
	d, ok := hi.(ir.IDim)
	return d.D, ok
}

// jamLoop is the main loop of the jammed form of l (row loop li, column loop lj) over [l.Lo, end) in
// steps of g: with a row loop when rows < 0, else with rows rows unrolled in the column loop (the
// caller checks that li runs over exactly that many).
func jamLoop(l, li, lj *ir.Loop, g int, end ir.IExpr, rows int, n namer) *ir.Loop {
	p := l.Var
	pm := &ir.Var{Name: n.name(p.Name + "g")}
	jm := &ir.Var{Name: n.name(lj.Var.Name + "g")}
	one := ir.IConst{V: 1}
	copies := func(i ir.IExpr) []ir.Node {
		var body []ir.Node
		for k := 0; k < g; k++ {
			m := map[*ir.Var]ir.IExpr{p: ir.IAdd(ir.IVar{V: pm}, ir.IConst{V: k}), li.Var: i, lj.Var: ir.IVar{V: jm}}
			body = append(body, cloneBody(lj.Body, m, nil, n)...)
		}
		return body
	}
	var mid ir.Node
	if rows < 0 {
		im := &ir.Var{Name: n.name(li.Var.Name + "g")}
		at := map[*ir.Var]ir.IExpr{li.Var: ir.IVar{V: im}}
		inner := &ir.Loop{Var: jm, Lo: ir.SubstIExpr(lj.Lo, at), Hi: ir.SubstIExpr(lj.Hi, at), Step: one, Body: copies(ir.IVar{V: im})}
		mid = &ir.Loop{Var: im, Lo: li.Lo, Hi: li.Hi, Step: one, Body: []ir.Node{inner}}
	} else {
		var body []ir.Node
		for i := 0; i < rows; i++ {
			body = append(body, copies(ir.IConst{V: i})...)
		}
		// the column bounds may not depend on the row (checked for rows ≥ 0 by the caller)
		mid = &ir.Loop{Var: jm, Lo: lj.Lo, Hi: lj.Hi, Step: one, Body: body}
	}
	return &ir.Loop{Var: pm, Lo: l.Lo, Hi: end, Step: ir.IConst{V: g}, Body: []ir.Node{mid}}
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
