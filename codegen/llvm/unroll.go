package llvm

import (
	"github.com/kgen-dev/kgen/ir"
	lir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// Complete unrolling and register tiles.
//
// A loop whose bounds and step are constants (after tile versioning, version.go) and whose trip count
// is at most unrollMax is emitted once per iteration with its variable a constant, as long as the
// product of the trip counts of the unrolled loops around it stays at most unrollBudget. A register-
// space scratch buffer of at most regMax elements (mmalower's accumulator tile) is then emitted as
// allocas holding groups of regWidth consecutive elements as one <W x T> vector (a scalar alloca per
// element when the size is not a multiple of a power of two), when every access to it has a constant
// offset; SROA and mem2reg turn them into SSA vector values: the tile lives in registers across the
// reduction loop. When some access does not have a constant offset (edge tiles), the emitted code is
// rolled back and the buffer is an array in memory.
//
// A constant-trip loop over a row of such a tile (its body straight-line, an access to the tile with
// unit stride along the loop's variable) is unrolled by groups instead of iterations: each group of W
// iterations is one <W x T> operation (vector.go), the tile's group its operand. That is how a
// microkernel's row acc[i, 0..NR) += a[i] · b[0..NR) becomes NR/W vector FMAs on a broadcast, and the
// tile's zeroing and its store into C become vector stores: the code LLVM receives is the register
// tile itself, not scalars for its SLP vectoriser to regroup (which it does not do for a 14×32 tile).

const (
	unrollMax    = 32
	unrollBudget = 128
	regMax       = 512
	// regBytes is the width of one group of a register tile (a 512-bit vector: 16 f32, 8 f64 lanes;
	// LLVM splits it into two or four registers on targets with narrower vectors).
	regBytes = 64
)

// regTile is a register tile emitted as allocas: groups of w consecutive elements.
type regTile struct {
	w      int64
	groups []*lir.InstAlloca // <w x T> (T the storage type), a scalar T when w is 1; made on first use
}

// unroll emits loop l completely unrolled and reports true, or reports false (emitting nothing).
func (g *fn) unroll(l *ir.Loop) (bool, error) {
	lo, ok1 := g.constIndex(l.Lo)
	hi, ok2 := g.constIndex(l.Hi)
	step, ok3 := g.constIndex(l.Step)
	if ok1 && !ok2 && ok3 && step > 0 {
		if done, err := g.unrollGuarded(l, lo, step); done || err != nil {
			return done, err
		}
		return g.unrollMasked(l, lo, step)
	}
	if !ok1 || !ok2 || !ok3 || step <= 0 {
		return false, nil
	}
	trips := max(0, (hi-lo+step-1)/step)
	if done, err := g.unrollRow(l, lo, hi, step); done || err != nil {
		return done, err
	}
	if trips > unrollMax || g.unrolled*trips > unrollBudget {
		return false, nil
	}
	body := l.Body
	if l.Kind == ir.Vector {
		body = ir.ExpandLanes(l)
	}
	defer g.unrolling(l, max(trips, 1))()
	for x := lo; x < hi; x += step {
		g.konst[l.Var] = x
		if err := g.nodes(body); err != nil {
			return true, err
		}
	}
	return true, nil
}

// notConst is the error of an access with a non-constant offset to a buffer emitted as scalars.
type notConst struct{ t *ir.Tensor }

func (e notConst) Error() string {
	return "register tile " + e.t.Name + " indexed by a non-constant offset"
}

// mark is a point of the emitted code to roll back to.
type mark struct {
	cur    *lir.Block
	insts  int
	blocks int
}

func (g *fn) mark() mark { return mark{g.cur, len(g.cur.Insts), len(g.fn.Blocks)} }

// rollback removes everything emitted after m (entry-block allocas stay; unused ones are harmless).
func (g *fn) rollback(m mark) {
	g.fn.Blocks = g.fn.Blocks[:m.blocks]
	m.cur.Insts = m.cur.Insts[:m.insts]
	m.cur.Term = nil
	g.cur = m.cur
	g.cse = nil
}

// unrollGuarded emits a loop over the rows of an edge register tile, for v = lo; v < min(c, e), c a
// constant: unrolled to the c iterations of a whole tile, each under the guard v < min(c, e), so that
// the tile's accesses keep constant offsets and the tile stays in registers (the rows loop of the tile
// update, of its zeroing and of its store; the loop over a row inside is then a constant-trip one when
// the columns are whole). Other loops (no tile, a straight-line body, a non-constant c) report false.
func (g *fn) unrollGuarded(l *ir.Loop, lo, step int64) (bool, error) {
	c, ok := g.minConst(l.Hi)
	if !ok || len(g.regs) == 0 || g.vec != nil || l.Kind == ir.Vector {
		return false, nil
	}
	trips := (c - lo + step - 1) / step
	if trips < 1 || trips > unrollMax || g.unrolled*trips > unrollBudget || !g.tileRows(l.Body) {
		return false, nil
	}
	hi, err := g.iexpr(l.Hi)
	if err != nil {
		return true, err
	}
	defer g.unrolling(l, trips)()
	for x := lo; x < c; x += step {
		then, join := g.block("row."+l.Var.Name), g.block("rowend."+l.Var.Name)
		g.cur.NewCondBr(g.cur.NewICmp(enum.IPredSLT, i64(x), hi), then, join)
		g.cur = then
		g.konst[l.Var] = x
		if err := g.nodes(l.Body); err != nil {
			return true, err
		}
		g.cur.NewBr(join)
		g.cur = join
	}
	return true, nil
}

// unrollMasked emits a loop over a row of an edge register tile with fewer columns than a whole one,
// for v = lo; v < min(c, e), c a constant: one vector operation per group of the tile's width up to c
// (as unrollRow), each under the mask lane < min(c, e) and run only when its first lane is: loads and
// stores of tensors are masked (llvm.masked.load with a zero passthrough, llvm.masked.store), the
// tile's masked-off lanes keep their values. The tile's accesses thus keep constant offsets and the
// edge tile stays in registers. Other loops report false, emitting nothing.
func (g *fn) unrollMasked(l *ir.Loop, lo, step int64) (bool, error) {
	c, ok := g.minConst(l.Hi)
	if !ok || step != 1 || len(g.regs) == 0 || g.vec != nil || l.Kind == ir.Vector {
		return false, nil
	}
	w := g.rowWidth(l)
	if w < 2 || c <= lo || lo%w != 0 || (c-lo)%w != 0 {
		return false, nil
	}
	groups := (c - lo) / w
	if groups > unrollMax || g.unrolled*groups > unrollBudget {
		return false, nil
	}
	m := g.mark()
	hi, err := g.iexpr(l.Hi)
	if err != nil {
		return true, err
	}
	defer g.unrolling(l, groups)()
	lanes := make([]constant.Constant, w)
	for k := range lanes {
		lanes[k] = i64(int64(k))
	}
	limit := g.splatN(hi, uint64(w))
	end := g.block("rowend." + l.Var.Name)
	row := &ir.Loop{Var: l.Var, Lo: l.Lo, Hi: l.Hi, Step: ir.IConst{V: int(w)}, Kind: ir.Vector, Width: int(w), Body: l.Body}
	for x := lo; x < c; x += w {
		run := g.block("cols." + l.Var.Name)
		g.cur.NewCondBr(g.cur.NewICmp(enum.IPredSLT, i64(x), hi), run, end)
		g.cur = run
		first := g.cur.NewAdd(g.splatN(i64(x), uint64(w)), constant.NewVector(types.NewVector(uint64(w), types.I64), lanes...))
		if err := g.rowGroup(row, x, w, g.cur.NewICmp(enum.IPredSLT, first, limit)); err != nil {
			if _, ok := err.(notVector); ok {
				g.rollback(m)
				return false, nil
			}
			return true, err
		}
	}
	g.cur.NewBr(end)
	g.cur = end
	return true, nil
}

// minConst returns c of an index min(c, e) (either order) with a constant c.
func (g *fn) minConst(e ir.IExpr) (int64, bool) {
	b, ok := e.(ir.IBin)
	if !ok || b.Op != 'm' {
		return 0, false
	}
	if c, ok := g.constIndex(b.X); ok {
		return c, true
	}
	return g.constIndex(b.Y)
}

// unrolling multiplies the trip product of the unrolled loops by n while loop l is emitted unrolled;
// the function it returns undoes that and forgets l's variable.
func (g *fn) unrolling(l *ir.Loop, n int64) func() {
	saved := g.unrolled
	g.unrolled *= n
	return func() {
		g.unrolled = saved
		delete(g.konst, l.Var)
	}
}

// tileRows reports whether body is a loop over a row of a register tile emitted in registers (a
// single loop whose body accesses the tile).
func (g *fn) tileRows(body []ir.Node) bool {
	if len(body) != 1 {
		return false
	}
	inner, ok := body[0].(*ir.Loop)
	if !ok {
		return false
	}
	found := false
	ir.WalkNodes(inner.Body, func(n ir.Node) bool {
		ir.NodeExprs(n, func(e ir.Expr) {
			ir.Walk(e, func(x ir.Expr) {
				if ld, ok := x.(*ir.Load); ok {
					_, reg := g.regs[ld.T]
					found = found || reg
				}
			})
		})
		if st, ok := n.(*ir.Store); ok {
			_, reg := g.regs[st.T]
			found = found || reg
		}
		return true
	})
	return found
}

// unrollRow emits a constant-trip loop over a register tile's row as one vector operation per group of
// the tile's width (see the top of the file) and reports true; false means it emitted nothing.
func (g *fn) unrollRow(l *ir.Loop, lo, hi, step int64) (bool, error) {
	if g.vec != nil || step != 1 || l.Kind == ir.Vector {
		return false, nil
	}
	w := g.rowWidth(l)
	if w < 2 || lo%w != 0 || (hi-lo)%w != 0 || hi <= lo {
		return false, nil
	}
	groups := (hi - lo) / w
	if groups > unrollMax || g.unrolled*groups > unrollBudget {
		return false, nil
	}
	m := g.mark()
	defer g.unrolling(l, groups)()
	row := &ir.Loop{Var: l.Var, Lo: l.Lo, Hi: l.Hi, Step: ir.IConst{V: int(w)}, Kind: ir.Vector, Width: int(w), Body: l.Body}
	for x := lo; x < hi; x += w {
		if err := g.rowGroup(row, x, w, nil); err != nil {
			if _, ok := err.(notVector); ok {
				g.rollback(m)
				return false, nil
			}
			return true, err
		}
	}
	return true, nil
}

// rowGroup emits the group of w lanes at x of a row loop made a Vector loop of width w (unrollRow,
// unrollMasked), its variable the constant x, under mask when it is not nil.
func (g *fn) rowGroup(row *ir.Loop, x, w int64, mask value.Value) error {
	g.konst[row.Var] = x
	g.vec = &vloop{l: row, w: uint64(w), base: i64(x), own: map[*ir.LocalVar]value.Value{}, mask: mask}
	err := g.vecNodes(row)
	g.vec = nil
	return err
}

// rowWidth is the group width of the register tile that loop l's straight-line body accesses with unit
// stride along l's variable, or 0.
func (g *fn) rowWidth(l *ir.Loop) int64 {
	var w int64
	tile := func(t *ir.Tensor, idx []ir.IExpr) {
		if r, ok := g.regs[t]; ok && r.w > 1 && len(idx) == 1 && ir.Coefficient(idx[0], l.Var) == 1 {
			w = r.w
		}
	}
	var visit func(body []ir.Node) bool
	visit = func(body []ir.Node) bool {
		for _, n := range body {
			switch n := n.(type) {
			case *ir.Store:
				tile(n.T, n.Idx)
			case *ir.If:
				if !visit(n.Then) || !visit(n.Else) {
					return false
				}
			case *ir.Decl, *ir.Assign:
			default:
				return false
			}
			ir.NodeExprs(n, func(e ir.Expr) {
				ir.Walk(e, func(x ir.Expr) {
					if ld, ok := x.(*ir.Load); ok {
						tile(ld.T, ld.Idx)
					}
				})
			})
		}
		return true
	}
	if !visit(l.Body) {
		return 0
	}
	return w
}

// alloc emits the body of a scratch allocation (the buffer itself was made by allocate), trying a
// register tile in registers first.
func (g *fn) alloc(a *ir.Alloc) error {
	n, ok := g.constIndex(a.T.Size)
	if a.T.Space != ir.Register || !ok || n < 1 || n > regMax {
		return g.nodes(a.Body)
	}
	m := g.mark()
	w := int64(regBytes / a.T.Type.Size())
	for w > 1 && n%w != 0 {
		w /= 2
	}
	g.regs[a.T] = &regTile{w: w, groups: make([]*lir.InstAlloca, (n+w-1)/w)}
	var err error
	if loads, _ := panelLoads(a.Body); len(loads) > 0 {
		if st, rows, cols, mr, nr, ok := g.tileStore(a.Body, a.T); ok {
			err = g.prefetchTileC(st, rows, cols, mr, nr)
		}
	}
	if err == nil {
		err = g.nodes(a.Body)
	}
	delete(g.regs, a.T)
	if nc, ok := err.(notConst); ok && nc.t == a.T {
		g.rollback(m)
		return g.nodes(a.Body)
	}
	return err
}

// regGroup returns the alloca of group off/w of register tile r (made on first use).
func (g *fn) regGroup(t *ir.Tensor, r *regTile, grp int64) *lir.InstAlloca {
	if r.groups[grp] == nil {
		var ty types.Type = storageType(t.Type)
		if r.w > 1 {
			ty = types.NewVector(uint64(r.w), ty)
		}
		r.groups[grp] = g.entry.NewAlloca(ty)
	}
	return r.groups[grp]
}

// regOffset is the constant offset of an access to a register tile emitted in registers; ok is false
// when t is not one, and the error notConst when the offset is not a constant in range.
func (g *fn) regOffset(t *ir.Tensor, idx []ir.IExpr) (r *regTile, off int64, ok bool, err error) {
	r, ok = g.regs[t]
	if !ok {
		return nil, 0, false, nil
	}
	off, isConst := g.constIndex(idx[0])
	if !isConst || off < 0 || off >= r.w*int64(len(r.groups)) {
		return nil, 0, true, notConst{t}
	}
	return r, off, true, nil
}

// regElem returns a pointer to element idx of a register tile emitted in registers (its lane of its
// group); ok is false when t is not one.
func (g *fn) regElem(t *ir.Tensor, idx []ir.IExpr) (value.Value, bool, error) {
	r, off, ok, err := g.regOffset(t, idx)
	if !ok || err != nil {
		return nil, ok, err
	}
	a := g.regGroup(t, r, off/r.w)
	if r.w == 1 {
		return a, true, nil
	}
	et := storageType(t.Type)
	gep := g.cur.NewGetElementPtr(et, g.cur.NewBitCast(a, types.NewPointer(et)), i64(off%r.w))
	gep.InBounds = true
	return gep, true, nil
}

// regVector returns the group alloca that a vector access to register tile t at idx (the group's first
// lane) reads or writes; ok is false when t is not a tile in registers, and the error notVector when
// the access is not one whole group.
func (g *fn) regVector(t *ir.Tensor, idx []ir.IExpr) (value.Value, bool, error) {
	r, off, ok, err := g.regOffset(t, idx)
	if !ok || err != nil {
		return nil, ok, err
	}
	if s, ok := g.laneStride(idx[0]); r.w != int64(g.vec.w) || off%r.w != 0 || !ok || s != 1 {
		return nil, true, notVector{"register tile access across groups"}
	}
	return g.regGroup(t, r, off/r.w), true, nil
}
