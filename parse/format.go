package parse

import (
	"strconv"
	"strings"
)

// Print formats a parsed file as canonical kdsl source.
//
// Each kernel header is printed on one line with its parameters written `name: [mode ]type[dims]` and
// joined by ", "; statements follow one per line, indented by four spaces. Expressions are printed with
// the fewest parentheses that keep the parse tree: parentheses the grammar makes redundant (`(a*b) + c`,
// `((x))`) are dropped, while those that change grouping (`a - (b - c)`, `-(a + b)`, `(a < b) == c`)
// are kept. Numbers are printed as they were written. A schedule prints one directive per line, its
// `for target { ... }` blocks indented one more level. Declarations are separated by one blank line.
//
// Comments are not preserved: the lexer elides them before the parser builds the tree, so the tree holds
// no trace of them.
//
// Print(f) parses back to a tree that prints identically and that checks to the same kernels; it is
// meant for formatting tools and for tests.
func Print(f *File) string {
	var p printer
	for i, d := range f.Decls {
		if i > 0 {
			p.b.WriteByte('\n')
		}
		switch {
		case d.Kernel != nil:
			p.kernel(d.Kernel)
		case d.Schedule != nil:
			p.schedule(d.Schedule)
		}
	}
	return p.b.String()
}

type printer struct {
	b strings.Builder
}

const indent = "    "

func (p *printer) kernel(k *Kernel) {
	p.b.WriteString("kernel " + k.Name + "(")
	for i, prm := range k.Params {
		if i > 0 {
			p.b.WriteString(", ")
		}
		p.b.WriteString(prm.Name + ": ")
		if prm.Mode != "" {
			p.b.WriteString(prm.Mode + " ")
		}
		p.b.WriteString(prm.Type)
		if prm.Shape != nil {
			p.b.WriteByte('[')
			for j, d := range prm.Shape.Dims {
				if j > 0 {
					p.b.WriteString(", ")
				}
				p.b.WriteString(d.Name)
			}
			p.b.WriteByte(']')
		}
	}
	p.b.WriteByte(')')
	for i, eq := range k.Where {
		if i == 0 {
			p.b.WriteString(" where ")
		} else {
			p.b.WriteString(", ")
		}
		p.b.WriteString(eq.Left.Name + " == " + eq.Right.Name)
	}
	p.b.WriteString(" {\n")
	for _, s := range k.Body {
		p.b.WriteString(indent)
		p.stmt(s)
		p.b.WriteByte('\n')
	}
	p.b.WriteString("}\n")
}

func (p *printer) stmt(s *Stmt) {
	if s.Let {
		p.b.WriteString("let ")
	}
	p.b.WriteString(s.Target)
	if s.Index != nil {
		p.b.WriteByte('[')
		for i, v := range s.Index.Vars {
			if i > 0 {
				p.b.WriteString(", ")
			}
			p.b.WriteString(v.Name)
		}
		p.b.WriteByte(']')
	}
	p.b.WriteString(" " + s.Op + " ")
	p.b.WriteString(exprString(s.Value))
}

func (p *printer) schedule(s *Schedule) {
	p.b.WriteString("schedule " + s.Kernel + " {\n")
	for _, d := range s.Directives {
		p.directive(d, indent)
	}
	for _, t := range s.Targets {
		p.b.WriteString(indent + "for " + t.Target + " {\n")
		for _, d := range t.Directives {
			p.directive(d, indent+indent)
		}
		p.b.WriteString(indent + "}\n")
	}
	p.b.WriteString("}\n")
}

func (p *printer) directive(d *Directive, ind string) {
	p.b.WriteString(ind + d.Name)
	for i, a := range d.Args {
		if i > 0 {
			p.b.WriteByte(',')
		}
		p.b.WriteString(" " + a.Name)
		for _, sz := range a.Sizes {
			p.b.WriteString(" " + strconv.Itoa(sz))
		}
	}
	// A directive without arguments would take the next line's first word as its argument; a semicolon
	// ends it. (Such a directive does not check, but it should still print as it parsed.)
	if len(d.Args) == 0 {
		p.b.WriteByte(';')
	}
	p.b.WriteByte('\n')
}

// Expression printing works on a small tree of operators with precedence levels, built from the parse
// tree with redundant parentheses removed.

// Precedence levels, loosest first.
const (
	precCompare = 1 + iota // < <= > >= == !=  (not associative)
	precAdd                // + -              (left associative)
	precMul                // * /              (left associative)
	precUnary              // -x
	precAtom               // numbers, names, accesses, calls, reductions
)

// node is an expression with its top operator's precedence: an atom (text set), a unary minus (x set),
// or a binary operation (op, x and y set).
type node struct {
	prec int
	op   string
	text string
	x, y *node
}

func exprString(e *Expr) string {
	var b strings.Builder
	writeNode(&b, exprNode(e))
	return b.String()
}

func writeNode(b *strings.Builder, n *node) {
	switch n.prec {
	case precAtom:
		b.WriteString(n.text)
	case precUnary:
		b.WriteByte('-')
		writeOperand(b, n.x, n.x.prec < precUnary)
	default:
		// Left operand: parenthesised when it binds looser, or when both are comparisons (the grammar
		// allows a single comparison per expression). Right operand: also when it binds equally, since
		// every binary operator associates to the left (or not at all).
		writeOperand(b, n.x, n.x.prec < n.prec || (n.prec == precCompare && n.x.prec == precCompare))
		b.WriteString(" " + n.op + " ")
		writeOperand(b, n.y, n.y.prec <= n.prec)
	}
}

func writeOperand(b *strings.Builder, n *node, paren bool) {
	if paren {
		b.WriteByte('(')
	}
	writeNode(b, n)
	if paren {
		b.WriteByte(')')
	}
}

func exprNode(e *Expr) *node {
	x := sumNode(e.Left)
	if e.Op == "" {
		return x
	}
	return &node{prec: precCompare, op: e.Op, x: x, y: sumNode(e.Right)}
}

func sumNode(s *Sum) *node {
	x := productNode(s.Left)
	for _, r := range s.Rest {
		x = &node{prec: precAdd, op: r.Op, x: x, y: productNode(r.Term)}
	}
	return x
}

func productNode(p *Product) *node {
	x := unaryNode(p.Left)
	for _, r := range p.Rest {
		x = &node{prec: precMul, op: r.Op, x: x, y: unaryNode(r.Factor)}
	}
	return x
}

func unaryNode(u *Unary) *node {
	if u.Neg != nil {
		return &node{prec: precUnary, x: unaryNode(u.Neg)}
	}
	return primaryNode(u.Primary)
}

func primaryNode(p *Primary) *node {
	atom := func(s string) *node { return &node{prec: precAtom, text: s} }
	switch {
	case p.Number != nil:
		return atom(*p.Number)
	case p.Paren != nil:
		return exprNode(p.Paren)
	case p.Reduce != nil:
		var b strings.Builder
		b.WriteString(p.Reduce.Op + "(")
		for i, v := range p.Reduce.Vars {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(v.Name)
			if v.Bound != nil {
				b.WriteString(" < " + v.Bound.String())
			}
		}
		b.WriteString(": " + exprString(p.Reduce.Value) + ")")
		return atom(b.String())
	case p.Call != nil:
		return atom(p.Call.Func + "(" + exprList(p.Call.Args) + ")")
	case p.Access != nil:
		if p.Access.Index == nil {
			return atom(p.Access.Name)
		}
		return atom(p.Access.Name + "[" + exprList(p.Access.Index.Exprs) + "]")
	}
	return atom("")
}

// String is the bound as written: the integer or the dim name.
func (b *Bound) String() string {
	if b.Int != nil {
		return *b.Int
	}
	return b.Dim
}

// ExprString prints an expression as Print does.
func ExprString(e *Expr) string { return exprString(e) }

// TermString prints one additive term (a product) as Print does.
func TermString(p *Product) string {
	var b strings.Builder
	writeNode(&b, productNode(p))
	return b.String()
}

// FactorString prints one factor of a product as Print does.
func FactorString(u *Unary) string {
	var b strings.Builder
	writeNode(&b, unaryNode(u))
	return b.String()
}

func exprList(es []*Expr) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = exprString(e)
	}
	return strings.Join(s, ", ")
}
