package llvm

import (
	"github.com/kgen-dev/kgen/ir"
	lir "github.com/llir/llvm/ir"
)

// Complete unrolling and register tiles.
//
// A loop whose bounds and step are constants (after tile versioning, version.go) and whose trip count
// is at most unrollMax is emitted once per iteration with its variable a constant, as long as the
// product of the trip counts of the unrolled loops around it stays at most unrollBudget. A register-
// space scratch buffer of at most regMax elements (mmalower's accumulator tile) is then emitted as one
// scalar alloca per element when every access to it has a constant offset, which mem2reg turns into
// SSA values: the tile lives in registers across the reduction loop. When some access does not have a
// constant offset (edge tiles), the emitted code is rolled back and the buffer is an array in memory.

const (
	unrollMax    = 32
	unrollBudget = 128
	regMax       = 128
)

// unroll emits loop l completely unrolled and reports true, or reports false (emitting nothing).
func (g *fn) unroll(l *ir.Loop) (bool, error) {
	lo, ok1 := g.constIndex(l.Lo)
	hi, ok2 := g.constIndex(l.Hi)
	step, ok3 := g.constIndex(l.Step)
	if !ok1 || !ok2 || !ok3 || step <= 0 {
		return false, nil
	}
	trips := max(0, (hi-lo+step-1)/step)
	if trips > unrollMax || g.unrolled*trips > unrollBudget {
		return false, nil
	}
	body := l.Body
	if l.Kind == ir.Vector {
		body = ir.ExpandLanes(l)
	}
	saved := g.unrolled
	g.unrolled *= max(trips, 1)
	defer func() {
		g.unrolled = saved
		delete(g.konst, l.Var)
	}()
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

// alloc emits the body of a scratch allocation (the buffer itself was made by allocate), trying a
// register tile as scalars first.
func (g *fn) alloc(a *ir.Alloc) error {
	n, ok := g.constIndex(a.T.Size)
	if a.T.Space != ir.Register || !ok || n < 1 || n > regMax {
		return g.nodes(a.Body)
	}
	m := g.mark()
	g.regs[a.T] = make([]*lir.InstAlloca, n)
	err := g.nodes(a.Body)
	delete(g.regs, a.T)
	if nc, ok := err.(notConst); ok && nc.t == a.T {
		g.rollback(m)
		return g.nodes(a.Body)
	}
	return err
}

// regElem returns the scalar alloca of element idx of a register tile emitted as scalars; ok is false
// when t is not one.
func (g *fn) regElem(t *ir.Tensor, idx []ir.IExpr) (*lir.InstAlloca, bool, error) {
	elems, ok := g.regs[t]
	if !ok {
		return nil, false, nil
	}
	off, ok := g.constIndex(idx[0])
	if !ok || off < 0 || off >= int64(len(elems)) {
		return nil, true, notConst{t}
	}
	if elems[off] == nil {
		elems[off] = g.entry.NewAlloca(storageType(t.Type))
	}
	return elems[off], true, nil
}
