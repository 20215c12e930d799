package passes

import (
	"math"

	"github.com/kgen-dev/kgen/ir"
)

// gpuRW is the plan symbol of the warps of a block that reduces one row (32·RW threads).
const gpuRW = "gpu.RW"

// mapRowNest maps a row nest — an independent outer loop i whose body is a sequence of row-level
// declarations, inner loops over j and row-level stores, with at least one reduction over j (softmax,
// layernorm, a row sum) — onto one block of RW warps per row (plan symbol gpu.RW; thread t = 32·w +
// lane). Every inner loop is spread cyclically over the threads (thread t takes j = lo+t, lo+t+32·RW,
// ...), the same way for all of them, so an element a thread writes in one loop is the element it reads
// in the next. A reduction loop accumulates per-thread partials; before a row-level store reads the
// reduced value, they meet in two levels: each warp reduces its lanes' partials (ir.WarpReduce of the
// given scope: a butterfly, shfl.sync.bfly / simd_shuffle_xor, no memory), lane 0 of each warp writes
// the warp's partial to a shared buffer of RW elements, a block barrier, then warp 0 reads them (lane u
// folds partial u into the identity — one trip, since RW ≤ 32; the other lanes keep the identity) and reduces them the same way; its lane 0 stores, and
// a barrier publishes the stored value to the row's later loops (and frees the buffer). The order is
// therefore fixed by the plan: the butterfly over the 32 lanes' partials, then over the warps'
// partials in the same tree. It reassociates sums (max and min are exact). ok is false when the nest is
// not of this form.
func mapRowNest(f *ir.Func, nest *ir.Nest, name string, nm namer, scope ir.Scope) (*ir.Launch, bool) {
	row, ok := soleLoopOf(nest.Body)
	if !ok || row.Kind != ir.Serial || !independentLoop(row) {
		return nil, false
	}
	rowLocal := map[*ir.LocalVar]bool{}
	partial := map[*ir.LocalVar]ir.Op{} // reduced locals not yet combined, with their operator
	reductions := 0
	for _, n := range row.Body {
		switch n := n.(type) {
		case *ir.Decl:
			if readsLocals(n.Init, rowLocal) {
				return nil, false
			}
			rowLocal[n.L] = true
		case *ir.Loop:
			if n.Kind != ir.Serial || loopReadsLocals(n, partial) {
				return nil, false
			}
			if ops, isRed := reductionLoop(n, rowLocal); isRed {
				for l, op := range ops {
					partial[l] = op
				}
				reductions++
			} else if !independentLoop(n) || assignsOuter(n) {
				return nil, false
			}
		case *ir.Store:
			// combined before it; no other row-level node
		default:
			return nil, false
		}
	}
	if reductions == 0 {
		return nil, false
	}
	// Build the launch.
	rw := planSym(f, gpuRW, 2)
	one, zero, warp := ir.IConst{V: 1}, ir.IConst{V: 0}, ir.IConst{V: 32}
	bi := &ir.Var{Name: nm.name("b" + row.Var.Name)}
	wv, lv := &ir.Var{Name: nm.name("w" + row.Var.Name)}, &ir.Var{Name: nm.name("lane")}
	tid := ir.IAdd(ir.IMul(ir.IVar{V: wv}, warp), ir.IVar{V: lv})
	is0 := func(v *ir.Var) ir.Expr {
		return &ir.Binary{Op: ir.Eq, X: &ir.VarVal{V: v, T: ir.I32}, Y: &ir.Const{Val: 0, T: ir.I32}, T: ir.Bool}
	}
	var bufs []*ir.Tensor
	var order []*ir.LocalVar // reduced locals, in the order their loops come
	var body []ir.Node
	partial = map[*ir.LocalVar]ir.Op{}
	barrier := func() ir.Node { return &ir.Barrier{Scope: ir.ScopeBlock} }
	for _, n := range row.Body {
		switch n := n.(type) {
		case *ir.Decl:
			body = append(body, n)
		case *ir.Loop:
			if ops, isRed := reductionLoop(n, rowLocal); isRed {
				for _, a := range n.Body {
					l := a.(*ir.Assign).L
					if _, seen := partial[l]; !seen {
						order = append(order, l)
					}
					partial[l] = ops[l]
				}
			}
			n.Lo, n.Step = ir.IAdd(n.Lo, ir.IMul(tid, n.Step)), ir.IMul(n.Step, ir.IMul(rw, warp))
			body = append(body, n)
		case *ir.Store:
			var second []ir.Node // warp 0: reduce the warps' partials the store reads, then store
			for _, l := range order {
				op, open := partial[l]
				if !open || !readsLocals(n.Value, map[*ir.LocalVar]bool{l: true}) {
					continue
				}
				buf := &ir.Tensor{Name: nm.name("red"), Type: l.T, Kind: ir.Scratch, Space: ir.Shared, Size: rw}
				bufs = append(bufs, buf)
				u := &ir.Var{Name: nm.name("u")}
				body = append(body, &ir.WarpReduce{Op: op, L: l, Scope: scope},
					&ir.If{Cond: is0(lv), Then: []ir.Node{&ir.Store{T: buf, Idx: []ir.IExpr{ir.IVar{V: wv}}, Value: &ir.Local{L: l}}}})
				second = append(second,
					&ir.Assign{L: l, Value: &ir.Const{Val: reduceIdentity(op), T: l.T}},
					&ir.Loop{Var: u, Lo: ir.IVar{V: lv}, Hi: rw, Step: warp, Body: []ir.Node{
						&ir.Assign{L: l, Value: &ir.Binary{Op: op, X: &ir.Local{L: l}, Y: &ir.Load{T: buf, Idx: []ir.IExpr{ir.IVar{V: u}}}, T: l.T}},
					}},
					&ir.WarpReduce{Op: op, L: l, Scope: scope})
				delete(partial, l)
			}
			if len(second) > 0 {
				body = append(body, barrier()) // every warp's partial is in shared memory
			}
			store := []ir.Node{&ir.If{Cond: is0(lv), Then: []ir.Node{n}}}
			body = append(body, &ir.If{Cond: is0(wv), Then: append(second, store...)}, barrier())
		}
	}
	// One block per row: the row loop stays, running the block's row (a uniform bound: barriers inside
	// are reached by every thread).
	grid := &ir.Loop{Var: bi, Lo: row.Lo, Hi: row.Hi, Step: row.Step, Kind: ir.GPUGrid}
	thread := &ir.Loop{Var: wv, Lo: zero, Hi: rw, Step: one, Kind: ir.GPUWarp, Body: []ir.Node{
		&ir.Loop{Var: lv, Lo: zero, Hi: warp, Step: one, Kind: ir.GPUThread, Body: []ir.Node{
			&ir.Loop{Var: row.Var, Lo: ir.IVar{V: bi}, Hi: ir.IAdd(ir.IVar{V: bi}, one), Step: one, Body: body},
		}},
	}}
	node := []ir.Node{thread}
	for i := len(bufs) - 1; i >= 0; i-- {
		node = []ir.Node{&ir.Alloc{T: bufs[i], Body: node}}
	}
	grid.Body = node
	reads, writes := ir.LaunchTensors([]ir.Node{grid})
	return &ir.Launch{Name: name, Grid: []ir.IExpr{ceilDiv(ir.ISub(row.Hi, row.Lo), row.Step)}, Block: []ir.IExpr{rw, warp},
		Reads: reads, Writes: writes, Body: []ir.Node{grid}}, true
}

// reduceIdentity is the identity of a reduction operator: -0 for + (x + -0 is x for every x, -0
// included), -Inf for max, +Inf for min.
func reduceIdentity(op ir.Op) float64 {
	switch op {
	case ir.Max:
		return math.Inf(-1)
	case ir.Min:
		return math.Inf(1)
	}
	return math.Copysign(0, -1)
}

// reductionLoop reports whether every node of l's body is `acc = acc op e` (op +, max or min) for a row
// local acc, e reading no row local; it returns the operator of each.
func reductionLoop(l *ir.Loop, rowLocal map[*ir.LocalVar]bool) (map[*ir.LocalVar]ir.Op, bool) {
	ops := map[*ir.LocalVar]ir.Op{}
	for _, n := range l.Body {
		a, ok := n.(*ir.Assign)
		if !ok || !rowLocal[a.L] {
			return nil, false
		}
		b, ok := a.Value.(*ir.Binary)
		if !ok || (b.Op != ir.Add && b.Op != ir.Max && b.Op != ir.Min) {
			return nil, false
		}
		x, ok := b.X.(*ir.Local)
		if !ok || x.L != a.L || readsLocals(b.Y, rowLocal) {
			return nil, false
		}
		if op, seen := ops[a.L]; seen && op != b.Op {
			return nil, false
		}
		ops[a.L] = b.Op
	}
	return ops, len(ops) > 0
}

func readsLocals(e ir.Expr, set map[*ir.LocalVar]bool) bool {
	found := false
	ir.Walk(e, func(x ir.Expr) {
		if l, ok := x.(*ir.Local); ok && set[l.L] {
			found = true
		}
	})
	return found
}

// loopReadsLocals reports whether l reads a local of set (a partial not yet combined).
func loopReadsLocals(l *ir.Loop, set map[*ir.LocalVar]ir.Op) bool {
	s := map[*ir.LocalVar]bool{}
	for k := range set {
		s[k] = true
	}
	found := false
	ir.WalkNodes(l.Body, func(n ir.Node) bool {
		ir.NodeExprs(n, func(e ir.Expr) { found = found || readsLocals(e, s) })
		return !found
	})
	return found
}

// assignsOuter reports whether l assigns a local it does not declare.
func assignsOuter(l *ir.Loop) bool {
	declared := map[*ir.LocalVar]bool{}
	outer := false
	ir.WalkNodes(l.Body, func(n ir.Node) bool {
		switch n := n.(type) {
		case *ir.Decl:
			declared[n.L] = true
		case *ir.Assign:
			outer = outer || !declared[n.L]
		}
		return true
	})
	return outer
}
