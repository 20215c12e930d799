package passes

import (
	"strings"

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
// Launches that do not match are left as they are. Staging runs in the GPU pipelines, after gpumap.
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
	if stageMMA(f, l, stages, nm) {
		return true
	}
	g, ok := matchGEMM(l)
	if !ok {
		return false
	}
	by, bx, bk := g.ti.Hi, g.tj.Hi, planSym(f, gpuBK, 16)
	tl := ir.IAdd(ir.IMul(ir.IVar{V: g.ti.Var}, bx), ir.IVar{V: g.tj.Var})
	biv, bjv := ir.IExpr(ir.IVar{V: g.bi.Var}), ir.IExpr(ir.IVar{V: g.bj.Var})
	ars, acs := strides(g.a)
	brs, bcs := strides(g.b)
	a := &stagedOperand{name: "A", src: g.a, rows: by, cols: bk,
		off:       func(k0 ir.IExpr) ir.IExpr { return ir.IAdd(g.a.Off, ir.IAdd(ir.IMul(biv, ars), ir.IMul(k0, acs))) },
		validRows: func(ir.IExpr) ir.IExpr { return ir.ISub(g.bi.Hi, biv) },
		validCols: func(k0 ir.IExpr) ir.IExpr { return ir.ISub(g.k.Hi, k0) },
	}
	b := &stagedOperand{name: "B", src: g.b, rows: bk, cols: bx,
		off:       func(k0 ir.IExpr) ir.IExpr { return ir.IAdd(g.b.Off, ir.IAdd(ir.IMul(k0, brs), ir.IMul(bjv, bcs))) },
		validRows: func(k0 ir.IExpr) ir.IExpr { return ir.ISub(g.k.Hi, k0) },
		validCols: func(ir.IExpr) ir.IExpr { return ir.ISub(g.bj.Hi, bjv) },
	}
	tiles := ceilDiv(ir.ISub(g.k.Hi, g.k.Lo), bk)
	k0Of := func(kt ir.IExpr) ir.IExpr { return ir.IAdd(g.k.Lo, ir.IMul(kt, bk)) }
	// The update reads the current stage: A at (ti, kk), B at (kk, tj), kk over the tile in k order.
	compute := func(kt, slot ir.IExpr) []ir.Node {
		kk := &ir.Var{Name: nm.name("kk")}
		update := ir.Rewrite(g.assign.Value, func(e ir.Expr) ir.Expr {
			ld, ok := e.(*ir.Load)
			switch {
			case !ok:
			case sameLoad(ld, g.aLoad):
				return &ir.Load{T: a.buf, Idx: []ir.IExpr{ir.IAdd(a.stage(slot), ir.IAdd(ir.IMul(ir.IVar{V: g.ti.Var}, bk), ir.IVar{V: kk}))}}
			case sameLoad(ld, g.bLoad):
				return &ir.Load{T: b.buf, Idx: []ir.IExpr{ir.IAdd(b.stage(slot), ir.IAdd(ir.IMul(ir.IVar{V: kk}, bx), ir.IVar{V: g.tj.Var}))}}
			}
			return e
		})
		return []ir.Node{&ir.Loop{Var: kk, Lo: ir.IConst{V: 0}, Hi: ir.IMin(bk, ir.ISub(g.k.Hi, k0Of(kt))), Step: ir.IConst{V: 1}, Body: []ir.Node{
			&ir.Assign{L: g.decl.L, Value: update},
		}}}
	}
	staged := stagedPipeline(nm, stages, tiles, k0Of, tl, launchThreads(l), []*stagedOperand{a, b}, compute)
	g.j.Body = g.rest
	g.tj.Body = append(append([]ir.Node{g.decl}, staged...), g.i)
	g.bj.Body = allocs([]*stagedOperand{a, b}, g.ti)
	return true
}

func planSym(f *ir.Func, name string, def int) ir.IExpr {
	if _, ok := f.Plan[name]; !ok {
		f.Plan[name] = def
	}
	return ir.ISym{Name: name}
}

func strides(o ir.Operand) (ir.IExpr, ir.IExpr) {
	st := o.Layout.(*ir.Strided)
	return st.RowStride, st.ColStride
}

// launchThreads is the number of threads of l's blocks.
func launchThreads(l *ir.Launch) ir.IExpr {
	var n ir.IExpr = ir.IConst{V: 1}
	for _, e := range l.Block {
		n = ir.IMul(n, e)
	}
	return n
}

// stagedOperand is one operand staged through shared memory: per K tile (k0 its first k), a rows×cols
// tile whose element (r, c) is src's tensor at off(k0) + src.Layout(r, c), valid (else zero) for
// r < validRows(k0) and c < validCols(k0), copied into stage (tile mod S) of buf, row-major.
type stagedOperand struct {
	name                 string
	src                  ir.Operand
	rows, cols           ir.IExpr
	off                  func(k0 ir.IExpr) ir.IExpr
	validRows, validCols func(k0 ir.IExpr) ir.IExpr
	buf                  *ir.Tensor
	// swizzled, when set, is the stage's swizzled layout: the tile is copied in 16-byte chunks, each to
	// stage + swizzled.Offset(r, c) (swizzledCopies), and read through the same layout. The sm_90a
	// wgmma stages use WGMMALayout (wgmma.go), the sm_80 mma.sync A stages SM80ALayout, and the sm_80
	// stages of a transposed source SM80TLayout.
	swizzled ir.Layout
	// trans: the source runs contiguous down the tile's columns (A stored K×M, B stored N×K), so the
	// 16-byte chunks run along the rows and the stage (SM80TLayout) keeps them contiguous there.
	trans bool
}

// stage is the offset of a stage's tile in buf.
func (o *stagedOperand) stage(slot ir.IExpr) ir.IExpr { return ir.IMul(slot, ir.IMul(o.rows, o.cols)) }

// allocs wraps node in the shared allocations of the staged operands.
func allocs(ops []*stagedOperand, node ir.Node) []ir.Node {
	body := []ir.Node{node}
	for i := len(ops) - 1; i >= 0; i-- {
		body = []ir.Node{&ir.Alloc{T: ops[i].buf, Body: body}}
	}
	return body
}

// stagedPipeline builds the S-stage copy pipeline of a thread body: the buffers of ops (made here),
// the prologue (tiles 0 .. S−2, one commit group each), and the K loop over tiles — wait for tile kt,
// block barrier, issue tile kt+S−1, commit, compute(kt, stage) — then the final wait. Thread tl of nt
// copies rows tl, tl+nt, ... of every tile.
func stagedPipeline(nm namer, stages int, tiles ir.IExpr, k0Of func(kt ir.IExpr) ir.IExpr, tl, nt ir.IExpr, ops []*stagedOperand,
	compute func(kt, slot ir.IExpr) []ir.Node) []ir.Node {
	one, s := ir.IConst{V: 1}, ir.IConst{V: stages}
	for _, o := range ops {
		o.buf = &ir.Tensor{Name: nm.name(o.name + "s"), Type: o.src.T.Type, Kind: ir.Scratch, Space: ir.Shared, Size: ir.IMul(s, ir.IMul(o.rows, o.cols))}
	}
	// copies issues the copies of K tile t (into stage t mod S) as part of commit group t.
	copies := func(t ir.IExpr) []ir.Node {
		k0 := k0Of(t)
		var out []ir.Node
		for _, o := range ops {
			if o.swizzled != nil {
				out = append(out, swizzledCopies(nm, o, t, k0, tl, nt, stages))
				continue
			}
			r := &ir.Var{Name: nm.name("r" + strings.ToLower(o.name))}
			rv := ir.IVar{V: r}
			rs, _ := strides(o.src)
			cp := &ir.Copy{
				Dst:  ir.Operand{T: o.buf, Off: ir.IAdd(o.stage(ir.IMod(t, s)), ir.IMul(rv, o.cols)), Layout: ir.RowMajor(o.cols)},
				Src:  ir.Operand{T: o.src.T, Off: ir.IAdd(o.off(k0), ir.IMul(rv, rs)), Layout: o.src.Layout},
				Rows: one, Cols: o.cols, ValidRows: ir.ISub(o.validRows(k0), rv), ValidCols: o.validCols(k0),
				Async: true, Group: t,
			}
			out = append(out, &ir.Loop{Var: r, Lo: tl, Hi: o.rows, Step: nt, Body: []ir.Node{cp}})
		}
		return out
	}
	// upTo binds a tile index t to x when x < tiles (no trip otherwise).
	upTo := func(x ir.IExpr) ir.Node {
		t := &ir.Var{Name: nm.name("t")}
		return &ir.Loop{Var: t, Lo: x, Hi: ir.IMin(ir.IAdd(x, one), tiles), Step: one, Body: copies(ir.IVar{V: t})}
	}
	ps, kt := &ir.Var{Name: nm.name("s")}, &ir.Var{Name: nm.name("kt")}
	prologue := &ir.Loop{Var: ps, Lo: ir.IConst{V: 0}, Hi: ir.IConst{V: stages - 1}, Step: one, Body: []ir.Node{
		upTo(ir.IVar{V: ps}), &ir.AsyncCommit{},
	}}
	body := []ir.Node{
		&ir.AsyncWait{N: stages - 2},
		&ir.Barrier{Scope: ir.ScopeBlock},
		upTo(ir.IAdd(ir.IVar{V: kt}, ir.IConst{V: stages - 1})),
		&ir.AsyncCommit{},
	}
	body = append(body, compute(ir.IVar{V: kt}, ir.IMod(ir.IVar{V: kt}, s))...)
	return []ir.Node{prologue, &ir.Loop{Var: kt, Lo: ir.IConst{V: 0}, Hi: tiles, Step: one, Body: body}, &ir.AsyncWait{N: 0}}
}

// stageMMA stages a launch gpumap made of an MMA nest (grid loops: an optional batch, then M and N
// tiles): the thread body is AccDecl, a K loop of MMAs
// on global strided operands, AccStore, in a thread nest of register-tile threads (ti, tj) or of warps
// (w; a warpgroup's 4 warps share one tile). A block covers rowsPer·M rows and colsPer·N columns; per K
// step (the MMA's K) it stages the block's A rows and B columns, and each MMA reads its rows and
// columns of the stage through a row-major layout with the valid extents it had — on the sm_80 16-bit
// path swizzled: SM80ALayout for A, and SM80TLayout (read through SM80TView) for an operand stored
// transposed. (Register tiles are staged gpu.BK deep, whatever their K.)
func stageMMA(f *ir.Func, l *ir.Launch, stages int, nm namer) bool {
	var grids []*ir.Loop // a batch grid loop, then the M and N ones
	body := l.Body
	for {
		g, ok := soleLoopOf(body)
		if !ok || g.Kind != ir.GPUGrid {
			break
		}
		grids, body = append(grids, g), g.Body
	}
	if len(grids) < 2 {
		return false
	}
	bj := grids[len(grids)-1]
	t0, ok := soleLoopOf(bj.Body)
	if !ok || (t0.Kind != ir.GPUBlock && t0.Kind != ir.GPUWarp) {
		return false
	}
	t1, ok := soleLoopOf(t0.Body)
	if !ok || !t1.Kind.IsThreadLoop() {
		return false
	}
	body = t1.Body
	if len(body) != 3 {
		return false
	}
	decl, ok1 := body[0].(*ir.AccDecl)
	p0, ok2 := body[1].(*ir.Loop)
	store, ok3 := body[2].(*ir.AccStore)
	if !ok1 || !ok2 || !ok3 || p0.Kind != ir.Serial || len(p0.Body) != 1 || !isZero(p0.Lo) {
		return false
	}
	mma, ok := p0.Body[0].(*ir.MMA)
	acc := decl.Acc
	if !ok || mma.Acc != acc || store.Acc != acc || p0.Step != mma.K || mma.ValidK == nil || mma.ValidM == nil || mma.ValidN == nil {
		return false
	}
	_, sa := mma.A.Layout.(*ir.Strided)
	_, sb := mma.B.Layout.(*ir.Strided)
	if !sa || !sb || mma.A.T.Space == ir.Shared || mma.B.T.Space == ir.Shared {
		return false
	}
	// Which thread variable moves along M and which along N, and how many tiles a block holds.
	var rowVar, colVar, wgVar *ir.Var
	var rowsPer, colsPer ir.IExpr = ir.IConst{V: 1}, ir.IConst{V: 1}
	var tl ir.IExpr
	switch {
	case t0.Kind == ir.GPUBlock && t1.Kind == ir.GPUBlock && acc.Scope == ir.ScopeThread:
		rowVar, colVar, rowsPer, colsPer = t0.Var, t1.Var, t0.Hi, t1.Hi
		tl = ir.IAdd(ir.IMul(ir.IVar{V: t0.Var}, t1.Hi), ir.IVar{V: t1.Var})
	case t0.Kind == ir.GPUWarp && (acc.Scope == ir.ScopeWarp || acc.Scope == ir.ScopeSimdgroup):
		rowVar, rowsPer = t0.Var, t0.Hi
		tl = ir.IAdd(ir.IMul(ir.IVar{V: t0.Var}, ir.IConst{V: 32}), ir.IVar{V: t1.Var})
	case t0.Kind == ir.GPUWarp && acc.Scope == ir.ScopeWarpgroup:
		tl = ir.IAdd(ir.IMul(ir.IVar{V: t0.Var}, ir.IConst{V: 32}), ir.IVar{V: t1.Var})
		if hi, ok := t0.Hi.(ir.IConst); ok && hi.V > 4 {
			wgVar, rowsPer = t0.Var, ir.IConst{V: hi.V / 4} // warpgroup w/4's tile at rows 64·(w/4) (gpumap)
		}
	default:
		return false
	}
	at := func(e ir.IExpr, m map[*ir.Var]ir.IExpr) ir.IExpr { return ir.SubstIExpr(e, m) }
	base := map[*ir.Var]ir.IExpr{}
	for _, v := range []*ir.Var{rowVar, colVar, wgVar} {
		if v != nil {
			base[v] = ir.IConst{V: 0}
		}
	}
	withK := func(k0 ir.IExpr) map[*ir.Var]ir.IExpr {
		m := map[*ir.Var]ir.IExpr{p0.Var: k0}
		for v, e := range base {
			m[v] = e
		}
		return m
	}
	// The staged depth: an instruction's K, or for a register tile (whose K is a free plan value, large
	// for CPU caches) the GPU tile depth gpu.BK, so that S stages fit in shared memory.
	kc := mma.K
	if acc.Scope == ir.ScopeThread {
		kc = planSym(f, gpuBK, 16)
	}
	wg := wgmmaStaged(acc, mma)
	if wg {
		kc = ir.IConst{V: WGMMATileK}
	}
	// the production sm_90a version (wgmma.go): several consumer warpgroups, a wider N, TMA
	prod := wg && f.Plan[gpuTMA] == 3 && len(grids) == 2 && tmaOperand(mma.A) && tmaOperand(mma.B)
	if wg && !prod && (wgVar != nil || acc.N.(ir.IConst).V != 64) {
		return false // only the production staging handles wide warpgroup blocks
	}
	a := &stagedOperand{name: "A", src: mma.A, rows: ir.IMul(rowsPer, acc.M), cols: kc,
		off:       func(k0 ir.IExpr) ir.IExpr { return at(mma.A.Off, withK(k0)) },
		validRows: func(ir.IExpr) ir.IExpr { return at(mma.ValidM, base) },
		validCols: func(k0 ir.IExpr) ir.IExpr { return at(mma.ValidK, withK(k0)) },
	}
	b := &stagedOperand{name: "B", src: mma.B, rows: kc, cols: ir.IMul(colsPer, acc.N),
		off:       func(k0 ir.IExpr) ir.IExpr { return at(mma.B.Off, withK(k0)) },
		validRows: func(k0 ir.IExpr) ir.IExpr { return at(mma.ValidK, withK(k0)) },
		validCols: func(ir.IExpr) ir.IExpr { return at(mma.ValidN, base) },
	}
	if wg {
		a.swizzled, b.swizzled = WGMMALayout(), WGMMALayout()
	} else if sm80Swizzled(acc, mma, kc) {
		a.swizzled = SM80ALayout()
		// A stored K×M or B stored N×K: staged as they lie in global memory (sm80Transposed)
		for _, o := range []*stagedOperand{a, b} {
			if sm80Transposed(o.src) {
				o.swizzled, o.trans = SM80TLayout(o.cols), true
			}
		}
	}
	tiles := ceilDiv(p0.Hi, kc)
	k0Of := func(kt ir.IExpr) ir.IExpr { return ir.IMul(kt, kc) }
	rowOff, colOff := ir.IExpr(ir.IConst{V: 0}), ir.IExpr(ir.IConst{V: 0})
	if rowVar != nil {
		rowOff = ir.IMul(ir.IMul(ir.IVar{V: rowVar}, acc.M), kc)
	}
	if colVar != nil {
		colOff = ir.IMul(ir.IVar{V: colVar}, acc.N)
	}
	if wgVar != nil {
		rowOff = ir.IMul(ir.IDiv(ir.IVar{V: wgVar}, ir.IConst{V: 4}), ir.IMul(acc.M, kc))
	}
	compute := func(kt, slot ir.IExpr) []ir.Node {
		k0 := map[*ir.Var]ir.IExpr{p0.Var: k0Of(kt)}
		staged := *mma
		staged.A = ir.Operand{T: a.buf, Off: ir.IAdd(a.stage(slot), rowOff), Layout: ir.RowMajor(kc)}
		if a.swizzled != nil && !wg {
			// stage and rowOff are multiples of the swizzle's 128-element period, so the swizzle of the
			// tile-relative offset is the swizzle of the stage-relative one the copies wrote
			staged.A.Layout = a.swizzled
		}
		staged.B = ir.Operand{T: b.buf, Off: ir.IAdd(b.stage(slot), colOff), Layout: ir.RowMajor(b.cols)}
		// A transposed stage: the warp's 16 rows are one panel (rowOff = 256·w, a multiple of the
		// period); B's (warp scope: colOff = 0) is its only panel.
		if a.trans {
			staged.A.Layout = SM80TView()
		}
		if b.trans {
			staged.B.Layout = SM80TView()
		}
		staged.K, staged.ValidK = kc, at(mma.ValidK, k0)
		if wg {
			// whole zero-filled tiles in the wgmma layout (wgmma.go)
			staged.A.Layout, staged.B.Layout = WGMMALayout(), WGMMALayoutB(acc.N.(ir.IConst).V)
			staged.ValidM, staged.ValidN, staged.ValidK = nil, nil, nil
		}
		return []ir.Node{&staged}
	}
	if prod {
		// tma.go: consumer warpgroups 0 .. G−1, the producer warpgroup G
		g := 1
		if wgVar != nil {
			g = t0.Hi.(ir.IConst).V / 4
		}
		st := f.Plan[PlanStages]
		if st < 2 {
			st = 4
		}
		pipe, full, empty := tmaProduction(nm, st, g, tiles, k0Of, tl, t0.Var, a, b, decl, store, compute)
		t1.Body = pipe
		for i, d := range l.Block {
			if d == t0.Hi {
				l.Block[i] = ir.IConst{V: 4*g + 4}
			}
		}
		t0.Hi = ir.IConst{V: 4*g + 4}
		bj.Body = []ir.Node{&ir.Alloc{T: full, Body: []ir.Node{&ir.Alloc{T: empty, Body: allocs([]*stagedOperand{a, b}, t0)}}}}
		return true
	}
	if wg && f.Plan[gpuTMA] == 2 && len(grids) == 2 && tmaOperand(mma.A) && tmaOperand(mma.B) && oneWarpgroup(l, t0) {
		// tma.go: a producer warpgroup and a consumer warpgroup
		pipe, full, empty := tmaSpecialised(nm, tmaStages(stages), tiles, k0Of, tl, t0.Var, a, b, decl, store, compute)
		t1.Body = pipe
		for i, d := range l.Block {
			if d == t0.Hi {
				l.Block[i] = ir.IConst{V: 8}
			}
		}
		t0.Hi = ir.IConst{V: 8}
		bj.Body = []ir.Node{&ir.Alloc{T: full, Body: []ir.Node{&ir.Alloc{T: empty, Body: allocs([]*stagedOperand{a, b}, t0)}}}}
		return true
	}
	if wg && f.Plan[gpuTMA] >= 1 && len(grids) == 2 && tmaOperand(mma.A) && tmaOperand(mma.B) {
		pipe, bars := tmaPipeline(nm, tmaStages(stages), tiles, k0Of, tl, launchThreads(l), a, b, compute) // tma.go
		t1.Body = append(append([]ir.Node{decl}, pipe...), store)
		bj.Body = []ir.Node{&ir.Alloc{T: bars, Body: allocs([]*stagedOperand{a, b}, t0)}}
		return true
	}
	pipe := stagedPipeline(nm, stages, tiles, k0Of, tl, launchThreads(l), []*stagedOperand{a, b}, compute)
	t1.Body = append(append([]ir.Node{decl}, pipe...), store)
	bj.Body = allocs([]*stagedOperand{a, b}, t0)
	return true
}

// SM80ALayout is the layout of the sm_80 mma.sync A stages: rows of 16 16-bit elements (K = 16, 32
// bytes, two 16-byte chunks), chunk c of row r at chunk c ^ ((r >> 2) & 1) — CuTe's Swizzle<1, 3, 3>
// over row-major ld 16 (element offset bit 6, row bit 2, XORed into bit 3, the chunk bit). An
// ldmatrix 8×8 matrix reads one chunk of 8 consecutive rows: row-major, rows r and r+4 are 128 bytes
// apart and hit the same four banks (2-way conflict); swizzled, rows r+4..r+7 take the other chunk, so
// the 8 rows cover all 32 banks once. The cp.async chunk copies write through the same map.
func SM80ALayout() *ir.Swizzle { return ir.NewSwizzle(ir.RowMajor(ir.IConst{V: 16}), 1, 3, 3) }

// sm80Swizzled reports whether an MMA nest's A stage takes SM80ALayout: a warp-scope mma.sync on 16-bit
// inputs (f16, bf16) staged 16 deep.
func sm80Swizzled(acc *ir.Accum, mma *ir.MMA, kc ir.IExpr) bool {
	k, ok := kc.(ir.IConst)
	return ok && k.V == 16 && acc.Scope == ir.ScopeWarp && !mma.TF32 && mma.A.T.Type.Size() == 2
}

// SM80TLayout is the sm_80 mma.sync stage of an operand whose source is transposed (contiguous down
// the tile's columns: A stored K×M, B stored N×K) and whose tile has a multiple of 16 rows, depth
// columns: the tile as it lies in global memory, cut into panels of 16 rows — (r, c) at
// (r / 16)·16·depth + c·16 + r % 16, each column of a panel 16 contiguous elements (32 bytes, two
// 16-byte chunks) — under SM80ALayout's Swizzle<1, 3, 3>: chunk h of column c at h ^ ((c >> 2) & 1).
// The cp.async chunks copy 8 elements down a column, and ldmatrix reads a panel's 8×8 matrices as 8
// consecutive columns of one chunk (.trans for A, whose fragment wants them along K; plain for B),
// hitting 8 different bank groups.
func SM80TLayout(depth ir.IExpr) *ir.Swizzle {
	return ir.NewSwizzle(&ir.Panel{Width: ir.IConst{V: 16}, Depth: depth, ByCol: false}, 1, 3, 3)
}

// SM80TView is how an MMA reads its 16-row panel of an SM80TLayout stage (at the panel's offset, a
// multiple of the swizzle's period): column-major with ld 16 under the same swizzle.
func SM80TView() *ir.Swizzle { return ir.NewSwizzle(ir.ColMajor(ir.IConst{V: 16}), 1, 3, 3) }

// sm80Transposed reports whether an operand of a 16-bit warp-scope mma.sync nest is stored transposed
// (unit stride down the tile's rows, not along them): its stage takes SM80TLayout.
func sm80Transposed(o ir.Operand) bool {
	s, ok := o.Layout.(*ir.Strided)
	if !ok {
		return false
	}
	r, okr := s.RowStride.(ir.IConst)
	c, okc := s.ColStride.(ir.IConst)
	return okr && r.V == 1 && !(okc && c.V == 1)
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
