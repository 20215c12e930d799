package llvm

import (
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// The 16-bit float conversions in integer code (F. Giesen's branch-free formulation, written with
// selects), on scalars or vectors: exact f16 → f32, f32 → f16 and f32 → bf16 rounding to nearest even,
// NaN to a quiet NaN, overflow to ±Inf. They need no half type or conversion routine on any target.

// like returns the type with t's shape (scalar or vector) and element type elem.
func like(t types.Type, elem types.Type) types.Type {
	if v, ok := t.(*types.VectorType); ok {
		return types.NewVector(v.Len, elem)
	}
	return elem
}

// halfToFloat widens f16 bits (i16) to float exactly.
func (g *fn) halfToFloat(h value.Value) value.Value {
	b := g.cur
	it := like(h.Type(), types.I32)
	ft := like(h.Type(), types.Float)
	c := func(v int64) value.Value { return g.splat(it, float64(v)) }
	w := b.NewZExt(h, it)
	o := b.NewShl(b.NewAnd(w, c(0x7fff)), c(13))
	exp := b.NewAnd(o, c(0x0f800000))
	o2 := b.NewAdd(o, c(0x38000000))
	infNaN := b.NewAdd(o2, c(0x38000000))
	sub := b.NewFSub(b.NewBitCast(b.NewAdd(o2, c(1<<23)), ft), b.NewBitCast(c(0x38800000), ft))
	var r value.Value = b.NewSelect(b.NewICmp(enum.IPredEQ, exp, c(0x0f800000)), infNaN, o2)
	r = b.NewSelect(b.NewICmp(enum.IPredEQ, exp, c(0)), b.NewBitCast(sub, it), r)
	r = b.NewOr(r, b.NewShl(b.NewAnd(w, c(0x8000)), c(16)))
	return b.NewBitCast(r, ft)
}

// floatToHalf rounds a float to f16 bits (i16).
func (g *fn) floatToHalf(f value.Value) value.Value {
	b := g.cur
	it := like(f.Type(), types.I32)
	ft := like(f.Type(), types.Float)
	c := func(v int64) value.Value { return g.splat(it, float64(v)) }
	u := b.NewBitCast(f, it)
	sign := b.NewAnd(u, c(-0x80000000))
	a := b.NewXor(u, sign)
	special := b.NewSelect(b.NewICmp(enum.IPredUGT, a, c(0x7f800000)), c(0x7e00), c(0x7c00))
	den := b.NewSub(b.NewBitCast(b.NewFAdd(b.NewBitCast(a, ft), b.NewBitCast(c(0x3f000000), ft)), it), c(0x3f000000))
	odd := b.NewAnd(b.NewLShr(a, c(13)), c(1))
	norm := b.NewLShr(b.NewAdd(b.NewAdd(a, c(-0x38000000+0xfff)), odd), c(13))
	var r value.Value = b.NewSelect(b.NewICmp(enum.IPredULT, a, c(0x38800000)), den, norm)
	r = b.NewSelect(b.NewICmp(enum.IPredUGE, a, c(0x47800000)), special, r)
	r = b.NewOr(r, b.NewLShr(sign, c(16)))
	return b.NewTrunc(r, like(f.Type(), types.I16))
}

// floatToBF16 rounds a float to bf16 bits (i16).
func (g *fn) floatToBF16(f value.Value) value.Value {
	b := g.cur
	it := like(f.Type(), types.I32)
	c := func(v int64) value.Value { return g.splat(it, float64(v)) }
	u := b.NewBitCast(f, it)
	odd := b.NewAnd(b.NewLShr(u, c(16)), c(1))
	rounded := b.NewLShr(b.NewAdd(b.NewAdd(u, c(0x7fff)), odd), c(16))
	nan := b.NewOr(b.NewLShr(u, c(16)), c(0x40))
	isNaN := b.NewICmp(enum.IPredUGT, b.NewAnd(u, c(0x7fffffff)), c(0x7f800000))
	return b.NewTrunc(b.NewSelect(isNaN, nan, rounded), like(f.Type(), types.I16))
}
