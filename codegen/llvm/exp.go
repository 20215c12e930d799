package llvm

import (
	"fmt"
	"math"

	"github.com/kgen-dev/kgen/codegen/lanesel"
	lir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// expF32 is exp of a float (or float vector) x by the schedule every SIMD backend runs
// (codegen/lanesel/exp.go, its constants lanesel.ExpF32): clamp x keeping NaN; n = x·log2e rounded to
// even (by adding and subtracting 1.5·2^23, exact for |x·log2e| < 2^22); r = x − n·ln2 in two steps;
// 1 + r + r²·p(r) with the Cephes polynomial; times 2^n in two halves so that subnormal results are
// right. It needs no libm call, so it compiles for every target (NVPTX included) and vectorises.
// Products and sums use llvm.fmuladd (fused where the target has an FMA).
//
// Portable IR has no single instruction for the clamp, the rounding or the scaling (x86's VSCALEFPS,
// VRNDSCALEPS), so the code runs a short path when every lane has n in [−125, 127] (x in about
// [−86.6, 88.0]: every softmax row after its max is subtracted but for lanes below about −86.6): the
// clamp is the identity there, n's bits are in the low bits of the magic sum m = x·log2e + 1.5·2^23,
// and t·2^n, a normal number (t in [0.7, 1.42]), is t's bits plus n·2^23 — one shift and one integer
// add, the same bits as the two-step product. One unsigned compare of m's bits (and an or across the
// lanes) picks the path; a group with any other lane (NaN, ±Inf, overflow, subnormal or zero results)
// runs the whole schedule instead. Both paths give the same bits.
func (g *fn) expF32(x value.Value) value.Value {
	b := g.cur
	ty := x.Type()
	it := like(ty, types.I32)
	m := b.NewFAdd(b.NewFMul(x, g.expConst(ty, lanesel.ExpLog2E)), g.splat(ty, expMagic))
	n := b.NewFSub(m, g.splat(ty, expMagic))
	t := g.expPoly(x, n)
	mi := b.NewBitCast(m, it)
	fast := b.NewBitCast(b.NewAdd(b.NewBitCast(t, it), b.NewShl(mi, g.splat(it, 23))), ty)
	// bits(m) − bits(magic − 125) ≤ 252 (unsigned) ⇔ m is magic + n for an integer n in [−125, 127]
	out := b.NewICmp(enum.IPredUGT, b.NewSub(mi, g.splat(it, float64(math.Float32bits(expMagic)-125))), g.splat(it, 252))
	var any value.Value = out
	if vt, ok := out.Type().(*types.VectorType); ok {
		any = b.NewCall(g.m.declare(fmt.Sprintf("llvm.vector.reduce.or.v%di1", vt.Len), types.I1, vt), out)
	}
	short := g.cur
	slow, join := g.block("expslow"), g.block("expjoin")
	b.NewCondBr(any, slow, join)
	g.cur = slow
	whole := g.expF32Whole(x)
	g.cur.NewBr(join)
	g.cur = join
	return join.NewPhi(lir.NewIncoming(fast, short), lir.NewIncoming(whole, slow))
}

// expMagic is 1.5·2^23: x + expMagic − expMagic rounds x to an integer, ties to even, for |x| < 2^22.
const expMagic = 0x1.8p23

func (g *fn) expConst(ty types.Type, i int) value.Value {
	return g.splat(ty, float64(math.Float32frombits(lanesel.ExpF32[i])))
}

// expPoly is 1 + r + r²·p(r) for r = x − n·ln2 (ln2 in two parts).
func (g *fn) expPoly(x, n value.Value) value.Value {
	b := g.cur
	ty := x.Type()
	fma := func(a, c, d value.Value) value.Value {
		return b.NewCall(g.m.intrinsic("fmuladd", ty, 3), a, c, d)
	}
	nn := b.NewFNeg(n)
	r := fma(nn, g.expConst(ty, lanesel.ExpLn2Hi), x)
	r = fma(nn, g.expConst(ty, lanesel.ExpLn2Lo), r)
	p := g.expConst(ty, lanesel.ExpP0)
	for c := lanesel.ExpP0 + 1; c <= lanesel.ExpP0+5; c++ {
		p = fma(p, r, g.expConst(ty, c))
	}
	p = b.NewFMul(p, r)
	return b.NewFAdd(fma(p, r, r), g.expConst(ty, lanesel.ExpOne))
}

// expF32Whole is the whole schedule: the clamp, and the scaling by 2^n in two halves.
func (g *fn) expF32Whole(x value.Value) value.Value {
	b := g.cur
	ty := x.Type()
	it := like(ty, types.I32)
	hi, lo := g.expConst(ty, lanesel.ExpHi), g.expConst(ty, lanesel.ExpLo)
	x = b.NewSelect(b.NewFCmp(enum.FPredOGT, x, hi), hi, x)
	x = b.NewSelect(b.NewFCmp(enum.FPredOLT, x, lo), lo, x)
	magic := g.splat(ty, expMagic)
	n := b.NewFSub(b.NewFAdd(b.NewFMul(x, g.expConst(ty, lanesel.ExpLog2E)), magic), magic)
	t := g.expPoly(x, n)
	ni := b.NewFPToSI(n, it)
	half := b.NewAShr(ni, g.splat(it, 1))
	rest := b.NewSub(ni, half)
	pow := func(e value.Value) value.Value {
		return b.NewBitCast(b.NewShl(b.NewAdd(e, g.splat(it, 127)), g.splat(it, 23)), ty)
	}
	return b.NewFMul(b.NewFMul(t, pow(half)), pow(rest))
}
