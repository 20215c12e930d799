package check

import (
	"strings"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/parse"
)

// The implicit (Einstein) sum covers a statement's whole right-hand side. That is only what a writer
// means when every additive term uses the summed index: in `C[i, j] = A[i, k]*B[k, j] + bias[j]` the
// sum would add bias[j] K times, and in `... + bias[k]` it would sum bias and broadcast the total over
// i and j. checkImplicit reports both, and the same within a product (y[i] = X[i] * b[k] sums b and
// broadcasts the sum over i); an explicit sum(k: ...) says what is summed.

// term is an additive term found lacking, for a message.
type term struct {
	pos  parse.Pos
	text string
}

// checkImplicit checks the implicit indices free of statement s, whose left-hand indices are lhs.
func (kc *kchecker) checkImplicit(s *parse.Stmt, free []*ir.Var, lhs []string) {
	for _, v := range free {
		if t := lackingExpr(s.Value, v.Name); t != nil {
			kc.errorf(t.pos, "%s is summed implicitly but does not occur in %s; write sum(%s: ...) explicitly", v.Name, clip(t.text), v.Name)
			return
		}
	}
	// A term's factors that use the index are summed over it before the other factors multiply them.
	// Those factors must use every left-hand index the term uses (every left-hand index, when there
	// are several terms): otherwise their sum is broadcast, as in y[i] = X[i] * b[k] (k stray) or
	// C[i, j] = A[i, k] * B[k, j] + b[k].
	terms := topTerms(s.Value)
	for _, v := range free {
		for _, p := range terms {
			var with []*parse.Unary
			var texts []string
			for _, f := range factors(p) {
				if mentionsUnary(f, v.Name) {
					with = append(with, f)
					texts = append(texts, parse.FactorString(f))
				}
			}
			if len(with) == 0 {
				continue
			}
			for _, l := range lhs {
				if len(terms) == 1 && !mentionsProduct(p, l) {
					continue
				}
				used := false
				for _, f := range with {
					used = used || mentionsUnary(f, l)
				}
				if !used {
					kc.errorf(with[0].Pos, "%s is summed implicitly over %s, which does not use %s: the sum would be broadcast over %s; write sum(%s: ...) explicitly",
						v.Name, clip(strings.Join(texts, " * ")), l, l, v.Name)
					return
				}
			}
		}
	}
}

func factors(p *parse.Product) []*parse.Unary {
	out := []*parse.Unary{p.Left}
	for _, r := range p.Rest {
		out = append(out, r.Factor)
	}
	return out
}

// clip shortens a term for a message.
func clip(s string) string {
	const max = 60
	if len(s) <= max {
		return s
	}
	return s[:max-3] + "..."
}

// topTerms lists the additive terms of e, looking through parentheses and unary minus.
func topTerms(e *parse.Expr) []*parse.Product {
	if e.Op != "" {
		return nil
	}
	var out []*parse.Product
	add := func(p *parse.Product) {
		u := p.Left
		for u.Neg != nil {
			u = u.Neg
		}
		if len(p.Rest) == 0 && u.Primary != nil && u.Primary.Paren != nil {
			if sub := topTerms(u.Primary.Paren); sub != nil {
				out = append(out, sub...)
				return
			}
		}
		out = append(out, p)
	}
	add(e.Left.Left)
	for _, r := range e.Left.Rest {
		add(r.Term)
	}
	return out
}

// lackingExpr returns the first additive term of e (distributing products) that does not use the index
// name, or nil when every term does.
func lackingExpr(e *parse.Expr, name string) *term {
	if e.Op != "" {
		if mentionsExpr(e, name) {
			return nil
		}
		return &term{e.Pos, parse.ExprString(e)}
	}
	if t := lackingProduct(e.Left.Left, name); t != nil {
		return t
	}
	for _, r := range e.Left.Rest {
		if t := lackingProduct(r.Term, name); t != nil {
			return t
		}
	}
	return nil
}

// lackingProduct: every term of a product uses the index when one factor's terms all do, or when a
// divisor uses it at all (1/b is not a sum of terms).
func lackingProduct(p *parse.Product, name string) *term {
	first := lackingUnary(p.Left, name)
	if first == nil {
		return nil
	}
	for _, r := range p.Rest {
		if r.Op == "*" && lackingUnary(r.Factor, name) == nil || r.Op == "/" && mentionsUnary(r.Factor, name) {
			return nil
		}
	}
	if len(p.Rest) == 0 {
		return first
	}
	// Point inside a factor that uses the index in some terms (2 * (A[i, k] + 1) lacks it in 1), or
	// else at the whole product.
	factors := []*parse.Unary{p.Left}
	for _, r := range p.Rest {
		factors = append(factors, r.Factor)
	}
	for _, f := range factors {
		if mentionsUnary(f, name) {
			return lackingUnary(f, name)
		}
	}
	return &term{p.Pos, parse.TermString(p)}
}

func lackingUnary(u *parse.Unary, name string) *term {
	if u.Neg != nil {
		return lackingUnary(u.Neg, name)
	}
	if u.Primary.Paren != nil {
		return lackingExpr(u.Primary.Paren, name)
	}
	if mentionsPrimary(u.Primary, name) {
		return nil
	}
	return &term{u.Primary.Pos, parse.FactorString(u)}
}

func mentionsExpr(e *parse.Expr, name string) bool {
	return mentionsSum(e.Left, name) || e.Right != nil && mentionsSum(e.Right, name)
}

func mentionsSum(s *parse.Sum, name string) bool {
	if mentionsProduct(s.Left, name) {
		return true
	}
	for _, r := range s.Rest {
		if mentionsProduct(r.Term, name) {
			return true
		}
	}
	return false
}

func mentionsProduct(p *parse.Product, name string) bool {
	if mentionsUnary(p.Left, name) {
		return true
	}
	for _, r := range p.Rest {
		if mentionsUnary(r.Factor, name) {
			return true
		}
	}
	return false
}

func mentionsUnary(u *parse.Unary, name string) bool {
	if u.Neg != nil {
		return mentionsUnary(u.Neg, name)
	}
	return mentionsPrimary(u.Primary, name)
}

func mentionsPrimary(p *parse.Primary, name string) bool {
	switch {
	case p.Paren != nil:
		return mentionsExpr(p.Paren, name)
	case p.Reduce != nil:
		for _, v := range p.Reduce.Vars {
			if v.Name == name {
				return false // a different variable of the same name
			}
		}
		return mentionsExpr(p.Reduce.Value, name)
	case p.Call != nil:
		for _, a := range p.Call.Args {
			if mentionsExpr(a, name) {
				return true
			}
		}
	case p.Access != nil:
		if p.Access.Index == nil {
			return p.Access.Name == name
		}
		for _, x := range p.Access.Index.Exprs {
			if mentionsExpr(x, name) {
				return true
			}
		}
	}
	return false
}
