package passes

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
)

// MMALower expands every MMA into scalar code, for targets without the instruction (and as the
// reference form a backend's MMA implementation is tested against):
//
//   - the accumulator becomes a register-space scratch tile acc[i·N + j] (an Alloc around the
//     accumulator's whole life, from its AccDecl to its AccStore), zeroed where the AccDecl was (row by row);
//   - each MMA becomes rank-1 updates, p outermost as a microkernel runs them:
//     for p < K, i < M, j < N (each cut to its valid extent): acc[i·N + j] += A(i, p)·B(p, j), the
//     product and the sum in the accumulator type, the operands read through their layouts;
//   - the AccStore becomes a loop over the stored part of the tile writing its epilogue, versioned on
//     each scaled-output factor f (If f == 0: the epilogue without the term, which then does not read
//     out), as the beta rule says.
//
// Guarantees: the same operations in the same order as the MMA's semantics, so the interpreter gives
// the same result bit for bit. Every scope is expanded (a warp MMA becomes one thread's loops: its
// fragments say only who holds what, not what is computed).
func MMALower(f *ir.Func, c *Context) (bool, error) {
	l := &mmaLowerer{n: funcNamer(f), bufs: map[*ir.Accum]*ir.Tensor{}}
	body, err := l.seq(f.Body)
	if err != nil {
		return false, err
	}
	f.Body = body
	return l.changed, nil
}

type mmaLowerer struct {
	n       namer
	bufs    map[*ir.Accum]*ir.Tensor
	changed bool
}

// childBodies lists the node lists a node holds.
func childBodies(n ir.Node) []*[]ir.Node {
	switch n := n.(type) {
	case *ir.Loop:
		return []*[]ir.Node{&n.Body}
	case *ir.Nest:
		return []*[]ir.Node{&n.Body}
	case *ir.Alloc:
		return []*[]ir.Node{&n.Body}
	case *ir.Launch:
		return []*[]ir.Node{&n.Body}
	case *ir.If:
		return []*[]ir.Node{&n.Then, &n.Else}
	}
	return nil
}

func (l *mmaLowerer) buf(a *ir.Accum) *ir.Tensor {
	t, ok := l.bufs[a]
	if !ok {
		t = &ir.Tensor{Name: l.n.name(a.Name), Type: a.T, Kind: ir.Scratch, Space: ir.Register, Size: ir.IMul(a.M, a.N)}
		l.bufs[a] = t
	}
	return t
}

// seq lowers one block: children first (MMAs inside K loops), then each AccDecl … AccStore run.
func (l *mmaLowerer) seq(body []ir.Node) ([]ir.Node, error) {
	var out []ir.Node
	for i := 0; i < len(body); i++ {
		n := body[i]
		for _, b := range childBodies(n) {
			nb, err := l.seq(*b)
			if err != nil {
				return nil, err
			}
			*b = nb
		}
		switch n := n.(type) {
		case *ir.MMA:
			out = append(out, l.mma(n))
			l.changed = true
			continue
		case *ir.AccDecl:
			end := -1
			for j := i + 1; j < len(body) && end < 0; j++ {
				if s, ok := body[j].(*ir.AccStore); ok && s.Acc == n.Acc {
					end = j
				}
			}
			if end < 0 {
				return nil, fmt.Errorf("accumulator %%%s has no store in its block", n.Acc.Name)
			}
			inner, err := l.seq(body[i+1 : end])
			if err != nil {
				return nil, err
			}
			t := l.buf(n.Acc)
			// zeroed row by row: loops of M and N iterations, which a backend unrolls as it unrolls
			// the rank-1 updates (one loop over M·N elements may be too long for that)
			zi, zj := &ir.Var{Name: l.n.name("zi")}, &ir.Var{Name: l.n.name("zj")}
			zat := []ir.IExpr{ir.IAdd(ir.IMul(ir.IVar{V: zi}, n.Acc.N), ir.IVar{V: zj})}
			zero := &ir.Loop{Var: zi, Lo: ir.IConst{V: 0}, Hi: n.Acc.M, Step: ir.IConst{V: 1},
				Body: []ir.Node{&ir.Loop{Var: zj, Lo: ir.IConst{V: 0}, Hi: n.Acc.N, Step: ir.IConst{V: 1},
					Body: []ir.Node{&ir.Store{T: t, Idx: zat, Value: &ir.Const{Val: 0, T: t.Type}}}}}}
			ab := append([]ir.Node{zero}, inner...)
			ab = append(ab, l.store(body[end].(*ir.AccStore)))
			out = append(out, &ir.Alloc{T: t, Body: ab})
			l.changed = true
			i = end
			continue
		case *ir.AccStore:
			return nil, fmt.Errorf("accstore of %%%s without its declaration in the block", n.Acc.Name)
		}
		out = append(out, n)
	}
	return out, nil
}

// elem reads operand element (r, c) as a value of type t, rounded to tf32 first for a tf32 MMA: through
// the layout, or as the view's value at (Base0 + x, K0 + p) (x = r for A, c for B).
func elem(o ir.Operand, r, c ir.IExpr, t ir.DType, tf32, isB bool) ir.Expr {
	var e ir.Expr
	if v := o.View; v != nil {
		x, p := r, c
		if isB {
			x, p = c, r
		}
		e = ir.SubstVars(v.Value, map[*ir.Var]ir.IExpr{v.P: ir.IAdd(v.Base0, x), v.D: ir.IAdd(v.K0, p)})
	} else {
		e = &ir.Load{T: o.T, Idx: ir.FlatIndex(o.T, ir.Simplify(ir.IAdd(o.Off, o.Layout.Offset(r, c))))}
	}
	if tf32 {
		e = &ir.Unary{Op: ir.RoundTF32, X: e, T: ir.F32}
	}
	if e.Type() != t {
		e = &ir.Cast{X: e, T: t}
	}
	return e
}

func valid(v, whole ir.IExpr) ir.IExpr {
	if v == nil {
		return whole
	}
	return ir.IMin(whole, v)
}

func (l *mmaLowerer) mma(m *ir.MMA) ir.Node {
	a := m.Acc
	t := l.buf(a)
	p, i, j := &ir.Var{Name: l.n.name("p")}, &ir.Var{Name: l.n.name("i")}, &ir.Var{Name: l.n.name("j")}
	at := []ir.IExpr{ir.IAdd(ir.IMul(ir.IVar{V: i}, a.N), ir.IVar{V: j})}
	prod := &ir.Binary{Op: ir.Mul, X: elem(m.A, ir.IVar{V: i}, ir.IVar{V: p}, a.T, m.TF32, false), Y: elem(m.B, ir.IVar{V: p}, ir.IVar{V: j}, a.T, m.TF32, true), T: a.T}
	upd := &ir.Store{T: t, Idx: at, Value: &ir.Binary{Op: ir.Add, X: &ir.Load{T: t, Idx: at}, Y: prod, T: a.T}}
	loop := func(v *ir.Var, hi ir.IExpr, body ir.Node) *ir.Loop {
		return &ir.Loop{Var: v, Lo: ir.IConst{V: 0}, Hi: hi, Step: ir.IConst{V: 1}, Body: []ir.Node{body}}
	}
	return loop(p, valid(m.ValidK, m.K), loop(i, valid(m.ValidM, a.M), loop(j, valid(m.ValidN, a.N), upd)))
}

// store writes the epilogue over the stored tile, versioned on every scaled-output factor.
func (l *mmaLowerer) store(s *ir.AccStore) ir.Node {
	t := l.buf(s.Acc)
	elemAt := &ir.Load{T: t, Idx: []ir.IExpr{ir.IAdd(ir.IMul(ir.IVar{V: s.I}, s.Acc.N), ir.IVar{V: s.J})}}
	val := ir.Rewrite(s.Value, func(e ir.Expr) ir.Expr {
		if av, ok := e.(*ir.AccVal); ok && av.Acc == s.Acc {
			return elemAt
		}
		return e
	})
	var version func(val ir.Expr, factors []ir.Expr) ir.Node
	version = func(val ir.Expr, factors []ir.Expr) ir.Node {
		if len(factors) == 0 {
			// each version gets its own copy of the index list and the value
			st := &ir.Store{T: s.Out, Idx: append([]ir.IExpr(nil), s.Idx...), Value: ir.Rewrite(val, func(e ir.Expr) ir.Expr { return e })}
			return &ir.Loop{Var: s.I, Lo: ir.IConst{V: 0}, Hi: s.M, Step: ir.IConst{V: 1},
				Body: []ir.Node{&ir.Loop{Var: s.J, Lo: ir.IConst{V: 0}, Hi: s.N, Step: ir.IConst{V: 1}, Body: []ir.Node{st}}}}
		}
		f := factors[0]
		return &ir.If{Cond: ir.BetaIsZero(f),
			Then: []ir.Node{version(ir.DropBeta(val, s.Out, f), factors[1:])},
			Else: []ir.Node{version(val, factors[1:])}}
	}
	return version(val, ir.BetaFactors(val, s.Out))
}
