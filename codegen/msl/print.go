package msl

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Print renders f as MSL source. It is the only function that makes text from the syntax tree: the
// output is deterministic, indented by four spaces, and parenthesised by C++ precedence (bitwise
// operators and shifts always get parentheses around their operands, so no reader has to remember
// their precedence).
func Print(f *File) string {
	var p printer
	for _, l := range f.Header {
		p.line("// " + l)
	}
	p.line("#include <metal_stdlib>")
	for _, h := range f.Includes {
		p.line("#include <" + h + ">")
	}
	p.line("using namespace metal;")
	for _, s := range f.Structs {
		p.line("")
		p.line("struct " + s.Name + " {")
		for _, fl := range s.Fields {
			p.line("    int " + fl + ";")
		}
		p.line("};")
	}
	for _, fn := range f.Funcs {
		p.line("")
		params := make([]string, len(fn.Params))
		for i, prm := range fn.Params {
			params[i] = typeString(prm.T) + " " + prm.Name
		}
		p.line("inline " + typeString(fn.Ret) + " " + fn.Name + "(" + strings.Join(params, ", ") + ") {")
		p.stmts(fn.Body)
		p.line("}")
	}
	for _, k := range f.Kernels {
		p.line("")
		p.kernel(&k)
	}
	return p.b.String()
}

// PrintKernel renders one kernel function (for tests and messages).
func PrintKernel(k *Kernel) string {
	var p printer
	p.kernel(k)
	return p.b.String()
}

// PrintExpr renders one expression.
func PrintExpr(e Expr) string {
	s, _ := exprPrec(e)
	return s
}

type printer struct {
	b     strings.Builder
	depth int
}

func (p *printer) line(s string) {
	if s != "" {
		p.b.WriteString(strings.Repeat("    ", p.depth))
	}
	p.b.WriteString(s)
	p.b.WriteByte('\n')
}

func (p *printer) kernel(k *Kernel) {
	for _, l := range k.Doc {
		p.line("// " + l)
	}
	p.line("kernel void " + k.Name + "(")
	for i, prm := range k.Params {
		sep := ","
		if i == len(k.Params)-1 {
			sep = ")"
		}
		s := "    " + typeString(prm.T) + " " + prm.Name
		if prm.Attr != "" {
			s += " [[" + prm.Attr + "]]"
		}
		p.line(s + sep)
	}
	if len(k.Params) == 0 {
		p.line(")")
	}
	p.line("{")
	p.stmts(k.Body)
	p.line("}")
}

func typeString(t Type) string {
	s := t.Name
	if t.Const {
		s = "const " + s
	}
	if t.Space != "" {
		s = t.Space + " " + s
	}
	switch {
	case t.Ptr:
		s += "*"
	case t.Ref:
		s += "&"
	}
	return s
}

func (p *printer) stmts(ss []Stmt) {
	p.depth++
	for _, s := range ss {
		p.stmt(s)
	}
	p.depth--
}

func (p *printer) stmt(s Stmt) {
	switch s := s.(type) {
	case Decl:
		d := typeString(s.T) + " " + s.Name
		if s.Const {
			d = "const " + d
		}
		if s.Space != "" {
			d = s.Space + " " + d
		}
		if s.Len > 0 {
			d += "[" + strconv.Itoa(s.Len) + "]"
		}
		if s.Init != nil {
			d += " = " + PrintExpr(s.Init)
		}
		p.line(d + ";")
	case Assign:
		p.line(PrintExpr(s.LHS) + " " + s.Op + " " + PrintExpr(s.RHS) + ";")
	case ExprStmt:
		p.line(PrintExpr(s.X) + ";")
	case For:
		p.line(fmt.Sprintf("for (int %s = %s; %s < %s; %s += %s) {", s.Var, PrintExpr(s.Lo), s.Var, PrintExpr(s.Hi), s.Var, PrintExpr(s.Step)))
		p.stmts(s.Body)
		p.line("}")
	case If:
		p.line("if (" + PrintExpr(s.Cond) + ") {")
		p.stmts(s.Then)
		if len(s.Else) > 0 {
			p.line("} else {")
			p.stmts(s.Else)
		}
		p.line("}")
	case Block:
		p.line("{")
		p.stmts(s.Body)
		p.line("}")
	case Comment:
		for _, l := range s.Lines {
			p.line("// " + l)
		}
	case Return:
		if s.X == nil {
			p.line("return;")
		} else {
			p.line("return " + PrintExpr(s.X) + ";")
		}
	default:
		panic(fmt.Sprintf("msl: unknown statement %T", s))
	}
}

// C++ precedence levels (higher binds tighter).
const (
	precCond    = 3
	precOrOr    = 4
	precAndAnd  = 5
	precBit     = 6 // | ^ &, always parenthesised around their operands
	precEq      = 9
	precRel     = 10
	precShift   = 11
	precAdd     = 12
	precMul     = 13
	precUnary   = 15
	precPrimary = 16
)

func binPrec(op string) int {
	switch op {
	case "||":
		return precOrOr
	case "&&":
		return precAndAnd
	case "|", "^", "&":
		return precBit
	case "==", "!=":
		return precEq
	case "<", "<=", ">", ">=":
		return precRel
	case "<<", ">>":
		return precShift
	case "+", "-":
		return precAdd
	case "*", "/", "%":
		return precMul
	}
	panic("msl: unknown operator " + op)
}

func paren(s string, prec, want int) string {
	if prec < want {
		return "(" + s + ")"
	}
	return s
}

// FloatString formats v as an MSL float literal.
func FloatString(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NAN"
	case math.IsInf(v, 1):
		return "INFINITY"
	case math.IsInf(v, -1):
		return "-INFINITY"
	}
	s := strconv.FormatFloat(v, 'g', -1, 32)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s + "f"
}

func exprPrec(e Expr) (string, int) {
	switch e := e.(type) {
	case Ident:
		return e.Name, precPrimary
	case IntLit:
		if e.V < 0 {
			return strconv.Itoa(e.V), precUnary
		}
		return strconv.Itoa(e.V), precPrimary
	case FloatLit:
		s := FloatString(e.V)
		if strings.HasPrefix(s, "-") {
			return s, precUnary
		}
		return s, precPrimary
	case BoolLit:
		return strconv.FormatBool(e.V), precPrimary
	case Binary:
		pr := binPrec(e.Op)
		x, px := exprPrec(e.X)
		y, py := exprPrec(e.Y)
		wantX, wantY := pr, pr+1
		if pr == precBit || pr == precShift {
			wantX, wantY = precPrimary, precPrimary
		}
		return paren(x, px, wantX) + " " + e.Op + " " + paren(y, py, wantY), pr
	case Unary:
		x, px := exprPrec(e.X)
		return e.Op + paren(x, px, precUnary), precUnary
	case Call:
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i] = PrintExpr(a)
		}
		return e.Fun + "(" + strings.Join(args, ", ") + ")", precPrimary
	case Index:
		x, px := exprPrec(e.X)
		return paren(x, px, precPrimary) + "[" + PrintExpr(e.I) + "]", precPrimary
	case Member:
		x, px := exprPrec(e.X)
		return paren(x, px, precPrimary) + "." + e.Field, precPrimary
	case AddrOf:
		x, px := exprPrec(e.X)
		return "&" + paren(x, px, precUnary), precUnary
	case Cond:
		c, pc := exprPrec(e.C)
		a, pa := exprPrec(e.A)
		b, pb := exprPrec(e.B)
		return paren(c, pc, precCond+1) + " ? " + paren(a, pa, precCond+1) + " : " + paren(b, pb, precCond), precCond
	case Conv:
		return typeString(e.T) + "(" + PrintExpr(e.X) + ")", precPrimary
	}
	panic(fmt.Sprintf("msl: unknown expression %T", e))
}
