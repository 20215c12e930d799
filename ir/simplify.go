package ir

import (
	"fmt"
	"math"
)

// Simplify returns an index expression equal to e for every value of its variables, dims and plan
// symbols (negative and zero included; '/' is floor division by a positive divisor, as everywhere in
// the IR), written with fewer operations where it can:
//
//   - sums are collected into a linear form: constants folded and moved last, x*1, x+0 and x-x gone,
//     equal terms merged (N + N - 3*N is -N), terms kept in the order they first appear;
//   - a division of a linear form by a constant k takes out the terms whose coefficient k divides, and
//     the constant's multiple of k: ((N/4)*4 + 3)/4 is N/4, (8*i + j + 9)/4 is 2*i + 2 + (j + 1)/4;
//     (x/a)/b is x/(a*b);
//   - modulo and the bit operations (% ^ & << >>) keep their place, their operands simplified and
//     constants folded;
//   - min and max flatten nested chains of the same operator, fold their constant operands into one,
//     drop repeated operands and those that differ from another by a constant (min(j+4, j+1, N) is
//     min(j+1, N)).
//
// Division stays exact under truncating division too (the Go backend writes '/', which truncates):
// a term is taken out of a dividend only when what remains is a sum of non-negative terms whenever the
// variables, dims and symbols are non-negative, so a dividend that was non-negative stays so.
func Simplify(e IExpr) IExpr { return linOf(e).expr() }

// term is coef·atom, where atom is a variable, dim, symbol or a non-linear expression (product of two
// non-constants, division, min, max) whose operands are simplified.
type term struct {
	atom IExpr
	key  string
	coef int
}

// linForm is Σ terms + c.
type linForm struct {
	terms []term
	c     int
}

func constForm(c int) linForm { return linForm{c: c} }

func atomForm(a IExpr) linForm {
	if c, ok := a.(IConst); ok {
		return constForm(c.V)
	}
	return linForm{terms: []term{{a, atomKey(a), 1}}}
}

// atomKey identifies an expression structurally: variables and dims by identity (two distinct
// variables may share a name), symbols by name.
func atomKey(e IExpr) string {
	switch e := e.(type) {
	case IConst:
		return fmt.Sprint(e.V)
	case IVar:
		return fmt.Sprintf("v%p", e.V)
	case IDim:
		return fmt.Sprintf("d%p", e.D)
	case ISym:
		return "s" + e.Name
	case IBin:
		return "(" + atomKey(e.X) + string(e.Op) + atomKey(e.Y) + ")"
	}
	return fmt.Sprintf("?%v", e)
}

func (f linForm) isConst() bool { return len(f.terms) == 0 }

// addScaled returns f + k·g.
func (f linForm) addScaled(g linForm, k int) linForm {
	out := linForm{terms: append([]term(nil), f.terms...), c: f.c + k*g.c}
	for _, t := range g.terms {
		merged := false
		for i := range out.terms {
			if out.terms[i].key == t.key {
				out.terms[i].coef += k * t.coef
				merged = true
				break
			}
		}
		if !merged {
			out.terms = append(out.terms, term{t.atom, t.key, k * t.coef})
		}
	}
	kept := out.terms[:0]
	for _, t := range out.terms {
		if t.coef != 0 {
			kept = append(kept, t)
		}
	}
	out.terms = kept
	return out
}

func (f linForm) scale(k int) linForm { return constForm(0).addScaled(f, k) }

// nonNeg reports whether f ≥ 0 whenever every variable, dim and symbol is non-negative.
func (f linForm) nonNeg() bool {
	if f.c < 0 {
		return false
	}
	for _, t := range f.terms {
		if t.coef < 0 || !atomNonNeg(t.atom) {
			return false
		}
	}
	return true
}

func atomNonNeg(e IExpr) bool {
	switch e := e.(type) {
	case IConst:
		return e.V >= 0
	case IVar, IDim, ISym:
		return true
	case IBin:
		x, y := atomNonNeg(e.X), atomNonNeg(e.Y)
		switch e.Op {
		case '*', 'm':
			return x && y
		case 'M':
			return x || y
		case '/', '+', '^':
			return x && y
		case '%': // floor modulo by a positive divisor
			return true
		case '&':
			return x || y
		case '>':
			return x
		}
	}
	return false
}

func linOf(e IExpr) linForm {
	switch e := e.(type) {
	case IConst:
		return constForm(e.V)
	case IVar, IDim, ISym:
		return atomForm(e)
	case IBin:
		x, y := linOf(e.X), linOf(e.Y)
		switch e.Op {
		case '+':
			return x.addScaled(y, 1)
		case '-':
			return x.addScaled(y, -1)
		case '*':
			switch {
			case y.isConst():
				return x.scale(y.c)
			case x.isConst():
				return y.scale(x.c)
			}
			return atomForm(IBin{'*', x.expr(), y.expr()})
		case '/':
			if y.isConst() && y.c > 0 {
				return divide(x, y.c)
			}
			return atomForm(IBin{'/', x.expr(), y.expr()})
		case 'm', 'M':
			return minMax(e.Op, x, y)
		}
		// modulo and the bit operations: operands simplified, constants and identities folded
		r := ibit(e.Op, x.expr(), y.expr())
		if b, ok := r.(IBin); ok && b.Op == e.Op {
			return atomForm(r)
		}
		return linOf(r)
	}
	return atomForm(e)
}

// divide returns floor(f / k) for k > 0.
func divide(f linForm, k int) linForm {
	if k == 1 {
		return f
	}
	q := floorDiv(f.c, k)
	out := constForm(q)
	rest := linForm{c: f.c - q*k} // 0 ≤ rest.c < k
	for _, t := range f.terms {
		if t.coef%k == 0 {
			out.terms = append(out.terms, term{t.atom, t.key, t.coef / k})
		} else {
			rest.terms = append(rest.terms, t)
		}
	}
	switch {
	case rest.isConst():
		return out // floor(rest.c / k) == 0
	case len(out.terms) > 0 || q != 0:
		if !rest.nonNeg() {
			// Keep the dividend whole: taking terms out could leave a negative remainder, which the
			// truncating division of a backend would round the wrong way.
			return atomForm(IBin{'/', f.expr(), IConst{k}})
		}
	}
	// (x/a)/b == x/(a·b) for a, b > 0
	if len(rest.terms) == 1 && rest.terms[0].coef == 1 && rest.c == 0 {
		if d, ok := rest.terms[0].atom.(IBin); ok && d.Op == '/' {
			if a, ok := d.Y.(IConst); ok && a.V > 0 && a.V <= 1<<30 && k <= 1<<30 {
				return out.addScaled(atomForm(IBin{'/', d.X, IConst{a.V * k}}), 1)
			}
		}
	}
	return out.addScaled(atomForm(IBin{'/', rest.expr(), IConst{k}}), 1)
}

// minMax simplifies min(x, y) (op 'm') or max(x, y) (op 'M').
func minMax(op byte, x, y linForm) linForm {
	var args []linForm
	var flatten func(f linForm)
	flatten = func(f linForm) {
		if len(f.terms) == 1 && f.terms[0].coef == 1 && f.c == 0 {
			if b, ok := f.terms[0].atom.(IBin); ok && b.Op == op {
				flatten(linOf(b.X))
				flatten(linOf(b.Y))
				return
			}
		}
		args = append(args, f)
	}
	flatten(x)
	flatten(y)
	better := func(a, b int) bool { // a is kept over b
		if op == 'm' {
			return a <= b
		}
		return a >= b
	}
	// Operands that differ by a constant (constants among them) compare without knowing any value:
	// keep the one that wins.
	var kept []linForm
	for _, a := range args {
		dominated := false
		for i, b := range kept {
			d := a.addScaled(b, -1)
			if !d.isConst() {
				continue
			}
			dominated = true
			if !better(b.c, b.c+d.c) { // a = b + d.c wins
				kept[i] = a
			}
			break
		}
		if !dominated {
			kept = append(kept, a)
		}
	}
	if len(kept) == 1 {
		return kept[0]
	}
	// constants last
	var e IExpr
	var c *linForm
	for i := range kept {
		if kept[i].isConst() {
			c = &kept[i]
			continue
		}
		if e == nil {
			e = kept[i].expr()
		} else {
			e = IBin{op, e, kept[i].expr()}
		}
	}
	if e == nil {
		return *c
	}
	if c != nil {
		e = IBin{op, e, IConst{c.c}}
	}
	return atomForm(e)
}

// expr writes f as an expression: the positive terms in order of appearance, then the negative ones
// subtracted, then the constant; a variable's coefficient comes first (2*y), a compound term's last
// (N/4*4).
func (f linForm) expr() IExpr {
	var e IExpr
	scaled := func(t term, k int) IExpr {
		switch t.atom.(type) {
		case IVar, IDim, ISym:
			if k != 1 {
				return IBin{'*', IConst{k}, t.atom} // 2*y, as the source writes it
			}
		default:
			if k != 1 {
				return IBin{'*', t.atom, IConst{k}} // N/4*4: N rounded down to a multiple of 4
			}
		}
		return t.atom
	}
	for _, t := range f.terms {
		if t.coef > 0 {
			if e == nil {
				e = scaled(t, t.coef)
			} else {
				e = IBin{'+', e, scaled(t, t.coef)}
			}
		}
	}
	c := f.c
	if e == nil && len(f.terms) > 0 && c > 0 {
		e, c = IConst{c}, 0 // 3 - x
	}
	for _, t := range f.terms {
		if t.coef < 0 {
			if e == nil {
				e = scaled(t, t.coef)
			} else {
				e = IBin{'-', e, scaled(t, -t.coef)}
			}
		}
	}
	switch {
	case e == nil:
		return IConst{c}
	case c > 0:
		return IBin{'+', e, IConst{c}}
	case c < 0:
		return IBin{'-', e, IConst{-c}}
	}
	return e
}

// FoldSelects folds what a pass's substitution leaves decidable in e: a comparison of two constants
// becomes a Bool constant, a Select on a constant condition becomes its branch, and a Select whose
// branches are the same constant becomes that constant. Nothing else changes, so the value is the same.
func FoldSelects(e Expr) Expr {
	return Rewrite(e, func(x Expr) Expr {
		switch x := x.(type) {
		case *Binary:
			a, okA := x.X.(*Const)
			b, okB := x.Y.(*Const)
			if x.Op.IsCompare() && okA && okB && a.T == b.T {
				return &Const{Val: compare(x.Op, a.Val, b.Val), T: Bool}
			}
		case *Select:
			if c, ok := x.C.(*Const); ok {
				if c.Val != 0 {
					return x.A
				}
				return x.B
			}
			a, okA := x.A.(*Const)
			b, okB := x.B.(*Const)
			if okA && okB && a.T == b.T && math.Float64bits(a.Val) == math.Float64bits(b.Val) {
				return a
			}
		}
		return x
	})
}
