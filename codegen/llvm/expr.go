package llvm

import (
	"fmt"
	"math"

	"github.com/kgen-dev/kgen/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// expr evaluates e to a value of valueType(e.Type()).
func (g *fn) expr(e ir.Expr) (value.Value, error) {
	b := g.cur
	switch e := e.(type) {
	case *ir.Const:
		return constOf(e.T.Round(e.Val), e.T), nil
	case *ir.Load:
		if v, ok := g.scal[e.T]; ok {
			return v, nil
		}
		if g.vec != nil {
			return g.vecLoad(e)
		}
		p, err := g.addr(e.T, e.Idx)
		if err != nil {
			return nil, err
		}
		return g.decode(b.NewLoad(storageType(e.T.Type), p), e.T.Type), nil
	case *ir.DimVal:
		return g.conv(g.dims[e.D], ir.I32, e.T, true), nil
	case *ir.VarVal:
		if g.vec != nil && e.V == g.vec.l.Var {
			return g.conv(g.laneIndex(), ir.I32, e.T, true), nil
		}
		x, err := g.iexpr(ir.IVar{V: e.V})
		if err != nil {
			return nil, err
		}
		return g.conv(x, ir.I32, e.T, true), nil
	case *ir.PlanVal:
		v, ok := g.f.Plan[e.Name]
		if !ok {
			return nil, fmt.Errorf("plan symbol %s has no value", e.Name)
		}
		return constOf(float64(v), e.T), nil
	case *ir.Local:
		if g.vec != nil {
			if v, ok := g.vec.own[e.L]; ok {
				return v, nil
			}
		}
		return b.NewLoad(valueType(e.L.T.Compute()), g.local(e.L)), nil
	case *ir.Cast:
		x, err := g.expr(e.X)
		if err != nil {
			return nil, err
		}
		return g.conv(x, e.X.Type(), e.T), nil
	case *ir.Select:
		c, err := g.expr(e.C)
		if err != nil {
			return nil, err
		}
		x, err := g.expr(e.A)
		if err != nil {
			return nil, err
		}
		y, err := g.expr(e.B)
		if err != nil {
			return nil, err
		}
		c = g.conv(c, e.C.Type(), ir.Bool)
		vs := g.unify(c, x, g.conv(y, e.B.Type(), e.A.Type()))
		return g.cur.NewSelect(vs[0], vs[1], vs[2]), nil
	case *ir.Unary:
		x, err := g.expr(e.X)
		if err != nil {
			return nil, err
		}
		return g.unary(e.Op, e.T.Compute(), g.conv(x, e.X.Type(), e.T.Compute()))
	case *ir.Binary:
		if v, ok, err := g.mulAdd(e); ok || err != nil {
			return v, err
		}
		x, err := g.expr(e.X)
		if err != nil {
			return nil, err
		}
		y, err := g.expr(e.Y)
		if err != nil {
			return nil, err
		}
		if e.Op.IsCompare() {
			t := compareType(e.X.Type(), e.Y.Type())
			vs := g.unify(g.conv(x, e.X.Type(), t), g.conv(y, e.Y.Type(), t))
			return g.compare(e.Op, t, vs[0], vs[1]), nil
		}
		t := e.T.Compute()
		vs := g.unify(g.conv(x, e.X.Type(), t), g.conv(y, e.Y.Type(), t))
		return g.binary(e.Op, t, vs[0], vs[1])
	}
	return nil, fmt.Errorf("%T expressions are not implemented by the llvm backend", e)
}

// mulAdd emits a float x + y·z (either order) as llvm.fmuladd, which the target may fuse into one
// FMA: one rounding instead of two, within every tolerance the project's tests derive (the assembly
// backends fuse the same products). ok is false for other expressions.
func (g *fn) mulAdd(e *ir.Binary) (v value.Value, ok bool, err error) {
	t := e.T.Compute()
	if e.Op != ir.Add || !t.IsFloat() {
		return nil, false, nil
	}
	x, m := e.X, e.Y
	mul, isMul := m.(*ir.Binary)
	if !isMul || mul.Op != ir.Mul || mul.T.Compute() != t {
		x, m = e.Y, e.X
		if mul, isMul = m.(*ir.Binary); !isMul || mul.Op != ir.Mul || mul.T.Compute() != t {
			return nil, false, nil
		}
	}
	var vals [3]value.Value
	for i, s := range []ir.Expr{mul.X, mul.Y, x} {
		v, err := g.expr(s)
		if err != nil {
			return nil, true, err
		}
		vals[i] = g.conv(v, s.Type(), t)
	}
	vs := g.unify(vals[:]...)
	return g.cur.NewCall(g.m.intrinsic("fmuladd", vs[0].Type(), 3), vs[0], vs[1], vs[2]), true, nil
}

// constOf is the constant v of type d (v representable in d).
func constOf(v float64, d ir.DType) value.Value {
	switch t := valueType(d).(type) {
	case *types.FloatType:
		if t.Kind == types.FloatKindFloat {
			v = float64(float32(v))
		}
		return constant.NewFloat(t, v)
	case *types.IntType:
		if t.BitSize == 1 {
			return constant.NewBool(v != 0)
		}
		return constant.NewInt(t, int64(v))
	}
	panic("unreachable")
}

// compareType is the type two operands are compared in: the wider float, else i64.
func compareType(x, y ir.DType) ir.DType {
	switch {
	case x == ir.F64 || y == ir.F64 || x == ir.Untyped || y == ir.Untyped:
		return ir.F64
	case x.IsFloat() || y.IsFloat():
		return ir.F32
	}
	return ir.I32
}

// compare evaluates a comparison of two values of type t (ordered, except != which holds for NaN, as
// in Go).
func (g *fn) compare(op ir.Op, t ir.DType, x, y value.Value) value.Value {
	if t.IsFloat() {
		pred := map[ir.Op]enum.FPred{ir.Lt: enum.FPredOLT, ir.Le: enum.FPredOLE, ir.Gt: enum.FPredOGT,
			ir.Ge: enum.FPredOGE, ir.Eq: enum.FPredOEQ, ir.Ne: enum.FPredUNE}[op]
		return g.cur.NewFCmp(pred, x, y)
	}
	pred := map[ir.Op]enum.IPred{ir.Lt: enum.IPredSLT, ir.Le: enum.IPredSLE, ir.Gt: enum.IPredSGT,
		ir.Ge: enum.IPredSGE, ir.Eq: enum.IPredEQ, ir.Ne: enum.IPredNE}[op]
	return g.cur.NewICmp(pred, x, y)
}

// binary evaluates an arithmetic operator on two values of compute type t (scalars or vectors of it).
// max and min propagate NaN; integer division by zero gives 0.
func (g *fn) binary(op ir.Op, t ir.DType, x, y value.Value) (value.Value, error) {
	b := g.cur
	if t.IsInt() {
		switch op {
		case ir.Add:
			return b.NewAdd(x, y), nil
		case ir.Sub:
			return b.NewSub(x, y), nil
		case ir.Mul:
			return b.NewMul(x, y), nil
		case ir.Div:
			zero := zeroOf(x.Type())
			isZero := b.NewICmp(enum.IPredEQ, y, zero)
			safe := b.NewSelect(isZero, constant.NewInt(x.Type().(*types.IntType), 1), y)
			return b.NewSelect(isZero, zero, b.NewSDiv(x, safe)), nil
		case ir.Max:
			return b.NewSelect(b.NewICmp(enum.IPredSGT, x, y), x, y), nil
		case ir.Min:
			return b.NewSelect(b.NewICmp(enum.IPredSLT, x, y), x, y), nil
		}
		return nil, fmt.Errorf("integer operator %s is not implemented", op)
	}
	switch op {
	case ir.Add:
		return b.NewFAdd(x, y), nil
	case ir.Sub:
		return b.NewFSub(x, y), nil
	case ir.Mul:
		return b.NewFMul(x, y), nil
	case ir.Div:
		return b.NewFDiv(x, y), nil
	case ir.Max, ir.Min:
		// x if x is NaN; else y if y is NaN or y wins; else x (math.Max/Min on non-NaN values). "y is
		// NaN or y wins" is one unordered compare (UGT: y > x or either is NaN; x's NaN is taken first).
		pred := enum.FPredUGT
		if op == ir.Min {
			pred = enum.FPredULT
		}
		pick := b.NewSelect(b.NewFCmp(pred, y, x), y, x)
		return b.NewSelect(b.NewFCmp(enum.FPredUNO, x, x), x, pick), nil
	}
	return nil, fmt.Errorf("operator %s is not implemented", op)
}

// unary evaluates a function of one value of compute type t.
func (g *fn) unary(op ir.Op, t ir.DType, x value.Value) (value.Value, error) {
	b := g.cur
	if t.IsInt() {
		if op == ir.Neg {
			return b.NewSub(zeroOf(x.Type()), x), nil
		}
		return nil, fmt.Errorf("integer function %s is not implemented", op)
	}
	ty := x.Type()
	one := g.splat(ty, 1)
	call := func(name string, args ...value.Value) value.Value {
		return b.NewCall(g.m.intrinsic(name, ty, len(args)), args...)
	}
	switch op {
	case ir.Neg:
		return b.NewFNeg(x), nil
	case ir.Abs:
		return call("fabs", x), nil
	case ir.Sqrt:
		return call("sqrt", x), nil
	case ir.Exp:
		if t == ir.F32 {
			return g.expF32(x), nil
		}
		return call("exp", x), nil
	case ir.Log:
		return call("log", x), nil
	case ir.Relu:
		// max(x, 0) with NaN kept: x < 0 ? 0 : x.
		return b.NewSelect(b.NewFCmp(enum.FPredOLT, x, g.splat(ty, 0)), g.splat(ty, 0), x), nil
	case ir.Sigmoid:
		e, _ := g.unary(ir.Exp, t, b.NewFNeg(x)) // may end in another block (expF32)
		return g.cur.NewFDiv(one, g.cur.NewFAdd(one, e)), nil
	case ir.Tanh:
		return g.tanh(x), nil
	}
	return nil, fmt.Errorf("function %s is not implemented", op)
}

// tanh is the expansion tanh(x) = sign(x)·(1 − e)/(1 + e), e = exp(−2|x|), computed in double for a
// float x (so the cancellation near 0 stays below float's roundoff), and for a double x replaced near
// 0 (|x| < 2^-4) by the odd Taylor polynomial up to x^9.
func (g *fn) tanh(x value.Value) value.Value {
	b := g.cur
	ty := x.Type()
	elem := ty
	if v, ok := ty.(*types.VectorType); ok {
		elem = v.ElemType
	}
	narrow := elem.Equal(types.Float)
	w := x
	wt := ty
	if narrow {
		wt = types.Double
		if v, ok := ty.(*types.VectorType); ok {
			wt = types.NewVector(v.Len, types.Double)
		}
		w = b.NewFPExt(x, wt)
	}
	ax := b.NewCall(g.m.intrinsic("fabs", wt, 1), w)
	e := b.NewCall(g.m.intrinsic("exp", wt, 1), b.NewFMul(ax, g.splat(wt, -2)))
	r := b.NewFDiv(b.NewFSub(g.splat(wt, 1), e), b.NewFAdd(g.splat(wt, 1), e))
	var out value.Value = b.NewCall(g.m.intrinsic("copysign", wt, 2), r, w)
	if !narrow {
		x2 := b.NewFMul(w, w)
		p := g.splat(wt, 62.0/2835)
		for _, c := range []float64{-17.0 / 315, 2.0 / 15, -1.0 / 3} {
			p = b.NewFAdd(b.NewFMul(p, x2), g.splat(wt, c))
		}
		series := b.NewFAdd(w, b.NewFMul(w, b.NewFMul(x2, p)))
		out = b.NewSelect(b.NewFCmp(enum.FPredOLT, ax, g.splat(wt, 0x1p-4)), series, out)
	} else {
		out = b.NewFPTrunc(out, ty)
	}
	return out
}

// splat is the constant v of scalar type t, or the vector of it.
func (g *fn) splat(t types.Type, v float64) value.Value {
	if vt, ok := t.(*types.VectorType); ok {
		c := g.splat(vt.ElemType, v).(constant.Constant)
		elems := make([]constant.Constant, vt.Len)
		for i := range elems {
			elems[i] = c
		}
		return constant.NewVector(vt, elems...)
	}
	switch t := t.(type) {
	case *types.FloatType:
		if t.Kind == types.FloatKindFloat {
			v = float64(float32(v))
		}
		return constant.NewFloat(t, v)
	case *types.IntType:
		return constant.NewInt(t, int64(v))
	}
	panic("splat of " + t.String())
}

// conv converts a value of type from to type to, rounding as a store to `to` would (ir.DType.Round):
// floats round to nearest even (f16 and bf16 through their bit patterns, the result widened again),
// floats to integers truncate with NaN, infinities and magnitudes beyond 2^62 going to 0, integers
// wrap. signed says an integer from is an i64 (dims and counters) rather than valueType(from).
func (g *fn) conv(v value.Value, from, to ir.DType, signed ...bool) value.Value {
	b := g.cur
	wide := len(signed) > 0 && signed[0]
	if from == to && !wide {
		return v
	}
	if from == ir.Untyped {
		from = ir.F64
	}
	if to == ir.Untyped {
		to = ir.F64
	}
	sh := v.Type() // the shape: a scalar, or a vector whose lanes convert alike
	vt := like(sh, valueType(to))
	switch {
	case to.IsFloat() && (from.IsInt() || from == ir.Bool || wide):
		if from == ir.Bool && !wide {
			v = b.NewUIToFP(v, vt)
		} else {
			v = b.NewSIToFP(v, vt)
		}
		return g.round16(v, to)
	case to.IsFloat():
		src := like(sh, valueType(from))
		switch {
		case src.Equal(like(sh, types.Double)) && vt.Equal(like(sh, types.Float)):
			v = b.NewFPTrunc(v, vt)
		case src.Equal(like(sh, types.Float)) && vt.Equal(like(sh, types.Double)):
			v = b.NewFPExt(v, vt)
		}
		if to != from {
			v = g.round16(v, to)
		}
		return v
	case to == ir.Bool:
		if from.IsFloat() && !wide {
			return b.NewFCmp(enum.FPredUNE, v, g.splat(sh, 0))
		}
		return b.NewICmp(enum.IPredNE, v, g.splat(sh, 0))
	}
	// to is an integer type.
	if from.IsFloat() && !wide {
		dt := like(sh, types.Double)
		d := v
		if !v.Type().Equal(dt) {
			d = b.NewFPExt(v, dt)
		}
		abs := b.NewCall(g.m.intrinsic("fabs", dt, 1), d)
		inRange := b.NewFCmp(enum.FPredOLE, abs, g.splat(dt, math.Ldexp(1, 62)))
		i := b.NewSelect(inRange, b.NewFPToSI(d, like(sh, types.I64)), g.splat(like(sh, types.I64), 0))
		return b.NewTrunc(i, vt)
	}
	src, dst := elemInt(v.Type()), elemInt(vt)
	switch {
	case src.BitSize > dst.BitSize:
		return b.NewTrunc(v, vt)
	case src.BitSize < dst.BitSize && src.BitSize == 1:
		return b.NewZExt(v, vt)
	case src.BitSize < dst.BitSize:
		return b.NewSExt(v, vt)
	}
	return v
}

// elemInt is the integer type of a scalar or of a vector's lanes.
func elemInt(t types.Type) *types.IntType {
	if v, ok := t.(*types.VectorType); ok {
		t = v.ElemType
	}
	return t.(*types.IntType)
}

// round16 rounds a float value to f16 or bf16 and widens it back (identity for other types).
func (g *fn) round16(v value.Value, to ir.DType) value.Value {
	if to != ir.F16 && to != ir.BF16 {
		return v
	}
	return g.decode(g.encode(v, to), to)
}

// decode turns a stored element (storageType(d)) into a value (valueType(d)).
func (g *fn) decode(v value.Value, d ir.DType) value.Value {
	switch d {
	case ir.F16:
		return g.halfToFloat(v)
	case ir.BF16:
		it := like(v.Type(), types.I32)
		return g.cur.NewBitCast(g.cur.NewShl(g.cur.NewZExt(v, it), g.splat(it, 16)), like(v.Type(), types.Float))
	case ir.Bool:
		return g.cur.NewICmp(enum.IPredNE, v, g.splat(v.Type(), 0))
	}
	return v
}

// encode turns a value already rounded to d (valueType(d)) into its stored form.
func (g *fn) encode(v value.Value, d ir.DType) value.Value {
	switch d {
	case ir.F16:
		return g.floatToHalf(v)
	case ir.BF16:
		return g.floatToBF16(v)
	case ir.Bool:
		return g.cur.NewZExt(v, like(v.Type(), types.I8))
	}
	return v
}
