package passes

import (
	"github.com/kgen-dev/kgen/ir"
)

// gpuBK is the plan symbol of the K depth of one staged tile.
const gpuBK = "gpu.BK"

// StagingStages is the number of shared-memory buffers per operand the staging pass uses: while the
// block computes on one K tile, the copies of the next StagingStages−1 are in flight.
const StagingStages = 3

// Staging stages the operands of each GPU-mapped GEMM nest through shared memory with multi-stage
// asynchronous copies. It assumes GPUMap's output and guarantees the same result with every barrier
// reached by the whole block and no race (the interpreter checks both).
//
// A launch is staged when it maps (i, j) onto 2-D blocks and each thread runs
//
//	var acc = const; for k { acc = f(acc, A-load, B-load) }; rest (the epilogue)
//
// where the A load's indices are affine in i and k only and the B load's in k and j only (any strides:
// transposed operands too). Per K tile of BK (plan symbol gpu.BK), the block copies a BY×BK tile of A and
// a BK×BX tile of B into stage (tile mod S) of shared buffers As and Bs (S = StagingStages), zero-filled
// past the matrices' edges; each thread copies whole tile rows (rows tl, tl+BY·BX, ... for its linear
// index tl). The schedule, with group g holding tile g:
//
//	prologue: tiles 0 .. S−2 issued, one commit each (empty groups past the last tile)
//	for kt < tiles: wait until ≤ S−2 groups pend (tile kt landed); barrier (every thread's copies of tile
//	    kt landed, and every thread is done with tile kt−1, whose stage tile kt+S−1 reuses); issue tile
//	    kt+S−1; commit; accumulate tile kt from shared memory in k order
//	wait 0; the epilogue under the original one-point guards.
//
// The accumulation runs over k in the original order, so the result is the unstaged one bit for bit.
// Launches that do not match are left as they are. Not in the CPU pipeline (List).
func Staging(f *ir.Func, c *Context) (bool, error) {
	return stage(f, StagingStages), nil
}

func stage(f *ir.Func, stages int) bool {
	nm := funcNamer(f)
	changed := false
	ir.WalkNodes(f.Body, func(n ir.Node) bool {
		if l, ok := n.(*ir.Launch); ok {
			if stageLaunch(f, l, stages, nm) {
				changed = true
			}
			return false
		}
		return true
	})
	return changed
}

// gemmNest is the matched structure of a GPU-mapped GEMM launch.
type gemmNest struct {
	bi, bj, ti, tj *ir.Loop // grid and thread loops
	i, j, k        *ir.Loop // the original loops (i and j one-point guards)
	decl           *ir.Decl
	assign         *ir.Assign
	rest           []ir.Node // the epilogue after the k loop
	aLoad, bLoad   *ir.Load
	a, b           ir.Operand // (i, k) ↦ A element, (k, j) ↦ B element
}

func matchGEMM(l *ir.Launch) (*gemmNest, bool) {
	g := &gemmNest{}
	var ok bool
	if g.bi, ok = soleLoopOf(l.Body); !ok || g.bi.Kind != ir.GPUGrid {
		return nil, false
	}
	if g.bj, ok = soleLoopOf(g.bi.Body); !ok || g.bj.Kind != ir.GPUGrid {
		return nil, false
	}
	if g.ti, ok = soleLoopOf(g.bj.Body); !ok || g.ti.Kind != ir.GPUBlock {
		return nil, false
	}
	if g.tj, ok = soleLoopOf(g.ti.Body); !ok || g.tj.Kind != ir.GPUBlock {
		return nil, false
	}
	if g.i, ok = soleLoopOf(g.tj.Body); !ok || !isPoint(g.i, g.bi, g.ti) {
		return nil, false
	}
	if g.j, ok = soleLoopOf(g.i.Body); !ok || !isPoint(g.j, g.bj, g.tj) {
		return nil, false
	}
	body := g.j.Body
	if len(body) < 2 {
		return nil, false
	}
	if g.decl, ok = body[0].(*ir.Decl); !ok {
		return nil, false
	}
	if _, ok = g.decl.Init.(*ir.Const); !ok {
		return nil, false
	}
	if g.k, ok = body[1].(*ir.Loop); !ok || g.k.Kind != ir.Serial || len(g.k.Body) != 1 {
		return nil, false
	}
	if st, isC := g.k.Step.(ir.IConst); !isC || st.V != 1 {
		return nil, false
	}
	for _, e := range []ir.IExpr{g.k.Lo, g.k.Hi} {
		for _, v := range []*ir.Var{g.i.Var, g.j.Var, g.ti.Var, g.tj.Var} {
			if usesVarI(e, v) {
				return nil, false
			}
		}
	}
	if g.assign, ok = g.k.Body[0].(*ir.Assign); !ok || g.assign.L != g.decl.L {
		return nil, false
	}
	g.rest = body[2:]
	// Classify the loads of the update: A uses i and k, B uses k and j; nothing else may use i, j or k.
	ok = true
	ir.Walk(g.assign.Value, func(e ir.Expr) {
		switch e := e.(type) {
		case *ir.VarVal:
			ok = ok && e.V != g.i.Var && e.V != g.j.Var && e.V != g.k.Var
		case *ir.Load:
			ui, uj, uk := loadUses(e, g.i.Var), loadUses(e, g.j.Var), loadUses(e, g.k.Var)
			switch {
			case !ui && !uj && !uk:
			case ui && uk && !uj && g.aLoad == nil:
				g.aLoad = e
			case uj && uk && !ui && g.bLoad == nil:
				g.bLoad = e
			default:
				ok = false
			}
		}
	})
	if !ok || g.aLoad == nil || g.bLoad == nil {
		return nil, false
	}
	if g.a, ok = ir.LoadOperand(g.aLoad, g.i.Var, g.k.Var); !ok {
		return nil, false
	}
	if g.b, ok = ir.LoadOperand(g.bLoad, g.k.Var, g.j.Var); !ok {
		return nil, false
	}
	return g, g.a.T.Space != ir.Shared && g.b.T.Space != ir.Shared
}

// isPoint reports whether l runs the one point b + t (GPUMap's guard loop).
func isPoint(l, b, t *ir.Loop) bool {
	at, ok := l.Lo.(ir.IBin)
	return ok && l.Kind == ir.Serial && at.Op == '+' && at.X == (ir.IVar{V: b.Var}) && at.Y == (ir.IVar{V: t.Var})
}

func usesVarI(e ir.IExpr, v *ir.Var) bool {
	used := false
	ir.IVars(e, func(w *ir.Var) { used = used || w == v })
	return used
}

func loadUses(ld *ir.Load, v *ir.Var) bool {
	for _, ix := range ld.Idx {
		if usesVarI(ix, v) {
			return true
		}
	}
	return false
}

func stageLaunch(f *ir.Func, l *ir.Launch, stages int, nm namer) bool {
	g, ok := matchGEMM(l)
	if !ok {
		return false
	}
	if _, ok := f.Plan[gpuBK]; !ok {
		f.Plan[gpuBK] = 16
	}
	one := ir.IConst{V: 1}
	by, bx, bk := g.ti.Hi, g.tj.Hi, ir.IExpr(ir.ISym{Name: gpuBK})
	nt := ir.IMul(by, bx)
	tl := ir.IAdd(ir.IMul(ir.IVar{V: g.ti.Var}, bx), ir.IVar{V: g.tj.Var})
	s := ir.IConst{V: stages}
	aTile, bTile := ir.IMul(by, bk), ir.IMul(bk, bx)
	as := &ir.Tensor{Name: nm.name("As"), Type: g.a.T.Type, Kind: ir.Scratch, Space: ir.Shared, Size: ir.IMul(s, aTile)}
	bs := &ir.Tensor{Name: nm.name("Bs"), Type: g.b.T.Type, Kind: ir.Scratch, Space: ir.Shared, Size: ir.IMul(s, bTile)}
	tiles := ir.IDiv(ir.IAdd(ir.ISub(g.k.Hi, g.k.Lo), ir.ISub(bk, one)), bk)
	biv, bjv := ir.IExpr(ir.IVar{V: g.bi.Var}), ir.IExpr(ir.IVar{V: g.bj.Var})
	strides := func(o ir.Operand) (ir.IExpr, ir.IExpr) {
		st := o.Layout.(*ir.Strided)
		return st.RowStride, st.ColStride
	}
	ars, acs := strides(g.a)
	brs, bcs := strides(g.b)

	// copies issues the copies of K tile t (into stage t mod S) as part of commit group t.
	copies := func(t ir.IExpr) []ir.Node {
		k0 := ir.IAdd(g.k.Lo, ir.IMul(t, bk))
		slot := ir.IMod(t, s)
		ra, rb := &ir.Var{Name: nm.name("ra")}, &ir.Var{Name: nm.name("rb")}
		rav, rbv := ir.IVar{V: ra}, ir.IVar{V: rb}
		copyA := &ir.Copy{
			Dst:  ir.Operand{T: as, Off: ir.IAdd(ir.IMul(slot, aTile), ir.IMul(rav, bk)), Layout: ir.RowMajor(bk)},
			Src:  ir.Operand{T: g.a.T, Off: ir.IAdd(g.a.Off, ir.IAdd(ir.IMul(ir.IAdd(biv, rav), ars), ir.IMul(k0, acs))), Layout: g.a.Layout},
			Rows: one, Cols: bk, ValidRows: ir.ISub(g.bi.Hi, ir.IAdd(biv, rav)), ValidCols: ir.ISub(g.k.Hi, k0),
			Async: true, Group: t,
		}
		copyB := &ir.Copy{
			Dst:  ir.Operand{T: bs, Off: ir.IAdd(ir.IMul(slot, bTile), ir.IMul(rbv, bx)), Layout: ir.RowMajor(bx)},
			Src:  ir.Operand{T: g.b.T, Off: ir.IAdd(g.b.Off, ir.IAdd(ir.IMul(ir.IAdd(k0, rbv), brs), ir.IMul(bjv, bcs))), Layout: g.b.Layout},
			Rows: one, Cols: bx, ValidRows: ir.ISub(g.k.Hi, ir.IAdd(k0, rbv)), ValidCols: ir.ISub(g.bj.Hi, bjv),
			Async: true, Group: t,
		}
		return []ir.Node{
			&ir.Loop{Var: ra, Lo: tl, Hi: by, Step: nt, Body: []ir.Node{copyA}},
			&ir.Loop{Var: rb, Lo: tl, Hi: bk, Step: nt, Body: []ir.Node{copyB}},
		}
	}
	// upTo wraps body in a loop binding tile index t to x when x < tiles (no trip otherwise).
	upTo := func(x ir.IExpr, name string, body func(t ir.IExpr) []ir.Node) ir.Node {
		t := &ir.Var{Name: nm.name(name)}
		return &ir.Loop{Var: t, Lo: x, Hi: ir.IMin(ir.IAdd(x, one), tiles), Step: one, Body: body(ir.IVar{V: t})}
	}

	ps, kt, kk := &ir.Var{Name: nm.name("s")}, &ir.Var{Name: nm.name("kt")}, &ir.Var{Name: nm.name("kk")}
	prologue := &ir.Loop{Var: ps, Lo: ir.IConst{V: 0}, Hi: ir.IConst{V: stages - 1}, Step: one, Body: []ir.Node{
		upTo(ir.IVar{V: ps}, "t", copies), &ir.AsyncCommit{},
	}}
	// The update reads the current stage: A at (ti, kk), B at (kk, tj).
	slot := ir.IMod(ir.IVar{V: kt}, s)
	k0 := ir.IAdd(g.k.Lo, ir.IMul(ir.IVar{V: kt}, bk))
	update := ir.Rewrite(g.assign.Value, func(e ir.Expr) ir.Expr {
		ld, ok := e.(*ir.Load)
		switch {
		case !ok:
		case sameLoad(ld, g.aLoad):
			return &ir.Load{T: as, Idx: []ir.IExpr{ir.IAdd(ir.IMul(slot, aTile), ir.IAdd(ir.IMul(ir.IVar{V: g.ti.Var}, bk), ir.IVar{V: kk}))}}
		case sameLoad(ld, g.bLoad):
			return &ir.Load{T: bs, Idx: []ir.IExpr{ir.IAdd(ir.IMul(slot, bTile), ir.IAdd(ir.IMul(ir.IVar{V: kk}, bx), ir.IVar{V: g.tj.Var}))}}
		}
		return e
	})
	main := &ir.Loop{Var: kt, Lo: ir.IConst{V: 0}, Hi: tiles, Step: one, Body: []ir.Node{
		&ir.AsyncWait{N: stages - 2},
		&ir.Barrier{Scope: ir.ScopeBlock},
		upTo(ir.IAdd(ir.IVar{V: kt}, ir.IConst{V: stages - 1}), "t", copies),
		&ir.AsyncCommit{},
		&ir.Loop{Var: kk, Lo: ir.IConst{V: 0}, Hi: ir.IMin(bk, ir.ISub(g.k.Hi, k0)), Step: one, Body: []ir.Node{
			&ir.Assign{L: g.decl.L, Value: update},
		}},
	}}
	g.j.Body = g.rest
	g.tj.Body = []ir.Node{g.decl, prologue, main, &ir.AsyncWait{N: 0}, g.i}
	g.bj.Body = []ir.Node{&ir.Alloc{T: as, Body: []ir.Node{&ir.Alloc{T: bs, Body: []ir.Node{g.ti}}}}}
	return true
}

// sameLoad reports whether x is a copy of ld (Rewrite copies loads before handing them over).
func sameLoad(x, ld *ir.Load) bool {
	if x.T != ld.T || len(x.Idx) != len(ld.Idx) {
		return false
	}
	for i := range x.Idx {
		if x.Idx[i] != ld.Idx[i] {
			return false
		}
	}
	return true
}
