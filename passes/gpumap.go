package passes

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
)

// GPU mapping plan symbols: the thread-block shape of a two-dimensional mapping (BY × BX threads) and of
// a one-dimensional one (B1 threads).
const (
	gpuBY = "gpu.BY"
	gpuBX = "gpu.BX"
	gpuB1 = "gpu.B1"
)

// GPUMap turns every top-level statement nest of f into a GPU launch. It assumes lowered loop IR (after
// Lower, optionally Fusion; before the CPU passes: no Micro, Pack or Transpose) and guarantees the
// launch nesting ir/gpu.go describes, with the same result.
//
// The outermost loop of a nest, and the loop directly inside it if it is the only node there, are
// mapped when their iterations are independent (each writes its own elements, reads written tensors
// only at its own elements, and assigns no local declared outside it) — the output-index loops Lower
// makes. Two mapped loops i (outer) and j become a grid of ⌈i-range/BY⌉ × ⌈j-range/BX⌉ blocks of BY×BX
// threads, thread (ti, tj) of block (bi, bj) running the original loops restricted to the one point
// i = bi+ti, j = bj+tj (no trip when that point is past the end: the guard of a ragged edge). One mapped
// loop uses blocks of B1 threads. A nest with no independent outer loop (a full reduction into a scalar)
// runs in one thread of one block. The block shapes are plan symbols (gpu.BY, gpu.BX, gpu.B1).
//
// GPUMap runs in the GPU pipelines (ptx, msl), not in the CPU ones.
func GPUMap(f *ir.Func, c *Context) (bool, error) {
	nm := funcNamer(f)
	changed := false
	for idx, n := range f.Body {
		nest, ok := n.(*ir.Nest)
		if !ok {
			return changed, fmt.Errorf("gpumap: top-level %T (want the statement nests of lowered IR)", n)
		}
		bad := false
		ir.WalkNodes(nest.Body, func(x ir.Node) bool {
			switch x := x.(type) {
			case *ir.Micro, *ir.Pack, *ir.Transpose, *ir.Launch:
				bad = true
			case *ir.Loop:
				bad = bad || x.Kind != ir.Serial
			}
			return !bad
		})
		if bad {
			return changed, fmt.Errorf("gpumap: nest %d is not plain lowered loops (run gpumap before the CPU passes)", idx)
		}
		name := fmt.Sprintf("%s_%d", f.Kernel.Name, idx)
		launch, isMMA := mapMMANest(f, nest, name, nm)
		if !isMMA {
			var collective *ir.Accum
			ir.WalkNodes(nest.Body, func(x ir.Node) bool {
				if d, ok := x.(*ir.AccDecl); ok && d.Acc.Scope != ir.ScopeThread {
					collective = d.Acc
				}
				return true
			})
			if collective != nil {
				return changed, fmt.Errorf("gpumap: nest %d: a %s-scope MMA (%%%s) outside the nest shape gpumap maps onto %ss (MMAForm's tile loops, at most one batch loop)", idx, collective.Scope, collective.Name, collective.Scope)
			}
			scope := ir.ScopeWarp
			if c != nil && c.Machine.Name == "msl" {
				scope = ir.ScopeSimdgroup
			}
			var isRow bool
			if launch, isRow = mapRowNest(f, nest, name, nm, scope); !isRow {
				launch = mapNest(f, nest, name, nm)
			}
		}
		nest.Body = []ir.Node{launch}
		changed = true
	}
	return changed, nil
}

func mapNest(f *ir.Func, nest *ir.Nest, name string, nm namer) *ir.Launch {
	var mapped []*ir.Loop
	if l, ok := soleLoopOf(nest.Body); ok && independentLoop(l) {
		mapped = append(mapped, l)
		if l2, ok := soleLoopOf(l.Body); ok && independentLoop(l2) && !loopUses(l2, l.Var) {
			mapped = append(mapped, l2)
		}
	}
	syms := []string{gpuB1}
	if len(mapped) == 2 {
		syms = []string{gpuBY, gpuBX}
	}
	var grids, threads []*ir.Loop
	var gridDims, blockDims []ir.IExpr
	body := nest.Body
	if len(mapped) == 0 {
		g, t := &ir.Var{Name: nm.name("g")}, &ir.Var{Name: nm.name("t")}
		grids = []*ir.Loop{{Var: g, Lo: ir.IConst{V: 0}, Hi: ir.IConst{V: 1}, Step: ir.IConst{V: 1}, Kind: ir.GPUGrid}}
		threads = []*ir.Loop{{Var: t, Lo: ir.IConst{V: 0}, Hi: ir.IConst{V: 1}, Step: ir.IConst{V: 1}, Kind: ir.GPUBlock}}
		gridDims, blockDims = []ir.IExpr{ir.IConst{V: 1}}, []ir.IExpr{ir.IConst{V: 1}}
	} else {
		body = []ir.Node{mapped[0]}
		for i, l := range mapped {
			size := ir.ISym{Name: syms[i]}
			if _, ok := f.Plan[syms[i]]; !ok {
				f.Plan[syms[i]] = map[string]int{gpuBY: 16, gpuBX: 16, gpuB1: 128}[syms[i]]
			}
			b, t := &ir.Var{Name: nm.name("b" + l.Var.Name)}, &ir.Var{Name: nm.name("t" + l.Var.Name)}
			span := ir.IMul(size, l.Step) // one block covers size iterations
			grids = append(grids, &ir.Loop{Var: b, Lo: l.Lo, Hi: l.Hi, Step: span, Kind: ir.GPUGrid})
			threads = append(threads, &ir.Loop{Var: t, Lo: ir.IConst{V: 0}, Hi: size, Step: ir.IConst{V: 1}, Kind: ir.GPUBlock})
			gridDims = append(gridDims, ceilDiv(ir.ISub(l.Hi, l.Lo), span))
			blockDims = append(blockDims, size)
			// The original loop keeps its variable (uses of it as a value stay valid) and runs the one
			// point of this thread, or none past the end.
			at := ir.IAdd(ir.IVar{V: b}, ir.IMul(ir.IVar{V: t}, l.Step))
			l.Lo, l.Hi = at, ir.IMin(ir.IAdd(at, ir.IConst{V: 1}), l.Hi)
		}
	}
	return launchOf(name, grids, threads, gridDims, blockDims, body)
}

func ceilDiv(x, y ir.IExpr) ir.IExpr { return ir.IDiv(ir.IAdd(x, ir.ISub(y, ir.IConst{V: 1})), y) }

// launchOf nests body in the thread loops, them in the grid loops, and those in a launch.
func launchOf(name string, grids, threads []*ir.Loop, gridDims, blockDims []ir.IExpr, body []ir.Node) *ir.Launch {
	node := body
	for i := len(threads) - 1; i >= 0; i-- {
		threads[i].Body = node
		node = []ir.Node{threads[i]}
	}
	for i := len(grids) - 1; i >= 0; i-- {
		grids[i].Body = node
		node = []ir.Node{grids[i]}
	}
	reads, writes := ir.LaunchTensors(node)
	return &ir.Launch{Name: name, Grid: gridDims, Block: blockDims, Reads: reads, Writes: writes, Body: node}
}

func storeTarget(n ir.Node) (*ir.Tensor, []ir.IExpr) {
	if a, ok := n.(*ir.AccStore); ok {
		return a.Out, a.Idx
	}
	st := n.(*ir.Store)
	return st.T, st.Idx
}

func soleLoopOf(body []ir.Node) (*ir.Loop, bool) {
	if len(body) != 1 {
		return nil, false
	}
	l, ok := body[0].(*ir.Loop)
	return l, ok
}

func loopUses(l *ir.Loop, v *ir.Var) bool {
	used := false
	for _, e := range []ir.IExpr{l.Lo, l.Hi, l.Step} {
		ir.IVars(e, func(w *ir.Var) { used = used || w == v })
	}
	return used
}

// independentLoop reports whether l's iterations touch disjoint data: every tensor stored in l is
// indexed by l's variable alone at one position, every load of such a tensor uses that same index at
// that position, and every local l's body assigns is declared inside it.
func independentLoop(l *ir.Loop) bool {
	pos := map[*ir.Tensor]int{}
	declared := map[*ir.LocalVar]bool{}
	local := map[*ir.Tensor]bool{}
	ok := true
	isVar := func(e ir.IExpr) bool {
		v, isv := e.(ir.IVar)
		return isv && v.V == l.Var
	}
	ir.WalkNodes(l.Body, func(n ir.Node) bool {
		switch n := n.(type) {
		case *ir.Alloc:
			local[n.T] = true
		case *ir.Decl:
			declared[n.L] = true
		case *ir.Assign:
			ok = ok && declared[n.L]
		case *ir.Store, *ir.AccStore:
			t, idx := storeTarget(n)
			if local[t] {
				break
			}
			p := -1
			for i, e := range idx {
				if isVar(e) {
					p = i
					break
				}
			}
			if q, seen := pos[t]; p < 0 || (seen && q != p) {
				ok = false
			}
			pos[t] = p
		}
		return ok
	})
	if !ok {
		return false
	}
	ir.WalkNodes(l.Body, func(n ir.Node) bool {
		ir.NodeExprs(n, func(e ir.Expr) {
			ir.Walk(e, func(x ir.Expr) {
				if ld, isLoad := x.(*ir.Load); isLoad {
					if p, written := pos[ld.T]; written && (p >= len(ld.Idx) || !isVar(ld.Idx[p])) {
						ok = false
					}
				}
			})
		})
		return ok
	})
	return ok
}

// gpuW is the plan symbol of the number of warps (one MMA tile each) of a block mapping warp-scope MMAs.
const gpuW = "gpu.W"

// formedMMA is MMAForm's nest of one GEMM statement: at most one batch loop, then tile loops i0 (step
// M) and j0 (step N) around an accumulator declaration, a K loop of MMAs and the epilogue store.
type formedMMA struct {
	batch      *ir.Loop // nil without a batch index
	i0, j0, p0 *ir.Loop
	decl       *ir.AccDecl
	mma        *ir.MMA
	store      *ir.AccStore
}

func matchMMANest(body []ir.Node) (*formedMMA, bool) {
	m := &formedMMA{}
	var ok bool
	if m.i0, ok = soleLoopOf(body); !ok || m.i0.Kind != ir.Serial {
		return nil, false
	}
	if inner, ok := soleLoopOf(m.i0.Body); ok {
		if _, tile := soleLoopOf(inner.Body); tile {
			// i0 is a batch loop: one full iteration per batch point, around the tile loops
			m.batch, m.i0 = m.i0, inner
			if !isZero(m.batch.Lo) || m.batch.Step != (ir.IConst{V: 1}) || m.i0.Kind != ir.Serial || loopUses(m.i0, m.batch.Var) {
				return nil, false
			}
		}
	}
	if m.j0, ok = soleLoopOf(m.i0.Body); !ok || m.j0.Kind != ir.Serial || len(m.j0.Body) != 3 {
		return nil, false
	}
	tile := m.j0.Body
	m.decl, ok = tile[0].(*ir.AccDecl)
	if !ok {
		return nil, false
	}
	if m.p0, ok = tile[1].(*ir.Loop); !ok || m.p0.Kind != ir.Serial || len(m.p0.Body) != 1 {
		return nil, false
	}
	if m.mma, ok = m.p0.Body[0].(*ir.MMA); !ok {
		return nil, false
	}
	if m.store, ok = tile[2].(*ir.AccStore); !ok {
		return nil, false
	}
	a := m.decl.Acc
	return m, m.mma.Acc == a && m.store.Acc == a && m.i0.Step == a.M && m.j0.Step == a.N &&
		isZero(m.i0.Lo) && isZero(m.j0.Lo) && !loopUses(m.j0, m.i0.Var)
}

func isZero(e ir.IExpr) bool {
	c, ok := e.(ir.IConst)
	return ok && c.V == 0
}

// mapMMANest maps an MMAForm nest: each output tile goes to the threads of its accumulator's scope. A
// thread-scope register tile is one thread's: blocks of BY×BX threads, thread (ti, tj) taking tile
// (bi + ti·M, bj + tj·N). A warp or simdgroup tile is one warp's: blocks of W warps (plan symbol gpu.W)
// stacked along M, warp w taking tile (bi + w·M, bj). A warpgroup tile is one block's of 4 warps. The
// tile loops disappear (their variables are substituted): MMA and AccStore are safe past the edges
// through their valid extents, so no thread needs a guard and every thread reaches the block's barriers.
func mapMMANest(f *ir.Func, nest *ir.Nest, name string, nm namer) (*ir.Launch, bool) {
	m, ok := matchMMANest(nest.Body)
	if !ok {
		return nil, false
	}
	acc := m.decl.Acc
	one, zero := ir.IConst{V: 1}, ir.IConst{V: 0}
	loop := func(v *ir.Var, lo, hi, step ir.IExpr, kind ir.LoopKind) *ir.Loop {
		return &ir.Loop{Var: v, Lo: lo, Hi: hi, Step: step, Kind: kind}
	}
	bi, bj := &ir.Var{Name: nm.name("bi")}, &ir.Var{Name: nm.name("bj")}
	var rowsPer, colsPer ir.IExpr // output tiles per block
	var threads []*ir.Loop
	var at map[*ir.Var]ir.IExpr
	var blockDims []ir.IExpr
	switch acc.Scope {
	case ir.ScopeThread:
		by, bx := planSym(f, gpuBY, 8), planSym(f, gpuBX, 8)
		ti, tj := &ir.Var{Name: nm.name("ti")}, &ir.Var{Name: nm.name("tj")}
		threads = []*ir.Loop{loop(ti, zero, by, one, ir.GPUBlock), loop(tj, zero, bx, one, ir.GPUBlock)}
		rowsPer, colsPer, blockDims = by, bx, []ir.IExpr{by, bx}
		at = map[*ir.Var]ir.IExpr{
			m.i0.Var: ir.IAdd(ir.IVar{V: bi}, ir.IMul(ir.IVar{V: ti}, acc.M)),
			m.j0.Var: ir.IAdd(ir.IVar{V: bj}, ir.IMul(ir.IVar{V: tj}, acc.N)),
		}
	case ir.ScopeWarp, ir.ScopeSimdgroup, ir.ScopeWarpgroup:
		w, lane := &ir.Var{Name: nm.name("w")}, &ir.Var{Name: nm.name("lane")}
		nw, rows := planSym(f, gpuW, 4), ir.IExpr(ir.IMul(ir.IVar{V: w}, acc.M))
		rowsPer = nw
		if acc.Scope == ir.ScopeWarpgroup {
			nw, rows, rowsPer = ir.IConst{V: 4}, zero, one
			if g := f.Plan[PlanWG]; g > 1 {
				// g warpgroups, tiles stacked along M (the production sm_90a version, wgmma.go)
				nw, rows, rowsPer = ir.IConst{V: 4 * g}, ir.IMul(ir.IDiv(ir.IVar{V: w}, ir.IConst{V: 4}), acc.M), ir.IConst{V: g}
			}
		}
		threads = []*ir.Loop{loop(w, zero, nw, one, ir.GPUWarp), loop(lane, zero, ir.IConst{V: 32}, one, ir.GPUThread)}
		colsPer, blockDims = one, []ir.IExpr{nw, ir.IConst{V: 32}}
		at = map[*ir.Var]ir.IExpr{m.i0.Var: ir.IAdd(ir.IVar{V: bi}, rows), m.j0.Var: ir.IVar{V: bj}}
	default:
		return nil, false
	}
	spanM, spanN := ir.IMul(rowsPer, acc.M), ir.IMul(colsPer, acc.N)
	grids := []*ir.Loop{loop(bi, zero, m.i0.Hi, spanM, ir.GPUGrid), loop(bj, zero, m.j0.Hi, spanN, ir.GPUGrid)}
	gridDims := []ir.IExpr{ceilDiv(m.i0.Hi, spanM), ceilDiv(m.j0.Hi, spanN)}
	if m.batch != nil {
		// one grid dim per batch point, keeping the batch variable
		grids = append([]*ir.Loop{loop(m.batch.Var, zero, m.batch.Hi, one, ir.GPUGrid)}, grids...)
		gridDims = append([]ir.IExpr{m.batch.Hi}, gridDims...)
	}
	body := m.j0.Body
	substMMA(body, at)
	return launchOf(name, grids, threads, gridDims, blockDims, body), true
}

// substMMA replaces index variables in an MMAForm tile body (in place).
func substMMA(body []ir.Node, at map[*ir.Var]ir.IExpr) {
	sub := func(e ir.IExpr) ir.IExpr {
		if e == nil {
			return nil
		}
		return ir.SubstIExpr(e, at)
	}
	ir.WalkNodes(body, func(n ir.Node) bool {
		switch n := n.(type) {
		case *ir.Loop:
			n.Lo, n.Hi = sub(n.Lo), sub(n.Hi)
		case *ir.MMA:
			n.A.Off, n.B.Off = sub(n.A.Off), sub(n.B.Off)
			n.ValidM, n.ValidN, n.ValidK = sub(n.ValidM), sub(n.ValidN), sub(n.ValidK)
		case *ir.AccStore:
			n.M, n.N = sub(n.M), sub(n.N)
			for i, e := range n.Idx {
				n.Idx[i] = sub(e)
			}
			n.Value = ir.SubstVars(n.Value, at)
		}
		return true
	})
}
