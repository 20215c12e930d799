package passes

import "github.com/kgen-dev/kgen/ir"

// Beta implements the beta rule (docs/LANGUAGE.md, "Scaled outputs"; ir.BetaFactor) in the loops the
// other passes leave: wherever a nest still computes a scaled-output term f·out (a GEMM turned into
// microkernel tiles does not: the microkernels skip C when beta is zero), the code that computes it is
// versioned on f == 0, the first version without the term (ir.DropBeta). It versions the smallest unit
// that can be: a whole vector loop (so that a SIMD backend gets a loop without the term), else the store
// or assignment itself. It runs last, so that every earlier pass sees one nest. Guarantees: the result
// interprets as the algorithm level does under the beta rule, and a version reads out through the term
// only when f != 0.
func Beta(f *ir.Func, c *Context) (bool, error) {
	changed := false
	for _, node := range f.Body {
		nest, ok := node.(*ir.Nest)
		if !ok {
			continue
		}
		for _, s := range nest.Stmts {
			for _, fac := range ir.BetaFactors(s.Value, s.Out) {
				v := &versioner{out: s.Out, f: fac}
				nest.Body = v.body(nest.Body)
				changed = changed || v.changed
			}
		}
	}
	return changed, nil
}

// versioner versions the code computing the scaled-output terms of out with factor f.
type versioner struct {
	out     *ir.Tensor
	f       ir.Expr
	changed bool
}

// has reports whether any expression in the nodes holds the term.
func (v *versioner) has(nodes ...ir.Node) bool {
	found := false
	ir.WalkNodes(nodes, func(n ir.Node) bool {
		ir.NodeExprs(n, func(e ir.Expr) {
			found = found || ir.HasBeta(e, v.out, v.f)
		})
		return !found
	})
	return found
}

// split returns If f == 0 { without } else { n }.
func (v *versioner) split(n ir.Node, without []ir.Node) ir.Node {
	v.changed = true
	return &ir.If{Cond: ir.BetaIsZero(v.f), Then: without, Else: []ir.Node{n}}
}

func (v *versioner) body(body []ir.Node) []ir.Node {
	var out []ir.Node
	for _, n := range body {
		if !v.has(n) {
			out = append(out, n)
			continue
		}
		switch x := n.(type) {
		case *ir.Loop:
			if x.Kind == ir.Vector {
				out = append(out, v.split(x, []ir.Node{v.clone(x)}))
				continue
			}
			x.Body = v.body(x.Body)
		case *ir.Nest:
			x.Body = v.body(x.Body)
		case *ir.Alloc:
			x.Body = v.body(x.Body)
		case *ir.If:
			x.Then, x.Else = v.body(x.Then), v.body(x.Else)
		case *ir.Store, *ir.Assign:
			out = append(out, v.split(x, []ir.Node{v.clone(x)}))
			continue
		case *ir.Decl:
			// A declaration stays outside the versions (it must stay in scope): it starts at zero and
			// each version assigns it.
			zero := &ir.Decl{L: x.L, Init: &ir.Const{Val: 0, T: x.Init.Type()}}
			orig := &ir.Assign{L: x.L, Value: x.Init}
			out = append(out, zero, v.split(orig, []ir.Node{v.clone(orig)}))
			continue
		}
		out = append(out, n)
	}
	return out
}

// clone copies n deeply enough to rewrite its expressions without the term; variables, locals and
// tensors are shared (the two versions are alternatives, never both run).
func (v *versioner) clone(n ir.Node) ir.Node {
	drop := func(e ir.Expr) ir.Expr { return ir.DropBeta(e, v.out, v.f) }
	nodes := func(ns []ir.Node) []ir.Node {
		out := make([]ir.Node, len(ns))
		for i, m := range ns {
			out[i] = v.clone(m)
		}
		return out
	}
	switch x := n.(type) {
	case *ir.Loop:
		c := *x
		c.Body = nodes(x.Body)
		return &c
	case *ir.Store:
		c := *x
		c.Value = drop(x.Value)
		return &c
	case *ir.Assign:
		c := *x
		c.Value = drop(x.Value)
		return &c
	case *ir.Decl:
		c := *x
		c.Init = drop(x.Init)
		return &c
	case *ir.If:
		return &ir.If{Cond: drop(x.Cond), Then: nodes(x.Then), Else: nodes(x.Else)}
	case *ir.Alloc:
		c := *x
		c.Body = nodes(x.Body)
		return &c
	case *ir.Nest:
		c := *x
		c.Body = nodes(x.Body)
		return &c
	}
	return n // Pack, Micro, Transpose: no scaled-output term
}
