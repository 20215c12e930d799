package llvm

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
	lir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// nodes emits a statement list into the current block. A Vector loop's remainder loop is left out
// when the Vector loop runs it as a masked group (masked.go).
func (g *fn) nodes(body []ir.Node) error {
	skip := -1
	for i, n := range body {
		if i == skip {
			continue
		}
		if l, ok := n.(*ir.Loop); ok && l.Kind == ir.Vector {
			if j := g.remainderAt(body, i); j > 0 {
				done, err := g.loopTail(l, body[j].(*ir.Loop))
				if err != nil {
					return err
				}
				if done {
					skip = j
				}
				continue
			}
		}
		if err := g.node(n); err != nil {
			return err
		}
	}
	return nil
}

func (g *fn) node(n ir.Node) error {
	switch n := n.(type) {
	case *ir.Nest:
		return g.nodes(n.Body)
	case *ir.Alloc:
		return g.alloc(n)
	case *ir.Loop:
		return g.loop(n)
	case *ir.Decl:
		return g.setLocal(n.L, n.Init)
	case *ir.Assign:
		return g.setLocal(n.L, n.Value)
	case *ir.Store:
		v, err := g.expr(n.Value)
		if err != nil {
			return err
		}
		p, err := g.addr(n.T, n.Idx)
		if err != nil {
			return err
		}
		g.cur.NewStore(g.encode(g.conv(v, n.Value.Type(), n.T.Type), n.T.Type), p)
		return nil
	case *ir.If:
		c, err := g.expr(n.Cond)
		if err != nil {
			return err
		}
		c = g.conv(c, n.Cond.Type(), ir.Bool)
		then, els, join := g.block("then"), g.block("else"), g.block("endif")
		g.cur.NewCondBr(c, then, els)
		g.cur = then
		if err := g.nodes(n.Then); err != nil {
			return err
		}
		g.cur.NewBr(join)
		g.cur = els
		if err := g.nodes(n.Else); err != nil {
			return err
		}
		g.cur.NewBr(join)
		g.cur = join
		return nil
	}
	return fmt.Errorf("%T nodes are not implemented by the llvm backend (the llvm pipeline does not make them)", n)
}

// setLocal stores e, rounded to the local's compute type, into its alloca.
func (g *fn) setLocal(l *ir.LocalVar, e ir.Expr) error {
	v, err := g.expr(e)
	if err != nil {
		return err
	}
	g.cur.NewStore(g.conv(v, e.Type(), l.T.Compute()), g.local(l))
	return nil
}

// local returns the alloca of a local, made on first use.
func (g *fn) local(l *ir.LocalVar) *lir.InstAlloca {
	a, ok := g.locals[l]
	if !ok {
		a = g.entry.NewAlloca(valueType(l.T.Compute()))
		a.SetName(fmt.Sprintf("l.%s.%d", l.Name, len(g.locals)))
		g.locals[l] = a
	}
	return a
}

// counter returns the alloca of a loop variable, made on first use.
func (g *fn) counter(v *ir.Var) *lir.InstAlloca {
	a, ok := g.vars[v]
	if !ok {
		a = g.entry.NewAlloca(types.I64)
		a.SetName(fmt.Sprintf("v.%s.%d", v.Name, len(g.vars)))
		g.vars[v] = a
	}
	return a
}

// loop emits for v = lo; v < hi; v += step as preheader (bounds evaluated once, as the interpreter
// does), header, body and latch blocks. Every CPU loop kind runs its iterations in order: parallel loops
// serially, unrolled loops as their replicated body; a vector loop runs as <W x T> operations when
// vectorLoop can, else its lanes one after the other (ir.ExpandLanes).
func (g *fn) loop(l *ir.Loop) error {
	_, err := g.loopTail(l, nil)
	return err
}

// loopTail emits loop l; for a Vector loop whose body runs as vectors, tail (its remainder loop, or
// nil) runs as a masked group after it, and loopTail reports true (masked.go).
func (g *fn) loopTail(l *ir.Loop, tail *ir.Loop) (bool, error) {
	switch l.Kind {
	case ir.Serial, ir.Parallel, ir.Unrolled, ir.Vector:
	default:
		return false, fmt.Errorf("%s loop %s: GPU loops are not implemented by the llvm backend", l.Kind, l.Var.Name)
	}
	if done, err := g.unroll(l); done || err != nil {
		return false, err
	}
	lo, err := g.iexpr(l.Lo)
	if err != nil {
		return false, err
	}
	hi, err := g.iexpr(l.Hi)
	if err != nil {
		return false, err
	}
	step, err := g.iexpr(l.Step)
	if err != nil {
		return false, err
	}
	acc := g.vecAccInit(l)
	ctr := g.counter(l.Var)
	g.cur.NewStore(lo, ctr)
	g.cse = nil // values computed from the counter before this store are stale
	if l.Kind == ir.Vector {
		if err := g.vecUnrolled(l, hi, acc); err != nil {
			return false, err
		}
	}
	head, body, latch, exit := g.block("head."+l.Var.Name), g.block("body."+l.Var.Name), g.block("latch."+l.Var.Name), g.block("exit."+l.Var.Name)
	g.cur.NewBr(head)
	g.cur = head
	v := g.cur.NewLoad(types.I64, ctr)
	g.cur.NewCondBr(g.cur.NewICmp(enum.IPredSLT, v, hi), body, exit)
	g.cur = body
	vector := false
	if l.Kind == ir.Vector {
		done, err := g.vectorBody(l, acc, nil)
		if err != nil {
			return false, err
		}
		vector = done
		if !done {
			if err := g.nodes(ir.ExpandLanes(l)); err != nil {
				return false, err
			}
		}
	} else if err := g.loopBody(l); err != nil {
		return false, err
	}
	g.cur.NewBr(latch)
	g.cur = latch
	next := g.cur.NewAdd(g.cur.NewLoad(types.I64, ctr), step)
	g.cur.NewStore(next, ctr)
	g.cse = nil
	g.cur.NewBr(head)
	g.cur = exit
	masked := false
	if vector && tail != nil {
		if masked, err = g.maskedTail(l, hi, tail, acc); err != nil {
			return false, err
		}
	}
	if vector && acc != nil {
		g.vecAccFinish(l.Reduce, acc)
	}
	return masked, nil
}

// loopBody emits the body of a loop other than a Vector loop: versioned into whole and edge tiles
// (version.go), else as it is; a register tile's k loop first prefetches its panels (prefetch.go).
func (g *fn) loopBody(l *ir.Loop) error {
	if !g.inK {
		if err := g.prefetchPanels(l); err != nil {
			return err
		}
		if len(g.regs) > 0 {
			g.inK = true
			defer func() { g.inK = false }()
		}
	}
	if done, err := g.versioned(l); err != nil || done {
		return err
	}
	return g.nodes(l.Body)
}

// addr is the address of t[idx...]: a flat offset for scratch buffers, row-major otherwise. A pair of
// indices (e / d, e % d) over a dim d of the tensor (the layouts of mmalower's operands) contributes e
// itself, so the optimiser sees the unit stride.
func (g *fn) addr(t *ir.Tensor, idx []ir.IExpr) (value.Value, error) {
	if a, ok, err := g.regElem(t, idx); ok {
		return a, err
	}
	base, ok := g.ptrs[t]
	if !ok {
		return nil, fmt.Errorf("tensor %s used outside its allocation", t.Name)
	}
	var off value.Value = i64(0)
	if t.Kind == ir.Scratch {
		if len(idx) != 1 {
			return nil, fmt.Errorf("scratch buffer %s indexed by %d indices", t.Name, len(idx))
		}
		o, err := g.iexpr(idx[0])
		if err != nil {
			return nil, err
		}
		off = o
	} else {
		if len(idx) != len(t.Shape) {
			return nil, fmt.Errorf("%s: %d indices for rank %d", t.Name, len(idx), len(t.Shape))
		}
		for i := 0; i < len(idx); i++ {
			if i+1 < len(idx) {
				if e, ok := divMod(idx[i], idx[i+1], t.Shape[i+1]); ok {
					x, err := g.iexpr(e)
					if err != nil {
						return nil, err
					}
					off = g.cur.NewAdd(g.cur.NewMul(g.cur.NewMul(off, g.dims[t.Shape[i]]), g.dims[t.Shape[i+1]]), x)
					i++
					continue
				}
			}
			x, err := g.iexpr(idx[i])
			if err != nil {
				return nil, err
			}
			off = g.cur.NewAdd(g.cur.NewMul(off, g.dims[t.Shape[i]]), x)
		}
	}
	gep := g.cur.NewGetElementPtr(storageType(t.Type), base, off)
	gep.InBounds = true
	return gep, nil
}

// divMod reports whether (a, b) is (e / d, e % d) for the dim d, returning e.
func divMod(a, b ir.IExpr, d *ir.Dim) (ir.IExpr, bool) {
	x, ok1 := a.(ir.IBin)
	y, ok2 := b.(ir.IBin)
	if !ok1 || !ok2 || x.Op != '/' || y.Op != '%' {
		return nil, false
	}
	dx, ok1 := x.Y.(ir.IDim)
	dy, ok2 := y.Y.(ir.IDim)
	if !ok1 || !ok2 || dx.D != d || dy.D != d || x.X.String() != y.X.String() {
		return nil, false
	}
	return x.X, true
}

// iexpr evaluates an index expression in i64. Division and modulo floor, as the IR defines them.
func (g *fn) iexpr(e ir.IExpr) (value.Value, error) {
	switch e := e.(type) {
	case ir.IConst:
		return i64(int64(e.V)), nil
	case ir.IVar:
		if c, ok := g.konst[e.V]; ok {
			return i64(c), nil
		}
		a, ok := g.vars[e.V]
		if !ok {
			return nil, fmt.Errorf("index variable %s used outside its loop", e.V.Name)
		}
		return g.cur.NewLoad(types.I64, a), nil
	case ir.IDim:
		return g.dims[e.D], nil
	case ir.ISym:
		v, ok := g.f.Plan[e.Name]
		if !ok {
			return nil, fmt.Errorf("plan symbol %s has no value", e.Name)
		}
		return i64(int64(v)), nil
	case ir.IBin:
		if c, ok := g.constIndex(e); ok {
			return i64(c), nil
		}
		key := g.keyOf(e)
		if c, ok := g.fixed[key]; ok {
			return i64(c), nil
		}
		if g.cseBlock != g.cur || g.cse == nil {
			g.cseBlock, g.cse = g.cur, map[string]value.Value{}
		}
		if v, ok := g.cse[key]; ok {
			return v, nil
		}
		v, err := g.ibin(e)
		if err == nil {
			g.cse[key] = v
		}
		return v, err
	}
	return nil, fmt.Errorf("unknown index expression %T", e)
}

// keyOf is the identity of an index expression's value at this point of the emission: its text with
// each variable told apart by its address and the variables of unrolled loops replaced by their values.
func (g *fn) keyOf(e ir.IExpr) string {
	switch e := e.(type) {
	case ir.IVar:
		if c, ok := g.konst[e.V]; ok {
			return fmt.Sprint(c)
		}
		return fmt.Sprintf("%s@%p", e.V.Name, e.V)
	case ir.IBin:
		return "(" + g.keyOf(e.X) + " " + string(e.Op) + " " + g.keyOf(e.Y) + ")"
	}
	return e.String()
}

// ibin evaluates an index operation.
func (g *fn) ibin(e ir.IBin) (value.Value, error) {
	x, err := g.iexpr(e.X)
	if err != nil {
		return nil, err
	}
	y, err := g.iexpr(e.Y)
	if err != nil {
		return nil, err
	}
	b := g.cur
	switch e.Op {
	case '+':
		return b.NewAdd(x, y), nil
	case '-':
		return b.NewSub(x, y), nil
	case '*':
		return b.NewMul(x, y), nil
	case 'm':
		return b.NewSelect(b.NewICmp(enum.IPredSLT, x, y), x, y), nil
	case 'M':
		return b.NewSelect(b.NewICmp(enum.IPredSGT, x, y), x, y), nil
	case '/', '%':
		// y > 0 (the IR's rule): floor division adjusts truncation when the remainder is negative.
		q, r := b.NewSDiv(x, y), b.NewSRem(x, y)
		neg := b.NewICmp(enum.IPredSLT, r, i64(0))
		if e.Op == '/' {
			return b.NewSub(q, b.NewZExt(neg, types.I64)), nil
		}
		return b.NewAdd(r, b.NewSelect(neg, y, i64(0))), nil
	case '^':
		return b.NewXor(x, y), nil
	case '&':
		return b.NewAnd(x, y), nil
	case '<':
		return b.NewShl(x, y), nil
	case '>':
		return b.NewAShr(x, y), nil
	}
	return nil, fmt.Errorf("unknown index operator %q", e.Op)
}

// constIndex folds an index expression of constants and plan symbols.
func (g *fn) constIndex(e ir.IExpr) (int64, bool) {
	switch e := e.(type) {
	case ir.IConst:
		return int64(e.V), true
	case ir.ISym:
		v, ok := g.f.Plan[e.Name]
		return int64(v), ok
	case ir.IVar:
		c, ok := g.konst[e.V]
		return c, ok
	case ir.IBin:
		if c, ok := g.fixed[g.keyOf(e)]; ok {
			return c, true
		}
		x, ok1 := g.constIndex(e.X)
		y, ok2 := g.constIndex(e.Y)
		if !ok1 || !ok2 {
			return 0, false
		}
		v, msg := ir.IBinOp(e.Op, int(x), int(y))
		return int64(v), msg == ""
	}
	return 0, false
}

// zeroOf is the zero value of an LLVM scalar type.
func zeroOf(t types.Type) value.Value {
	switch t := t.(type) {
	case *types.FloatType:
		return constant.NewFloat(t, 0)
	case *types.IntType:
		return constant.NewInt(t, 0)
	}
	return constant.NewZeroInitializer(t)
}
