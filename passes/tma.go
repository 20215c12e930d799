package passes

import "github.com/kgen-dev/kgen/ir"

// TMA staging of the sm_90a wgmma tiles (PTX ISA "cp.async.bulk.tensor", "mbarrier"): instead of every
// thread copying 16-byte chunks with cp.async (wgmma.go), one thread issues each 64×64 operand tile as
// one bulk tensor copy, which the tensor memory accelerator writes into shared memory with the 128-byte
// swizzle (the same WGMMALayout the descriptors read) and zero-fills outside the tensor's bounds, and
// which completes on an mbarrier of its stage:
//
//	thread 0: mbarrier.init full[s], 1 for every stage s;  barrier block
//	prologue: thread 0, for tiles t = 0 .. S−2: arrive.expect_tx full[t] (A+B bytes); copy A; copy B
//	for kt < tiles:
//	    mbarrier.wait full[kt mod S] phase kt/S     (tile kt landed: the phase's bytes all arrived)
//	    barrier block                               (every warp is done with tile kt−1's stage)
//	    thread 0: refill that stage with tile kt+S−1 (arrive.expect_tx, copy A, copy B)
//	    MMA on stage kt mod S
//
// The stage of tile t is t mod S and its barrier completes one phase per tile, so tile t completes phase
// t/S of full[t mod S]: the wait's parity (t/S) & 1 always names the phase waited for, since the stage is
// refilled only after every thread waited for it.
//
// The mode is chosen per function by the plan value gpu.tma = 1 (default 0: the cp.async staging), and
// only where TMA can load the tiles: each operand's rows contiguous (unit column stride: A K-major, B
// N-major, as the descriptors read them), from a 2-D tensor whose row is its whole second dim (the map's
// bounds are then the matrix's, which is what zero-fills the ragged edges), no batch. The generated
// glue encodes the tensor maps at launch (cuTensorMapEncodeTiled), which needs 16-byte aligned rows.

// PlanTMA is the plan symbol that selects TMA staging on the wgmma path (Options.Plan).
const PlanTMA = "gpu.tma"

const gpuTMA = PlanTMA

// TMABytes is the transaction count of one stage: a 64×64 tile of A and one of B, 16-bit elements.
const TMABytes = 2 * 64 * WGMMATileK * 2

// maxStaticShared is the static shared memory a block may declare (48 KiB; more needs dynamic shared
// memory and cuFuncSetAttribute, which the launcher does not do yet).
const maxStaticShared = 48 << 10

// tmaStages is the number of stages the TMA staging uses: at most stages, as many as fit in static
// shared memory with their barriers (2: three 16 KiB stages fill 48 KiB, leaving no room for the
// barriers).
func tmaStages(stages int) int {
	s := stages
	for s > 2 && s*TMABytes+8*s > maxStaticShared {
		s--
	}
	return s
}

// tmaOperand reports whether TMA can load operand o's tiles (see above).
func tmaOperand(o ir.Operand) bool {
	st, ok := o.Layout.(*ir.Strided)
	if !ok || o.T.Kind == ir.Scratch || len(o.T.Shape) != 2 || o.T.Type.Size() != 2 {
		return false
	}
	cs, ok := st.ColStride.(ir.IConst)
	rs, okr := st.RowStride.(ir.IDim)
	return ok && cs.V == 1 && okr && rs.D == o.T.Shape[1]
}

// tmaLoads are the bulk copies of the K tile starting at k0 of a and b into stage slot (whole 64×64
// tiles in WGMMALayout, zero-filled past the matrices' edges), completing on bar.
func tmaLoads(a, b *stagedOperand, slot, k0 ir.IExpr, bar *ir.MbarRef) []ir.Node {
	var out []ir.Node
	for _, o := range []*stagedOperand{a, b} {
		out = append(out, &ir.Copy{
			Dst:       ir.Operand{T: o.buf, Off: o.stage(slot), Layout: WGMMALayout()},
			Src:       ir.Operand{T: o.src.T, Off: o.off(k0), Layout: o.src.Layout},
			Rows:      o.rows,
			Cols:      o.cols,
			ValidRows: o.validRows(k0),
			ValidCols: o.validCols(k0),
			Async:     true, Bar: bar,
		})
	}
	return out
}

// tmaPipeline builds the thread body of the TMA staging (see above) for the wgmma operands a and b:
// their buffers and the stage barriers are made here; alloc wraps the block level in their allocations.
func tmaPipeline(nm namer, stages int, tiles ir.IExpr, k0Of func(kt ir.IExpr) ir.IExpr, tl, nt ir.IExpr, a, b *stagedOperand,
	compute func(kt, slot ir.IExpr) []ir.Node) (body []ir.Node, bars *ir.Tensor) {
	one, s := ir.IConst{V: 1}, ir.IConst{V: stages}
	for _, o := range []*stagedOperand{a, b} {
		o.buf = &ir.Tensor{Name: nm.name(o.name + "s"), Type: o.src.T.Type, Kind: ir.Scratch, Space: ir.Shared, Size: ir.IMul(s, ir.IMul(o.rows, o.cols))}
	}
	bars = &ir.Tensor{Name: nm.name("full"), Type: ir.F64, Kind: ir.Scratch, Space: ir.Shared, Size: s}
	// byThread0 runs nodes in thread 0 only (a loop tl .. 1 step nt has one trip there, none elsewhere).
	byThread0 := func(nodes ...ir.Node) ir.Node {
		return &ir.Loop{Var: &ir.Var{Name: nm.name("p")}, Lo: tl, Hi: one, Step: nt, Body: nodes}
	}
	// issue loads tile t (when t < tiles) into stage t mod S, completing on full[t mod S].
	issue := func(x ir.IExpr) ir.Node {
		t := &ir.Var{Name: nm.name("t")}
		tv := ir.IVar{V: t}
		slot := ir.IMod(tv, s)
		bar := &ir.MbarRef{T: bars, Idx: slot}
		nodes := []ir.Node{&ir.MbarArrive{Bar: *bar, Tx: ir.IConst{V: TMABytes}}}
		nodes = append(nodes, tmaLoads(a, b, slot, k0Of(tv), bar)...)
		return &ir.Loop{Var: t, Lo: x, Hi: ir.IMin(ir.IAdd(x, one), tiles), Step: one, Body: nodes}
	}
	is := &ir.Var{Name: nm.name("s")}
	init := byThread0(&ir.Loop{Var: is, Lo: ir.IConst{V: 0}, Hi: s, Step: one, Body: []ir.Node{
		&ir.MbarInit{Bar: ir.MbarRef{T: bars, Idx: ir.IVar{V: is}}, Count: 1},
	}})
	ps, kt := &ir.Var{Name: nm.name("s")}, &ir.Var{Name: nm.name("kt")}
	prologue := byThread0(&ir.Loop{Var: ps, Lo: ir.IConst{V: 0}, Hi: ir.IConst{V: stages - 1}, Step: one, Body: []ir.Node{issue(ir.IVar{V: ps})}})
	ktv := ir.IVar{V: kt}
	loop := []ir.Node{
		&ir.MbarWait{Bar: ir.MbarRef{T: bars, Idx: ir.IMod(ktv, s)}, Phase: ir.IDiv(ktv, s)},
		&ir.Barrier{Scope: ir.ScopeBlock},
		byThread0(issue(ir.IAdd(ktv, ir.IConst{V: stages - 1}))),
	}
	loop = append(loop, compute(ktv, ir.IMod(ktv, s))...)
	return []ir.Node{init, &ir.Barrier{Scope: ir.ScopeBlock}, prologue, &ir.Loop{Var: kt, Lo: ir.IConst{V: 0}, Hi: tiles, Step: one, Body: loop}}, bars
}

// Warp specialisation (gpu.tma = 2): the block is two warpgroups. The first is the producer: its
// thread 0 loads every tile, waiting before it refills a stage until the consumers released it;
// the second is the consumer: it owns the accumulator, waits for each tile's full barrier, runs the
// MMA and releases the stage by arriving on the stage's empty barrier (count 128: every consumer
// thread), after the MMA (which on the GPU has waited for its wgmma):
//
//	thread 0: init full[s] (count 1) and empty[s] (count 128) for every stage;  barrier block
//	if w < 4 (producer): thread 0, for t < tiles:
//	        t ≥ S: mbarrier.wait empty[t mod S] phase t/S − 1   (the consumers are done with tile t−S)
//	        arrive.expect_tx full[t mod S]; copy A; copy B
//	else (consumer): acc = 0; for kt < tiles: mbarrier.wait full[kt mod S] phase kt/S; MMA;
//	        mbarrier.arrive empty[kt mod S];  store
//
// There is no block barrier after the split: the stages are handed over by the barriers alone (the
// interpreter orders the consumers' reads before the refill through the empty barrier's phase).

// tmaSpecialised builds the thread body of the warp-specialised TMA staging for the warp variable w
// of a one-warpgroup block; decl and store are the accumulator's declaration and store.
func tmaSpecialised(nm namer, stages int, tiles ir.IExpr, k0Of func(kt ir.IExpr) ir.IExpr, tl ir.IExpr, w *ir.Var, a, b *stagedOperand,
	decl, store ir.Node, compute func(kt, slot ir.IExpr) []ir.Node) (body []ir.Node, full, empty *ir.Tensor) {
	one, s := ir.IConst{V: 1}, ir.IConst{V: stages}
	full, empty, bars := tmaBarriers(nm, stages, 128, a, b)
	nt := ir.IConst{V: 256}
	byThread0 := func(nodes ...ir.Node) ir.Node {
		return &ir.Loop{Var: &ir.Var{Name: nm.name("p")}, Lo: tl, Hi: one, Step: nt, Body: nodes}
	}
	i32, c32 := i32Of, c32Of
	init := byThread0(bars)
	producer := byThread0(tmaProducer(nm, stages, tiles, full, empty, TMABytes, func(slot, t ir.IExpr, bar *ir.MbarRef) []ir.Node {
		return tmaLoads(a, b, slot, k0Of(t), bar)
	}))
	// consumer
	kt := &ir.Var{Name: nm.name("kt")}
	ktv := ir.IVar{V: kt}
	loop := []ir.Node{&ir.MbarWait{Bar: ir.MbarRef{T: full, Idx: ir.IMod(ktv, s)}, Phase: ir.IDiv(ktv, s)}}
	loop = append(loop, compute(ktv, ir.IMod(ktv, s))...)
	loop = append(loop, &ir.MbarArrive{Bar: ir.MbarRef{T: empty, Idx: ir.IMod(ktv, s)}})
	consumer := []ir.Node{decl, &ir.Loop{Var: kt, Lo: ir.IConst{V: 0}, Hi: tiles, Step: one, Body: loop}, store}
	split := &ir.If{Cond: &ir.Binary{Op: ir.Lt, X: i32(w), Y: c32(4), T: ir.Bool}, Then: []ir.Node{producer}, Else: consumer}
	return []ir.Node{init, &ir.Barrier{Scope: ir.ScopeBlock}, split}, full, empty
}

// oneWarpgroup reports whether l's block is the one warpgroup t0 (a gpu.warp loop 0 .. 4) runs, with
// the warp count a block dim of its own.
func oneWarpgroup(l *ir.Launch, t0 *ir.Loop) bool {
	hi, ok := t0.Hi.(ir.IConst)
	if !ok || hi.V != 4 || t0.Kind != ir.GPUWarp || !isZero(t0.Lo) {
		return false
	}
	n := 0
	for _, d := range l.Block {
		if d == t0.Hi {
			n++
		}
	}
	return n == 1 && len(l.Block) == 2
}

// The production version (gpu.tma = 3, wgmma.go's plan values): G consumer warpgroups (warps
// 0 .. 4G−1, warpgroup c owning rows 64c .. 64c+63 of the block's 64G×N tile) and a producer
// warpgroup (warps 4G .. 4G+3, the last, so that the consumers keep gpumap's warp numbering), S stages
// of a 64G×64 tile of A and a 64×N tile of B, each loaded as 64×64 boxes (G of A along M, N/64 of B
// along N), one expect_tx of all their bytes per stage:
//
//	thread 0: init full[s] (count 1) and empty[s] (count 128·G) for every stage;  barrier block
//	if w < 4G (consumer): acc = 0; for kt < tiles:
//	        mbarrier.wait full[kt mod S] phase kt/S; MMA on stage kt mod S;
//	        kt ≥ 1: mbarrier.arrive empty[(kt−1) mod S]     (tile kt−1's stage is released one step late)
//	    store
//	else (producer): its thread 0, for t < tiles:
//	        t ≥ S: mbarrier.wait empty[t mod S] phase t/S − 1; arrive.expect_tx full[t mod S]; the boxes
//
// Releasing tile kt−1 after the MMA of tile kt is what lets the PTX keep one wgmma group in flight:
// there the MMA of tile kt is issued and committed, then wgmma.wait_group 1 retires tile kt−1's group
// (whose stage the arrival releases) while tile kt's still runs; the accumulator is read after a
// wgmma.wait_group 0 at the store. The interpreter runs the MMA synchronously, so for it the late
// release is merely later than needed; the emulator checks the PTX's reading. The last tile's stage
// is never released: no load waits for it. Producer deadlock-freedom: tile t ≥ S waits for tile
// t−S's release, which the consumers make at step t−S+1, which waits only for tile t−S+1 < t.

// tmaProdBytes is the transaction count of one production stage.
func tmaProdBytes(g, n int) int { return (64*g*WGMMATileK + WGMMATileK*n) * 2 }

// tmaProduction builds the thread body of the production staging for warp variable w (blocks of
// 4G+4 warps); decl and store are the accumulator's declaration and store.
func tmaProduction(nm namer, stages, g int, tiles ir.IExpr, k0Of func(kt ir.IExpr) ir.IExpr, tl ir.IExpr, w *ir.Var, a, b *stagedOperand,
	decl, store ir.Node, compute func(kt, slot ir.IExpr) []ir.Node) (body []ir.Node, full, empty *ir.Tensor) {
	one, zero, s := ir.IConst{V: 1}, ir.IConst{V: 0}, ir.IConst{V: stages}
	full, empty, bars := tmaBarriers(nm, stages, 128*g, a, b)
	nt := ir.IConst{V: 128 * (g + 1)}
	// first runs nodes in the thread whose index is from (a loop from tl−from .. 1 step nt has one trip
	// there and none in the threads after it; the callers run it where no thread before it gets there)
	first := func(from int, nodes ...ir.Node) ir.Node {
		return &ir.Loop{Var: &ir.Var{Name: nm.name("p")}, Lo: ir.ISub(tl, ir.IConst{V: from}), Hi: one, Step: nt, Body: nodes}
	}
	i32, c32 := i32Of, c32Of
	init := first(0, bars)
	// producer: the boxes of tile t into stage t mod S
	producer := first(128*g, tmaProducer(nm, stages, tiles, full, empty, tmaProdBytes(g, b.cols.(ir.IConst).V), func(slot, t ir.IExpr, bar *ir.MbarRef) []ir.Node {
		return tmaBoxes(a, b, slot, k0Of(t), bar)
	}))
	// consumers
	kt := &ir.Var{Name: nm.name("kt")}
	ktv := ir.IVar{V: kt}
	loop := []ir.Node{&ir.MbarWait{Bar: ir.MbarRef{T: full, Idx: ir.IMod(ktv, s)}, Phase: ir.IDiv(ktv, s)}}
	loop = append(loop, compute(ktv, ir.IMod(ktv, s))...)
	loop = append(loop, &ir.If{Cond: &ir.Binary{Op: ir.Ge, X: i32(kt), Y: c32(1), T: ir.Bool}, Then: []ir.Node{
		&ir.MbarArrive{Bar: ir.MbarRef{T: empty, Idx: ir.IMod(ir.ISub(ktv, one), s)}},
	}})
	consumer := []ir.Node{decl, &ir.Loop{Var: kt, Lo: zero, Hi: tiles, Step: one, Body: loop}, store}
	split := &ir.If{Cond: &ir.Binary{Op: ir.Lt, X: i32(w), Y: c32(4 * g), T: ir.Bool}, Then: consumer, Else: []ir.Node{producer}}
	return []ir.Node{init, &ir.Barrier{Scope: ir.ScopeBlock}, split}, full, empty
}

// tmaBoxes are the bulk copies of the K tile starting at k0 into stage slot as 64×64 boxes: A's
// rows/64 boxes along M (box r at element 4096·r of the stage: WGMMALayout rows are 64 wide), B's
// cols/64 along N (box j at element 4096·j: WGMMALayoutB's column blocks), each zero-filled past the
// matrices' edges, completing on bar.
func tmaBoxes(a, b *stagedOperand, slot, k0 ir.IExpr, bar *ir.MbarRef) []ir.Node {
	var out []ir.Node
	box := ir.IConst{V: TMABox}
	for _, o := range []*stagedOperand{a, b} {
		rs, cs := strides(o.src)
		nr, nc := o.rows.(ir.IConst).V/TMABox, o.cols.(ir.IConst).V/TMABox
		for i := 0; i < nr*nc; i++ {
			r, c := ir.IConst{V: TMABox * (i / nc)}, ir.IConst{V: TMABox * (i % nc)}
			out = append(out, &ir.Copy{
				Dst:       ir.Operand{T: o.buf, Off: ir.IAdd(o.stage(slot), ir.IConst{V: i * TMABox * TMABox}), Layout: WGMMALayout()},
				Src:       ir.Operand{T: o.src.T, Off: ir.IAdd(o.off(k0), ir.IAdd(ir.IMul(r, rs), ir.IMul(c, cs))), Layout: o.src.Layout},
				Rows:      box,
				Cols:      box,
				ValidRows: ir.ISub(o.validRows(k0), r),
				ValidCols: ir.ISub(o.validCols(k0), c),
				Async:     true, Bar: bar,
			})
		}
	}
	return out
}

// TMABox is the side of the boxes the TMA stagings load (64 16-bit elements: one 128-byte swizzle row).
const TMABox = 64

// tmaBarriers makes what the warp-specialised stagings share before their split: the stage buffers of
// a and b, the full (count 1) and empty (count emptyCount) barrier of each stage, and the loop that
// initialises them (for one thread to run).
func tmaBarriers(nm namer, stages, emptyCount int, a, b *stagedOperand) (full, empty *ir.Tensor, init ir.Node) {
	one, s := ir.IConst{V: 1}, ir.IConst{V: stages}
	for _, o := range []*stagedOperand{a, b} {
		o.buf = &ir.Tensor{Name: nm.name(o.name + "s"), Type: o.src.T.Type, Kind: ir.Scratch, Space: ir.Shared, Size: ir.IMul(s, ir.IMul(o.rows, o.cols))}
	}
	full = &ir.Tensor{Name: nm.name("full"), Type: ir.F64, Kind: ir.Scratch, Space: ir.Shared, Size: s}
	empty = &ir.Tensor{Name: nm.name("empty"), Type: ir.F64, Kind: ir.Scratch, Space: ir.Shared, Size: s}
	is := &ir.Var{Name: nm.name("s")}
	init = &ir.Loop{Var: is, Lo: ir.IConst{V: 0}, Hi: s, Step: one, Body: []ir.Node{
		&ir.MbarInit{Bar: ir.MbarRef{T: full, Idx: ir.IVar{V: is}}, Count: 1},
		&ir.MbarInit{Bar: ir.MbarRef{T: empty, Idx: ir.IVar{V: is}}, Count: emptyCount},
	}}
	return full, empty, init
}

// tmaProducer is the producer's loop (for one thread to run) over the tiles t: from t = S on, wait for
// phase t/S − 1 of empty[t mod S] (the consumers released tile t−S), then arrive.expect_tx full[t mod S]
// of tx bytes and issue loads(slot, t, full[t mod S]).
func tmaProducer(nm namer, stages int, tiles ir.IExpr, full, empty *ir.Tensor, tx int, loads func(slot, t ir.IExpr, bar *ir.MbarRef) []ir.Node) ir.Node {
	one, s := ir.IConst{V: 1}, ir.IConst{V: stages}
	t := &ir.Var{Name: nm.name("t")}
	tv := ir.IVar{V: t}
	slot := ir.IMod(tv, s)
	fullT := &ir.MbarRef{T: full, Idx: slot}
	load := []ir.Node{
		&ir.If{Cond: &ir.Binary{Op: ir.Ge, X: i32Of(t), Y: c32Of(stages), T: ir.Bool}, Then: []ir.Node{
			&ir.MbarWait{Bar: ir.MbarRef{T: empty, Idx: slot}, Phase: ir.ISub(ir.IDiv(tv, s), one)},
		}},
		&ir.MbarArrive{Bar: *fullT, Tx: ir.IConst{V: tx}},
	}
	load = append(load, loads(slot, tv, fullT)...)
	return &ir.Loop{Var: t, Lo: ir.IConst{V: 0}, Hi: tiles, Step: one, Body: load}
}

func i32Of(v *ir.Var) ir.Expr { return &ir.VarVal{V: v, T: ir.I32} }
func c32Of(c int) ir.Expr     { return &ir.Const{Val: float64(c), T: ir.I32} }
