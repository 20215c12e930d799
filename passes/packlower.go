package passes

import "github.com/kgen-dev/kgen/ir"

// PackLower expands every Pack into loops, for backends without a packing routine (the LLVM backend):
//
//	for q = 0 .. N step Panel {            // one panel
//	  for d < Depth {
//	    for r < min(Panel, N - q) { Dst[DstOff + q·Depth + d·Panel + r] = Value(P = q + r, D = d) }
//	    for r = min(Panel, N - q) .. Panel { Dst[DstOff + q·Depth + d·Panel + r] = 0 }
//	  }
//	}
//
// Guarantees: the same elements as the Pack's meaning (ir.Pack), each source element read once and the
// padding of the last panel written with zeros without reading the source; the destination is written
// in order, and the lane loop's bound min(Panel, N - q) has the constant Panel the backend versions on.
func PackLower(f *ir.Func, c *Context) (bool, error) {
	n := funcNamer(f)
	changed := false
	var rewrite func(body []ir.Node) []ir.Node
	rewrite = func(body []ir.Node) []ir.Node {
		return ir.RewriteNodes(body, func(node ir.Node) []ir.Node {
			p, ok := node.(*ir.Pack)
			if !ok {
				return []ir.Node{node}
			}
			changed = true
			return []ir.Node{lowerPack(n, p)}
		})
	}
	f.Body = rewrite(f.Body)
	return changed, nil
}

// lowerPack builds the loops of one Pack (see PackLower).
func lowerPack(n namer, p *ir.Pack) ir.Node {
	q, d := &ir.Var{Name: n.name("pq")}, &ir.Var{Name: n.name("pd")}
	r, z := &ir.Var{Name: n.name("pr")}, &ir.Var{Name: n.name("pz")}
	base := ir.IAdd(p.DstOff, ir.IAdd(ir.IMul(ir.IVar{V: q}, p.Depth), ir.IMul(ir.IVar{V: d}, p.Panel)))
	at := func(lane *ir.Var) []ir.IExpr { return []ir.IExpr{ir.Simplify(ir.IAdd(base, ir.IVar{V: lane}))} }
	val := ir.SubstVars(p.Value, map[*ir.Var]ir.IExpr{p.P: ir.IAdd(ir.IVar{V: q}, ir.IVar{V: r}), p.D: ir.IVar{V: d}})
	if val.Type() != p.Dst.Type {
		val = &ir.Cast{X: val, T: p.Dst.Type}
	}
	valid := ir.IMin(p.Panel, ir.ISub(p.N, ir.IVar{V: q}))
	one := ir.IConst{V: 1}
	copyLanes := &ir.Loop{Var: r, Lo: ir.IConst{V: 0}, Hi: valid, Step: one,
		Body: []ir.Node{&ir.Store{T: p.Dst, Idx: at(r), Value: val}}}
	padLanes := &ir.Loop{Var: z, Lo: valid, Hi: p.Panel, Step: one,
		Body: []ir.Node{&ir.Store{T: p.Dst, Idx: at(z), Value: &ir.Const{Val: 0, T: p.Dst.Type}}}}
	depth := &ir.Loop{Var: d, Lo: ir.IConst{V: 0}, Hi: p.Depth, Step: one, Body: []ir.Node{copyLanes, padLanes}}
	return &ir.Loop{Var: q, Lo: ir.IConst{V: 0}, Hi: p.N, Step: p.Panel, Body: []ir.Node{depth}}
}
