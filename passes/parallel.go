package passes

import (
	"slices"

	"github.com/kgen-dev/kgen/ir"
)

// Parallel marks one loop per nest to run on the worker pool. A `parallel i` directive names it;
// otherwise GEMM nests parallelize the jr loop (NR-wide column panels of C: many even chunks, the
// packed A and B blocks shared read-only, every C element written by one iteration) and other nests their
// outermost loop when it is a statement index (never a reduction index, and never a loop that carries a
// local); transpose nests their outer block loop. A batched GEMM (an outer statement index around the
// GEMM) is also versioned to run whole products per worker (parallelBatch). Iterations of a marked loop write disjoint elements, so the result does not depend on how they
// are scheduled. Each marked loop gets a Cost: the product of the trip counts of the loops inside it, so
// the run time can keep small problems on one core.
func Parallel(f *ir.Func, c *Context) (bool, error) {
	changed := false
	named := map[string]bool{}
	for _, d := range c.directive("parallel") {
		for _, a := range d.Args {
			named[a.Name] = true
		}
	}
	for _, node := range f.Body {
		nest, ok := node.(*ir.Nest)
		if !ok {
			continue
		}
		var pick, vec *ir.Loop
		stmtVar := map[*ir.Var]bool{}
		for _, s := range nest.Stmts {
			for _, v := range s.Vars {
				stmtVar[v] = true
			}
		}
		isGemm, isTranspose := false, false
		ir.WalkNodes(nest.Body, func(n ir.Node) bool {
			switch n.(type) {
			case *ir.Micro:
				isGemm = true
			case *ir.Transpose:
				isTranspose = true
			}
			return pick == nil
		})
		// A `parallel i` directive applies to the nests that still have a loop over i; tensorized
		// statements (GEMM, transpose) have renamed their loops and keep the default choice.
		hasNamed := false
		ir.WalkNodes(nest.Body, func(n ir.Node) bool {
			if l, ok := n.(*ir.Loop); ok && named[l.Var.Name] {
				hasNamed = true
			}
			return !hasNamed
		})
		ir.WalkNodes(nest.Body, func(n ir.Node) bool {
			l, ok := n.(*ir.Loop)
			if !ok || pick != nil {
				return pick == nil
			}
			switch {
			case hasNamed:
				if named[l.Var.Name] {
					pick = l
				}
			case isGemm:
				if gemmPanelLoop(l) {
					pick = l
				}
			case isTranspose:
				// the outer block loop: its iterations write disjoint bands of the output
				pick = l
				return false
			default:
				if stmtVar[l.Var] && l.Kind == ir.Serial && len(carried(l.Body)) == 0 {
					pick = l
				} else if stmtVar[l.Var] && l.Kind == ir.Vector && l.Reduce == nil && len(carried(l.Body)) == 0 {
					vec = l
				}
				return false // only the outermost loop
			}
			return true
		})
		var chunk ir.IExpr // the work of one chunk of a strip-mined vector loop (its parallel loop's cost)
		if pick == nil && vec != nil && !hasNamed {
			pick, chunk = stripVector(nest, vec, c.Machine.Knobs.MinParallelWork)
		}
		if pick == nil || pick.Kind != ir.Serial {
			continue
		}
		picks := []*ir.Loop{pick}
		var batch *ir.Loop // the serial copy of a batched GEMM's outer loop, before any loop is marked
		if isGemm && !hasNamed {
			batch = batchLoop(nest)
			// every version of the nest (packed and unpacked) gets its jr loop parallel
			picks = nil
			ir.WalkNodes(nest.Body, func(n ir.Node) bool {
				if l, ok := n.(*ir.Loop); ok && gemmPanelLoop(l) {
					picks = append(picks, l)
				}
				return true
			})
		}
		for _, p := range picks {
			p.Kind = ir.Parallel
			p.Cost = bodyCost(p.Body, map[*ir.Var]ir.IExpr{p.Var: p.Lo})
			if chunk != nil {
				p.Cost = chunk
			}
		}
		if isGemm && !hasNamed {
			var vers map[*ir.Loop]*rowBlockVersion
			nest.Body, vers = parallelRowBlocks(nest.Body)
			nest.Body = privateB(nest.Body, vers)
		}
		if batch != nil {
			nest.Body = parallelBatch(nest, batch)
		}
		changed = true
	}
	return changed, nil
}

// stripVector strip-mines the outermost loop of a one-dimensional elementwise nest, a Vector loop v over a
// statement index (saxpy, gelu, the f16 conversions: vectorize leaves nothing outside it to split), into
// a chunk loop around v's copy over one chunk, replacing v in nest's body, and returns the chunk loop
// (for Parallel to mark) and its cost, the chunk's work. With span = Hi − Lo elements, the chunks
// are
//
//	k = 1 + 7·min(1, span·ops/4 / work) of them,  C = G·max(1, ⌈⌈span / k⌉ / G⌉) elements each,  G = 64·Width
//
// where ops/4 is an element's work (elementOps) and work rt.MinParallelWork's value (Knobs): one chunk,
// v's single call, below it; eight above, so that two, four or eight workers get whole chunks in equal
// numbers. G keeps every chunk a whole
// number of SIMD groups and a worker's stores off the other's cache lines. Before, a vector loop was
// never split: gelu over 2^20 elements took 286 µs on one Zen 5 core and on two (docs/PERF.md,
// "Session 13").
func stripVector(nest *ir.Nest, v *ir.Loop, work int) (*ir.Loop, ir.IExpr) {
	span := ir.ISub(v.Hi, v.Lo)
	ops := elementOps(v.Body)
	// units of work: ops/4 an element
	units := func(e ir.IExpr) ir.IExpr { return ir.IDiv(ir.IMul(e, ir.IConst{V: ops}), ir.IConst{V: 4}) }
	g := ir.IConst{V: 64 * max(v.Width, 1)}
	k := ir.IAdd(ir.IConst{V: 1}, ir.IMul(ir.IConst{V: 7}, ir.IMin(ir.IConst{V: 1}, ir.IDiv(units(span), ir.IConst{V: max(work, 1)}))))
	size := ir.IMul(g, ir.IMax(ir.IConst{V: 1}, ceilDiv(ceilDiv(span, k), g))) // ≥ G: a step, also for span 0
	// C is computed once, as the variable of a one-trip loop around the chunk loop (the loop bounds
	// inside are evaluated per iteration)
	sv := &ir.Var{Name: v.Var.Name + "_cs"}
	c := ir.IVar{V: sv}
	cv := &ir.Var{Name: v.Var.Name + "_c"}
	inner := *v
	inner.Lo = ir.IVar{V: cv}
	inner.Hi = ir.IMin(v.Hi, ir.IAdd(ir.IVar{V: cv}, c))
	outer := &ir.Loop{Var: cv, Lo: v.Lo, Hi: v.Hi, Step: c, Kind: ir.Serial, Body: []ir.Node{&inner}}
	once := &ir.Loop{Var: sv, Lo: size, Hi: ir.IAdd(size, ir.IConst{V: 1}), Step: ir.IConst{V: 1}, Body: []ir.Node{outer}}
	nest.Body = ir.RewriteNodes(nest.Body, func(n ir.Node) []ir.Node {
		if n == ir.Node(v) {
			return []ir.Node{once}
		}
		return []ir.Node{n}
	})
	return outer, units(ir.IMin(span, c))
}

// elementOps weighs one element of an elementwise loop body: its arithmetic operations and conversions,
// a transcendental (exp, log, tanh, sigmoid) as 8, at least 1. A chunk of the strip-mined loop costs
// ops/4 units an element: saxpy (2 operations) half a unit, gelu (7 and an exp) almost four. On the
// Zen 5, an element of saxpy took 45 ps in cache and one of gelu 265 ps; two cores ran saxpy over 2^16
// elements 32% slower than one when each element counted a unit, and 47% faster from 2^17 on.
func elementOps(body []ir.Node) int {
	ops := 0
	count := func(e ir.Expr) {
		ir.Walk(e, func(x ir.Expr) {
			switch x := x.(type) {
			case *ir.Binary, *ir.Cast:
				ops++
			case *ir.Unary:
				switch x.Op {
				case ir.Exp, ir.Log, ir.Tanh, ir.Sigmoid:
					ops += 8
				default:
					ops++
				}
			}
		})
	}
	ir.WalkNodes(body, func(n ir.Node) bool {
		if st, ok := n.(*ir.Store); ok {
			count(st.Value)
		}
		return true
	})
	return max(ops, 1)
}

// batchLoop returns a serial copy of the outer loop of a batched GEMM nest (a statement index b whose
// body holds the GEMM's versions: bmm's C[b, i, j]), or nil when the nest has no such loop.
func batchLoop(nest *ir.Nest) *ir.Loop {
	if len(nest.Body) != 1 || len(nest.Stmts) != 1 {
		return nil
	}
	l, ok := nest.Body[0].(*ir.Loop)
	if !ok || l.Kind != ir.Serial || gemmPanelLoop(l) || !slices.Contains(nest.Stmts[0].Vars, l.Var) {
		return nil
	}
	return cloneLoop(l)
}

// parallelBatch versions a batched GEMM nest (its body the outer loop b, already given its inner
// parallel loops) on the batch count Bt and the workers W: when Bt ≥ W and the last round of products
// leaves at most a quarter of Bt's work idle (4·(W·⌈Bt/W⌉ − Bt) ≤ Bt), batch, a serial copy of the b
// loop, runs parallel: each worker computes whole products, one fork/join for the batch. Otherwise
// (Bt = 3 on two workers, or a single product) the nest as it was: each product split between the
// workers, a fork/join (or two) per product. A batch of small products (1000 × 8³: 512 multiply-adds
// each, below any split's cost) ran on one core before. The cost of an iteration is the product's
// multiply-adds: the extents of the statement's other indices and of its reductions. A batch of one
// product skips the versioning.
func parallelBatch(nest *ir.Nest, batch *ir.Loop) []ir.Node {
	var cost ir.IExpr = ir.IConst{V: 1}
	vars := slices.Clone(nest.Stmts[0].Vars)
	ir.Walk(nest.Stmts[0].Value, func(e ir.Expr) {
		if r, ok := e.(*ir.Reduce); ok {
			vars = append(vars, r.Vars...)
		}
	})
	for _, v := range vars {
		if v != batch.Var {
			cost = ir.IMul(cost, v.Hi())
		}
	}
	batch.Kind, batch.Cost = ir.Parallel, ir.IAdd(cost, ir.IConst{V: 1})
	one := ir.IConst{V: 1}
	// W is read once (rt.Workers takes the scheduler's lock), as the variable of a one-trip loop b_w.
	wsym := ir.ISym{Name: microSlot(batch.Body) + ".Workers", RunTime: true}
	wv := &ir.Var{Name: batch.Var.Name + "_w"}
	bt, w := batch.Hi, ir.IVar{V: wv}
	waste := ir.ISub(ir.IMul(w, ir.IDiv(ir.IAdd(bt, ir.ISub(w, one)), w)), bt)
	// flag = 1 when min(Bt − 4·waste, Bt − W) ≥ 0, else 0 (Bt·M·N is the length of C: 5·Bt fits an int)
	flag := ir.IMin(one, ir.IMax(ir.IConst{V: 0}, ir.IAdd(ir.IMin(ir.ISub(bt, ir.IMul(ir.IConst{V: 4}, waste)), ir.ISub(bt, w)), one)))
	v := &ir.Var{Name: batch.Var.Name + "_par"}
	cond := &ir.Binary{Op: ir.Eq, X: &ir.VarVal{V: v, T: ir.I32}, Y: &ir.Const{Val: 1, T: ir.I32}, T: ir.Bool}
	par := &ir.Loop{Var: v, Lo: flag, Hi: ir.IAdd(flag, one), Step: one,
		Body: []ir.Node{&ir.If{Cond: cond, Then: []ir.Node{batch}, Else: cloneNodes(nest.Body)}}}
	versions := &ir.Loop{Var: wv, Lo: wsym, Hi: ir.IAdd(wsym, one), Step: one, Body: []ir.Node{par}}
	d, ok := bt.(ir.IDim)
	if !ok {
		return []ir.Node{versions}
	}
	// A single product takes the nest as it was without reading W: one Bmm of 8³ took 53 ns, and 62
	// with the read.
	many := &ir.Binary{Op: ir.Ge, X: &ir.DimVal{D: d.D, T: ir.F64}, Y: &ir.Const{Val: 2, T: ir.F64}, T: ir.Bool}
	return []ir.Node{&ir.If{Cond: many, Then: []ir.Node{versions}, Else: nest.Body}}
}

// microSlot returns the slot of the first Micro in body ("" if none).
func microSlot(body []ir.Node) string {
	var slot string
	ir.WalkNodes(body, func(x ir.Node) bool {
		if u, ok := x.(*ir.Micro); ok {
			slot = u.Slot
		}
		return slot == ""
	})
	return slot
}

// parallelRowBlocks versions every packed ic loop (ic ⊃ alloc A ⊃ {pack A, jr}) of body on the worker
// count W = <slot>.Workers, read once (a one-trip loop around the version test), and R = <slot>.RowBlocks:
// if W ≥ 2 and R·M ≥ W·MC (each worker gets at least MC/R rows), or W = 2, R ≥ 1 and M ≥ N − M (a C
// at least half as tall as wide, each worker then packing its own B̃: privateB), a copy with ic parallel and everything
// inside serial (BLIS's loop 3: each worker packs its own A block into its own L2 and runs all its
// panels, one fork/join per K block for the row blocks and one for the shared B̃ pack); else the loop as
// it is, jr parallel (two fork/joins per MC block, every worker streaming the whole shared Ã). Before
// session 5 the test was M ≥ R·MC whatever W, which a tuned MC = 770 put out of reach of M = 2048 on two
// cores; one worker keeps that test (the copy then runs inline with balanced blocks), so the one-core
// code takes the same blocks as before.
func parallelRowBlocks(body []ir.Node) ([]ir.Node, map[*ir.Loop]*rowBlockVersion) {
	vers := map[*ir.Loop]*rowBlockVersion{}
	return ir.RewriteNodes(body, func(n ir.Node) []ir.Node {
		ic, ok := n.(*ir.Loop)
		if !ok || len(ic.Body) != 1 {
			return []ir.Node{n}
		}
		alloc, ok := ic.Body[0].(*ir.Alloc)
		if !ok || len(alloc.Body) != 2 {
			return []ir.Node{n}
		}
		_, isPack := alloc.Body[0].(*ir.Pack)
		jr, isLoop := alloc.Body[1].(*ir.Loop)
		dim, isDim := ic.Hi.(ir.IDim)
		if !isPack || !isLoop || !gemmPanelLoop(jr) || !isDim {
			return []ir.Node{n}
		}
		slot := microSlot(jr.Body)
		par := cloneLoop(ic)
		ir.WalkNodes(par.Body, func(x ir.Node) bool {
			if l, ok := x.(*ir.Loop); ok {
				l.Kind, l.Cost = ir.Serial, nil
			}
			return true
		})
		w := &ir.Var{Name: ic.Var.Name + "_w"}
		ser := cloneLoop(par) // for privateB: balanced like par, run per worker
		bal := balanceRowBlocks(par, slot, dim, ir.IVar{V: w})
		par.Kind = ir.Parallel
		par.Cost = bodyCost(par.Body, map[*ir.Var]ir.IExpr{par.Var: par.Lo})
		i32 := func(e ir.Expr, op ir.Op, f ir.Expr) ir.Expr { return &ir.Binary{Op: op, X: e, Y: f, T: ir.I32} }
		wv, two := &ir.VarVal{V: w, T: ir.I32}, &ir.Const{Val: 2, T: ir.I32}
		rb := &ir.PlanVal{Name: slot + ".RowBlocks", T: ir.I32}
		// R·M ≥ max(W, R·R·(2 − min(W, 2)))·MC: R·M ≥ W·MC on two workers or more, M ≥ R·MC on one
		// (the test of the serial nest before session 5, which one core keeps: the same blocks)
		mv := &ir.DimVal{D: dim.D, T: ir.I32}
		blocks := i32(i32(rb, ir.Mul, mv), ir.Sub,
			i32(i32(wv, ir.Max, i32(i32(rb, ir.Mul, rb), ir.Mul, i32(two, ir.Sub, i32(wv, ir.Min, two)))), ir.Mul, &ir.PlanVal{Name: slot + ".MC", T: ir.I32}))
		var cond ir.Expr = &ir.Binary{Op: ir.Ge, X: blocks, Y: &ir.Const{Val: 0, T: ir.I32}, T: ir.Bool}
		if n := firstDim(jr.Hi); n != nil {
			// or, on exactly two workers (where privateB gives each its own B̃), M ≥ N − M: a block of
			// C at least half as tall as wide. The jr-parallel version there has each worker read the
			// whole Ã, half of it packed into the other core's cache, and ran no faster on two cores
			// than on one (sgemm 160³–208³ on the Zen 5); the row blocks pack B̃ twice, which loses
			// where N is much wider than M (docs/PERF.md, "Session 13"). R = 0 still holds the row
			// blocks off. As one test, with no logical operators in the IR:
			// max(R·M − …·MC, min(M − (N − M), 0) − min(|W − 2|, 1) − (1 − min(R, 1))) ≥ 0.
			one, zero := &ir.Const{Val: 1, T: ir.I32}, &ir.Const{Val: 0, T: ir.I32}
			wide := i32(mv, ir.Sub, i32(&ir.DimVal{D: n, T: ir.I32}, ir.Sub, mv))
			notTwo := i32(i32(i32(wv, ir.Sub, two), ir.Max, i32(two, ir.Sub, wv)), ir.Min, one)
			off := i32(one, ir.Sub, i32(rb, ir.Min, one))
			half := i32(i32(i32(wide, ir.Min, zero), ir.Sub, notTwo), ir.Sub, off)
			cond = &ir.Binary{Op: ir.Ge, X: i32(blocks, ir.Max, half), Y: zero, T: ir.Bool}
		}
		wsym := ir.ISym{Name: slot + ".Workers", RunTime: true}
		ver := &ir.If{Cond: cond, Then: []ir.Node{bal}, Else: []ir.Node{ic}}
		wl := &ir.Loop{Var: w, Lo: wsym, Hi: ir.IAdd(wsym, ir.IConst{V: 1}), Step: ir.IConst{V: 1}, Body: []ir.Node{ver}}
		vers[wl] = &rowBlockVersion{slot: slot, m: dim, w: w, cond: cond, ser: ser, ver: ver}
		return []ir.Node{wl}
	}), vers
}

// firstDim returns the first dim of e (depth first), or nil: N in the jr loop's bound min(NC, N − jc).
func firstDim(e ir.IExpr) *ir.Dim {
	switch x := e.(type) {
	case ir.IDim:
		return x.D
	case ir.IBin:
		if d := firstDim(x.X); d != nil {
			return d
		}
		return firstDim(x.Y)
	}
	return nil
}

// rowBlockVersion is what parallelRowBlocks leaves privateB about one worker loop it made: the version
// test and a serial copy of the ic loop (everything inside serial, not yet balanced).
type rowBlockVersion struct {
	slot string
	m    ir.IDim
	w    *ir.Var
	cond ir.Expr
	ser  *ir.Loop
	ver  *ir.If
}

// privateB gives the parallel row-block version a private B̃ on exactly two workers. The shared B̃
// block is packed by both workers (one fork/join) and read whole by both: each K block, a worker's
// stores into its half must invalidate the lines the other core read in the last block or call, and
// its microkernels read the other half from the other core's cache. Measured on the Zen 5 (two
// vCPUs, sgemm): the shared pack took 35.7 µs of CPU at 256³ against 6.8 µs on one core, and the
// microkernels ran 18% slower than on one core. With W = 2 each worker packs the whole B̃ block
// into its own buffer and runs its share of the balanced row blocks, one fork/join per K block:
// 256³ 140 → 114–125 µs, 512³ 0.99 → 0.87 ms, 1024³ −4%, 2048³ and 4096³ level. The duplicate packing
// grows with W (each worker packs what the team shared), so three or more workers keep the shared B̃.
//
// For each K-block loop whose body is the shared pack of B̃ and a worker loop of parallelRowBlocks,
// the worker loop's body becomes
//
//	if W == 2 {
//	    if cond {
//	        S = MR·⌈⌈M/MR⌉/W⌉; mcb = B (blockRows over S rows, ⌈S/MC⌉ blocks)
//	        parallel t < W: alloc B̃_t { pack B̃_t; for ic = t·S; ic < min(M, t·S + S); ic += mcb { … } }
//	    } else { pack B̃; the serial ic loop }
//	} else { pack B̃; if cond { the shared parallel row blocks } else { the serial ic loop } }
//
// with S = MR·⌈⌈M/MR⌉/W⌉ the rows of a worker: the shares differ by one row tile at most. Until session
// 13, S was ⌈M/(W·MC)⌉·B with balanceRowBlocks' B, whose rounding up to MR added up over a worker's
// blocks: dgemm 1024³ (MR 14, MC 224) gave the first worker 546 rows of 1024 and the second 478.
func privateB(body []ir.Node, vers map[*ir.Loop]*rowBlockVersion) []ir.Node {
	return ir.RewriteNodes(body, func(n ir.Node) []ir.Node {
		pc, ok := n.(*ir.Loop)
		if !ok || len(pc.Body) != 2 {
			return []ir.Node{n}
		}
		pk, isPack := pc.Body[0].(*ir.Pack)
		wl, isLoop := pc.Body[1].(*ir.Loop)
		if !isPack || !isLoop || vers[wl] == nil {
			return []ir.Node{n}
		}
		v := vers[wl]
		uses := false
		ir.WalkNodes(v.ser.Body, func(x ir.Node) bool {
			if u, ok := x.(*ir.Micro); ok && u.B.T == pk.Dst {
				uses = true
			}
			return !uses
		})
		if !uses {
			return []ir.Node{n}
		}
		one := ir.IConst{V: 1}
		w := ir.IVar{V: v.w}
		ser := cloneLoop(v.ser)
		// S = MR·⌈⌈M/MR⌉/W⌉: the workers' shares differ by at most one row tile, and each splits its
		// own into ⌈S/MC⌉ blocks of B = min(MC, MR·⌈⌈S/nb⌉/MR⌉)
		mr := sym(v.slot, "MR")
		share := ir.IMul(mr, ceilDiv(ceilDiv(v.m, mr), w))
		sv := &ir.Var{Name: v.ser.Var.Name + "_rows"} // S, computed once (a one-trip loop around the version)
		rows := ir.IVar{V: sv}
		t := &ir.Var{Name: v.ser.Var.Name + "_t"}
		ser.Lo = ir.IMul(ir.IVar{V: t}, rows)
		ser.Hi = ir.IMin(v.m, ir.IAdd(ser.Lo, rows))
		bal := blockRows(ser, v.slot, rows, ceilDiv(rows, sym(v.slot, "MC")), ser.Hi)
		bt := *pk.Dst
		bt.Name += "w"
		ir.WalkNodes(ser.Body, func(x ir.Node) bool {
			if u, ok := x.(*ir.Micro); ok && u.B.T == pk.Dst {
				u.B.T = &bt
			}
			return true
		})
		pw := *pk
		pw.Dst = &bt
		tl := &ir.Loop{Var: t, Lo: ir.IConst{V: 0}, Hi: w, Step: one, Kind: ir.Parallel,
			Body: []ir.Node{&ir.Alloc{T: &bt, Body: []ir.Node{&pw, ser}}}}
		tl.Cost = bodyCost(tl.Body, map[*ir.Var]ir.IExpr{t: ir.IConst{V: 0}})
		bal.Body = []ir.Node{tl}
		pk2 := *pk
		two := &ir.Binary{Op: ir.Eq, X: &ir.VarVal{V: v.w, T: ir.I32}, Y: &ir.Const{Val: 2, T: ir.I32}, T: ir.Bool}
		once := &ir.Loop{Var: sv, Lo: share, Hi: ir.IAdd(share, one), Step: one, Body: []ir.Node{bal}}
		onTwo := &ir.If{Cond: v.cond, Then: []ir.Node{once}, Else: []ir.Node{&pk2, cloneLoop(v.ver.Else[0].(*ir.Loop))}}
		wl.Body = []ir.Node{&ir.If{Cond: two, Then: []ir.Node{onTwo}, Else: []ir.Node{pk, v.ver}}}
		pc.Body = []ir.Node{wl}
		return []ir.Node{pc}
	})
}

// balanceRowBlocks gives the parallel row-block loop par (ic ⊃ alloc A ⊃ {pack A, jr ⊃ ir ⊃ Micro}) a
// block size whose block count is a multiple of the workers: the run time splits the blocks between the
// workers in whole blocks, and ⌈M/MC⌉ blocks over W workers leave one idle for part of the time (M = 2048,
// MC = 448, two workers: 5 blocks, 3 and 2, 76% balance). With w the worker count (<slot>.Workers, read
// at run time by the caller),
//
//	nb = W·⌈M / (W·MC)⌉ blocks,  B = min(MC, MR·⌈⌈M / nb⌉ / MR⌉)
//
// replaces MC in par's step, its pack's extent and its loop and Micro bounds (the A buffer keeps its MC
// size: B ≤ MC). Any B ≥ 1 computes the same result: each block is packed and multiplied whole. B is
// computed once, as the variable of a one-trip loop around par (mcb = B .. B+1), which it returns.
func balanceRowBlocks(par *ir.Loop, slot string, m ir.IDim, w ir.IExpr) *ir.Loop {
	mc := sym(slot, "MC")
	return blockRows(par, slot, m, ir.IMul(w, ceilDiv(m, ir.IMul(w, mc))), nil)
}

// blockRows sets the step of the row-block loop par to B = min(MC, MR·⌈⌈rows / nb⌉ / MR⌉), nb blocks over
// rows rows (see balanceRowBlocks), computed once in a one-trip loop around par, which it returns. With
// end non-nil (par's upper bound, a worker's last row + 1), each block also stops at end: par's range
// then need not be a multiple of B.
func blockRows(par *ir.Loop, slot string, rows, nb, end ir.IExpr) *ir.Loop {
	one := ir.IConst{V: 1}
	mc, mr := sym(slot, "MC"), sym(slot, "MR")
	b := ir.IMin(mc, ir.IMul(mr, ceilDiv(ceilDiv(rows, nb), mr)))
	mcb := &ir.Var{Name: par.Var.Name + "_mcb"}
	par.Step = ir.IVar{V: mcb}
	var with ir.IExpr = ir.IVar{V: mcb}
	if end != nil {
		// a block ends at end too: min(B, end − ic) for the body's MC (its extents are min(MC, M − ic))
		with = ir.IMin(with, ir.ISub(end, ir.IVar{V: par.Var}))
	}
	par.Body = symToExpr(par.Body, slot+".MC", mcb, with)
	return &ir.Loop{Var: mcb, Lo: b, Hi: ir.IAdd(b, one), Step: one, Body: []ir.Node{par}}
}

// symToVar replaces the plan symbol name by the variable v (a block size computed once per call, bound
// by a one-trip loop around body) in body's loop bounds, packs and Micro calls: their extents, depths,
// offsets and panel layouts, and the symbol's value in a Micro's Beta and epilogue bits (the last-block
// test reads KC).
func symToVar(body []ir.Node, name string, v *ir.Var) []ir.Node {
	return symToExpr(body, name, v, ir.IVar{V: v})
}

// symToExpr is symToVar with the index expression with for the symbol in index expressions (v still
// stands for it in Beta and the epilogue bits).
func symToExpr(body []ir.Node, name string, v *ir.Var, with ir.IExpr) []ir.Node {
	sub := func(e ir.IExpr) ir.IExpr {
		if e == nil {
			return nil
		}
		return replaceSym(e, name, with)
	}
	subE := func(e ir.Expr) ir.Expr {
		if e == nil {
			return nil
		}
		return ir.Rewrite(e, func(x ir.Expr) ir.Expr {
			if p, ok := x.(*ir.PlanVal); ok && p.Name == name {
				return &ir.VarVal{V: v, T: p.T}
			}
			return x
		})
	}
	return ir.RewriteNodes(body, func(n ir.Node) []ir.Node {
		switch x := n.(type) {
		case *ir.Loop:
			x.Lo, x.Hi, x.Step = sub(x.Lo), sub(x.Hi), sub(x.Step)
		case *ir.Pack:
			c := *x
			c.N, c.Depth, c.DstOff, c.Panel = sub(x.N), sub(x.Depth), sub(x.DstOff), sub(x.Panel)
			return []ir.Node{&c}
		case *ir.Micro:
			x.M, x.N, x.KC, x.COff = sub(x.M), sub(x.N), sub(x.KC), sub(x.COff)
			x.A, x.B = x.A.MapIExprs(sub), x.B.MapIExprs(sub)
			x.Beta, x.EP = subE(x.Beta), subE(x.EP)
		}
		return []ir.Node{n}
	})
}

// replaceSym replaces the plan symbol name in e by with.
func replaceSym(e ir.IExpr, name string, with ir.IExpr) ir.IExpr {
	switch x := e.(type) {
	case ir.ISym:
		if x.Name == name {
			return with
		}
	case ir.IBin:
		return ir.IBin{Op: x.Op, X: replaceSym(x.X, name, with), Y: replaceSym(x.Y, name, with)}
	}
	return e
}

// gemmPanelLoop reports whether l is the loop a GEMM version runs in parallel: jr (jr ⊃ ir ⊃ Micro), or
// the column-block loop of the rows version (jb ⊃ rows Micro).
func gemmPanelLoop(l *ir.Loop) bool {
	if len(l.Body) != 1 {
		return false
	}
	if u, ok := l.Body[0].(*ir.Micro); ok {
		return u.Kind() == ir.MicroRows
	}
	if inner, ok := l.Body[0].(*ir.Loop); ok && len(inner.Body) == 1 {
		_, ok := inner.Body[0].(*ir.Micro)
		return ok
	}
	return false
}

// microMACsPerUnit scales a register-tile microkernel's multiply-adds to the unit of rt.MinParallelWork (a
// loop iteration of a plain nest): the microkernel runs near the FMA peak, 16–32 f32 multiply-adds a
// cycle, where an elementwise iteration costs about a cycle. Counted as raw multiply-adds, an sgemm of
// 65536 (0.6 µs on one Zen 5 core) was split between two workers: a fork/join there costs 1.2–1.6 µs
// (the two vCPUs' cache-line round trip is 450 ns), and two cores ran sgemm 40³ in 2.9 µs against 0.85
// on one, 56³ in 5.7 against 1.9, dgemm 48³ in 2.9 against 2.2. With 32 bytes of multiply-adds a unit
// (8 f32 or 4 f64), a register-tile loop splits from about 524k f32 (4.6 µs at the peak) or 262k f64
// multiply-adds (docs/PERF.md, "Session 13"). The rows kernel is bound by reading B and keeps one unit
// per multiply-add.
const microMACsPerUnit = 32

// bodyCost adds up the trip-count products of the loops in body, counting a register-tile Micro (packed
// or unpacked) as MR·NR·KC·size(Elem)/microMACsPerUnit, a rows Micro as MR·NR·KC and a Transpose as
// Rows·Cols. Inner bounds are taken at their first iteration (each loop variable replaced by its start),
// so the estimate only uses values bound outside the parallel loop.
func bodyCost(body []ir.Node, m map[*ir.Var]ir.IExpr) ir.IExpr {
	var best ir.IExpr = ir.IConst{V: 1}
	for _, n := range body {
		var c ir.IExpr
		switch x := n.(type) {
		case *ir.Loop:
			lo, hi := ir.SubstIExpr(x.Lo, m), ir.SubstIExpr(x.Hi, m)
			trip := ir.IDiv(ir.IAdd(ir.ISub(hi, lo), ir.ISub(x.Step, ir.IConst{V: 1})), x.Step)
			inner := map[*ir.Var]ir.IExpr{x.Var: lo}
			for k, v := range m {
				inner[k] = v
			}
			c = ir.IMul(trip, bodyCost(x.Body, inner))
		case *ir.Micro:
			c = ir.IMul(ir.IMul(x.MR, x.NR), ir.SubstIExpr(x.KC, m))
			if x.Kind() != ir.MicroRows {
				c = ir.IDiv(ir.IMul(c, ir.IConst{V: max(x.Elem.Size(), 1)}), ir.IConst{V: microMACsPerUnit})
			}
		case *ir.Transpose:
			c = ir.IMul(ir.SubstIExpr(x.Rows, m), ir.SubstIExpr(x.Cols, m))
		case *ir.Alloc:
			c = bodyCost(x.Body, m)
		default:
			continue
		}
		best = ir.IAdd(best, c)
	}
	return best
}
