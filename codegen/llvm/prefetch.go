package llvm

import (
	"github.com/kgen-dev/kgen/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// Prefetch in the packed GEMM, where the amd64 microkernels prefetch (codegen/amd64/gemm.go):
//   - the k loop of a register tile held in registers (a serial loop inside the tile's allocation
//     whose body reads packed panels, Space Packed, moving with the loop's variable by a constant
//     number of elements per iteration) prefetches, at the start of each iteration, every cache line of
//     the panel data that iteration prefetchDist will read (amd64: PrefetchA/PrefetchB = 8 steps);
//   - before that loop, the rows of the C tile that the tile's store writes: the first and the last
//     element of each row (amd64: prefetchC).
//
// llvm.prefetch(p, 0 read / 1 write, 3 keep in all cache levels, 1 data) never faults, so addresses
// past an edge tile or a panel's end are harmless.

// prefetchDist is how many k steps ahead the panels are prefetched (amd64's defaultPrefetchA/B).
const prefetchDist = 8

// prefetch emits llvm.prefetch of the byte at p for reading (write false) or writing.
func (g *fn) prefetch(p value.Value, write bool) {
	f := g.m.declare("llvm.prefetch.p0i8", types.Void, types.I8Ptr, types.I32, types.I32, types.I32)
	rw := int64(0)
	if write {
		rw = 1
	}
	if p.Type() != types.I8Ptr {
		p = g.cur.NewBitCast(p, types.I8Ptr)
	}
	g.cur.NewCall(f, p, constant.NewInt(types.I32, rw), constant.NewInt(types.I32, 3), constant.NewInt(types.I32, 1))
}

// panelLoads returns the first load of each packed panel in body with the loops binding its other
// variables (the loops inside body; their variables are taken at their constant lower bounds).
func panelLoads(body []ir.Node) (loads []*ir.Load, inner map[*ir.Var]int64) {
	inner = map[*ir.Var]int64{}
	seen := map[*ir.Tensor]bool{}
	ok := true
	ir.WalkNodes(body, func(n ir.Node) bool {
		if l, isLoop := n.(*ir.Loop); isLoop {
			lo, isConst := l.Lo.(ir.IConst)
			ok = ok && isConst
			inner[l.Var] = int64(lo.V)
		}
		ir.NodeExprs(n, func(e ir.Expr) {
			ir.Walk(e, func(x ir.Expr) {
				if ld, isLoad := x.(*ir.Load); isLoad && ld.T.Space == ir.Packed && len(ld.Idx) == 1 && !seen[ld.T] {
					seen[ld.T] = true
					loads = append(loads, ld)
				}
			})
		})
		return true
	})
	if !ok {
		return nil, nil
	}
	return loads, inner
}

// prefetchPanels emits, at the start of an iteration of k loop l (see the top of the file), the
// prefetches of the panel data prefetchDist iterations ahead.
func (g *fn) prefetchPanels(l *ir.Loop) error {
	if l.Kind != ir.Serial || len(g.regs) == 0 || g.vec != nil || g.inK {
		return nil
	}
	if s, ok := g.constIndex(l.Step); !ok || s != 1 {
		return nil
	}
	loads, inner := panelLoads(l.Body)
	for _, ld := range loads {
		base := ir.SubstIExpr(ld.Idx[0], constVars(inner))
		step, ok := g.coef(base, l.Var)
		if !ok || step <= 0 {
			continue
		}
		bytes := step * int64(ld.T.Type.Size())
		ahead := ir.SubstIExpr(base, map[*ir.Var]ir.IExpr{l.Var: ir.IAdd(ir.IVar{V: l.Var}, ir.IConst{V: prefetchDist})})
		p, err := g.addr(ld.T, []ir.IExpr{ahead})
		if err != nil {
			return err
		}
		p = g.cur.NewBitCast(p, types.I8Ptr)
		for off := int64(0); off < bytes; off += 64 {
			q := p
			if off > 0 {
				gep := g.cur.NewGetElementPtr(types.I8, p, i64(off))
				gep.InBounds = false
				q = gep
			}
			g.prefetch(q, false)
		}
	}
	return nil
}

// coef is the coefficient of v in index e: e is affine in v, with a constant (plan symbols included)
// coefficient; ok false otherwise.
func (g *fn) coef(e ir.IExpr, v *ir.Var) (int64, bool) {
	uses := false
	ir.IVars(e, func(w *ir.Var) { uses = uses || w == v })
	if !uses {
		return 0, true
	}
	switch e := e.(type) {
	case ir.IVar:
		return 1, true
	case ir.IBin:
		return g.affineStep(e, func(x ir.IExpr) (int64, bool) { return g.coef(x, v) })
	}
	return 0, false
}

// constVars maps variables to constants for ir.SubstIExpr.
func constVars(m map[*ir.Var]int64) map[*ir.Var]ir.IExpr {
	out := map[*ir.Var]ir.IExpr{}
	for v, c := range m {
		out[v] = ir.IConst{V: int(c)}
	}
	return out
}

// prefetchTileC emits, before the k loop l of the register tile t, prefetches of the first and last
// element of each row of the C tile that store writes: store is the tile's store into C, in the loops
// rows (the tile's rows: lower bound 0, MR rows) and cols (NR columns) after l.
func (g *fn) prefetchTileC(store *ir.Store, rows, cols *ir.Loop, mr, nr int64) error {
	defer delete(g.konst, rows.Var)
	defer delete(g.konst, cols.Var)
	for i := int64(0); i < mr; i++ {
		for _, j := range []int64{0, nr - 1} {
			g.konst[rows.Var], g.konst[cols.Var] = i, j
			p, err := g.addr(store.T, store.Idx)
			if err != nil {
				return err
			}
			g.prefetch(p, false)
		}
	}
	return nil
}

// tileStore finds in the body of register tile t's allocation the store of the tile into a caller's
// tensor after the k loop: loops rows ⊃ cols (constant lower bounds 0) around the store reading t,
// possibly inside beta versions (an If). It returns the trip counts MR and NR from the tile's bounds
// min(c, e) (their constants c), or ok false.
func (g *fn) tileStore(body []ir.Node, t *ir.Tensor) (st *ir.Store, rows, cols *ir.Loop, mr, nr int64, ok bool) {
	ir.WalkNodes(body, func(n ir.Node) bool {
		if ok {
			return false
		}
		r, isLoop := n.(*ir.Loop)
		if !isLoop || len(r.Body) != 1 {
			return true
		}
		c, isLoop := r.Body[0].(*ir.Loop)
		if !isLoop || len(c.Body) != 1 {
			return true
		}
		s, isStore := c.Body[0].(*ir.Store)
		if !isStore || s.T.Kind == ir.Scratch || !reads(s.Value, t) {
			return true
		}
		m, ok1 := g.boundConst(r)
		nn, ok2 := g.boundConst(c)
		if ok1 && ok2 {
			st, rows, cols, mr, nr, ok = s, r, c, m, nn, true
		}
		return !ok
	})
	return
}

// boundConst is the constant c of a loop 0 .. min(c, e) (or 0 .. c).
func (g *fn) boundConst(l *ir.Loop) (int64, bool) {
	if lo, ok := g.constIndex(l.Lo); !ok || lo != 0 {
		return 0, false
	}
	if c, ok := g.constIndex(l.Hi); ok {
		return c, c > 0
	}
	b, ok := l.Hi.(ir.IBin)
	if !ok || b.Op != 'm' {
		return 0, false
	}
	c, ok := g.constIndex(b.X)
	if !ok {
		c, ok = g.constIndex(b.Y)
	}
	return c, ok && c > 0
}

// reads reports whether e loads from t.
func reads(e ir.Expr, t *ir.Tensor) bool {
	found := false
	ir.Walk(e, func(x ir.Expr) {
		if ld, ok := x.(*ir.Load); ok && ld.T == t {
			found = true
		}
	})
	return found
}
