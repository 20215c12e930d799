// Package parse reads kdsl source text into an abstract syntax tree.
//
// The grammar is written with github.com/alecthomas/participle/v2 as annotated structs in this file; the
// lexer is in lexer.go. Parsing checks syntax only: names, types and shapes are checked by package check.
// Every node records its position, so later stages can report errors as file:line:col.
package parse

import "github.com/alecthomas/participle/v2/lexer"

// File is one kdsl source file: kernels and their schedules, in any order.
type File struct {
	Pos   lexer.Position
	Decls []*Decl `parser:"@@*"`
}

// Decl is a top-level declaration.
type Decl struct {
	Pos      lexer.Position
	Kernel   *Kernel   `parser:"  @@"`
	Schedule *Schedule `parser:"| @@"`
}

// Kernel is `parser:"kernel name(params) { statements }"`.
type Kernel struct {
	Pos    lexer.Position
	Name   string   `parser:"\"kernel\" @Ident"`
	Params []*Param `parser:"\"(\" ( @@ ( \",\" @@ )* \",\"? )? \")\""`
	Where  []*DimEq `parser:"( \"where\" @@ ( \",\" @@ )* )?"`
	Body   []*Stmt  `parser:"\"{\" ( @@ \";\"? )* \"}\""`
}

// DimEq is one `parser:"N == K"` of a kernel's where clause: two declared dims that are the same size.
type DimEq struct {
	Pos   lexer.Position
	Left  *DimName `parser:"@@ \"==\""`
	Right *DimName `parser:"@@"`
}

// Param is `parser:"name: [in|out|inout] dtype[dims]"`; without dims it is a scalar.
type Param struct {
	Pos   lexer.Position
	Name  string     `parser:"@Ident \":\""`
	Mode  string     `parser:"@( \"in\" | \"out\" | \"inout\" )?"`
	Type  string     `parser:"@Ident"`
	Shape *ShapeSpec `parser:"@@?"`
}

// ShapeSpec is the bracketed list of symbolic dims of a tensor parameter; `parser:"[]"` is a 0-d tensor.
type ShapeSpec struct {
	Pos  lexer.Position
	Dims []*DimName `parser:"\"[\" ( @@ ( \",\" @@ )* )? \"]\""`
}

// DimName is one symbolic dimension.
type DimName struct {
	Pos  lexer.Position
	Name string `parser:"@Ident"`
}

// Stmt is `parser:"[let] target[idx...] (=|+=) expr"`.
type Stmt struct {
	Pos    lexer.Position
	Let    bool      `parser:"@\"let\"?"`
	Target string    `parser:"@Ident"`
	Index  *LHSIndex `parser:"@@?"`
	Op     string    `parser:"@( \"=\" | \"+=\" )"`
	Value  *Expr     `parser:"@@"`
}

// LHSIndex is the bracketed index list on the left of a statement; nil when the target is a scalar
// temporary written without brackets.
type LHSIndex struct {
	Pos  lexer.Position
	Vars []*IndexVar `parser:"\"[\" ( @@ ( \",\" @@ )* )? \"]\""`
}

// IndexVar is an index variable on the left of a statement or in a reduction.
type IndexVar struct {
	Pos  lexer.Position
	Name string `parser:"@Ident"`
}

// Expr is a comparison (or a plain arithmetic expression when Op is empty).
type Expr struct {
	Pos   lexer.Position
	Left  *Sum   `parser:"@@"`
	Op    string `parser:"( @( \"<=\" | \">=\" | \"==\" | \"!=\" | \"<\" | \">\" )"`
	Right *Sum   `parser:"  @@ )?"`
}

// Sum is a left-associative chain of + and -.
type Sum struct {
	Pos  lexer.Position
	Left *Product `parser:"@@"`
	Rest []*SumOp `parser:"@@*"`
}

// SumOp is one `parser:"+ term"` or `parser:"- term"`.
type SumOp struct {
	Pos  lexer.Position
	Op   string   `parser:"@( \"+\" | \"-\" )"`
	Term *Product `parser:"@@"`
}

// Product is a left-associative chain of * and /.
type Product struct {
	Pos  lexer.Position
	Left *Unary   `parser:"@@"`
	Rest []*MulOp `parser:"@@*"`
}

// MulOp is one `parser:"* factor"` or `parser:"/ factor"`.
type MulOp struct {
	Pos    lexer.Position
	Op     string `parser:"@( \"*\" | \"/\" )"`
	Factor *Unary `parser:"@@"`
}

// Unary is an optionally negated primary.
type Unary struct {
	Pos     lexer.Position
	Neg     *Unary   `parser:"  \"-\" @@"`
	Primary *Primary `parser:"| @@"`
}

// Primary is a number, a reduction, a call, a tensor access, or a parenthesised expression.
type Primary struct {
	Pos    lexer.Position
	Number *string `parser:"  @( Float | Int )"`
	Reduce *Reduce `parser:"| @@"`
	Call   *Call   `parser:"| @@"`
	Access *Access `parser:"| @@"`
	Paren  *Expr   `parser:"| \"(\" @@ \")\""`
}

// Reduce is `parser:"op(k, l: expr)"`: reduce expr with op over the listed index variables.
type Reduce struct {
	Pos   lexer.Position
	Op    string       `parser:"@Ident \"(\""`
	Vars  []*ReduceVar `parser:"@@ ( \",\" @@ )* \":\""`
	Value *Expr        `parser:"@@ \")\""`
}

// ReduceVar is a reduction index, with an explicit range when written `parser:"r < 2"` or `parser:"r < R"`
// (a window: the index need not appear alone in any tensor).
type ReduceVar struct {
	Pos   lexer.Position
	Name  string `parser:"@Ident"`
	Bound *Bound `parser:"( \"<\" @@ )?"`
}

// Bound is the exclusive upper bound of an explicit reduction range: a positive integer or a dim.
type Bound struct {
	Pos lexer.Position
	Int *string `parser:"  @Int"`
	Dim string  `parser:"| @Ident"`
}

// Call is `parser:"f(args)"`: an elementwise function or a cast (`parser:"f32(x)"`).
type Call struct {
	Pos  lexer.Position
	Func string  `parser:"@Ident \"(\""`
	Args []*Expr `parser:"( @@ ( \",\" @@ )* )? \")\""`
}

// Access is a tensor element `parser:"A[i, k+1]"`, or a bare name: scalar parameter, dim, temporary or constant.
type Access struct {
	Pos   lexer.Position
	Name  string     `parser:"@Ident"`
	Index *IndexList `parser:"@@?"`
}

// IndexList is the bracketed list of index expressions of an access; nil when none was written.
type IndexList struct {
	Pos   lexer.Position
	Exprs []*Expr `parser:"\"[\" ( @@ ( \",\" @@ )* )? \"]\""`
}

// Schedule is `parser:"schedule kernel { directives }"`, separate from the algorithm.
type Schedule struct {
	Pos        lexer.Position
	Kernel     string       `parser:"\"schedule\" @Ident \"{\""`
	Directives []*Directive `parser:"( @@ \";\"? )*"`
	Targets    []*TargetBlk `parser:"( @@ \";\"? )* \"}\""`
}

// TargetBlk is `parser:"for amd64 { directives }"`: directives that apply only when generating for that target.
type TargetBlk struct {
	Pos        lexer.Position
	Target     string       `parser:"\"for\" @Ident \"{\""`
	Directives []*Directive `parser:"( @@ \";\"? )* \"}\""`
}

// Directive is one scheduling command: `parser:"tile i 64 4, j 256 16"`, `parser:"vectorize j"`, `parser:"pack A, B"`...
type Directive struct {
	Pos  lexer.Position
	Name string    `parser:"@( \"tile\" | \"reorder\" | \"vectorize\" | \"unroll\" | \"parallel\" | \"pack\" | \"precision\" | \"nopack\" )"`
	Args []*DirArg `parser:"( @@ ( \",\" @@ )* )?"`
}

// DirArg is a name with optional integers (`parser:"i 64 4"`), or a bare integer / type name.
type DirArg struct {
	Pos   lexer.Position
	Name  string `parser:"@Ident"`
	Sizes []int  `parser:"@Int*"`
}
