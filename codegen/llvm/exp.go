package llvm

import (
	"math"

	"github.com/kgen-dev/kgen/codegen/lanesel"
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
func (g *fn) expF32(x value.Value) value.Value {
	b := g.cur
	ty := x.Type()
	it := like(ty, types.I32)
	k := func(i int) value.Value { return g.splat(ty, float64(math.Float32frombits(lanesel.ExpF32[i]))) }
	fma := func(a, c, d value.Value) value.Value {
		return b.NewCall(g.m.intrinsic("fmuladd", ty, 3), a, c, d)
	}
	x = b.NewSelect(b.NewFCmp(enum.FPredOGT, x, k(lanesel.ExpHi)), k(lanesel.ExpHi), x)
	x = b.NewSelect(b.NewFCmp(enum.FPredOLT, x, k(lanesel.ExpLo)), k(lanesel.ExpLo), x)
	magic := g.splat(ty, 0x1.8p23)
	n := b.NewFSub(b.NewFAdd(b.NewFMul(x, k(lanesel.ExpLog2E)), magic), magic)
	nn := b.NewFNeg(n)
	r := fma(nn, k(lanesel.ExpLn2Hi), x)
	r = fma(nn, k(lanesel.ExpLn2Lo), r)
	p := k(lanesel.ExpP0)
	for c := lanesel.ExpP0 + 1; c <= lanesel.ExpP0+5; c++ {
		p = fma(p, r, k(c))
	}
	p = b.NewFMul(p, r)
	t := b.NewFAdd(fma(p, r, r), k(lanesel.ExpOne))
	ni := b.NewFPToSI(n, it)
	half := b.NewAShr(ni, g.splat(it, 1))
	rest := b.NewSub(ni, half)
	pow := func(e value.Value) value.Value {
		return b.NewBitCast(b.NewShl(b.NewAdd(e, g.splat(it, 127)), g.splat(it, 23)), ty)
	}
	return b.NewFMul(b.NewFMul(t, pow(half)), pow(rest))
}
