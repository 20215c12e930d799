package ir

// The beta rule (docs/LANGUAGE.md, "Scaled outputs"): in a statement writing out, a product f·out[...]
// or out[...]·f — a scaled-output term, BLAS's beta·C — whose factor f uses no index and reads no tensor
// the statement writes contributes nothing when f evaluates to zero: out is then not read, so a NaN or
// an Inf in it does not propagate. Both interpreter levels and every backend follow it: the interpreter
// drops the term (DropBeta) when the factor is zero, the GEMM microkernels skip C when beta is zero, and
// the beta pass versions every other loop on f == 0.

// BetaFactor returns f when e is a scaled-output term f·out[...] or out[...]·f of a float statement
// writing out (either operand may be widened by casts), else nil.
func BetaFactor(e Expr, out *Tensor) Expr {
	b, ok := e.(*Binary)
	if !ok || b.Op != Mul || !b.T.IsFloat() || out.Kind == Scalar {
		return nil
	}
	if isOutLoad(b.Y, out) && invariantFactor(b.X, out) {
		return b.X
	}
	if isOutLoad(b.X, out) && invariantFactor(b.Y, out) {
		return b.Y
	}
	return nil
}

// isOutLoad matches a load of out, possibly widened by casts.
func isOutLoad(e Expr, out *Tensor) bool {
	for {
		c, ok := e.(*Cast)
		if !ok {
			break
		}
		if !c.T.IsFloat() || !c.X.Type().IsFloat() || c.X.Type().Compute().Unit() < c.T.Compute().Unit() {
			return false // a narrowing cast: not the output's value
		}
		e = c.X
	}
	l, ok := e.(*Load)
	return ok && l.T == out
}

// invariantFactor reports whether f uses no index (variable, reduction or local) and does not read out.
func invariantFactor(f Expr, out *Tensor) bool {
	ok := true
	Walk(f, func(x Expr) {
		switch x := x.(type) {
		case *Load:
			if x.T == out || x.T.Kind == Scratch {
				ok = false
			}
			for _, ix := range x.Idx {
				IVars(ix, func(*Var) { ok = false })
			}
		case *VarVal, *Reduce, *Local:
			ok = false
		}
	})
	return ok
}

// BetaFactors lists the distinct factors (by their printed form) of the scaled-output terms of out in e,
// in order of appearance.
func BetaFactors(e Expr, out *Tensor) []Expr {
	var fs []Expr
	seen := map[string]bool{}
	Walk(e, func(x Expr) {
		if f := BetaFactor(x, out); f != nil && !seen[FormatExpr(f)] {
			seen[FormatExpr(f)] = true
			fs = append(fs, f)
		}
	})
	return fs
}

// HasBeta reports whether e holds a scaled-output term of out with factor f (compared by printed form).
func HasBeta(e Expr, out *Tensor, f Expr) bool {
	want, found := FormatExpr(f), false
	Walk(e, func(x Expr) {
		if g := BetaFactor(x, out); g != nil && FormatExpr(g) == want {
			found = true
		}
	})
	return found
}

// DropBeta returns e without its scaled-output terms of out with factor f, as if they were not written:
// x + f·out and f·out + x become x, x − f·out becomes x, f·out − x becomes −x, and a term anywhere else
// becomes 0. e itself is not modified.
func DropBeta(e Expr, out *Tensor, f Expr) Expr {
	want := FormatExpr(f)
	is := func(x Expr) bool {
		g := BetaFactor(x, out)
		return g != nil && FormatExpr(g) == want
	}
	var drop func(e Expr) Expr
	drop = func(e Expr) Expr {
		if is(e) {
			return &Const{Val: 0, T: e.Type()}
		}
		switch x := e.(type) {
		case *Binary:
			if x.Op == Add || x.Op == Sub {
				switch {
				case is(x.Y):
					return drop(x.X)
				case is(x.X) && x.Op == Add:
					return drop(x.Y)
				case is(x.X):
					return &Unary{Op: Neg, X: drop(x.Y), T: x.T}
				}
			}
			c := *x
			c.X, c.Y = drop(x.X), drop(x.Y)
			return &c
		case *Unary:
			c := *x
			c.X = drop(x.X)
			return &c
		case *Cast:
			c := *x
			c.X = drop(x.X)
			return &c
		case *Select:
			return &Select{C: drop(x.C), A: drop(x.A), B: drop(x.B)}
		case *Reduce:
			c := *x
			c.X = drop(x.X)
			return &c
		}
		return e
	}
	return drop(e)
}

// BetaIsZero is the condition f == 0 (true for -0 too; false for NaN) of type Bool.
func BetaIsZero(f Expr) Expr {
	return &Binary{Op: Eq, X: f, Y: &Const{Val: 0, T: f.Type()}, T: Bool}
}
