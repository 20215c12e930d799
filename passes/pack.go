package passes

import "github.com/kgen-dev/kgen/ir"

// Pack stages the operands of every Micro still in View form in BLIS panels: the KC×NC block of B once
// per (jc, pc) iteration, in NR-wide row-major micro-panels, and the MC×KC block of A once per ic
// iteration, in MR-tall column-major micro-panels, both zero-padded to whole panels. The panel buffers are
// allocated once per call (B) and once per ic iteration (A; per worker when ic runs in parallel), sized
// by the plan and the problem, whichever is smaller. Packing evaluates the View expression, so transposes,
// strides and 16-bit conversions happen here, once per element, not in the microkernel.
// Assumes the loop structure Tensorize builds (jc ⊃ pc ⊃ ic ⊃ jr ⊃ ir ⊃ Micro).
func Pack(f *ir.Func, c *Context) (bool, error) {
	n := funcNamer(f)
	type site struct {
		u     *ir.Micro
		loops []*ir.Loop
	}
	var sites []site
	var walk func(body []ir.Node, stack []*ir.Loop)
	walk = func(body []ir.Node, stack []*ir.Loop) {
		for _, node := range body {
			switch x := node.(type) {
			case *ir.Nest:
				walk(x.Body, stack)
			case *ir.Alloc:
				walk(x.Body, stack)
			case *ir.Loop:
				walk(x.Body, append(stack[:len(stack):len(stack)], x))
			case *ir.Micro:
				if x.A.View != nil && x.B.View != nil && len(stack) >= 5 {
					sites = append(sites, site{x, stack[len(stack)-5:]})
				}
			}
		}
	}
	walk(f.Body, nil)
	for _, s := range sites {
		var small, blocked, rows *ir.Loop
		if unpackable(s.u) {
			small = smallVersion(s.u, s.loops)
			blocked = fewTilesVersion(s.u, s.loops)
			rows = rowsVersion(n, s.u, s.loops)
		}
		packMicro(n, s.u, s.loops)
		packed := balanceKBlocks(s.u.Slot, s.loops[0], s.loops[1])
		var node ir.Node = packed
		if small != nil {
			// W is read once, as the variable of a one-trip loop (rt.Workers takes the scheduler's lock)
			w := &ir.Var{Name: n.name("tiles_w")}
			wsym := ir.ISym{Name: s.u.Slot + ".Workers", RunTime: true}
			node = &ir.Loop{Var: w, Lo: wsym, Hi: ir.IAdd(wsym, ir.IConst{V: 1}), Step: ir.IConst{V: 1},
				Body: []ir.Node{&ir.If{Cond: fewTiles(s.u.Slot, s.loops, w), Then: []ir.Node{blocked}, Else: []ir.Node{packed}}}}
			node = &ir.If{Cond: smallGemm(s.u.Slot, s.loops), Then: []ir.Node{small}, Else: []ir.Node{node}}
			node = &ir.If{Cond: fewRows(s.u.Slot, s.loops), Then: []ir.Node{rows}, Else: []ir.Node{node}}
		}
		f.Body = replaceLoop(f.Body, s.loops[0], node)
	}
	return len(sites) > 0, nil
}

// The three versions of an unpackable GEMM are chosen by plan symbols of its slot, whose defaults are
// the target table's knobs (target.Knobs, tuned on one machine: docs/PERF.md), so a variant or the tuner
// can move them without a new loop nest:
//   - <slot>.SmallWork: a problem of at most this many multiply-adds (M·N·K) runs unpacked: packing
//     copies every operand element once, which a small problem does not earn back. So does one of at
//     most MR rows (one row tile: no packed panel of B would be read twice), and one of at most 2·MR
//     rows whose B fits the second-level TLB's reach (smallGemm). Skinny problems
//     of more rows run packed: with B packed row by row (packPB) the packed nest is faster there
//     (16×4096×4096 sgemm on Zen 3: 42 against 32 GFLOP/s; level on the Zen 5).
//   - <slot>.SmallDeep: a larger problem whose C is small against its depth (M·N ≤ 1024·K) of at most
//     this many multiply-adds runs the whole-K unpacked version too, if it has more rows than fewTiles
//     keeps for its K blocks on one worker (deepGemm).
//   - <slot>.RowsMax and <slot>.RowsNB: a GEMM with at most RowsMax rows of C runs as one "rows" Micro
//     per RowsNB-wide block of columns, covering all rows and the whole reduction (docs/MICROKERNEL.md,
//     "Rows"): such a product reads each element of B once for at most RowsMax multiply-adds, so the
//     backend streams B row by row instead of in register-tile strips. RowsNB is the width of one
//     call's block of columns for one or two rows: each row of B is then read in 8 KiB (f32, RowsNB
//     2048) runs, long enough for the hardware prefetchers, which stop at page boundaries (1 KiB-wide
//     blocks ran at half the bandwidth on Zen 3), while N = 4096 still makes two blocks for two workers
//     (4096-wide blocks left them one: Skinny/avx2/1×4096² took 1.62 ms on two cores against 0.79 with
//     2048, one core level; session 17). Three or four rows take at most one page of B's row per block
//     (rowsWidth), so that the block of C they load and store per group of B's rows stays in L1.
//     Wider N is split across the workers.

// planF64 is the value of a plan symbol of slot as an f64 expression.
func planF64(slot, name string) ir.Expr { return &ir.PlanVal{Name: slot + "." + name, T: ir.F64} }

// fewRows is M <= <slot>.RowsMax.
func fewRows(slot string, loops []*ir.Loop) ir.Expr {
	m := &ir.DimVal{D: loopDim(loops[2]).D, T: ir.F64}
	return &ir.Binary{Op: ir.Le, X: m, Y: planF64(slot, "RowsMax"), T: ir.Bool}
}

// rowsVersion builds the rows version of a view-form Micro u inside loops jc ⊃ pc ⊃ ic ⊃ jr ⊃ ir:
//
//	for jb = 0 .. N step nb { micro M×nb tile, m = M, n = min(nb, N - jb), kc = K }, nb = rowsWidth(<slot>.RowsNB, M)
//
// u's index expressions with ic = ir = jc = 0 and jr = jb, its operands read in place (strided layouts);
// Beta and EP are those of the first and of the last K block (the call does the whole reduction). The
// tile is M rows high, no register tile, which with the strided operands selects the rows kernel
// (ir.MicroRows).
func rowsVersion(n namer, u *ir.Micro, loops []*ir.Loop) *ir.Loop {
	jc, pc, ic, jr, irl := loops[0], loops[1], loops[2], loops[3], loops[4]
	jb := &ir.Var{Name: n.name("jb")}
	zero := ir.IConst{V: 0}
	r := wholeK(u, pc, map[*ir.Var]ir.IExpr{jc.Var: zero, ic.Var: zero, irl.Var: zero, jr.Var: ir.IVar{V: jb}, pc.Var: zero})
	// An expression of the dims and plan symbols, not a variable bound once: the accumulator the LLVM
	// backend allocates for the rows form (M·nb elements) may not depend on a loop variable.
	nb := rowsWidth(sym(u.Slot, "RowsNB"), ic.Hi, u.Elem.Size())
	r.MR, r.NR = ic.Hi, nb
	r.M, r.N = ic.Hi, ir.IMin(nb, ir.ISub(jc.Hi, ir.IVar{V: jb}))
	return &ir.Loop{Var: jb, Lo: zero, Hi: jc.Hi, Step: nb, Body: []ir.Node{r}}
}

// rowsPage is the run of one row of B, in bytes, that a rows call of more than two rows reads: a page.
const rowsPage = 4096

// rowsWidth is the rows version's block of columns for m rows of esz-byte elements: nb (RowsNB) for
// m ≤ 2, at most one page of a row of B (rowsPage/esz columns) for more. The amd64 rows kernel reads
// G = 8 or 4 rows of B per pass over the m rows of C for m = 1, 2, and G = 2 for more (its broadcasts
// would not fit the registers), so there it loads and stores 1.5–2 rows of C's block per row of B read
// (m/G, against 1/8–1/2 for one and two rows): the block has to stay in L1. On the Zen 5 (L1d 48 KiB,
// G = 4 for one row then), sgemm 3×4096×4096 read B at 20–21 GB/s with
// 4096 columns (48 KiB of C), 30 with 2048 and 33–37 with 1024 (12 KiB of C, 4 KiB runs of B); 4 rows
// 18–20 / 28–30 / 34–35; 1536 columns (not a whole page) ran at 20–31; dgemm 3 and 4 rows best at 512
// columns; 1 and 2 rows best at 4096 (both variants, docs/PERF.md session 17). The arm64 rows kernel
// reads G = 4 rows for every m (0.75–1 rows of C's block per row of B for three and four rows) and takes
// the same widths: a 12–16 KiB block of C fits any L1; not measured on arm64 hardware. Written without
// a select: nb − min(max(m − 2, 0), 1)·max(nb − page/esz, 0).
func rowsWidth(nb, m ir.IExpr, esz int) ir.IExpr {
	zero, one := ir.IConst{V: 0}, ir.IConst{V: 1}
	more := ir.IMin(ir.IMax(ir.ISub(m, ir.IConst{V: 2}), zero), one)
	return ir.ISub(nb, ir.IMul(more, ir.IMax(ir.ISub(nb, ir.IConst{V: rowsPage / esz}), zero)))
}

// smallVersion builds the unpacked version of a view-form Micro u inside loops jc ⊃ pc ⊃ ic ⊃ jr ⊃ ir
// for small problems (smallGemm):
//
//	for jr = 0 .. N step NR { for ir = 0 .. M step MR { micro m = min(MR, M - ir), n = min(NR, N - jr), kc = K } }
//
// u's index expressions with jc = ic = pc = 0, its operands read in place (strided layouts: the unpacked
// microkernel, ir.MicroUnpacked); Beta and EP those of the first and of the last K block. Its operands
// fit the caches anyway: the cache-block loops would only cost per call (three more loop levels, K split
// into KC blocks that write C and read it back), which is what a batch of 8×8×8 products pays most of
// its time for. Even the one-trip K-block loop of fewTilesVersion made 1000 × 8³ / 16³ / 32³ 11 / 6 / 8%
// slower on the Zen 5 (and sgemm 8³ alone 16%).
func smallVersion(u *ir.Micro, loops []*ir.Loop) *ir.Loop {
	jc, pc, ic := loops[0], loops[1], loops[2]
	zero := ir.IConst{V: 0}
	return tileLoops(wholeK(u, pc, map[*ir.Var]ir.IExpr{jc.Var: zero, ic.Var: zero, pc.Var: zero}), loops)
}

// tileLoops returns the register tile loops of the unpacked versions around r (a copy of the nest's
// Micro), whose tile size it sets: for jr = 0 .. N step NR { for ir = 0 .. M step MR { r } }.
func tileLoops(r *ir.Micro, loops []*ir.Loop) *ir.Loop {
	jc, ic, jr, irl := loops[0], loops[2], loops[3], loops[4]
	zero := ir.IConst{V: 0}
	r.M = ir.IMin(r.MR, ir.ISub(ic.Hi, ir.IVar{V: irl.Var}))
	r.N = ir.IMin(r.NR, ir.ISub(jc.Hi, ir.IVar{V: jr.Var}))
	inner := &ir.Loop{Var: irl.Var, Lo: zero, Hi: ic.Hi, Step: irl.Step, Body: []ir.Node{r}}
	return &ir.Loop{Var: jr.Var, Lo: zero, Hi: jc.Hi, Step: jr.Step, Body: []ir.Node{inner}}
}

// fewTilesVersion builds the unpacked version of a view-form Micro u inside loops jc ⊃ pc ⊃ ic ⊃ jr ⊃
// ir for products of a few row tiles at any size (fewTiles):
//
//	for pc = 0 .. max(K, 1) step KC { for jr = 0 .. N step NR { for ir = 0 .. M step MR {
//	    micro m = min(MR, M - ir), n = min(NR, N - jr), kc = min(KC, K - pc) } } }
//
// u with jc = ic = 0 (its K block, Beta and EP as in the packed nest), its operands read in place. The K
// blocks stay: a strip of B in place is kc rows a row of B apart, a page each when a row has 4 KiB or
// more, so the ⌈M/MR⌉ passes over it and the next strips (the same rows) find its pages in the TLB and
// its lines in L2 only for kc up to about a thousand. Whole-K strips of a 4096-deep B ran sgemm
// 16×4096×4096 in 9.8 ms on the Zen 5, strips of 512 in 6.3 ms (1024: 7.5 ms; packed: 9.9 ms).
func fewTilesVersion(u *ir.Micro, loops []*ir.Loop) *ir.Loop {
	jc, pc, ic := loops[0], loops[1], loops[2]
	zero := ir.IConst{V: 0}
	cols := tileLoops(inPlaceMicro(u, map[*ir.Var]ir.IExpr{jc.Var: zero, ic.Var: zero}), loops)
	return &ir.Loop{Var: pc.Var, Lo: pc.Lo, Hi: pc.Hi, Step: pc.Step, Body: []ir.Node{cols}}
}

// inPlaceMicro returns a copy of the view-form Micro u (u must be unpackable) that reads its operands
// in place: its index expressions with the loop variables replaced as at says.
func inPlaceMicro(u *ir.Micro, at map[*ir.Var]ir.IExpr) *ir.Micro {
	subst := func(e ir.IExpr) ir.IExpr { return ir.SubstIExpr(e, at) }
	r := *u
	r.KC = ir.SubstIExpr(u.KC, at)
	r.A, r.B = inPlace(u.A.MapIExprs(subst).View, false), inPlace(u.B.MapIExprs(subst).View, true)
	r.COff = ir.SubstIExpr(u.COff, at)
	if u.Bias != nil {
		r.BiasOff = ir.SubstIExpr(u.BiasOff, at)
	}
	r.Beta = ir.FoldSelects(ir.SubstVars(u.Beta, at))
	return &r
}

// wholeK returns a copy of the view-form Micro u (inside the K-block loop pc) that does the whole
// reduction in one call on its operands read in place (u must be unpackable): its index expressions with
// the loop variables replaced as at says (pc among them), kc = K, the
// Beta of the first K block (pc = 0) and the epilogue bits of the last (pc = K: pc >= K - KC holds).
func wholeK(u *ir.Micro, pc *ir.Loop, at map[*ir.Var]ir.IExpr) *ir.Micro {
	dimK := loopDim(pc)
	r := inPlaceMicro(u, at)
	r.KC = dimK
	pcAs := func(e ir.Expr, val func(t ir.DType) ir.Expr) ir.Expr {
		return ir.Rewrite(e, func(x ir.Expr) ir.Expr {
			if v, ok := x.(*ir.VarVal); ok && v.V == pc.Var {
				return val(v.T)
			}
			return x
		})
	}
	r.Beta = ir.FoldSelects(pcAs(ir.SubstVars(u.Beta, at), func(t ir.DType) ir.Expr { return &ir.Const{Val: 0, T: t} }))
	r.EP = ir.FoldSelects(pcAs(u.EP, func(t ir.DType) ir.Expr { return &ir.DimVal{D: dimK.D, T: t} }))
	return r
}

// loopDim is the dim a blocked loop of the GEMM nest runs over: its bound, or K in the pc loop's
// max(K, 1).
func loopDim(l *ir.Loop) ir.IDim {
	e := l.Hi
	if b, ok := e.(ir.IBin); ok && b.Op == 'M' { // max(K, 1)
		e = b.X
	}
	return e.(ir.IDim)
}

// smallGemm chooses the whole-K unpacked version (smallVersion): M·N·K ≤ <slot>.SmallWork, or a deep
// product (deepGemm: its score D ≥ 0), from the dims of the blocked loops, as one comparison
//
//	min(M·N·K, SmallWork − D) ≤ SmallWork
//
// (a tiny product pays for every operation of the test: sgemm 16³ takes 85 ns; a second copy of the
// version for the deep products, tested after the few-tiles one, made every sgemm 8³ call 20 ns slower
// on the Zen 5, 37 against 58 ns: the Go function around it grew). Batch reads the SmallWork bound
// from this form (planTest).
func smallGemm(slot string, loops []*ir.Loop) ir.Expr {
	dim := func(l *ir.Loop) ir.Expr { return &ir.DimVal{D: loopDim(l).D, T: ir.F64} }
	m, nn, k := dim(loops[2]), dim(loops[0]), dim(loops[1])
	mn := &ir.Binary{Op: ir.Mul, X: m, Y: nn, T: ir.F64}
	work := &ir.Binary{Op: ir.Mul, X: mn, Y: k, T: ir.F64}
	sw := planF64(slot, "SmallWork")
	x := &ir.Binary{Op: ir.Min, X: work, Y: &ir.Binary{Op: ir.Sub, X: sw, Y: deepGemm(slot, m, k, mn, work), T: ir.F64}, T: ir.F64}
	return &ir.Binary{Op: ir.Le, X: x, Y: sw, T: ir.Bool}
}

// deepGemm is the score D of a larger product whose C is small against its depth, D ≥ 0 when M·N·K ≤
// <slot>.SmallDeep, M·N ≤ deepRatio·K and M > unpackedTiles·MR (more rows than fewTiles leaves to its K
// blocks on one worker): smallGemm then chooses the whole-K unpacked version for it. Packing would copy
// A and B (M·K + K·N elements) to save re-reading them for a C of few tiles, and the unpacked kernel's
// strips of B (K rows of NR columns) are reused from L1/L2 by every row tile. On the Zen 5 (sgemm MR =
// 12; dgemm 14×16) unpacked against packed, one core / two: sgemm 256³ 0.92 / 0.89, 384³ 0.93 / 0.89,
// 480³ 0.89 / 0.90, 256×256×2000 0.94 / 0.81, 128×128×8000 0.81 / 0.77; dgemm 160³ 0.85 / 0.68, 256³ 0.90 / 0.81, 128×128×8000 0.76 / 0.72. A shallow product
// loses (sgemm 1024×1024×32: 1.51 / 1.07, 1024×1024×64: 1.41 / 1.14, 2048×2048×30: 1.57 / 1.40; dgemm
// 512×512×128: 1.15 / 1.03), which the depth test keeps packed, and so do large ones (dgemm 512³: 1.18 /
// 1.30; sgemm 512³ level): docs/PERF.md, "Session 15". The AVX-512 variants' SmallDeep (their
// target.Variant.SmallDeepWork, 448³ for f32, scaled to 317³ for f64 by deepWorkFor) sits at the
// measured crossovers (session 16, unpacked ÷ packed: sgemm 320–448³ 0.87–0.95, 512³ 1.01–1.08; dgemm
// 320³ 0.97–0.99, 384³ 1.04–1.09); other variants have 0 (AVX2's 6×16 and 6×8 tiles ran sgemm 256³ 9%
// and dgemm 256³ 24% slower unpacked on the same core), and a lock can set it per machine class.
// m and k are M and K, mn M·N and work M·N·K (f64 expressions).
func deepGemm(slot string, m, k, mn, work ir.Expr) ir.Expr {
	f64 := func(op ir.Op, x, y ir.Expr) ir.Expr { return &ir.Binary{Op: op, X: x, Y: y, T: ir.F64} }
	c := func(v float64) ir.Expr { return &ir.Const{Val: v, T: ir.F64} }
	rows := f64(ir.Sub, m, f64(ir.Add, f64(ir.Mul, c(unpackedTiles), planF64(slot, "MR")), c(1)))
	return f64(ir.Min, f64(ir.Min, f64(ir.Sub, planF64(slot, "SmallDeep"), work),
		f64(ir.Sub, f64(ir.Mul, c(deepRatio), k), mn)), rows)
}

// deepRatio bounds the C of a product that deepGemm runs unpacked: M·N ≤ deepRatio·K.
const deepRatio = 1024

// fewTiles chooses the K-blocked unpacked version (fewTilesVersion) for a larger problem: M ≤
// unpackedTiles·min(W, 2)·<slot>.MR, at most three row tiles on one worker (w, the worker count) and six on
// two or more. Each packed panel of B would then be read by a few microkernel calls only, so packing B (a
// read and a write of all of B before the products read it again) does not earn itself back, and the
// unpacked kernel reads each strip of B in place, once from memory and again from L2 for the other row
// tiles. On the Zen 5 (MR = 12, KC = 512), sgemm M×4096×4096 ran unpacked against packed: M = 13: 6.0
// against 9.4 ms on one core, 3.8 against 8.8 on two; M = 36: 9.9 against 11.3 and 6.1 against 9.0;
// M = 48: 12.9 against 13.5 (level) and 7.9 against 10.2; M = 72: 18.7 against 18.0 on one core, 12.0
// against 15.8 on two (docs/PERF.md, "Session 11"). Two workers share the memory bandwidth that B's
// three passes in the packed nest (the pack's read and write, the microkernels' read) spend, so the
// single pass keeps its lead over more row tiles there (docs/PERF.md, "Session 12").
func fewTiles(slot string, loops []*ir.Loop, w *ir.Var) ir.Expr {
	m := &ir.DimVal{D: loopDim(loops[2]).D, T: ir.F64}
	workers := &ir.Binary{Op: ir.Min, X: &ir.VarVal{V: w, T: ir.F64}, Y: &ir.Const{Val: 2, T: ir.F64}, T: ir.F64}
	tiles := &ir.Binary{Op: ir.Mul, X: &ir.Const{Val: unpackedTiles, T: ir.F64}, Y: workers, T: ir.F64}
	limit := &ir.Binary{Op: ir.Mul, X: tiles, Y: planF64(slot, "MR"), T: ir.F64}
	return &ir.Binary{Op: ir.Le, X: m, Y: limit, T: ir.Bool}
}

// unpackedTiles is the number of row tiles per worker (up to two workers) up to which a GEMM runs
// unpacked whatever its size (fewTiles).
const unpackedTiles = 3

// unpackable reports whether the microkernel can read the operands in place: both are plain loads of
// the element type, linear in the tile position and the reduction (constant strides), and B's rows are
// contiguous along the tile's columns (A may have any strides).
func unpackable(u *ir.Micro) bool {
	a, ok1 := u.A.View.Value.(*ir.Load)
	b, ok2 := u.B.View.Value.(*ir.Load)
	if !ok1 || !ok2 || a.T.Type != u.Elem || b.T.Type != u.Elem || a.T.Kind == ir.Scratch || b.T.Kind == ir.Scratch {
		return false
	}
	if inPlace(u.A.View, false).T == nil || inPlace(u.B.View, true).T == nil {
		return false
	}
	// B rows contiguous along the tile's columns, and the reduction not moving along them
	dInLast := false
	ir.IVars(b.Idx[len(b.Idx)-1], func(v *ir.Var) { dInLast = dInLast || v == u.B.View.D })
	return ir.Stride(b.Idx, u.B.View.P) == 1 && !dInLast
}

// inPlace is the view v (a plain load of a non-scratch tensor) as an operand read in place: the tensor at
// the flat offset of the tile's first element, with a Strided layout whose strides are the flat
// distances of one step along the tile (rows of A, columns of B) and one along the reduction. The zero
// operand when the load is of another kind or a distance is not constant. The expressions are built as
// the flat offset of an index list (row-major, Horner's rule), so a backend prints them as it prints
// any offset.
func inPlace(v *ir.View, isB bool) ir.MicroOperand {
	ld, ok := v.Value.(*ir.Load)
	if !ok || ld.T.Kind == ir.Scratch || ld.T.Kind == ir.Scalar {
		return ir.MicroOperand{}
	}
	at := func(dp, dd int) []ir.IExpr {
		m := map[*ir.Var]ir.IExpr{v.P: ir.IAdd(v.Base0, ir.IConst{V: dp}), v.D: ir.IAdd(v.K0, ir.IConst{V: dd})}
		idx := make([]ir.IExpr, len(ld.Idx))
		for i, ix := range ld.Idx {
			idx[i] = ir.SubstIExpr(ix, m)
		}
		return idx
	}
	var off ir.IExpr = ir.IConst{V: 0}
	if from := at(0, 0); len(from) > 0 {
		off = from[0]
		for i := 1; i < len(from); i++ {
			off = ir.IAdd(ir.IMul(off, ir.IDim{D: ld.T.Shape[i]}), from[i])
		}
	}
	// dist is Σ (to[i] - from[i]) · Π shape[i+1:] by Horner's rule, nil unless every difference is constant
	dist := func(dp, dd int) ir.IExpr {
		from, to := at(0, 0), at(dp, dd)
		var s ir.IExpr = ir.IConst{V: 0}
		for i := range from {
			c, ok := ir.Simplify(ir.ISub(to[i], from[i])).(ir.IConst)
			if !ok {
				return nil
			}
			if i > 0 {
				s = ir.IMul(s, ir.IDim{D: ld.T.Shape[i]})
			}
			s = ir.IAdd(s, c)
		}
		return s
	}
	step, depth := dist(1, 0), dist(0, 1)
	if step == nil || depth == nil {
		return ir.MicroOperand{}
	}
	l := &ir.Strided{RowStride: step, ColStride: depth}
	if isB {
		l = &ir.Strided{RowStride: depth, ColStride: step}
	}
	return ir.Operand{T: ld.T, Off: off, Layout: l}
}

// cloneLoop copies a loop nest (loops, Micro, Alloc and If nodes; expressions are shared, never mutated).
func cloneLoop(l *ir.Loop) *ir.Loop {
	c := *l
	c.Body = cloneNodes(l.Body)
	return &c
}

func cloneNodes(body []ir.Node) []ir.Node {
	out := make([]ir.Node, len(body))
	for i, n := range body {
		switch x := n.(type) {
		case *ir.Loop:
			out[i] = cloneLoop(x)
		case *ir.Micro:
			c := *x
			out[i] = &c
		case *ir.Alloc:
			c := *x
			c.Body = cloneNodes(x.Body)
			out[i] = &c
		case *ir.If:
			c := *x
			c.Then, c.Else = cloneNodes(x.Then), cloneNodes(x.Else)
			out[i] = &c
		default:
			out[i] = n
		}
	}
	return out
}

// replaceLoop substitutes node for the loop old wherever it sits in body.
func replaceLoop(body []ir.Node, old *ir.Loop, node ir.Node) []ir.Node {
	return ir.RewriteNodes(body, func(n ir.Node) []ir.Node {
		if n == ir.Node(old) {
			return []ir.Node{node}
		}
		return []ir.Node{n}
	})
}

// balanceKBlocks splits the reduction of the packed nest jc ⊃ pc ⊃ … into nb = ⌈K/KC⌉ blocks of equal
// depth instead of nb−1 blocks of KC and a remainder: with KC = 1168 and K = 4096 the fourth block was 592
// deep, half the C-tile loads and stores per multiply-add of the others (docs/PERF.md, "uneven last K
// block"). The depth is
//
//	kb = min(KC, 8·⌈⌈K / nb⌉ / 8⌉)
//
// (a multiple of 8, the microkernels' K unrolling, unless KC is smaller); kb ≤ KC, so the panel buffers
// keep their KC size, and any kb ≥ 1 computes the same result. kb replaces KC in every bound, pack depth,
// panel layout and Micro inside jc, and in the last-block test of the epilogue bits (pc ≥ K − kb holds
// exactly on the last block). It is computed once per call, as the variable of a one-trip loop around
// jc, which is returned. K = 0 keeps one empty block (the pc loop runs to max(K, 1)).
func balanceKBlocks(slot string, jc, pc *ir.Loop) *ir.Loop {
	one, eight := ir.IConst{V: 1}, ir.IConst{V: 8}
	ceil := func(a, b ir.IExpr) ir.IExpr { return ir.IDiv(ir.IAdd(a, ir.ISub(b, one)), b) }
	k, kc := pc.Hi, sym(slot, "KC") // pc.Hi is max(K, 1)
	nb := ceil(k, kc)
	b := ir.IMin(kc, ir.IMul(eight, ceil(ceil(k, nb), eight)))
	kb := &ir.Var{Name: pc.Var.Name + "_kb"}
	pc.Step = ir.IVar{V: kb}
	jc.Body = symToVar(jc.Body, slot+".KC", kb)
	return &ir.Loop{Var: kb, Lo: b, Hi: ir.IAdd(b, one), Step: one, Body: []ir.Node{jc}}
}

// packMicro rewrites one Micro and the loops around it: loops = jc, pc, ic, jr, ir.
func packMicro(n namer, u *ir.Micro, loops []*ir.Loop) {
	jc, pc, ic, jr, irl := loops[0], loops[1], loops[2], loops[3], loops[4]
	slot := u.Slot
	kc := u.KC
	// B block: columns jc .. jc+nc, k pc .. pc+kc
	nc := jr.Hi
	mc := irl.Hi
	elem := u.Elem
	roundUp := func(x, p ir.IExpr) ir.IExpr { return ir.IMul(ir.IDiv(ir.IAdd(x, ir.ISub(p, ir.IConst{V: 1})), p), p) }
	dimK := pc.Hi // max(K, 1)
	kcMax := ir.IMin(sym(slot, "KC"), dimK)
	bp := &ir.Tensor{Name: n.name("packB"), Type: elem, Kind: ir.Scratch, Space: ir.Packed,
		Size: ir.IMul(ir.IMin(sym(slot, "NC"), roundUp(jc.Hi, sym(slot, "NR"))), kcMax)}
	ap := &ir.Tensor{Name: n.name("packA"), Type: elem, Kind: ir.Scratch, Space: ir.Packed,
		Size: ir.IMul(ir.IMin(sym(slot, "MC"), roundUp(ic.Hi, sym(slot, "MR"))), kcMax)}

	bv, av := u.B.View, u.A.View
	packB := &ir.Pack{Dst: bp, DstOff: ir.IConst{V: 0}, N: nc, Depth: kc, Panel: sym(slot, "NR"), P: bv.P, D: bv.D,
		Value: ir.SubstVars(bv.Value, map[*ir.Var]ir.IExpr{bv.P: ir.IAdd(ir.IVar{V: jc.Var}, ir.IVar{V: bv.P}), bv.D: ir.IAdd(ir.IVar{V: pc.Var}, ir.IVar{V: bv.D})})}
	packA := &ir.Pack{Dst: ap, DstOff: ir.IConst{V: 0}, N: mc, Depth: kc, Panel: sym(slot, "MR"), P: av.P, D: av.D,
		Value: ir.SubstVars(av.Value, map[*ir.Var]ir.IExpr{av.P: ir.IAdd(ir.IVar{V: ic.Var}, ir.IVar{V: av.P}), av.D: ir.IAdd(ir.IVar{V: pc.Var}, ir.IVar{V: av.D})})}
	u.A = ir.Operand{T: ap, Off: ir.IMul(ir.IVar{V: irl.Var}, kc), Layout: &ir.Panel{Width: sym(slot, "MR"), Depth: kc}}
	u.B = ir.Operand{T: bp, Off: ir.IMul(ir.IVar{V: jr.Var}, kc), Layout: &ir.Panel{Width: sym(slot, "NR"), Depth: kc, ByCol: true}}

	// pc body: pack B, then the ic loop. ic body: alloc A { pack A; jr loop }.
	pc.Body = append([]ir.Node{packB}, pc.Body...)
	ic.Body = []ir.Node{&ir.Alloc{T: ap, Body: append([]ir.Node{packA}, ic.Body...)}}
	// B's buffer lives across the whole jc loop: wrap the jc loop's body.
	jc.Body = []ir.Node{&ir.Alloc{T: bp, Body: jc.Body}}
}
