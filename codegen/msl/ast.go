package msl

// The MSL syntax tree the backend builds: types, expressions, statements and kernel functions as
// values. Printing (print.go) is the only place where text is made, so the lowering never pastes
// strings and every emitted construct is one the printer (and the shim header of the tests) knows.

// Type is an MSL type as written in a declaration: a scalar or matrix type name, optionally a pointer
// or reference into an address space.
type Type struct {
	Name  string // float, half, bfloat, int, uint, uint3, bool, simdgroup_float8x8, a struct name
	Space string // "" (thread), "device", "constant", "threadgroup": only with Ptr or Ref
	Const bool   // const pointee
	Ptr   bool   // T*
	Ref   bool   // T&
}

// The scalar types the backend uses.
var (
	Float  = Type{Name: "float"}
	Half   = Type{Name: "half"}
	BFloat = Type{Name: "bfloat"}
	Int    = Type{Name: "int"}
	Uint   = Type{Name: "uint"}
	Uint3  = Type{Name: "uint3"}
	Bool   = Type{Name: "bool"}
	// SimdFloat8x8 is a simdgroup's 8×8 float matrix (Metal 2.3+).
	SimdFloat8x8 = Type{Name: "simdgroup_float8x8"}
	// SimdHalf8x8 and SimdBFloat8x8 hold 16-bit operand tiles (bfloat: Metal 3.1); a
	// simdgroup_multiply_accumulate of two of them adds into a float accumulator.
	SimdHalf8x8   = Type{Name: "simdgroup_half8x8"}
	SimdBFloat8x8 = Type{Name: "simdgroup_bfloat8x8"}
)

// PtrTo is a pointer to t in space.
func PtrTo(space string, t Type, isConst bool) Type {
	return Type{Name: t.Name, Space: space, Const: isConst, Ptr: true}
}

// RefTo is a reference to t in space.
func RefTo(space string, t Type, isConst bool) Type {
	return Type{Name: t.Name, Space: space, Const: isConst, Ref: true}
}

// Expr is an MSL expression.
type Expr interface{ expr() }

// Ident names a variable, parameter or function.
type Ident struct{ Name string }

// IntLit is an int literal.
type IntLit struct{ V int }

// FloatLit is a float literal (printed with an f suffix; infinities and NaN as INFINITY / NAN).
type FloatLit struct{ V float64 }

// BoolLit is true or false.
type BoolLit struct{ V bool }

// Binary is X Op Y for a C operator (+ - * / % < <= > >= == != && || & | ^ << >>).
type Binary struct {
	Op   string
	X, Y Expr
}

// Unary is Op X for a prefix operator (- ! ~).
type Unary struct {
	Op string
	X  Expr
}

// Call is Fun(Args...); Fun may be qualified (metal::exp) or a template instance.
type Call struct {
	Fun  string
	Args []Expr
}

// Index is X[I].
type Index struct{ X, I Expr }

// Member is X.Field.
type Member struct {
	X     Expr
	Field string
}

// AddrOf is &X.
type AddrOf struct{ X Expr }

// Cond is C ? A : B.
type Cond struct{ C, A, B Expr }

// Conv is the functional conversion T(X).
type Conv struct {
	T Type
	X Expr
}

func (Ident) expr()    {}
func (IntLit) expr()   {}
func (FloatLit) expr() {}
func (BoolLit) expr()  {}
func (Binary) expr()   {}
func (Unary) expr()    {}
func (Call) expr()     {}
func (Index) expr()    {}
func (Member) expr()   {}
func (AddrOf) expr()   {}
func (Cond) expr()     {}
func (Conv) expr()     {}

// Stmt is an MSL statement.
type Stmt interface{ stmt() }

// Decl declares Name of type T (an array of Len elements when Len > 0), with an optional Init. Space
// "threadgroup" makes a threadgroup array (kernel scope only).
type Decl struct {
	Space string
	Const bool
	T     Type
	Name  string
	Len   int
	Init  Expr
}

// Assign is LHS Op RHS with Op "=" or a compound assignment ("+=").
type Assign struct {
	LHS Expr
	Op  string
	RHS Expr
}

// ExprStmt evaluates X (a call).
type ExprStmt struct{ X Expr }

// For is `for (int Var = Lo; Var < Hi; Var += Step) Body`.
type For struct {
	Var          string
	Lo, Hi, Step Expr
	Body         []Stmt
}

// If is `if (Cond) Then else Else` (no else when Else is empty).
type If struct {
	Cond       Expr
	Then, Else []Stmt
}

// Block is a braced statement list (a scope).
type Block struct{ Body []Stmt }

// Comment is a // line comment (one line per element of Lines).
type Comment struct{ Lines []string }

// Return ends the function, returning X (nil in a kernel).
type Return struct{ X Expr }

func (Decl) stmt()     {}
func (Assign) stmt()   {}
func (ExprStmt) stmt() {}
func (For) stmt()      {}
func (If) stmt()       {}
func (Block) stmt()    {}
func (Comment) stmt()  {}
func (Return) stmt()   {}

// Param is one kernel parameter with its attribute (buffer(0), threadgroup_position_in_grid, ...).
type Param struct {
	T    Type
	Name string
	Attr string
}

// Struct is a plain struct of int fields (a kernel's dims).
type Struct struct {
	Name   string
	Fields []string
}

// Kernel is a `kernel void` function.
type Kernel struct {
	Doc    []string // comment lines above it
	Name   string
	Params []Param
	Body   []Stmt
}

// Func is an inline helper function (`inline Ret Name(Params) { Body }`).
type Func struct {
	Ret    Type
	Name   string
	Params []Param
	Body   []Stmt
}

// File is one .metal source.
type File struct {
	Header   []string // comment lines at the top
	Includes []string // headers after <metal_stdlib> (metal_simdgroup_matrix)
	Structs  []Struct
	Funcs    []Func
	Kernels  []Kernel
}
