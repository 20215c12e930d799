package golang

import (
	"fmt"
	"go/ast"
	"go/parser"
	"math/rand"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// paren writes a Go expression tree with every operation parenthesized.
func paren(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.BinaryExpr:
		return "(" + paren(e.X) + e.Op.String() + paren(e.Y) + ")"
	case *ast.UnaryExpr:
		return "(" + e.Op.String() + paren(e.X) + ")"
	case *ast.ParenExpr:
		return paren(e.X)
	case *ast.Ident:
		return e.Name
	case *ast.CallExpr:
		s := paren(e.Fun) + "("
		for i, a := range e.Args {
			if i > 0 {
				s += ","
			}
			s += paren(a)
		}
		return s + ")"
	case *ast.BasicLit:
		return e.Value
	case *ast.SelectorExpr:
		return paren(e.X) + "." + e.Sel.Name
	}
	return fmt.Sprintf("?%T", e)
}

// irParen writes the IR tree the same way.
func irParen(e ir.Expr) string {
	switch e := e.(type) {
	case *ir.Local:
		return e.L.Name
	case *ir.Unary:
		return "(-" + irParen(e.X) + ")"
	case *ir.Binary:
		return "(" + irParen(e.X) + string(e.Op) + irParen(e.Y) + ")"
	}
	return "?"
}

// The Go backend prints arithmetic with only the parentheses Go needs; what it prints parses back to the
// IR's tree exactly (so floating-point operations happen in the IR's order).
func TestExprPrecedence(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	locals := []*ir.LocalVar{{Name: "a", T: ir.F32}, {Name: "b", T: ir.F32}, {Name: "c", T: ir.F32}}
	ops := []ir.Op{ir.Add, ir.Sub, ir.Mul, ir.Div, ir.Lt, ir.Eq}
	var rnd func(d int, cmp bool) ir.Expr
	rnd = func(d int, cmp bool) ir.Expr {
		if d == 0 || r.Intn(4) == 0 {
			return &ir.Local{L: locals[r.Intn(len(locals))]}
		}
		if r.Intn(6) == 0 {
			return &ir.Unary{Op: ir.Neg, X: rnd(d-1, false), T: ir.F32}
		}
		op := ops[r.Intn(4)]
		if cmp {
			op = ops[4+r.Intn(2)]
			return &ir.Binary{Op: op, X: rnd(d-1, false), Y: rnd(d-1, false), T: ir.Bool}
		}
		return &ir.Binary{Op: op, X: rnd(d-1, false), Y: rnd(d-1, false), T: ir.F32}
	}
	g := &gen{imports: map[string]bool{}}
	for n := 0; n < 3000; n++ {
		e := rnd(1+r.Intn(5), n%5 == 0)
		for _, src := range []string{g.exprTop(e), g.expr(e)} {
			x, err := parser.ParseExpr(src)
			if err != nil {
				t.Fatalf("%s does not parse: %v", src, err)
			}
			if got, want := paren(x), irParen(e); got != want {
				t.Fatalf("%s parses as %s, want %s", src, got, want)
			}
		}
	}
}
