package llvm

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
	lir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/types"
)

// module is the module being built, with its declarations (intrinsics, malloc, free) made once each.
type module struct {
	m     *lir.Module
	decls map[string]*lir.Func
}

func newModule(triple string) *module {
	m := lir.NewModule()
	m.TargetTriple = triple
	return &module{m: m, decls: map[string]*lir.Func{}}
}

// declare returns the declaration of function name, adding it on first use.
func (m *module) declare(name string, ret types.Type, params ...types.Type) *lir.Func {
	if f, ok := m.decls[name]; ok {
		return f
	}
	var ps []*lir.Param
	for _, p := range params {
		ps = append(ps, lir.NewParam("", p))
	}
	f := m.m.NewFunc(name, ret, ps...)
	m.decls[name] = f
	return f
}

// intrinsic returns the declaration of a one-type overloaded math intrinsic (llvm.exp.f32, ...)
// taking n operands of type t.
func (m *module) intrinsic(base string, t types.Type, n int) *lir.Func {
	params := make([]types.Type, n)
	for i := range params {
		params[i] = t
	}
	return m.declare(fmt.Sprintf("llvm.%s.%s", base, suffix(t)), t, params...)
}

// suffix is the overload suffix of an intrinsic for type t (f32, f64, v4f32).
func suffix(t types.Type) string {
	switch t := t.(type) {
	case *types.VectorType:
		return fmt.Sprintf("v%d%s", t.Len, suffix(t.ElemType))
	case *types.FloatType:
		if t.Kind == types.FloatKindDouble {
			return "f64"
		}
		return "f32"
	case *types.IntType:
		return fmt.Sprintf("i%d", t.BitSize)
	}
	return t.String()
}

// storageType is the LLVM type of one element of a tensor of type d in memory.
func storageType(d ir.DType) types.Type {
	switch d {
	case ir.F64:
		return types.Double
	case ir.F32:
		return types.Float
	case ir.F16, ir.BF16:
		return types.I16
	case ir.I32:
		return types.I32
	}
	return types.I8 // I8, Bool
}

// valueType is the LLVM type a value of type d is computed in: f16 and bf16 values are floats, bools i1.
func valueType(d ir.DType) types.Type {
	switch d {
	case ir.F32, ir.F16, ir.BF16:
		return types.Float
	case ir.I32:
		return types.I32
	case ir.I8:
		return types.I8
	case ir.Bool:
		return types.I1
	}
	return types.Double // F64, Untyped
}

// cType is the C spelling of an element of type d (header and drivers).
func cType(d ir.DType) string {
	switch d {
	case ir.F64:
		return "double"
	case ir.F32:
		return "float"
	case ir.F16, ir.BF16:
		return "uint16_t"
	case ir.I32:
		return "int32_t"
	}
	return "int8_t"
}
