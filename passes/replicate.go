package passes

import "github.com/kgen-dev/kgen/ir"

// This file holds the helpers Vectorize and Unroll share: splitting a loop into a main part of whole
// groups and a remainder, and copying a body with the loop variable shifted (Unroll's copies; a Vector
// loop keeps its single lane body, ir/vector.go).

// innermost reports whether l contains no loops, packs or microkernel calls.
func innermost(l *ir.Loop) bool {
	ok := true
	ir.WalkNodes(l.Body, func(n ir.Node) bool {
		switch n.(type) {
		case *ir.Loop, *ir.Pack, *ir.Micro, *ir.Transpose, *ir.Alloc, *ir.Nest:
			ok = false
		}
		return ok
	})
	return ok
}

// splitEnd is where the whole groups of w iterations of l end: lo + (hi-lo)/w*w.
func splitEnd(l *ir.Loop, w int) ir.IExpr {
	return ir.IAdd(l.Lo, ir.IMul(ir.IDiv(ir.ISub(l.Hi, l.Lo), ir.IConst{V: w}), ir.IConst{V: w}))
}

// remainder is a serial copy of l over [end, hi) with a fresh variable and fresh locals.
func remainder(l *ir.Loop, end ir.IExpr, n namer) *ir.Loop {
	v := &ir.Var{Name: n.name(l.Var.Name + "r")}
	return &ir.Loop{Var: v, Lo: end, Hi: l.Hi, Step: ir.IConst{V: 1}, Body: cloneBody(l.Body, map[*ir.Var]ir.IExpr{l.Var: ir.IVar{V: v}}, nil, n)}
}

// cloneBody deep-copies straight-line nodes, substituting variables and renaming the locals declared
// inside (locals declared outside are kept, or replaced per ren).
func cloneBody(body []ir.Node, m map[*ir.Var]ir.IExpr, ren map[*ir.LocalVar]*ir.LocalVar, n namer) []ir.Node {
	if ren == nil {
		ren = map[*ir.LocalVar]*ir.LocalVar{}
	} else {
		c := map[*ir.LocalVar]*ir.LocalVar{}
		for k, v := range ren {
			c[k] = v
		}
		ren = c
	}
	fix := func(e ir.Expr) ir.Expr {
		e = ir.SubstVars(e, m)
		return ir.Rewrite(e, func(x ir.Expr) ir.Expr {
			if l, ok := x.(*ir.Local); ok {
				if r, ok := ren[l.L]; ok {
					return &ir.Local{L: r}
				}
			}
			return x
		})
	}
	var out []ir.Node
	for _, node := range body {
		switch x := node.(type) {
		case *ir.Decl:
			nl := &ir.LocalVar{Name: n.name(x.L.Name), T: x.L.T}
			init := fix(x.Init)
			ren[x.L] = nl
			out = append(out, &ir.Decl{L: nl, Init: init})
		case *ir.Assign:
			l := x.L
			if r, ok := ren[l]; ok {
				l = r
			}
			out = append(out, &ir.Assign{L: l, Value: fix(x.Value)})
		case *ir.Store:
			idx := make([]ir.IExpr, len(x.Idx))
			for i, e := range x.Idx {
				idx[i] = ir.SubstIExpr(e, m)
			}
			out = append(out, &ir.Store{T: x.T, Idx: idx, Value: fix(x.Value)})
		}
	}
	return out
}

// declaredIn lists the locals declared directly in body.
func declaredIn(body []ir.Node) map[*ir.LocalVar]bool {
	d := map[*ir.LocalVar]bool{}
	for _, n := range body {
		if x, ok := n.(*ir.Decl); ok {
			d[x.L] = true
		}
	}
	return d
}

// carried lists the locals assigned in body but declared outside it (loop-carried values).
func carried(body []ir.Node) []*ir.Assign {
	decl := declaredIn(body)
	var out []*ir.Assign
	for _, n := range body {
		if x, ok := n.(*ir.Assign); ok && !decl[x.L] {
			out = append(out, x)
		}
	}
	return out
}

// replicate turns l into a loop of Kind kind over whole groups of w iterations, whose body is w copies
// of l's body with the variable shifted by 0..w-1, followed by the remainder loop. Loop-carried locals
// stay shared between copies, so the order of operations is unchanged.
func replicate(l *ir.Loop, w int, kind ir.LoopKind, n namer) []ir.Node {
	end := splitEnd(l, w)
	rem := remainder(l, end, n)
	var body []ir.Node
	for lane := 0; lane < w; lane++ {
		body = append(body, cloneBody(l.Body, map[*ir.Var]ir.IExpr{l.Var: ir.IAdd(ir.IVar{V: l.Var}, ir.IConst{V: lane})}, nil, n)...)
	}
	main := &ir.Loop{Var: l.Var, Lo: l.Lo, Hi: end, Step: ir.IConst{V: w}, Kind: kind, Width: w, Body: body}
	return []ir.Node{main, rem}
}
