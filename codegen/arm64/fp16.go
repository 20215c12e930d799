package arm64

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/codegen/lanesel"
	"github.com/kgen-dev/kgen/f16"
	"github.com/kgen-dev/kgen/ir"
)

// The FP16 routine of a vector loop (Armv8.2 FEAT_FP16, detected at run time). A loop whose every
// access is f16 and whose lane body HalfRoute accepts gets, besides the FCVTL/FCVTN routine of
// vloop.go (<var>NEON), a second one (<var>FP16) that computes on half-precision lanes directly: 8
// halves per register (VLD1/VST1 .H8, 16 bytes, no conversion), the odd last group of 4 on .H4, the
// arithmetic as WORD-encoded FP16 vector instructions (FADD FSUB FMUL FDIV FMAX FMIN FNEG FABS FSQRT
// FMLA FCMEQ on .8H/.4H; Go's assembler has none of them). Invariants (f32 arguments holding f16
// values, HalfRoute checks that they are) are narrowed once before the loop with a scalar FCVT (exact)
// and broadcast. Stores canonicalize NaN to sign|0x7e00 like the f32 route (FCMEQ .8H, USHR/SHL #9,
// ORR 0x0200, BIT). The "neon" variant installs it instead of <var>NEON when FP16Cond holds
// (codegen.VLoopImpl.Alt).
//
// Results. Let R be the f32 route's value of the stored expression (computed in f32 from the widened
// halves, then rounded to f16 at the store). Where every arithmetic step of the body is one operation on
// f16 values whose result is rounded to f16 at once (by the store or by a cast f16(...)), the FP16
// routine stores exactly the f32 route's bits: + - * / and sqrt are correctly rounded in both formats
// and f32 has 24 ≥ 2·11+2 bits, so rounding to f32 and then to f16 equals rounding to f16 once; neg and
// abs are exact and commute with rounding (it is symmetric); max, min and relu pick an operand (or +0)
// and commute with rounding (it is monotone). The one exception is the fused form a*b+c of f16 values
// (the whole stored value, possibly under a cast f16(...)): it becomes one FMLA .8H, rounded once
// (correctly rounded), where the f32 route rounds a*b+c (a*b is exact in f32) to f32 and then to f16.
// The two differ only when that double rounding errs, by one f16 ulp (counting 65504 and Inf as
// neighbours: a sum just under 65520 rounds to 65504 in FP16 and to Inf through f32). A NaN result is
// sign|0x7e00 in both; when both operands of one operation are NaN, the sign may differ (FEAT_FP16
// gives a signalling NaN operand precedence, the f32 route has quieted both at the widening).
// The generated tests (kgentest.Compare against the interpreter, which rounds like the f32 route) cover
// the fused difference without a change: one f16 step is at most 2·2^-11·|ref| for a normal result and
// 2^-24 below, and the bound for an f16 output is at least 4·2·u_in·max(|ref|, mean|ref|) +
// 2·u_out·|ref| = 10·2^-11·|ref| (and 8·2^-11·mean|ref| ≥ 2^-24 unless mean|ref| < 2^-16, which the
// generated inputs in [-1, 1) never give). A finite-versus-Inf difference needs a sum near 65520, which
// they never reach either; TestHaxpyBound (kernels) checks both routes exactly.
// Everything else (reductions, locals, exp, f32 accesses, an invariant that is not an f16 value, two
// roundings in sequence such as (a+b)*c, whose f16 intermediate could also overflow) keeps only the
// FCVTL/FCVTN routine.

// FP16Cond is the run-time condition (golang.org/x/sys/cpu) under which the "neon" variant installs the
// FP16 routines: half-precision vector and scalar arithmetic.
const FP16Cond = "cpu.ARM64.HasASIMDHP && cpu.ARM64.HasFPHP"

// halfClass relates an expression computed on f16 lanes to its f32-route value V (see above).
type halfClass int

const (
	halfNo      halfClass = iota // not computed on f16 lanes
	halfExact                    // an f16 value, the same on both routes
	halfRounded                  // the f16 lanes hold round16(V) exactly
	halfFused                    // a*b+c: round16 of the exact value, V is its f32 rounding
)

// HalfRoute reports whether v gets an FP16 routine and, if so, whether that routine stores exactly the
// bits of the FCVTL/FCVTN one (bitExact false: a fused a*b+c, within one f16 ulp).
func HalfRoute(v *codegen.VLoop) (ok, bitExact bool) {
	if v.Elem != ir.F32 || v.Reduction() || len(v.Access) == 0 {
		return false, false
	}
	for _, a := range v.Access {
		if !a.F16() {
			return false, false
		}
	}
	for _, e := range v.Invariants {
		if !halfValued(e) {
			return false, false
		}
	}
	bitExact = true
	for _, n := range v.Loop.Body {
		st, isStore := n.(*ir.Store)
		if !isStore {
			return false, false
		}
		e := st.Value
		if x, narrows := lanesel.F16Narrowing(e); narrows {
			e = x
		}
		switch classifyHalf(v, e) {
		case halfNo:
			return false, false
		case halfFused:
			bitExact = false
		}
	}
	return true, bitExact
}

// halfValued reports whether the Go caller's f32 value of the invariant e is an f16 value widened
// (an f16 expression, its widening, or a constant that f16 represents), so that narrowing it is exact.
func halfValued(e ir.Expr) bool {
	switch x := e.(type) {
	case *ir.Const:
		// The portable code passes float32(Val) whatever the constant's type.
		c := float32(x.Val)
		return c == c && f16.FromFloat32(c).Float32() == c
	case *ir.Cast:
		return x.T == ir.F16 || x.T == ir.F32 && x.X.Type() == ir.F16
	case *ir.Load:
		return x.T.Type == ir.F16
	}
	return false
}

// classifyHalf is the halfClass of the lane-body expression e of v.
func classifyHalf(v *codegen.VLoop, e ir.Expr) halfClass {
	if _, inv := v.InvariantOf(e); inv {
		return halfExact // halfValued
	}
	exactOrRounded := func(c halfClass) bool { return c == halfExact || c == halfRounded }
	switch x := e.(type) {
	case *ir.Load:
		if k, ok := v.AccessOf(x.T, x.Idx); ok && v.Access[k].F16() {
			return halfExact
		}
	case *ir.Cast:
		if x.T == ir.F16 {
			if c := classifyHalf(v, x.X); exactOrRounded(c) {
				return halfExact
			}
			return halfNo
		}
		if x.T == ir.F32 && x.X.Type().Compute() == ir.F32 {
			return classifyHalf(v, x.X)
		}
	case *ir.Unary:
		c := classifyHalf(v, x.X)
		switch x.Op {
		case ir.Neg, ir.Abs, ir.Relu:
			if exactOrRounded(c) {
				return c
			}
		case ir.Sqrt:
			if c == halfExact {
				return halfRounded
			}
		}
	case *ir.Binary:
		cx, cy := classifyHalf(v, x.X), classifyHalf(v, x.Y)
		switch x.Op {
		case ir.Max, ir.Min:
			if exactOrRounded(cx) && exactOrRounded(cy) {
				return max(cx, cy)
			}
		case ir.Add:
			// eval contracts an addition with a product operand to FMLA (the first such operand).
			for _, p := range [][2]ir.Expr{{x.X, x.Y}, {x.Y, x.X}} {
				if m, ok := p[0].(*ir.Binary); ok && m.Op == ir.Mul {
					if classifyHalf(v, m.X) == halfExact && classifyHalf(v, m.Y) == halfExact && classifyHalf(v, p[1]) == halfExact {
						return halfFused
					}
					return halfNo
				}
			}
			fallthrough
		case ir.Sub, ir.Mul, ir.Div:
			if cx == halfExact && cy == halfExact {
				return halfRounded
			}
		}
	}
	return halfNo
}

// emitHalf generates the FP16 routine: n counts groups of 4 iterations like the FCVTL/FCVTN routine's
// (same slot adapter); pairs of groups run as .8H vectors, unrolled u, and an odd last group as .4H.
func (g *vloopGen) emitHalf() error {
	b, v := g.b, g.v
	_, _, size := g.frame()
	b.Blank()
	b.Doc("func %s%s", g.k.Name, strings.TrimPrefix(g.signature(), "func"))
	b.Doc("%s runs n groups of %d iterations of %s (codegen.VLoop contract) on f16 lanes (FEAT_FP16),",
		g.k.Name, g.k.Lanes(), v.Var)
	b.Doc("two groups per .8H vector, unrolled %d, an odd last group on .4H.", g.u)
	b.TEXT(g.k.Name, "NOSPLIT", 0, size)
	b.MOVD(g.param("n"), vlN)
	for k := range v.Access {
		b.MOVD(g.param(fmt.Sprintf("p%d", k)), vlPtr[k])
	}
	g.Invariants(func(i int, r VReg) {
		b.FMOVS(g.param(fmt.Sprintf("c%d", i)), FReg(r))
		b.FCVTSH(FReg(r), FReg(r)) // exact: the value is an f16 (HalfRoute)
		b.VDUP(r.H(0), r.H8())
	})
	if g.narrowsF16() {
		g.quiet = g.Alloc()
		b.MOVD(Imm(0x0200), vlCnt)
		b.VDUPR(vlCnt, g.quiet.H8())
	}
	b.LSR(Imm(1+log2(g.u)), vlN, vlCnt)
	b.CBZ(vlCnt, g.lbl("tail"))
	b.Label(g.lbl("loop"))
	for j := range g.u {
		g.Group(j)
	}
	b.SUBS(Imm(1), vlCnt, vlCnt)
	b.BNE(g.lbl("loop"))
	b.Label(g.lbl("tail"))
	if g.u > 1 {
		b.LSR(Imm(1), vlN, vlCnt)
		b.AND(Imm(g.u-1), vlCnt, vlCnt)
		b.CBZ(vlCnt, g.lbl("tail4"))
		b.Label(g.lbl("loop1"))
		g.Group(0)
		b.SUBS(Imm(1), vlCnt, vlCnt)
		b.BNE(g.lbl("loop1"))
		b.Label(g.lbl("tail4"))
	}
	b.TBZ(Imm(0), vlN, g.lbl("done"))
	g.arr = H4
	g.Group(0)
	g.arr = H8
	b.Label(g.lbl("done"))
	b.RET()
	if g.Err == nil {
		g.Err = b.Err()
	}
	return g.Err
}

// storeHalf stores the f16 lanes r (NaN canonicalized) at p, advancing it; o says whether r is owned.
func (g *vloopGen) storeHalf(r VReg, o bool, p GPR) {
	t := g.canonNaNHalf(r)
	g.b.VST1P(VecList{g.vec(t)}, p)
	g.Release(t)
	if o {
		g.Release(r)
	}
}

// canonNaNHalf returns a new register holding the f16 lanes of r with every NaN lane replaced by
// sign|0x7e00 (f16.FromFloat32's NaN); r is unchanged.
func (g *vloopGen) canonNaNHalf(r VReg) VReg {
	b := g.b
	t, m := g.Alloc(), g.Alloc()
	b.FCMEQ(g.vec(m), g.vec(r), g.vec(r)) // all ones where r is not NaN
	b.VUSHR(Imm(9), g.vec(r), g.vec(t))
	b.VSHL(Imm(9), g.vec(t), g.vec(t)) // sign, exponent, quiet bit
	b.VORR(g.quiet.B16(), t.B16(), t.B16())
	b.VBIT(m.B16(), r.B16(), t.B16()) // r where not NaN
	g.Release(m)
	return t
}
