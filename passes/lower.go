package passes

import (
	"math"

	"github.com/kgen-dev/kgen/ir"
)

var negInf, posInf = math.Inf(-1), math.Inf(1)

// Lower turns each statement into a loop nest (wrapped in an ir.Nest): one serial loop per output
// index, in source order unless a reorder directive says otherwise, around the evaluation of the value,
// where every reduction becomes an accumulator local and a loop over its indices. Reductions inside
// reductions are evaluated inside the outer reduction's loop. Guarantees: the result interprets exactly
// as the algorithm level does (same operations in the same order).
func Lower(k *ir.Kernel, c *Context) (*ir.Func, error) {
	f := &ir.Func{Kernel: k, Plan: map[string]int{}}
	n := namer{}
	for _, p := range k.Params {
		n[p.Name]++
	}
	for _, t := range k.Temps {
		n[t.Name]++
	}
	for _, s := range k.Stmts {
		for _, v := range s.Vars {
			n[v.Name]++
		}
	}
	l := &lowerer{n: n, c: c}
	for _, s := range k.Stmts {
		vars := loopOrder(s.Vars, c)
		pre, val := l.expr(s.Value)
		body := append(pre, &ir.Store{T: s.Out, Idx: ivars(s.Vars), Value: val})
		for i := len(vars) - 1; i >= 0; i-- {
			body = []ir.Node{fullLoop(vars[i], body)}
		}
		f.Body = append(f.Body, &ir.Nest{Stmts: []*ir.Stmt{s}, Body: body})
	}
	return f, nil
}

type lowerer struct {
	n namer
	c *Context
}

func ivars(vs []*ir.Var) []ir.IExpr {
	out := make([]ir.IExpr, len(vs))
	for i, v := range vs {
		out[i] = ir.IVar{V: v}
	}
	return out
}

// fullLoop runs v over its whole range.
func fullLoop(v *ir.Var, body []ir.Node) *ir.Loop {
	return &ir.Loop{Var: v, Lo: ir.IConst{V: 0}, Hi: v.Hi(), Step: ir.IConst{V: 1}, Body: body}
}

// loopOrder applies reorder directives to the statement's output indices.
func loopOrder(vars []*ir.Var, c *Context) []*ir.Var {
	out := append([]*ir.Var(nil), vars...)
	for _, d := range c.directive("reorder") {
		var pos []int
		for i, v := range out {
			for _, a := range d.Args {
				if a.Name == v.Name {
					pos = append(pos, i)
				}
			}
		}
		var picked []*ir.Var
		for _, a := range d.Args {
			for _, v := range out {
				if v.Name == a.Name {
					picked = append(picked, v)
				}
			}
		}
		for j, p := range pos {
			out[p] = picked[j]
		}
	}
	return out
}

// expr returns the nodes that must run before val can be evaluated, and val itself.
func (l *lowerer) expr(e ir.Expr) ([]ir.Node, ir.Expr) { return l.hoist(e) }

// hoist lowers e top-down so that each reduction's inner reductions land inside its loop.
func (l *lowerer) hoist(e ir.Expr) ([]ir.Node, ir.Expr) {
	switch x := e.(type) {
	case *ir.Reduce:
		bodyPre, bodyVal := l.hoist(x.X)
		acc := &ir.LocalVar{Name: l.n.name("acc"), T: x.T}
		update := &ir.Assign{L: acc, Value: &ir.Binary{Op: x.Op, X: &ir.Local{L: acc}, Y: bodyVal, T: x.T}}
		body := append(bodyPre, update)
		for i := len(x.Vars) - 1; i >= 0; i-- {
			loop := fullLoop(x.Vars[i], body)
			if i == 0 {
				// The outermost reduction loop runs only when every inner range is non-empty (its bound
				// is multiplied by min(D, 1) for each inner dim D): over an empty inner range it would
				// spin through its own range, which may be huge when every tensor it indexes is empty.
				// Once it runs, every inner range is non-empty, so the inner loops need no guard.
				for _, w := range x.Vars[1:] {
					if w.Range != nil { // a window index (r < 2) has a constant, non-empty range
						loop.Hi = ir.IMul(loop.Hi, ir.IMin(ir.IDim{D: w.Range}, ir.IConst{V: 1}))
					}
				}
			}
			body = []ir.Node{loop}
		}
		init := &ir.Decl{L: acc, Init: &ir.Const{Val: identity(x.Op), T: x.T}}
		return append([]ir.Node{init}, body...), &ir.Local{L: acc}
	case *ir.Unary:
		p, v := l.hoist(x.X)
		c := *x
		c.X = v
		return p, &c
	case *ir.Binary:
		p1, v1 := l.hoist(x.X)
		p2, v2 := l.hoist(x.Y)
		c := *x
		c.X, c.Y = v1, v2
		return append(p1, p2...), &c
	case *ir.Select:
		p1, v1 := l.hoist(x.C)
		p2, v2 := l.hoist(x.A)
		p3, v3 := l.hoist(x.B)
		return append(append(p1, p2...), p3...), &ir.Select{C: v1, A: v2, B: v3}
	case *ir.Cast:
		p, v := l.hoist(x.X)
		return p, &ir.Cast{X: v, T: x.T}
	}
	return nil, e
}

func identity(op ir.Op) float64 {
	switch op {
	case ir.Max:
		return negInf
	case ir.Min:
		return posInf
	}
	return 0
}
