package ir

import (
	"fmt"
	"strings"
)

// Expr is a scalar-valued expression. The same node types serve both IR levels: Reduce appears only at
// the algorithm level, Local only at the loop level.
type Expr interface {
	Type() DType
	expr()
}

// Const is a literal.
type Const struct {
	Val float64
	T   DType
}

// Load reads T[Idx...]; a rank-0 tensor or scalar parameter has no indices. Scratch buffers are
// indexed by one flat offset.
type Load struct {
	T   *Tensor
	Idx []IExpr
}

// DimVal is a dim used as a number (e.g. dividing by N in a mean).
type DimVal struct {
	D *Dim
	T DType
}

// VarVal is an index variable used as a number.
type VarVal struct {
	V *Var
	T DType
}

// Op names the elementwise operations.
type Op string

const (
	Add Op = "+"
	Sub Op = "-"
	Mul Op = "*"
	Div Op = "/"
	Lt  Op = "<"
	Le  Op = "<="
	Gt  Op = ">"
	Ge  Op = ">="
	Eq  Op = "=="
	Ne  Op = "!="
	Min Op = "min"
	Max Op = "max"

	Neg     Op = "neg"
	Abs     Op = "abs"
	Sqrt    Op = "sqrt"
	Exp     Op = "exp"
	Log     Op = "log"
	Tanh    Op = "tanh"
	Relu    Op = "relu"
	Sigmoid Op = "sigmoid"

	// RoundTF32 rounds an f32 to tf32 (RoundTF32Value). It is not a language function: MMALower writes
	// it around the operand reads of a tf32 MMA, so that the expansion computes what the unit does.
	RoundTF32 Op = "tf32"
)

// Unary applies a one-operand function.
type Unary struct {
	Op Op
	X  Expr
	T  DType
}

// Binary applies a two-operand operator; comparisons have type Bool.
type Binary struct {
	Op   Op
	X, Y Expr
	T    DType
}

// Select is `c ? a : b` (select(c, a, b) in kdsl).
type Select struct {
	C, A, B Expr
}

// Cast converts X to T (rounding as a store to T would).
type Cast struct {
	X Expr
	T DType
}

// Reduce folds X with Op (Add, Max or Min) over the domain of Vars. Algorithm level only.
type Reduce struct {
	Op   Op
	Vars []*Var
	X    Expr
	T    DType
}

// PlanVal is the value of a plan symbol used as a number.
type PlanVal struct {
	Name string
	T    DType
}

// Local reads a loop-level scalar local.
type Local struct {
	L *LocalVar
}

// LocalVar is a scalar variable of the loop level (an accumulator, a hoisted value).
type LocalVar struct {
	Name string
	T    DType
}

func (c *Const) Type() DType   { return c.T }
func (l *Load) Type() DType    { return l.T.Type }
func (d *DimVal) Type() DType  { return d.T }
func (v *VarVal) Type() DType  { return v.T }
func (u *Unary) Type() DType   { return u.T }
func (b *Binary) Type() DType  { return b.T }
func (s *Select) Type() DType  { return s.A.Type() }
func (c *Cast) Type() DType    { return c.T }
func (r *Reduce) Type() DType  { return r.T }
func (l *Local) Type() DType   { return l.L.T }
func (p *PlanVal) Type() DType { return p.T }

func (*Const) expr()   {}
func (*Load) expr()    {}
func (*DimVal) expr()  {}
func (*VarVal) expr()  {}
func (*Unary) expr()   {}
func (*Binary) expr()  {}
func (*Select) expr()  {}
func (*Cast) expr()    {}
func (*Reduce) expr()  {}
func (*Local) expr()   {}
func (*PlanVal) expr() {}

// IsCompare reports whether op is a comparison.
func (op Op) IsCompare() bool {
	switch op {
	case Lt, Le, Gt, Ge, Eq, Ne:
		return true
	}
	return false
}

// IExpr is an integer index expression: affine in variables and dims, with min and floor division
// for tile bounds.
type IExpr interface {
	iexpr()
	String() string
}

// IConst is an integer literal.
type IConst struct{ V int }

// IVar is the current value of an index variable.
type IVar struct{ V *Var }

// IDim is the run-time size of a dim.
type IDim struct{ D *Dim }

// ISym is a named plan parameter fixed when a variant is chosen (MR, NR, MC, KC, NC of a microkernel).
// A RunTime symbol is not fixed at generation: generated code reads its value at each call (one of
// RunTimeSyms, by the part of Name after the last dot); the plan's value is the one the interpreter uses.
type ISym struct {
	Name    string
	RunTime bool
}

// RunTimeSyms are the run-time symbols a backend must be able to read, by field name.
var RunTimeSyms = map[string]string{
	"Workers": "the number of goroutines a parallel loop is split between (GOMAXPROCS may change between calls)",
}

// RunTimeField returns the field of a run-time symbol (Name after its last dot).
func (s ISym) RunTimeField() string { return s.Name[strings.LastIndexByte(s.Name, '.')+1:] }

// IBin is X op Y for op in + - * min max / (floor division, Y > 0), and the bit operations layouts need
// (swizzles, fragment lane maps): % (floor modulo, Y > 0), ^ (xor), & (and), << and >> (shifts by
// 0 ≤ Y < 63). The bit operations are meant for non-negative operands.
type IBin struct {
	Op   byte // '+', '-', '*', 'm' (min), 'M' (max), '/', '%', '^', '&', '<' (<<), '>' (>>)
	X, Y IExpr
}

func (IConst) iexpr() {}
func (IVar) iexpr()   {}
func (IDim) iexpr()   {}
func (ISym) iexpr()   {}
func (IBin) iexpr()   {}

func (c IConst) String() string { return fmt.Sprint(c.V) }
func (v IVar) String() string   { return v.V.Name }
func (d IDim) String() string   { return d.D.Name }
func (s ISym) String() string   { return s.Name }
func (b IBin) String() string {
	switch b.Op {
	case 'm':
		return "min(" + b.X.String() + ", " + b.Y.String() + ")"
	case 'M':
		return "max(" + b.X.String() + ", " + b.Y.String() + ")"
	}
	return "(" + b.X.String() + " " + IOpString(b.Op) + " " + b.Y.String() + ")"
}

// IOpString is the infix spelling of an IBin operator other than min and max (as Go writes it).
func IOpString(op byte) string {
	switch op {
	case '<':
		return "<<"
	case '>':
		return ">>"
	}
	return string(op)
}

// IBinOp applies an IBin operator to two values; ok is false (with a message) for a division or
// modulo by a non-positive number, a shift out of [0, 63) or an unknown operator.
func IBinOp(op byte, x, y int) (v int, msg string) {
	switch op {
	case '+':
		return x + y, ""
	case '-':
		return x - y, ""
	case '*':
		return x * y, ""
	case 'm':
		return min(x, y), ""
	case 'M':
		return max(x, y), ""
	case '/', '%':
		if y <= 0 {
			return 0, fmt.Sprintf("division of index by %d", y)
		}
		if op == '/' {
			return floorDiv(x, y), ""
		}
		return x - floorDiv(x, y)*y, ""
	case '^':
		return x ^ y, ""
	case '&':
		return x & y, ""
	case '<', '>':
		if y < 0 || y >= 63 {
			return 0, fmt.Sprintf("shift of index by %d", y)
		}
		if op == '<' {
			return x << y, ""
		}
		return x >> y, ""
	}
	return 0, fmt.Sprintf("unknown index operator %q", op)
}

// Helpers that fold constants as they build.

// IAdd returns x+y.
func IAdd(x, y IExpr) IExpr {
	cx, okx := x.(IConst)
	cy, oky := y.(IConst)
	switch {
	case okx && oky:
		return IConst{cx.V + cy.V}
	case okx && cx.V == 0:
		return y
	case oky && cy.V == 0:
		return x
	}
	return IBin{'+', x, y}
}

// ISub returns x-y.
func ISub(x, y IExpr) IExpr {
	cx, okx := x.(IConst)
	cy, oky := y.(IConst)
	switch {
	case okx && oky:
		return IConst{cx.V - cy.V}
	case oky && cy.V == 0:
		return x
	}
	if x == y {
		return IConst{0}
	}
	return IBin{'-', x, y}
}

// IMul returns x*y.
func IMul(x, y IExpr) IExpr {
	cx, okx := x.(IConst)
	cy, oky := y.(IConst)
	switch {
	case okx && oky:
		return IConst{cx.V * cy.V}
	case okx && cx.V == 1:
		return y
	case oky && cy.V == 1:
		return x
	case (okx && cx.V == 0) || (oky && cy.V == 0):
		return IConst{0}
	}
	return IBin{'*', x, y}
}

// IMin returns min(x, y).
func IMin(x, y IExpr) IExpr {
	cx, okx := x.(IConst)
	cy, oky := y.(IConst)
	if okx && oky {
		return IConst{min(cx.V, cy.V)}
	}
	return IBin{'m', x, y}
}

// IMax returns max(x, y).
func IMax(x, y IExpr) IExpr {
	cx, okx := x.(IConst)
	cy, oky := y.(IConst)
	if okx && oky {
		return IConst{max(cx.V, cy.V)}
	}
	return IBin{'M', x, y}
}

// IDiv returns floor(x / y).
func IDiv(x, y IExpr) IExpr {
	cx, okx := x.(IConst)
	cy, oky := y.(IConst)
	if okx && oky && cy.V > 0 {
		return IConst{floorDiv(cx.V, cy.V)}
	}
	if oky && cy.V == 1 {
		return x
	}
	return IBin{'/', x, y}
}

// IMod returns x mod y (floor modulo, y > 0).
func IMod(x, y IExpr) IExpr { return ibit('%', x, y) }

// IXor returns x ^ y.
func IXor(x, y IExpr) IExpr { return ibit('^', x, y) }

// IAnd returns x & y.
func IAnd(x, y IExpr) IExpr { return ibit('&', x, y) }

// IShl returns x << y.
func IShl(x, y IExpr) IExpr { return ibit('<', x, y) }

// IShr returns x >> y.
func IShr(x, y IExpr) IExpr { return ibit('>', x, y) }

// ibit builds a bit operation or modulo, folding constants and the identities x%1 = 0, x^0 = x,
// x&0 = 0, x<<0 = x>>0 = x.
func ibit(op byte, x, y IExpr) IExpr {
	cx, okx := x.(IConst)
	cy, oky := y.(IConst)
	if okx && oky {
		if v, msg := IBinOp(op, cx.V, cy.V); msg == "" {
			return IConst{v}
		}
	}
	if oky {
		switch {
		case op == '%' && cy.V == 1, op == '&' && cy.V == 0:
			return IConst{0}
		case cy.V == 0 && (op == '^' || op == '<' || op == '>'):
			return x
		}
	}
	if okx && cx.V == 0 && op != '%' {
		if op == '^' {
			return y
		}
		return IConst{0}
	}
	return IBin{op, x, y}
}

func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// IVars calls f for every variable an index expression mentions.
func IVars(e IExpr, f func(*Var)) {
	switch e := e.(type) {
	case IVar:
		f(e.V)
	case IBin:
		IVars(e.X, f)
		IVars(e.Y, f)
	}
}

// Walk calls f for e and every sub-expression, parents first.
func Walk(e Expr, f func(Expr)) {
	f(e)
	Children(e, func(c Expr) { Walk(c, f) })
}

// Children calls f for each direct sub-expression of e, in order.
func Children(e Expr, f func(Expr)) {
	switch e := e.(type) {
	case *Unary:
		f(e.X)
	case *Binary:
		f(e.X)
		f(e.Y)
	case *Select:
		f(e.C)
		f(e.A)
		f(e.B)
	case *Cast:
		f(e.X)
	case *Reduce:
		f(e.X)
	}
}

// Rewrite rebuilds e bottom-up, replacing each node n by f(n) (f returns n to keep it).
func Rewrite(e Expr, f func(Expr) Expr) Expr {
	switch n := e.(type) {
	case *Unary:
		c := *n
		c.X = Rewrite(n.X, f)
		return f(&c)
	case *Binary:
		c := *n
		c.X, c.Y = Rewrite(n.X, f), Rewrite(n.Y, f)
		return f(&c)
	case *Select:
		c := *n
		c.C, c.A, c.B = Rewrite(n.C, f), Rewrite(n.A, f), Rewrite(n.B, f)
		return f(&c)
	case *Cast:
		c := *n
		c.X = Rewrite(n.X, f)
		return f(&c)
	case *Reduce:
		c := *n
		c.X = Rewrite(n.X, f)
		return f(&c)
	case *Load:
		c := *n
		c.Idx = append([]IExpr(nil), n.Idx...)
		return f(&c)
	}
	return f(e)
}

// SubstIExpr replaces variables in an index expression.
func SubstIExpr(e IExpr, m map[*Var]IExpr) IExpr {
	switch e := e.(type) {
	case IVar:
		if r, ok := m[e.V]; ok {
			return r
		}
	case IBin:
		x, y := SubstIExpr(e.X, m), SubstIExpr(e.Y, m)
		switch e.Op {
		case '+':
			return IAdd(x, y)
		case '-':
			return ISub(x, y)
		case '*':
			return IMul(x, y)
		case 'm':
			return IMin(x, y)
		case 'M':
			return IMax(x, y)
		case '/':
			return IDiv(x, y)
		default:
			return ibit(e.Op, x, y)
		}
	}
	return e
}

// SubstVars replaces index variables inside the loads of e (and VarVal uses).
func SubstVars(e Expr, m map[*Var]IExpr) Expr {
	return Rewrite(e, func(n Expr) Expr {
		switch n := n.(type) {
		case *Load:
			for i, ix := range n.Idx {
				n.Idx[i] = SubstIExpr(ix, m)
			}
		case *VarVal:
			if r, ok := m[n.V].(IVar); ok {
				return &VarVal{V: r.V, T: n.T}
			}
		}
		return n
	})
}

// Coefficient returns the coefficient of v in an index built from +, - and multiplication by a
// constant; 0 when v does not occur or occurs under min, max or division.
func Coefficient(e IExpr, v *Var) int {
	switch e := e.(type) {
	case IVar:
		if e.V == v {
			return 1
		}
	case IBin:
		switch e.Op {
		case '+':
			return Coefficient(e.X, v) + Coefficient(e.Y, v)
		case '-':
			return Coefficient(e.X, v) - Coefficient(e.Y, v)
		case '*':
			if c, ok := e.Y.(IConst); ok {
				return c.V * Coefficient(e.X, v)
			}
			if c, ok := e.X.(IConst); ok {
				return c.V * Coefficient(e.Y, v)
			}
		}
	}
	return 0
}

// Stride classifies how an access t[idx] moves with v in a row-major tensor: 0 when v does not occur,
// 1 when it occurs only in the last index with coefficient 1 (consecutive v, consecutive elements),
// -1 otherwise.
func Stride(idx []IExpr, v *Var) int {
	for i, ix := range idx {
		uses := false
		IVars(ix, func(w *Var) { uses = uses || w == v })
		if !uses {
			continue
		}
		if i != len(idx)-1 || Coefficient(ix, v) != 1 {
			return -1
		}
		return 1
	}
	return 0
}
