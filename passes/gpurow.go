package passes

import (
	"github.com/kgen-dev/kgen/ir"
)

// gpuBT is the plan symbol of the threads of a block that reduces one row.
const gpuBT = "gpu.BT"

// mapRowNest maps a row nest — an independent outer loop i whose body is a sequence of row-level
// declarations, inner loops over j and row-level stores, with at least one reduction over j (softmax,
// layernorm, a row sum) — onto one block of BT threads per row (plan symbol gpu.BT). Every inner loop
// is spread cyclically over the threads (thread t takes j = lo+t, lo+t+BT, ...), the same way for all of
// them, so an element a thread writes in one loop is the element it reads in the next. A reduction
// loop accumulates per-thread partials; before a row-level store reads the reduced value, the partials
// meet in shared memory: each thread writes its own, a block barrier, thread 0 folds them in thread
// order; thread 0 stores, and a barrier publishes the stored value to the row's later loops (and frees
// the partials' buffer). The fold
// reassociates sums (max and min are exact). ok is false when the nest is not of this form.
func mapRowNest(f *ir.Func, nest *ir.Nest, name string, nm namer) (*ir.Launch, bool) {
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
	bt := planSym(f, gpuBT, 64)
	one, zero := ir.IConst{V: 1}, ir.IConst{V: 0}
	bi, tv := &ir.Var{Name: nm.name("b" + row.Var.Name)}, &ir.Var{Name: nm.name("t" + row.Var.Name)}
	tid := ir.IVar{V: tv}
	var bufs []*ir.Tensor
	var order []*ir.LocalVar // reduced locals, in the order their loops come
	var body []ir.Node
	partial = map[*ir.LocalVar]ir.Op{}
	isThread0 := &ir.Binary{Op: ir.Eq, X: &ir.VarVal{V: tv, T: ir.I32}, Y: &ir.Const{Val: 0, T: ir.I32}, T: ir.Bool}
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
			n.Lo, n.Step = ir.IAdd(n.Lo, ir.IMul(tid, n.Step)), ir.IMul(n.Step, bt)
			body = append(body, n)
		case *ir.Store:
			var then []ir.Node // thread 0: fold the partials the store reads, then store
			for _, l := range order {
				op, open := partial[l]
				if !open || !readsLocals(n.Value, map[*ir.LocalVar]bool{l: true}) {
					continue
				}
				buf := &ir.Tensor{Name: nm.name("red"), Type: l.T, Kind: ir.Scratch, Space: ir.Shared, Size: bt}
				bufs = append(bufs, buf)
				u := &ir.Var{Name: nm.name("u")}
				fold := &ir.Loop{Var: u, Lo: one, Hi: bt, Step: one, Body: []ir.Node{
					&ir.Assign{L: l, Value: &ir.Binary{Op: op, X: &ir.Local{L: l}, Y: &ir.Load{T: buf, Idx: []ir.IExpr{ir.IVar{V: u}}}, T: l.T}},
				}}
				body = append(body, &ir.Store{T: buf, Idx: []ir.IExpr{tid}, Value: &ir.Local{L: l}})
				then = append(then, fold)
				delete(partial, l)
			}
			if len(then) > 0 {
				body = append(body, barrier()) // every partial is in shared memory
			}
			body = append(body, &ir.If{Cond: isThread0, Then: append(then, n)}, barrier())
		}
	}
	// One block per row: the row loop stays, running the block's row (a uniform bound: barriers inside
	// are reached by every thread).
	grid := &ir.Loop{Var: bi, Lo: row.Lo, Hi: row.Hi, Step: row.Step, Kind: ir.GPUGrid}
	thread := &ir.Loop{Var: tv, Lo: zero, Hi: bt, Step: one, Kind: ir.GPUBlock, Body: []ir.Node{
		&ir.Loop{Var: row.Var, Lo: ir.IVar{V: bi}, Hi: ir.IAdd(ir.IVar{V: bi}, one), Step: one, Body: body},
	}}
	node := []ir.Node{thread}
	for i := len(bufs) - 1; i >= 0; i-- {
		node = []ir.Node{&ir.Alloc{T: bufs[i], Body: node}}
	}
	grid.Body = node
	reads, writes := ir.LaunchTensors([]ir.Node{grid})
	return &ir.Launch{Name: name, Grid: []ir.IExpr{ceilDiv(ir.ISub(row.Hi, row.Lo), row.Step)}, Block: []ir.IExpr{bt},
		Reads: reads, Writes: writes, Body: []ir.Node{grid}}, true
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
