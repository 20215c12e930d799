// Package ir holds kgen's two intermediate representations, their verifiers and text printers, and the
// reference interpreter that defines their meaning.
//
// The algorithm level (Kernel) says what a kernel computes: tensors with symbolic dims, and statements
// out[vars] = expr over index domains, with reductions. It has no notion of loop order or memory.
//
// The loop level (Func) says how: a tree of loops (serial, parallel, vector, unrolled, GPU grid/block/
// warp/thread), scalar locals, loads and stores with index expressions, scratch buffers in memory spaces,
// panel packing, and Micro nodes through which a backend substitutes its microkernel for an inner tile.
//
// The interpreter (Interp) runs both levels on Go slices, either in the declared storage precision or
// entirely in f64. Every pass is tested by interpreting the IR before and after it.
package ir

import (
	"fmt"
	"strconv"
)

// Pos is a position in kdsl source: file name, 1-based line and column (zero when unknown). The IR
// keeps its own type so that it does not depend on the parser; check converts the parser's positions.
type Pos struct {
	File      string
	Line, Col int
}

// String formats p as file:line:col, leaving out what is unknown.
func (p Pos) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.File == "":
		return fmt.Sprintf("%d:%d", p.Line, p.Col)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Dim is a symbolic dimension (a size known at run time). Dims that checking unified share one *Dim.
type Dim struct {
	Name string
}

// TensorKind says where a tensor comes from.
type TensorKind uint8

const (
	In      TensorKind = iota // input parameter, read only
	Out                       // output parameter, fully written by the kernel
	InOut                     // parameter read and written
	Scalar                    // scalar parameter (rank 0, passed by value)
	Temp                      // temporary declared with let
	Scratch                   // compiler-made buffer (packed panels, partial results)
)

var kindNames = [...]string{"in", "out", "inout", "scalar", "temp", "scratch"}

func (k TensorKind) String() string { return kindNames[k] }

// IsParam reports whether tensors of this kind are kernel parameters.
func (k TensorKind) IsParam() bool { return k <= Scalar }

// Space is the memory space of a buffer.
type Space uint8

const (
	Global   Space = iota // caller memory or heap
	Packed                // packed scratch panels laid out for the microkernel
	Register              // lives in registers (a backend may not take its address)
	Shared                // GPU shared / threadgroup memory
)

var spaceNames = [...]string{"global", "packed", "register", "shared"}

func (s Space) String() string { return spaceNames[s] }

// Tensor is a parameter, temporary or scratch buffer. Shape is row-major; a rank-0 tensor holds one element.
// Scratch buffers have a Size (in elements) instead of a Shape.
type Tensor struct {
	Name  string
	Type  DType
	Shape []*Dim
	Kind  TensorKind
	Space Space
	Size  IExpr // Scratch only: number of elements
	Pos   Pos
}

// Var is an index variable: a statement's domain variable, a reduction variable, or (at the loop level)
// a loop counter. Range is the dim it ranges over (0 ≤ v < Range) at the algorithm level; a reduction
// variable with a constant explicit range (`max(r < 2: ...)`) has Const > 0 and no Range instead.
// Loop-level counters made by passes have neither.
type Var struct {
	Name  string
	Range *Dim
	Const int
}

// Hi is v's exclusive upper bound at the algorithm level: its dim, or its constant range.
func (v *Var) Hi() IExpr {
	if v.Range == nil {
		return IConst{V: v.Const}
	}
	return IDim{D: v.Range}
}

// RangeName prints v's range: the dim's name or the constant.
func (v *Var) RangeName() string {
	if v.Range == nil {
		return strconv.Itoa(v.Const)
	}
	return v.Range.Name
}

// Extent is v's range for the given dim sizes (by dim name).
func (v *Var) Extent(dims map[string]int) int {
	if v.Range == nil {
		return v.Const
	}
	return dims[v.Range.Name]
}

// Stmt is `Out[Vars...] = Value` for every point of the domain spanned by Vars. Reductions in Value bind
// further variables. Value's type is assignable to Out.Type.
type Stmt struct {
	Out   *Tensor
	Vars  []*Var
	Value Expr
	Pos   Pos
}

// Directive is one schedule command, resolved against the kernel.
type Directive struct {
	Name   string // tile, reorder, vectorize, unroll, parallel, pack, nopack, precision, fuse
	Args   []DirArg
	Target string // "" for every target
	Pos    Pos
}

// DirArg is one argument: an index, a tensor or a type, with optional sizes.
type DirArg struct {
	Name  string
	Sizes []int
}

// Kernel is the algorithm-level IR of one kdsl kernel.
type Kernel struct {
	Name     string
	Params   []*Tensor // declared order
	Dims     []*Dim    // distinct dims in first-appearance order (after unification)
	Temps    []*Tensor
	Stmts    []*Stmt
	Schedule []*Directive
	Source   string // the kernel's kdsl text (for generated docs and tests)
	Pos      Pos
}

// Directives returns the schedule directives that apply to target (target-less ones first).
func (k *Kernel) Directives(target string) []*Directive {
	var out []*Directive
	for _, d := range k.Schedule {
		if d.Target == "" || d.Target == target {
			out = append(out, d)
		}
	}
	return out
}

// Param returns the parameter named name, or nil.
func (k *Kernel) Param(name string) *Tensor {
	for _, p := range k.Params {
		if p.Name == name {
			return p
		}
	}
	return nil
}
