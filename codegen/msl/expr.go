package msl

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
)

// storageType is the MSL type of a buffer element of type t: half and bfloat for the 16-bit storage
// types (bfloat needs Metal 3.1).
func storageType(t ir.DType) Type {
	switch t {
	case ir.F16:
		return Half
	case ir.BF16:
		return BFloat
	case ir.I32:
		return Int
	case ir.Bool:
		return Bool
	}
	return Float
}

// computeType is the MSL type arithmetic on t happens in: float for f32, f16 and bf16 (the IR's rule:
// 16-bit types are storage types), int and bool for the others.
func computeType(t ir.DType) Type {
	switch t {
	case ir.I32:
		return Int
	case ir.Bool:
		return Bool
	}
	return Float
}

// fromStorage widens an element read from storage of type t to its compute type.
func fromStorage(t ir.DType, x Expr) Expr {
	if t == ir.F16 || t == ir.BF16 {
		return Conv{Float, x}
	}
	return x
}

// toStorage narrows a compute value to storage of type t (round to nearest even, as the IR's stores).
func toStorage(t ir.DType, x Expr) Expr {
	if t == ir.F16 || t == ir.BF16 {
		// float(half(y)) stored to half is half(y): rounding twice to one type is rounding once
		if w, ok := x.(Conv); ok && w.T == Float {
			if n, ok := w.X.(Conv); ok && n.T == storageType(t) {
				return n
			}
		}
		return Conv{storageType(t), x}
	}
	return x
}

func zero(t ir.DType) Expr {
	switch computeType(t) {
	case Int:
		return IntLit{0}
	case Bool:
		return BoolLit{false}
	}
	return FloatLit{0}
}

// iexpr lowers an index expression (plan symbols replaced by their values, simplified). Division and
// modulo print as C's / and %: the IR's floor division, since ir.Simplify keeps dividends non-negative
// (as the Go backend assumes too).
func (lw *lowerer) iexpr(e ir.IExpr) Expr {
	return lw.iexprRaw(ir.Simplify(lw.plan(e)))
}

func (lw *lowerer) iexprRaw(e ir.IExpr) Expr {
	switch e := e.(type) {
	case ir.IConst:
		return IntLit{e.V}
	case ir.IVar:
		return Ident{lw.names.name(e.V, e.V.Name)}
	case ir.IDim:
		return Ident{lw.names.name(e.D, e.D.Name)}
	case ir.ISym:
		lw.fail(fmt.Errorf("plan symbol %s has no value in the plan", e.Name))
		return IntLit{0}
	case ir.IBin:
		x, y := lw.iexprRaw(e.X), lw.iexprRaw(e.Y)
		switch e.Op {
		case 'm':
			return Call{"metal::min", []Expr{x, y}}
		case 'M':
			return Call{"metal::max", []Expr{x, y}}
		}
		return Binary{ir.IOpString(e.Op), x, y}
	}
	lw.fail(fmt.Errorf("index expression %T", e))
	return IntLit{0}
}

// elem is the element T[idx...] as an lvalue or value in storage type (scalars by name, rank-0 tensors
// at [0], scratch by its one flat index).
func (lw *lowerer) elem(t *ir.Tensor, idx []ir.IExpr) Expr {
	name := Ident{lw.tensorName(t)}
	if t.Kind == ir.Scalar {
		return name
	}
	if t.Kind == ir.Scratch {
		if len(idx) != 1 {
			lw.fail(fmt.Errorf("scratch buffer %s indexed by %d indices, not one flat offset", t.Name, len(idx)))
			return Index{name, IntLit{0}}
		}
		return Index{name, lw.iexpr(idx[0])}
	}
	if len(idx) != len(t.Shape) {
		lw.fail(fmt.Errorf("%s of rank %d indexed by %d indices", t.Name, len(t.Shape), len(idx)))
		return Index{name, IntLit{0}}
	}
	var off ir.IExpr = ir.IConst{V: 0}
	for d, ix := range idx {
		if d > 0 {
			off = ir.IMul(off, ir.IDim{D: t.Shape[d]})
		}
		off = ir.IAdd(off, ix)
	}
	return Index{name, lw.iexpr(off)}
}

// expr lowers a value expression to its compute type.
func (lw *lowerer) expr(e ir.Expr) (Expr, error) {
	switch e := e.(type) {
	case *ir.Const:
		switch computeType(e.T) {
		case Int:
			return IntLit{int(e.Val)}, nil
		case Bool:
			return BoolLit{e.Val != 0}, nil
		}
		if e.T == ir.F64 {
			return nil, unsupported("f64 constant (Metal has no double type)")
		}
		return FloatLit{e.Val}, nil
	case *ir.Load:
		if err := checkType(e.T.Type, "tensor "+e.T.Name); err != nil {
			return nil, err
		}
		return fromStorage(e.T.Type, lw.elem(e.T, e.Idx)), nil
	case *ir.DimVal:
		return convTo(e.T, Ident{lw.names.name(e.D, e.D.Name)}), nil
	case *ir.VarVal:
		return convTo(e.T, Ident{lw.names.name(e.V, e.V.Name)}), nil
	case *ir.Local:
		return Ident{lw.names.name(e.L, e.L.Name)}, nil
	case *ir.AccVal:
		x, ok := lw.accElem[e.Acc]
		if !ok {
			return nil, fmt.Errorf("accumulator %%%s read outside its accstore", e.Acc.Name)
		}
		return x, nil
	case *ir.PlanVal:
		v, ok := lw.f.Plan[e.Name]
		if !ok {
			return nil, fmt.Errorf("plan symbol %s has no value", e.Name)
		}
		return convTo(e.T, IntLit{v}), nil
	case *ir.Cast:
		x, err := lw.expr(e.X)
		if err != nil {
			return nil, err
		}
		if err := checkType(e.T, "cast"); err != nil {
			return nil, err
		}
		switch e.T {
		case ir.F16, ir.BF16:
			return Conv{Float, Conv{storageType(e.T), x}}, nil // round to 16 bits, compute in float
		}
		if computeType(e.T) == computeType(e.X.Type()) {
			return x, nil
		}
		return Conv{computeType(e.T), x}, nil
	case *ir.Select:
		c, err := lw.expr(e.C)
		if err != nil {
			return nil, err
		}
		a, err := lw.expr(e.A)
		if err != nil {
			return nil, err
		}
		b, err := lw.expr(e.B)
		if err != nil {
			return nil, err
		}
		return Cond{c, a, b}, nil
	case *ir.Unary:
		x, err := lw.expr(e.X)
		if err != nil {
			return nil, err
		}
		return lw.unary(e, x)
	case *ir.Binary:
		x, err := lw.expr(e.X)
		if err != nil {
			return nil, err
		}
		y, err := lw.expr(e.Y)
		if err != nil {
			return nil, err
		}
		switch e.Op {
		case ir.Add, ir.Sub, ir.Mul, ir.Div, ir.Lt, ir.Le, ir.Gt, ir.Ge, ir.Eq, ir.Ne:
			if e.T == ir.F64 {
				return nil, unsupported("f64 arithmetic (Metal has no double type)")
			}
			return Binary{string(e.Op), x, y}, nil
		case ir.Min, ir.Max:
			if computeType(e.T) == Int {
				return Call{"metal::" + string(e.Op), []Expr{x, y}}, nil
			}
			return Call{lw.helper(string(e.Op)), []Expr{x, y}}, nil
		}
		return nil, unsupported("operator %s", e.Op)
	case *ir.Reduce:
		return nil, fmt.Errorf("a reduction is left in the loop IR")
	}
	return nil, unsupported("expression %T", e)
}

func convTo(t ir.DType, x Expr) Expr {
	if computeType(t) == Int {
		return x
	}
	return Conv{computeType(t), x}
}

func (lw *lowerer) unary(e *ir.Unary, x Expr) (Expr, error) {
	if computeType(e.T) != Float {
		if e.Op == ir.Neg {
			return Unary{"-", x}, nil
		}
		if e.Op == ir.Abs {
			return Call{"metal::abs", []Expr{x}}, nil
		}
		return nil, unsupported("%s of %s", e.Op, e.T)
	}
	switch e.Op {
	case ir.Neg:
		return Unary{"-", x}, nil
	case ir.Abs, ir.Sqrt, ir.Exp, ir.Log, ir.Tanh:
		return Call{"metal::" + string(e.Op), []Expr{x}}, nil
	case ir.Relu, ir.Sigmoid:
		return Call{lw.helper(string(e.Op)), []Expr{x}}, nil
	}
	return nil, unsupported("function %s", e.Op)
}

// helper returns the name of the inline function kg_<op> and records it: max and min propagate NaN
// (as the interpreter does; metal::fmax would drop it), relu keeps NaN, sigmoid is 1/(1+exp(-x)).
func (lw *lowerer) helper(op string) string {
	name := "kg_" + op
	if _, ok := lw.out.Funcs[name]; ok {
		return name
	}
	x, y := Ident{"x"}, Ident{"y"}
	isnan := func(e Expr) Expr { return Call{"metal::isnan", []Expr{e}} }
	var fn Func
	switch op {
	case "max", "min":
		fn = Func{Ret: Float, Name: name, Params: []Param{{T: Float, Name: "x"}, {T: Float, Name: "y"}}, Body: []Stmt{
			Return{Cond{Binary{"||", isnan(x), isnan(y)}, Ident{"NAN"}, Call{"metal::" + op, []Expr{x, y}}}},
		}}
	case "relu":
		fn = Func{Ret: Float, Name: name, Params: []Param{{T: Float, Name: "x"}}, Body: []Stmt{
			Return{Cond{Binary{"<", x, FloatLit{0}}, FloatLit{0}, x}},
		}}
	case "sigmoid":
		fn = Func{Ret: Float, Name: name, Params: []Param{{T: Float, Name: "x"}}, Body: []Stmt{
			Return{Binary{"/", FloatLit{1}, Binary{"+", FloatLit{1}, Call{"metal::exp", []Expr{Unary{"-", x}}}}}},
		}}
	}
	lw.out.Funcs[name] = fn
	return name
}
