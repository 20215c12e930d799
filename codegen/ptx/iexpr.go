package ptx

import (
	"math/bits"

	"github.com/kgen-dev/kgen/ir"
)

// Index expressions are computed in 64-bit signed registers. prep substitutes the plan (plan symbols
// are constants in generated code) and the unrolled loop variables, then simplifies.

// prep returns e with plan symbols and unrolled variables replaced by their values, simplified.
func (l *lowerer) prep(e ir.IExpr) ir.IExpr {
	var sub func(e ir.IExpr) ir.IExpr
	sub = func(e ir.IExpr) ir.IExpr {
		switch x := e.(type) {
		case ir.ISym:
			v, ok := l.plan[x.Name]
			if !ok {
				l.fail("plan symbol %s has no value", x.Name)
			}
			return ir.IConst{V: v}
		case ir.IVar:
			if c, ok := l.consts[x.V]; ok {
				return ir.IConst{V: c}
			}
		case ir.IBin:
			return ir.IBin{Op: x.Op, X: sub(x.X), Y: sub(x.Y)}
		}
		return e
	}
	return fold(ir.Simplify(sub(e)))
}

// fold evaluates the constant sub-expressions Simplify leaves (bit operations).
func fold(e ir.IExpr) ir.IExpr {
	b, ok := e.(ir.IBin)
	if !ok {
		return e
	}
	x, y := fold(b.X), fold(b.Y)
	cx, okx := x.(ir.IConst)
	cy, oky := y.(ir.IConst)
	if okx && oky {
		if v, msg := ir.IBinOp(b.Op, cx.V, cy.V); msg == "" {
			return ir.IConst{V: v}
		}
	}
	return ir.IBin{Op: b.Op, X: x, Y: y}
}

// ival computes an index expression: an immediate when it is constant, else a .s64 register.
func (l *lowerer) ival(e ir.IExpr) Operand {
	return l.iemit(l.prep(e))
}

// ireg is ival in a register.
func (l *lowerer) ireg(e ir.IExpr) Reg {
	switch v := l.ival(e).(type) {
	case Reg:
		return v
	default:
		return l.e.Mov(S64, v)
	}
}

func (l *lowerer) iemit(e ir.IExpr) Operand {
	switch x := e.(type) {
	case ir.IConst:
		return Imm(x.V)
	case ir.IVar:
		if r, ok := l.vars[x.V]; ok {
			return r
		}
		if c, ok := l.consts[x.V]; ok {
			return Imm(c)
		}
		l.fail("index variable %s is not bound here", x.V.Name)
	case ir.IDim:
		if r, ok := l.dims[x.D]; ok {
			return r
		}
		l.fail("dim %s is not a parameter of the kernel", x.D.Name)
	case ir.IBin:
		return l.ibin(x)
	}
	l.fail("index expression %s", e)
	return nil
}

func (l *lowerer) ibin(b ir.IBin) Operand {
	y := l.iemit(b.Y)
	xo := l.iemit(b.X)
	if _, isImm := xo.(Imm); isImm && (b.Op == '+' || b.Op == '*' || b.Op == 'm' || b.Op == 'M' || b.Op == '^' || b.Op == '&') {
		xo, y = y, xo // commutative: the immediate second
	}
	x, isReg := xo.(Reg)
	if !isReg {
		x = l.e.Mov(S64, xo)
	}
	cy, constY := y.(Imm)
	pow2 := constY && cy > 0 && cy&(cy-1) == 0
	switch b.Op {
	case '+':
		return l.e.Bin("add", S64, x, y)
	case '-':
		return l.e.Bin("sub", S64, x, y)
	case '*':
		return l.e.Bin("mul.lo", S64, x, y)
	case 'm':
		return l.e.Bin("min", S64, x, y)
	case 'M':
		return l.e.Bin("max", S64, x, y)
	case '/':
		if pow2 {
			// An arithmetic shift is floor division by a power of two.
			return l.e.Bin("shr", S64, x, Imm(bits.TrailingZeros64(uint64(cy))))
		}
		// Floor division by a positive divisor: truncated quotient, minus one when the remainder is
		// negative.
		q := l.e.Bin("div", S64, x, y)
		r := l.e.Bin("rem", S64, x, y)
		neg := l.e.Setp("lt", S64, r, Imm(0))
		d := l.e.Reg(S64)
		l.e.Emit(&Instr{Op: "selp", Types: []Type{S64}, Args: []Operand{d, Imm(1), Imm(0), neg}})
		return l.e.Bin("sub", S64, q, d)
	case '%':
		if pow2 {
			return l.e.Bin("and", B64, x, Imm(cy-1))
		}
		r := l.e.Bin("rem", S64, x, y)
		neg := l.e.Setp("lt", S64, r, Imm(0))
		d := l.e.Reg(S64)
		l.e.Emit(&Instr{Op: "selp", Types: []Type{S64}, Args: []Operand{d, y, Imm(0), neg}})
		return l.e.Bin("add", S64, r, d)
	case '^':
		return l.e.Bin("xor", B64, x, y)
	case '&':
		return l.e.Bin("and", B64, x, y)
	case '<', '>':
		sh := y
		if r, ok := y.(Reg); ok {
			sh = l.e.Cvt(U32, S64, "", r)
		}
		d := l.e.Reg(S64)
		op, t := "shl", B64
		if b.Op == '>' {
			op, t = "shr", S64
		}
		l.e.Op(op, t, d, x, sh)
		return d
	}
	l.fail("index operator %q", b.Op)
	return nil
}
