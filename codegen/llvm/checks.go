package llvm

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// linear is c + Σ vars[v]·v + Σ dims[d]·d.
type linear struct {
	c    int64
	vars map[*ir.Var]int64
	dims map[*ir.Dim]int64
	// order keeps the terms in first-appearance order, so the module text is deterministic.
	order []any
}

// linearize writes an algorithm-level index as a linear form; ok is false when it is not affine.
func linearize(e ir.IExpr) (l linear, ok bool) {
	l = linear{vars: map[*ir.Var]int64{}, dims: map[*ir.Dim]int64{}}
	var walk func(e ir.IExpr, a int64) bool
	walk = func(e ir.IExpr, a int64) bool {
		switch e := e.(type) {
		case ir.IConst:
			l.c += a * int64(e.V)
		case ir.IVar:
			if _, seen := l.vars[e.V]; !seen {
				l.order = append(l.order, e.V)
			}
			l.vars[e.V] += a
		case ir.IDim:
			if _, seen := l.dims[e.D]; !seen {
				l.order = append(l.order, e.D)
			}
			l.dims[e.D] += a
		case ir.IBin:
			switch e.Op {
			case '+':
				return walk(e.X, a) && walk(e.Y, a)
			case '-':
				return walk(e.X, a) && walk(e.Y, -a)
			case '*':
				if c, ok := e.X.(ir.IConst); ok {
					return walk(e.Y, a*int64(c.V))
				}
				if c, ok := e.Y.(ir.IConst); ok {
					return walk(e.X, a*int64(c.V))
				}
				return false
			default:
				return false
			}
		default:
			return false
		}
		return true
	}
	if !walk(e, 1) {
		return l, false
	}
	size := abs(l.c)
	for _, a := range l.vars {
		size += abs(a)
	}
	for _, a := range l.dims {
		size += abs(a)
	}
	return l, size < 1<<30
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// indexChecks emits the Go wrapper's range checks: for every load index of a statement that is not
// the plain variable of its own dim, the smallest and largest value it takes over its variables'
// ranges (computed exactly in i128) must lie in [0, dim) whenever those ranges are not empty.
func (g *fn) indexChecks() error {
	i128 := types.NewInt(128)
	wide := func(v value.Value) value.Value { return g.cur.NewSExt(v, i128) }
	c128 := func(x int64) value.Value { return constant.NewInt(i128, x) }
	var err error
	for _, s := range g.k.Stmts {
		ir.Walk(s.Value, func(e ir.Expr) {
			l, ok := e.(*ir.Load)
			if !ok || err != nil || l.T.Kind == ir.Scalar {
				return
			}
			for pos, ix := range l.Idx {
				if pos >= len(l.T.Shape) {
					break
				}
				if v, plain := ix.(ir.IVar); plain && v.V.Range == l.T.Shape[pos] {
					continue
				}
				lin, ok := linearize(ix)
				if !ok {
					err = fmt.Errorf("index %s of %s: not affine, or coefficients of 2^30 or more", ix, l.T.Name)
					return
				}
				lo, hi := c128(lin.c), c128(lin.c)
				var nonEmpty value.Value = constant.True
				for _, t := range lin.order {
					switch t := t.(type) {
					case *ir.Dim:
						a := lin.dims[t]
						term := g.cur.NewMul(c128(a), wide(g.dims[t]))
						lo, hi = g.cur.NewAdd(lo, term), g.cur.NewAdd(hi, term)
					case *ir.Var:
						a := lin.vars[t]
						var top value.Value // the variable's largest value
						if t.Range == nil {
							top = c128(int64(t.Const - 1))
						} else {
							top = g.cur.NewSub(wide(g.dims[t.Range]), c128(1))
							nonEmpty = g.cur.NewAnd(nonEmpty, g.cur.NewICmp(enum.IPredSGT, g.dims[t.Range], i64(0)))
						}
						term := g.cur.NewMul(c128(a), top)
						if a > 0 {
							hi = g.cur.NewAdd(hi, term)
						} else {
							lo = g.cur.NewAdd(lo, term)
						}
					}
				}
				dim := wide(g.dims[l.T.Shape[pos]])
				outside := g.cur.NewOr(g.cur.NewICmp(enum.IPredSLT, lo, c128(0)), g.cur.NewICmp(enum.IPredSGE, hi, dim))
				g.fail(g.cur.NewAnd(nonEmpty, outside), StatusIndex)
			}
		})
	}
	return err
}

// allocate mallocs the temporaries and every scratch buffer whose size depends on dims only (once,
// before anything is written; status 4 when malloc fails) and makes entry-block allocas for small
// constant-size scratch buffers. A scratch buffer whose size depends on a loop variable is an error.
func (g *fn) allocate() error {
	malloc := g.m.declare("malloc", types.I8Ptr, types.I64)
	heap := func(t *ir.Tensor, n value.Value) {
		g.fail(g.cur.NewICmp(enum.IPredUGT, n, i64(1<<59)), StatusAlloc)
		var bytes value.Value = g.cur.NewMul(n, i64(int64(t.Type.Size())))
		bytes = g.cur.NewSelect(g.cur.NewICmp(enum.IPredEQ, bytes, i64(0)), i64(1), bytes)
		raw := g.cur.NewCall(malloc, bytes)
		g.fail(g.cur.NewICmp(enum.IPredEQ, raw, constant.NewNull(types.I8Ptr)), StatusAlloc)
		g.heap = append(g.heap, raw)
		g.ptrs[t] = g.cur.NewBitCast(raw, types.NewPointer(storageType(t.Type)))
	}
	for _, t := range g.k.Temps {
		n, ok := g.numel(t.Shape)
		g.fail(g.cur.NewXor(ok, constant.True), StatusAlloc)
		heap(t, n)
	}
	var err error
	ir.WalkNodes(g.f.Body, func(n ir.Node) bool {
		a, ok := n.(*ir.Alloc)
		if !ok || err != nil {
			return err == nil
		}
		if _, done := g.ptrs[a.T]; done {
			return true
		}
		usesVar := false
		ir.IVars(a.T.Size, func(*ir.Var) { usesVar = true })
		if usesVar {
			err = fmt.Errorf("scratch buffer %s: size %s depends on a loop variable", a.T.Name, a.T.Size)
			return false
		}
		if c, ok := g.constIndex(a.T.Size); ok && c*int64(a.T.Type.Size()) <= allocaMax {
			slot := g.entry.NewAlloca(storageType(a.T.Type))
			slot.NElems = i64(max(c, 1))
			slot.Align = 16
			g.ptrs[a.T] = slot
			return true
		}
		size, e := g.iexpr(a.T.Size)
		if e != nil {
			err = e
			return false
		}
		g.fail(g.cur.NewICmp(enum.IPredSLT, size, i64(0)), StatusAlloc)
		heap(a.T, size)
		return true
	})
	return err
}
