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

// Selects on constant conditions and equal branches print as the value they select; comparisons fold
// only between constants their type holds exactly.
func TestExprFoldsConstantSelects(t *testing.T) {
	a := &ir.Local{L: &ir.LocalVar{Name: "a", T: ir.F32}}
	i32 := func(v float64) *ir.Const { return &ir.Const{Val: v, T: ir.I32} }
	f32 := func(v float64) *ir.Const { return &ir.Const{Val: v, T: ir.F32} }
	cmp := func(op ir.Op, x, y ir.Expr) ir.Expr { return &ir.Binary{Op: op, X: x, Y: y, T: ir.Bool} }
	g := &gen{imports: map[string]bool{}}
	for _, tc := range []struct {
		e    ir.Expr
		want string
	}{
		{&ir.Select{C: cmp(ir.Eq, i32(0), i32(0)), A: a, B: f32(1)}, "a"},
		{&ir.Select{C: cmp(ir.Lt, i32(3), i32(2)), A: a, B: f32(1)}, "float32(1)"},
		{&ir.Select{C: cmp(ir.Eq, a, f32(0)), A: i32(2), B: i32(2)}, "int32(2)"},
		{&ir.Select{C: cmp(ir.Eq, a, f32(0)), A: a, B: f32(1)}, "sel(a == float32(0), a, float32(1))"},
		{cmp(ir.Eq, f32(0.1), f32(0.1)), "float32(0.1) == float32(0.1)"}, // 0.1 is not an f32
		{cmp(ir.Ge, f32(0.5), f32(0.25)), "true"},
	} {
		if got := g.exprTop(tc.e); got != tc.want {
			t.Errorf("%s printed as %s, want %s", ir.FormatExpr(tc.e), got, tc.want)
		}
	}
	ep := &ir.Select{C: cmp(ir.Ge, i32(5), i32(1)), A: i32(3), B: i32(0)}
	if got := g.epArg(ep); got != "3" {
		t.Errorf("epArg = %s, want 3", got)
	}
	if got := g.epArg(&ir.Select{C: cmp(ir.Eq, a, f32(0)), A: i32(3), B: i32(0)}); got != "int(sel(a == float32(0), int32(3), int32(0)))" {
		t.Errorf("epArg of a run-time select = %s", got)
	}
}

// A dim compared with a small integral constant in f64 prints as an integer comparison; anything that
// rounding could change stays in f64.
func TestExprIntCompare(t *testing.T) {
	M, N := &ir.Dim{Name: "M"}, &ir.Dim{Name: "N"}
	f64 := func(v float64) *ir.Const { return &ir.Const{Val: v, T: ir.F64} }
	dm := &ir.DimVal{D: M, T: ir.F64}
	cmp := func(op ir.Op, x, y ir.Expr) ir.Expr { return &ir.Binary{Op: op, X: x, Y: y, T: ir.Bool} }
	g := &gen{imports: map[string]bool{}}
	for _, tc := range []struct {
		e    ir.Expr
		want string
	}{
		{cmp(ir.Le, dm, f64(4)), "M <= 4"},
		{cmp(ir.Gt, f64(512000), dm), "512000 > M"},
		{cmp(ir.Le, dm, &ir.DimVal{D: N, T: ir.F64}), "float64(M) <= float64(N)"},
		{cmp(ir.Le, dm, f64(4.5)), "float64(M) <= float64(4.5)"},
		{cmp(ir.Le, dm, f64(1<<60)), "float64(M) <= float64(1.152921504606847e+18)"},
		{cmp(ir.Le, &ir.DimVal{D: M, T: ir.F32}, &ir.Const{Val: 4, T: ir.F32}), "float32(M) <= float32(4)"},
	} {
		if got := g.exprTop(tc.e); got != tc.want {
			t.Errorf("%s printed as %s, want %s", ir.FormatExpr(tc.e), got, tc.want)
		}
	}
}
