package passes

import "github.com/kgen-dev/kgen/ir"

// TransposeLower expands every Transpose tile (Tensorize's intrinsic for a 2-D transpose) into the
// loops of its meaning, for backends without a transpose routine (the LLVM backend):
//
//	for r < Rows { for c < Cols { Dst[DstOff + c·LDD + r] = Src[SrcOff + r·LDS + c] } }
//
// Guarantees: the same stores as the Transpose (ir.Transpose), reading the source along its rows.
func TransposeLower(f *ir.Func, c *Context) (bool, error) {
	n := funcNamer(f)
	changed := false
	f.Body = ir.RewriteNodes(f.Body, func(node ir.Node) []ir.Node {
		t, ok := node.(*ir.Transpose)
		if !ok {
			return []ir.Node{node}
		}
		changed = true
		r, col := &ir.Var{Name: n.name("tr")}, &ir.Var{Name: n.name("tc")}
		rv, cv := ir.IVar{V: r}, ir.IVar{V: col}
		src := &ir.Load{T: t.Src, Idx: ir.FlatIndex(t.Src, ir.Simplify(ir.IAdd(t.SrcOff, ir.IAdd(ir.IMul(rv, t.LDS), cv))))}
		st := &ir.Store{T: t.Dst, Idx: ir.FlatIndex(t.Dst, ir.Simplify(ir.IAdd(t.DstOff, ir.IAdd(ir.IMul(cv, t.LDD), rv)))), Value: src}
		one := ir.IConst{V: 1}
		inner := &ir.Loop{Var: col, Lo: ir.IConst{V: 0}, Hi: t.Cols, Step: one, Body: []ir.Node{st}}
		return []ir.Node{&ir.Loop{Var: r, Lo: ir.IConst{V: 0}, Hi: t.Rows, Step: one, Body: []ir.Node{inner}}}
	})
	return changed, nil
}
