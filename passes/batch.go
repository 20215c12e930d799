package passes

import "github.com/kgen-dev/kgen/ir"

// Batch gives the loop over the products of a batched GEMM (bmm's b, serial or parallel) a version that
// hands a chunk of products to one batched microkernel call (ir.MicroBatched) when every product takes
// the whole-K unpacked version (smallVersion) and is one column tile wide:
//
//	if min(M − RowsMax − 1, SmallWork − M·N·K, NR − N, N − 1) ≥ 0 {
//	    for b_c = lo .. hi step batchChunk {    (serial or parallel, as the b loop)
//	        micro batch min(batchChunk, hi − b_c) of M×N products at b_c, strides = the offsets' steps in b
//	    }
//	} else {
//	    for b = lo .. hi { the versions as before }
//	}
//
// The condition is the one under which pack's chain (M ≤ RowsMax → rows, else M·N·K ≤ SmallWork →
// smallVersion) takes the small version, with 1 ≤ N ≤ NR added (the batched kernel walks the row tiles
// of a product, not its column tiles, and its call needs a C to point into); the IR has no logical
// operators, so it is one minimum. The kernel computes each product as the unpacked tile loops would,
// up to the reassociation the contract allows (docs/MICROKERNEL.md, "Batched products": a tall tile
// where n fits one vector), and the same whatever the product's place in the batch. A product of a
// 1000 × 8³ batch had cost 28 ns on the Zen 5, 8 of them in the loop nest around its microkernel call
// (the version tests, the slicing, the slot's indirect call); docs/PERF.md, session 14. The test does not depend on b, so it versions the loop, not its body: the
// b loop itself is kept as it was. It runs after parallel, so a parallel b loop's copy is parallel over
// the chunks (each worker gets whole chunks; the loop's cost becomes a chunk's).
func Batch(f *ir.Func, c *Context) (bool, error) {
	n := funcNamer(f)
	changed := false
	f.Body = ir.RewriteNodes(f.Body, func(x ir.Node) []ir.Node {
		if l, ok := x.(*ir.Loop); ok {
			if v := batchVersion(n, l); v != nil {
				changed = true
				return []ir.Node{v}
			}
		}
		return []ir.Node{x}
	})
	return changed, nil
}

// batchChunk is the number of products per batched call: a few, so that two workers still split a batch of
// a hundred products evenly (chunks are the parallel loop's iterations), and enough to spread the call's
// cost (a few ns in Go) over them.
const batchChunk = 4

// batchVersion returns l versioned with its batched copy (see Batch), or nil when l is not the loop of a
// batched GEMM's products in the form pack and parallel leave it.
func batchVersion(n namer, l *ir.Loop) *ir.If {
	if one, ok := l.Step.(ir.IConst); !ok || one.V != 1 || len(l.Body) != 1 {
		return nil
	}
	rowsIf, ok := l.Body[0].(*ir.If)
	if !ok || len(rowsIf.Else) != 1 {
		return nil
	}
	smallIf, ok := rowsIf.Else[0].(*ir.If)
	if !ok || len(smallIf.Then) != 1 {
		return nil
	}
	jr, ok := smallIf.Then[0].(*ir.Loop)
	if !ok || len(jr.Body) != 1 {
		return nil
	}
	irl, ok := jr.Body[0].(*ir.Loop)
	if !ok || len(irl.Body) != 1 {
		return nil
	}
	u, ok := irl.Body[0].(*ir.Micro)
	if !ok || u.Kind() != ir.MicroUnpacked || u.Batch != nil {
		return nil
	}
	rowsMax, okR := planTest(rowsIf.Cond, u.Slot+".RowsMax")
	smallWork, okS := planTest(smallIf.Cond, u.Slot+".SmallWork")
	mDim, okM := irl.Hi.(ir.IDim)
	nDim, okN := jr.Hi.(ir.IDim)
	kDim, okK := u.KC.(ir.IDim)
	if !okR || !okS || !okM || !okN || !okK {
		return nil
	}
	b0 := &ir.Var{Name: n.name(l.Var.Name + "_c")}
	at := map[*ir.Var]ir.IExpr{irl.Var: ir.IConst{V: 0}, jr.Var: ir.IConst{V: 0}, l.Var: ir.IVar{V: b0}}
	// stride returns the step of offset e (tile at the origin, product b0) from one product to the next,
	// nil unless e is affine in b0.
	stride := func(e ir.IExpr) ir.IExpr {
		d, ok := affineCoef(e, b0)
		if !ok {
			return nil
		}
		return ir.Simplify(d)
	}
	r := *u
	r.A = u.A.MapIExprs(func(e ir.IExpr) ir.IExpr { return ir.SubstIExpr(e, at) })
	r.B = u.B.MapIExprs(func(e ir.IExpr) ir.IExpr { return ir.SubstIExpr(e, at) })
	r.COff = ir.SubstIExpr(u.COff, at)
	r.M, r.N = mDim, nDim
	if usesVar(r.A.Layout.Offset(ir.IConst{V: 0}, ir.IConst{V: 0}), b0) {
		return nil
	}
	if u.Bias != nil {
		r.BiasOff = ir.SubstIExpr(u.BiasOff, at)
		if usesVar(r.BiasOff, b0) {
			return nil // a bias per product: the kernel reads one
		}
	}
	for _, e := range []ir.Expr{u.Alpha, u.Beta, u.EP} {
		for _, v := range []*ir.Var{l.Var, irl.Var, jr.Var} {
			if uses(e, v) {
				return nil
			}
		}
	}
	sa, sb, sc := stride(r.A.Off), stride(r.B.Off), stride(r.COff)
	if sa == nil || sb == nil || sc == nil {
		return nil
	}
	chunk := ir.IConst{V: batchChunk}
	r.Batch = &ir.MicroBatch{Count: ir.IMin(chunk, ir.ISub(l.Hi, ir.IVar{V: b0})), AStride: sa, BStride: sb, CStride: sc}

	f64 := func(op ir.Op, x, y ir.Expr) ir.Expr { return &ir.Binary{Op: op, X: x, Y: y, T: ir.F64} }
	one := &ir.Const{Val: 1, T: ir.F64}
	m := &ir.DimVal{D: mDim.D, T: ir.F64}
	nn := &ir.DimVal{D: nDim.D, T: ir.F64}
	work := f64(ir.Mul, f64(ir.Mul, m, nn), &ir.DimVal{D: kDim.D, T: ir.F64})
	test := f64(ir.Min, f64(ir.Min, f64(ir.Sub, f64(ir.Sub, m, rowsMax), one), f64(ir.Sub, smallWork, work)),
		f64(ir.Min, f64(ir.Sub, planF64(u.Slot, "NR"), nn), f64(ir.Sub, nn, one)))
	cond := &ir.Binary{Op: ir.Ge, X: test, Y: &ir.Const{Val: 0, T: ir.F64}, T: ir.Bool}

	chunks := &ir.Loop{Var: b0, Lo: l.Lo, Hi: l.Hi, Step: chunk, Kind: l.Kind, Body: []ir.Node{&r}}
	if l.Cost != nil {
		chunks.Cost = ir.IMul(chunk, ir.SubstIExpr(l.Cost, map[*ir.Var]ir.IExpr{l.Var: ir.IVar{V: b0}}))
	}
	return &ir.If{Cond: cond, Then: []ir.Node{chunks}, Else: []ir.Node{l}}
}

// affineCoef returns the coefficient of v in e when e is affine in v (v only in sums and in products with
// factors free of v), as an expression free of v; ok false otherwise. Simplify folds linear forms only, so
// b·M·K − (b−1)·M·K would not cancel: this is the symbolic derivative.
func affineCoef(e ir.IExpr, v *ir.Var) (ir.IExpr, bool) {
	zero := ir.IConst{V: 0}
	switch x := e.(type) {
	case ir.IVar:
		if x.V == v {
			return ir.IConst{V: 1}, true
		}
		return zero, true
	case ir.IBin:
		if !usesVar(x, v) {
			return zero, true
		}
		dx, okX := affineCoef(x.X, v)
		dy, okY := affineCoef(x.Y, v)
		if !okX || !okY {
			return nil, false
		}
		switch x.Op {
		case '+':
			return ir.IAdd(dx, dy), true
		case '-':
			return ir.ISub(dx, dy), true
		case '*':
			if usesVar(x.X, v) && usesVar(x.Y, v) {
				return nil, false
			}
			if usesVar(x.X, v) {
				return ir.IMul(dx, x.Y), true
			}
			return ir.IMul(x.X, dy), true
		}
		return nil, false
	}
	return zero, true
}

// planTest returns Y of the test X <= plan value name (pack's fewRows and smallGemm), if cond is one.
func planTest(cond ir.Expr, name string) (ir.Expr, bool) {
	b, ok := cond.(*ir.Binary)
	if !ok || b.Op != ir.Le {
		return nil, false
	}
	if p, ok := b.Y.(*ir.PlanVal); ok && p.Name == name {
		return p, true
	}
	return nil, false
}
