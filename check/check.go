// Package check turns a parsed kdsl file into algorithm-level IR: it resolves names, infers and unifies
// shapes, types every expression, turns Einstein-style implicit reductions into explicit ones, and checks
// the schedules against the algorithm. It reports every error it finds, each at a source position.
package check

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/parse"
)

type checker struct {
	errs parse.ErrorList
	src  string
}

func (c *checker) errorf(pos parse.Pos, format string, a ...any) {
	c.errs = append(c.errs, &parse.Error{Pos: pos, Msg: fmt.Sprintf(format, a...)})
}

// irPos converts the parser's position to the IR's own (the IR does not import the parser).
func irPos(p parse.Pos) ir.Pos { return ir.Pos{File: p.Filename, Line: p.Line, Col: p.Column} }

// srcPos converts back, for an error reported at a position the IR holds.
func srcPos(p ir.Pos) parse.Pos { return parse.Pos{Filename: p.File, Line: p.Line, Column: p.Col} }

// File parses and checks src, returning its kernels in source order, or a parse.ErrorList.
func File(filename, src string) ([]*ir.Kernel, error) {
	f, err := parse.Parse(filename, src)
	if err != nil {
		return nil, err
	}
	return Check(f, src)
}

// Check checks a parsed file. src is used to record each kernel's source text.
func Check(f *parse.File, src string) ([]*ir.Kernel, error) {
	c := &checker{src: src}
	var kernels []*ir.Kernel
	byName := map[string]*ir.Kernel{}
	for _, d := range f.Decls {
		if d.Kernel == nil {
			continue
		}
		if _, dup := byName[d.Kernel.Name]; dup {
			c.errorf(d.Kernel.Pos, "kernel %s redeclared", d.Kernel.Name)
			continue
		}
		k := c.kernel(d.Kernel)
		byName[k.Name] = k
		kernels = append(kernels, k)
	}
	scheduled := map[string]bool{}
	for _, d := range f.Decls {
		if d.Schedule == nil {
			continue
		}
		s := d.Schedule
		k := byName[s.Kernel]
		if k == nil {
			c.errorf(s.Pos, "schedule for unknown kernel %s", s.Kernel)
			continue
		}
		if scheduled[s.Kernel] {
			c.errorf(s.Pos, "second schedule for kernel %s", s.Kernel)
			continue
		}
		scheduled[s.Kernel] = true
		c.schedule(k, s)
	}
	// Kernel source text: from its position to the next declaration.
	for i, d := range f.Decls {
		if d.Kernel == nil || byName[d.Kernel.Name] == nil {
			continue
		}
		end := len(src)
		if i+1 < len(f.Decls) {
			end = f.Decls[i+1].Pos.Offset
		}
		text := src[d.Pos.Offset:end]
		if i := strings.LastIndex(text, "}"); i >= 0 {
			text = text[:i+1]
		}
		byName[d.Kernel.Name].Source = strings.TrimSpace(text)
	}
	if len(c.errs) > 0 {
		sort.SliceStable(c.errs, func(i, j int) bool {
			a, b := c.errs[i].Pos, c.errs[j].Pos
			if a.Line != b.Line {
				return a.Line < b.Line
			}
			return a.Column < b.Column
		})
		return nil, c.errs
	}
	return kernels, nil
}

// kernel-level state
type kchecker struct {
	*checker
	k       *ir.Kernel
	names   map[string]any // *ir.Tensor or *ir.Dim
	parent  map[*ir.Dim]*ir.Dim
	dimPos  map[*ir.Dim]parse.Pos
	vars    []*ir.Var
	dimVals []*ir.DimVal
	written map[*ir.Tensor]bool
	// explicit marks reduction indices with a written range (r < 2): they take no dim from accesses.
	explicit map[*ir.Var]bool
	// per statement
	scope    map[string]*ir.Var
	free     []*ir.Var
	varPos   map[*ir.Var]parse.Pos
	out      *ir.Tensor
	outVars  []*ir.Var
	allowNew bool
}

var reserved = map[string]bool{"kernel": true, "schedule": true, "let": true, "for": true, "in": true, "out": true, "inout": true, "where": true}

// goReserved are names a kernel may not use because generated Go would break: Go keywords, the builtins
// and packages the generated code uses.
var goReserved = map[string]bool{
	"break": true, "case": true, "chan": true, "const": true, "continue": true, "default": true, "defer": true,
	"else": true, "fallthrough": true, "func": true, "go": true, "goto": true, "if": true, "import": true,
	"interface": true, "map": true, "package": true, "range": true, "return": true, "select": true,
	"struct": true, "switch": true, "type": true, "var": true, "len": true, "make": true, "min": true,
	"max": true, "fmt": true, "rt": true, "math": true, "f16": true, "os": true, "nil": true, "true": true,
	"false": true, "int": true, "float32": true, "float64": true, "int32": true, "int8": true, "bool": true,
	"err": true, "acc": true, "sel": true,
	// the rest of Go's predeclared identifiers and the other packages generated files import: a dim or
	// tensor of that name would shadow what the wrapper calls (uint(M) > rt.MaxDim)
	"any": true, "append": true, "byte": true, "cap": true, "clear": true, "close": true, "complex": true,
	"complex64": true, "complex128": true, "copy": true, "delete": true, "error": true, "imag": true,
	"int16": true, "int64": true, "iota": true, "new": true, "panic": true, "print": true, "println": true,
	"real": true, "recover": true, "rune": true, "string": true, "uint": true, "uint8": true, "uint16": true,
	"uint32": true, "uint64": true, "uintptr": true, "comparable": true, "io": true, "strings": true,
	"unsafe": true, "runtime": true, "embed": true, "cuda": true, "metal": true,
}

// checkName reports names that generated Go cannot use.
func (c *checker) checkName(pos parse.Pos, name string) bool {
	if goReserved[name] || reserved[name] || strings.HasSuffix(name, "_") || strings.HasSuffix(name, "Slot") {
		c.errorf(pos, "%s is reserved (a Go keyword or a name the generated code uses); choose another name", name)
		return false
	}
	return true
}

func (c *checker) kernel(pk *parse.Kernel) *ir.Kernel {
	k := &ir.Kernel{Name: pk.Name, Pos: irPos(pk.Pos)}
	kc := &kchecker{checker: c, k: k, names: map[string]any{}, parent: map[*ir.Dim]*ir.Dim{}, dimPos: map[*ir.Dim]parse.Pos{}, written: map[*ir.Tensor]bool{}, explicit: map[*ir.Var]bool{}}
	c.checkName(pk.Pos, pk.Name)
	for _, p := range pk.Params {
		if !c.checkName(p.Pos, p.Name) {
			continue
		}
		if kc.names[p.Name] != nil {
			if _, isDim := kc.names[p.Name].(*ir.Dim); isDim {
				c.errorf(p.Pos, "%s is already a dimension name", p.Name)
			} else {
				c.errorf(p.Pos, "parameter %s redeclared", p.Name)
			}
			continue
		}
		dt := ir.ParseDType(p.Type)
		if dt == ir.Invalid {
			c.errorf(p.Pos, "unknown type %s for %s: expected f64, f32, f16, bf16, i32 or i8", p.Type, p.Name)
			dt = ir.F32
		}
		t := &ir.Tensor{Name: p.Name, Type: dt, Pos: irPos(p.Pos)}
		switch p.Mode {
		case "", "in":
			t.Kind = ir.In
		case "out":
			t.Kind = ir.Out
		case "inout":
			t.Kind = ir.InOut
		}
		if p.Shape == nil {
			if t.Kind != ir.In {
				c.errorf(p.Pos, "scalar parameter %s cannot be %s: outputs are tensors (use %s[] for a single value)", p.Name, p.Mode, p.Type)
			}
			t.Kind = ir.Scalar
		} else {
			for _, dn := range p.Shape.Dims {
				if !c.checkName(dn.Pos, dn.Name) {
					continue
				}
				switch v := kc.names[dn.Name].(type) {
				case *ir.Dim:
					t.Shape = append(t.Shape, v)
				case nil:
					d := &ir.Dim{Name: dn.Name}
					kc.names[dn.Name] = d
					kc.dimPos[d] = dn.Pos
					k.Dims = append(k.Dims, d)
					t.Shape = append(t.Shape, d)
				default:
					c.errorf(dn.Pos, "%s is a parameter, not a dimension", dn.Name)
				}
			}
		}
		if _, isDim := kc.names[p.Name].(*ir.Dim); isDim {
			c.errorf(p.Pos, "%s is already a dimension name", p.Name)
			continue
		}
		kc.names[p.Name] = t
		k.Params = append(k.Params, t)
	}
	for _, eq := range pk.Where {
		kc.where(eq)
	}
	failed := map[string]bool{} // targets of statements with errors
	for _, s := range pk.Body {
		nerr := len(c.errs)
		kc.stmt(s)
		if len(c.errs) > nerr {
			failed[s.Target] = true
		}
	}
	// A statement with an error writes nothing, and its error is the one to read: its output is not
	// also reported as never written.
	for _, p := range k.Params {
		if (p.Kind == ir.Out || p.Kind == ir.InOut) && !kc.written[p] && !failed[p.Name] {
			c.errorf(srcPos(p.Pos), "output %s is never written", p.Name)
		}
	}
	kc.resolveDims()
	return k
}

func (kc *kchecker) find(d *ir.Dim) *ir.Dim {
	for kc.parent[d] != nil {
		d = kc.parent[d]
	}
	return d
}

// where records a `where N == K` clause: the two declared dims are one (the first declared is kept).
func (kc *kchecker) where(eq *parse.DimEq) {
	var dims [2]*ir.Dim
	for i, dn := range []*parse.DimName{eq.Left, eq.Right} {
		d, ok := kc.names[dn.Name].(*ir.Dim)
		if !ok {
			kc.errorf(dn.Pos, "where %s == %s: %s is not a dim of kernel %s", eq.Left.Name, eq.Right.Name, dn.Name, kc.k.Name)
			return
		}
		dims[i] = d
	}
	if dims[0] == dims[1] {
		kc.errorf(eq.Pos, "where %s == %s: a dim is always equal to itself", eq.Left.Name, eq.Right.Name)
		return
	}
	kc.join(dims[0], dims[1])
}

// unify records that a and b are the same size because an index ranges over both (an access at pos
// shows it). Two different declared dims are only unified when a where clause made them one already:
// otherwise the generated function would silently lose a dim, so it is an error naming both
// declarations.
func (kc *kchecker) unify(pos parse.Pos, what string, a, b *ir.Dim) {
	ra, rb := kc.find(a), kc.find(b)
	if ra == rb {
		return
	}
	pa, pb := kc.dimPos[a], kc.dimPos[b]
	kc.errorf(pos, "%s makes dims %s (declared at %s) and %s (declared at %s) the same size: use one name, or say so with `where %s == %s` after the parameters",
		what, a.Name, posString(pa), b.Name, posString(pb), a.Name, b.Name)
	kc.join(ra, rb) // report each pair once
}

func posString(p parse.Pos) string {
	return fmt.Sprintf("%s:%d:%d", p.Filename, p.Line, p.Column)
}

// join merges the classes of a and b; the dim declared first stays the representative.
func (kc *kchecker) join(a, b *ir.Dim) {
	a, b = kc.find(a), kc.find(b)
	if a == b {
		return
	}
	ia, ib := kc.dimIndex(a), kc.dimIndex(b)
	if ib < ia {
		a, b = b, a
	}
	kc.parent[b] = a
}

func (kc *kchecker) dimIndex(d *ir.Dim) int {
	for i, x := range kc.k.Dims {
		if x == d {
			return i
		}
	}
	return len(kc.k.Dims)
}

// resolveDims replaces every dim by its representative.
func (kc *kchecker) resolveDims() {
	var dims []*ir.Dim
	for _, d := range kc.k.Dims {
		if kc.find(d) == d {
			dims = append(dims, d)
		}
	}
	kc.k.Dims = dims
	for _, t := range append(append([]*ir.Tensor(nil), kc.k.Params...), kc.k.Temps...) {
		for i, d := range t.Shape {
			t.Shape[i] = kc.find(d)
		}
	}
	for _, v := range kc.vars {
		if v.Range != nil {
			v.Range = kc.find(v.Range)
		}
	}
	for _, d := range kc.dimVals {
		d.D = kc.find(d.D)
	}
}

func (kc *kchecker) newVar(name string, pos parse.Pos) *ir.Var {
	v := &ir.Var{Name: name}
	kc.vars = append(kc.vars, v)
	kc.varPos[v] = pos
	return v
}

func (kc *kchecker) stmt(s *parse.Stmt) {
	kc.scope = map[string]*ir.Var{}
	kc.free = nil
	kc.varPos = map[*ir.Var]parse.Pos{}
	kc.out, kc.outVars = nil, nil
	var lhs []*parse.IndexVar
	if s.Index != nil {
		lhs = s.Index.Vars
	}
	for _, iv := range lhs {
		if kc.scope[iv.Name] != nil {
			kc.errorf(iv.Pos, "index %s appears twice on the left", iv.Name)
			return
		}
		if !kc.checkName(iv.Pos, iv.Name) {
			return
		}
		if _, ok := kc.names[iv.Name]; ok {
			kc.errorf(iv.Pos, "index %s has the name of a parameter or dimension", iv.Name)
			return
		}
		v := kc.newVar(iv.Name, iv.Pos)
		kc.scope[iv.Name] = v
		kc.outVars = append(kc.outVars, v)
	}
	var target *ir.Tensor
	if s.Let {
		if !kc.checkName(s.Pos, s.Target) {
			return
		}
		if kc.names[s.Target] != nil {
			kc.errorf(s.Pos, "%s redeclared (let declares a new temporary)", s.Target)
			return
		}
		if s.Op == "+=" {
			kc.errorf(s.Pos, "let %s += ...: a new temporary has no value to add to; use =", s.Target)
			return
		}
	} else {
		switch t := kc.names[s.Target].(type) {
		case *ir.Tensor:
			target = t
		case *ir.Dim:
			kc.errorf(s.Pos, "cannot assign to dimension %s", s.Target)
			return
		default:
			kc.errorf(s.Pos, "undefined: %s (declare a temporary with let %s[...] = ...)", s.Target, s.Target)
			return
		}
		switch target.Kind {
		case ir.In:
			kc.errorf(s.Pos, "cannot assign to input %s: declare it out or inout", target.Name)
			return
		case ir.Scalar:
			kc.errorf(s.Pos, "cannot assign to scalar parameter %s", target.Name)
			return
		}
		if len(lhs) != len(target.Shape) {
			kc.errorf(s.Pos, "%s has rank %d but is written with %d indices", target.Name, len(target.Shape), len(lhs))
			return
		}
		for i, v := range kc.outVars {
			v.Range = target.Shape[i]
		}
		if target.Kind == ir.Out && !kc.written[target] && s.Op == "+=" {
			kc.errorf(s.Pos, "%s += ...: output %s has no value yet (declare it inout, or assign it first)", target.Name, target.Name)
		}
		kc.out = target
	}
	nerr := len(kc.errs)
	kc.allowNew = true
	val := kc.expr(s.Value)
	if val == nil || len(kc.errs) > nerr {
		return
	}
	// Every variable needs a range.
	for _, v := range kc.vars {
		if _, mine := kc.varPos[v]; mine && v.Range == nil && v.Const == 0 {
			hint := ""
			if !slices.Contains(kc.outVars, v) {
				hint = fmt.Sprintf(", or give it a range: sum(%s < 3: ...) or sum(%s < R: ...) with a dim R", v.Name, v.Name)
			}
			kc.errorf(kc.varPos[v], "cannot infer the range of index %s: use it alone as an index of a tensor%s", v.Name, hint)
		}
	}
	if len(kc.errs) > nerr {
		return
	}
	if len(kc.free) > 0 {
		var lhsNames []string
		for _, v := range kc.outVars {
			lhsNames = append(lhsNames, v.Name)
		}
		kc.checkImplicit(s, kc.free, lhsNames)
		if len(kc.errs) > nerr {
			return
		}
		val = &ir.Reduce{Op: ir.Add, Vars: kc.free, X: val, T: val.Type().Compute()}
	}
	if s.Let {
		dt := val.Type()
		if dt == ir.Untyped {
			dt = ir.F32
		}
		if dt == ir.Bool {
			kc.errorf(s.Value.Pos, "temporary %s would hold a comparison result; use select(cond, a, b)", s.Target)
			return
		}
		target = &ir.Tensor{Name: s.Target, Type: dt, Kind: ir.Temp, Pos: irPos(s.Pos)}
		for _, v := range kc.outVars {
			target.Shape = append(target.Shape, v.Range)
		}
		kc.names[s.Target] = target
		kc.k.Temps = append(kc.k.Temps, target)
	}
	if s.Op == "+=" {
		old := &ir.Load{T: target, Idx: ivars(kc.outVars)}
		val = kc.arith(s.Value.Pos, ir.Add, old, val)
		if val == nil {
			return
		}
	}
	vt := val.Type()
	if vt == ir.Untyped {
		kc.settle(s.Value.Pos, val, target.Type.Compute())
	} else if vt == ir.Bool {
		kc.errorf(s.Value.Pos, "cannot store a comparison result in %s: use select(cond, a, b)", target.Name)
		return
	} else if !ir.Widens(vt, target.Type) {
		kc.errorf(s.Value.Pos, "cannot store a %s value in %s tensor %s without an explicit cast: write %s(...)", vt, target.Type, target.Name, target.Type)
		return
	}
	kc.written[target] = true
	kc.k.Stmts = append(kc.k.Stmts, &ir.Stmt{Out: target, Vars: kc.outVars, Value: val, Pos: irPos(s.Pos)})
}

func ivars(vs []*ir.Var) []ir.IExpr {
	out := make([]ir.IExpr, len(vs))
	for i, v := range vs {
		out[i] = ir.IVar{V: v}
	}
	return out
}

// settle gives untyped constants and dims in e the type t. It reports, at pos, a constant that t cannot
// represent (as Go does: generated code spells the constant as a conversion to t).
func (kc *kchecker) settle(pos parse.Pos, e ir.Expr, t ir.DType) {
	ir.Walk(e, func(n ir.Expr) {
		switch n := n.(type) {
		case *ir.Const:
			if n.T == ir.Untyped {
				n.T = t
				if !representable(n.Val, t) {
					kc.errorf(pos, "constant %s is not representable as %s", constString(n.Val), t)
				}
			}
		case *ir.DimVal:
			if n.T == ir.Untyped {
				n.T = t
			}
		case *ir.VarVal:
			if n.T == ir.Untyped {
				n.T = t
			}
		case *ir.Unary:
			if n.T == ir.Untyped {
				n.T = t
			}
		case *ir.Binary:
			if n.T == ir.Untyped {
				n.T = t
			}
		case *ir.Reduce:
			if n.T == ir.Untyped {
				n.T = t
			}
		}
	})
}

// representable reports whether the constant v has an exact value of type t (integers) or does not
// overflow it (floats).
func representable(v float64, t ir.DType) bool {
	switch t {
	case ir.I32:
		return v == math.Trunc(v) && v >= math.MinInt32 && v <= math.MaxInt32
	case ir.I8:
		return v == math.Trunc(v) && v >= math.MinInt8 && v <= math.MaxInt8
	case ir.F32:
		return !math.IsInf(float64(float32(v)), 0)
	}
	return true
}

// constString prints a constant for a message: integers without an exponent, as far as that is short.
func constString(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e21 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func (kc *kchecker) expr(e *parse.Expr) ir.Expr {
	x := kc.sum(e.Left)
	if e.Op == "" || x == nil {
		return x
	}
	y := kc.sum(e.Right)
	if y == nil {
		return nil
	}
	return kc.arith(e.Pos, ir.Op(e.Op), x, y)
}

func (kc *kchecker) sum(s *parse.Sum) ir.Expr {
	x := kc.product(s.Left)
	for _, r := range s.Rest {
		y := kc.product(r.Term)
		if x == nil || y == nil {
			return nil
		}
		x = kc.arith(r.Pos, ir.Op(r.Op), x, y)
	}
	return x
}

func (kc *kchecker) product(p *parse.Product) ir.Expr {
	x := kc.unary(p.Left)
	for _, r := range p.Rest {
		y := kc.unary(r.Factor)
		if x == nil || y == nil {
			return nil
		}
		x = kc.arith(r.Pos, ir.Op(r.Op), x, y)
	}
	return x
}

func (kc *kchecker) unary(u *parse.Unary) ir.Expr {
	if u.Neg != nil {
		x := kc.unary(u.Neg)
		if x == nil {
			return nil
		}
		if c, ok := x.(*ir.Const); ok {
			return &ir.Const{Val: -c.Val, T: c.T}
		}
		if !kc.numeric(u.Pos, "-", x) {
			return nil
		}
		return &ir.Unary{Op: ir.Neg, X: x, T: x.Type().Compute()}
	}
	return kc.primary(u.Primary)
}

func (kc *kchecker) numeric(pos parse.Pos, what string, x ir.Expr) bool {
	if x.Type() == ir.Bool {
		kc.errorf(pos, "%s needs a number, got a comparison result", what)
		return false
	}
	return true
}

// arith types a binary operation, widening the narrower float operand implicitly.
func (kc *kchecker) arith(pos parse.Pos, op ir.Op, x, y ir.Expr) ir.Expr {
	if !kc.numeric(pos, string(op), x) || !kc.numeric(pos, string(op), y) {
		return nil
	}
	t, ok := kc.unifyTypes(pos, string(op), x, y)
	if !ok {
		return nil
	}
	if op.IsCompare() {
		return &ir.Binary{Op: op, X: x, Y: y, T: ir.Bool}
	}
	return &ir.Binary{Op: op, X: x, Y: y, T: t.Compute()}
}

func (kc *kchecker) unifyTypes(pos parse.Pos, what string, x, y ir.Expr) (ir.DType, bool) {
	tx, ty := x.Type(), y.Type()
	switch {
	case tx == ty:
		return tx, true
	case tx == ir.Untyped:
		kc.settle(pos, x, ty)
		return ty, true
	case ty == ir.Untyped:
		kc.settle(pos, y, tx)
		return tx, true
	case ir.Widens(tx, ty):
		return ty, true
	case ir.Widens(ty, tx):
		return tx, true
	case tx.Compute() == ty.Compute() && tx.IsFloat():
		return tx.Compute(), true // f16 with bf16: both compute in f32
	}
	kc.errorf(pos, "mismatched types %s and %s for %s: convert one operand explicitly, e.g. %s(...)", tx, ty, what, ty)
	return ir.Invalid, false
}

var unaryFuncs = map[string]ir.Op{"abs": ir.Abs, "sqrt": ir.Sqrt, "exp": ir.Exp, "log": ir.Log, "tanh": ir.Tanh, "relu": ir.Relu, "sigmoid": ir.Sigmoid, "neg": ir.Neg}

const funcList = "abs, sqrt, exp, log, tanh, relu, sigmoid, neg, min, max, select, or a cast f64/f32/f16/bf16/i32/i8"

func (kc *kchecker) primary(p *parse.Primary) ir.Expr {
	switch {
	case p.Number != nil:
		v, err := strconv.ParseFloat(*p.Number, 64)
		if err != nil {
			kc.errorf(p.Pos, "bad number %s", *p.Number)
			return nil
		}
		return &ir.Const{Val: v, T: ir.Untyped}
	case p.Paren != nil:
		return kc.expr(p.Paren)
	case p.Reduce != nil:
		return kc.reduce(p.Reduce)
	case p.Call != nil:
		return kc.call(p.Call)
	case p.Access != nil:
		return kc.access(p.Access)
	}
	kc.errorf(p.Pos, "empty expression")
	return nil
}

func (kc *kchecker) reduce(r *parse.Reduce) ir.Expr {
	var op ir.Op
	switch r.Op {
	case "sum":
		op = ir.Add
	case "max":
		op = ir.Max
	case "min":
		op = ir.Min
	default:
		kc.errorf(r.Pos, "unknown reduction %s: expected sum, max or min", r.Op)
		return nil
	}
	var vars []*ir.Var
	for _, iv := range r.Vars {
		if kc.scope[iv.Name] != nil {
			kc.errorf(iv.Pos, "reduction index %s is already an index here", iv.Name)
			return nil
		}
		if _, ok := kc.names[iv.Name]; ok {
			kc.errorf(iv.Pos, "reduction index %s has the name of a parameter or dimension", iv.Name)
			return nil
		}
		if !kc.checkName(iv.Pos, iv.Name) {
			return nil
		}
		v := kc.newVar(iv.Name, iv.Pos)
		if iv.Bound != nil && !kc.bound(v, iv) {
			return nil
		}
		kc.scope[iv.Name] = v
		vars = append(vars, v)
	}
	x := kc.expr(r.Value)
	for _, v := range vars {
		delete(kc.scope, v.Name)
	}
	if x == nil || !kc.numeric(r.Pos, r.Op, x) {
		return nil
	}
	return &ir.Reduce{Op: op, Vars: vars, X: x, T: x.Type().Compute()}
}

// maxWindow bounds a constant reduction range.
const maxWindow = 1 << 20

// bound gives the reduction index v the explicit range written `r < 2` or `r < R`. Such an index does
// not take (or unify) the dims of the tensors it indexes; the wrapper checks those accesses at run time.
func (kc *kchecker) bound(v *ir.Var, iv *parse.ReduceVar) bool {
	b := iv.Bound
	if b.Int != nil {
		n, err := strconv.Atoi(*b.Int)
		if err != nil || n < 1 || n > maxWindow {
			kc.errorf(b.Pos, "range of %s: %s is not an integer from 1 to %d", iv.Name, clip(*b.Int), maxWindow)
			return false
		}
		v.Const = n
	} else {
		d, ok := kc.names[b.Dim].(*ir.Dim)
		if !ok {
			kc.errorf(b.Pos, "range of %s: %s is not a dim of kernel %s (a range is an integer or a dim)", iv.Name, b.Dim, kc.k.Name)
			return false
		}
		v.Range = d
	}
	kc.explicit[v] = true
	return true
}

func (kc *kchecker) call(c *parse.Call) ir.Expr {
	args := make([]ir.Expr, len(c.Args))
	for i, a := range c.Args {
		args[i] = kc.expr(a)
		if args[i] == nil {
			return nil
		}
	}
	want := func(n int) bool {
		if len(args) != n {
			kc.errorf(c.Pos, "%s takes %d argument(s), got %d", c.Func, n, len(args))
			return false
		}
		return true
	}
	if dt := ir.ParseDType(c.Func); dt != ir.Invalid {
		if !want(1) || !kc.numeric(c.Pos, c.Func, args[0]) {
			return nil
		}
		if args[0].Type() == ir.Untyped {
			kc.settle(c.Pos, args[0], dt.Compute())
		}
		return &ir.Cast{X: args[0], T: dt}
	}
	if op, ok := unaryFuncs[c.Func]; ok {
		if !want(1) || !kc.numeric(c.Pos, c.Func, args[0]) {
			return nil
		}
		t := args[0].Type()
		if t.IsInt() && op != ir.Abs && op != ir.Neg && op != ir.Relu {
			kc.errorf(c.Pos, "%s needs a floating-point operand, got %s: convert with f32(...)", c.Func, t)
			return nil
		}
		return &ir.Unary{Op: op, X: args[0], T: t.Compute()}
	}
	switch c.Func {
	case "min", "max":
		if !want(2) {
			return nil
		}
		return kc.arith(c.Pos, ir.Op(c.Func), args[0], args[1])
	case "select":
		if !want(3) {
			return nil
		}
		if args[0].Type() != ir.Bool {
			kc.errorf(c.Args[0].Pos, "select needs a comparison as its first argument, got %s", args[0].Type())
			return nil
		}
		t, ok := kc.unifyTypes(c.Pos, "select", args[1], args[2])
		if !ok {
			return nil
		}
		a, b := args[1], args[2]
		if a.Type() != t {
			a = &ir.Cast{X: a, T: t}
		}
		if b.Type() != t {
			b = &ir.Cast{X: b, T: t}
		}
		return &ir.Select{C: args[0], A: a, B: b}
	case "sum":
		kc.errorf(c.Pos, "sum needs its reduction indices: sum(k: expr)")
		return nil
	}
	kc.errorf(c.Pos, "unknown function %s: expected %s", c.Func, funcList)
	return nil
}

func (kc *kchecker) access(a *parse.Access) ir.Expr {
	if a.Index == nil {
		if v := kc.scope[a.Name]; v != nil {
			return &ir.VarVal{V: v, T: ir.Untyped}
		}
		switch n := kc.names[a.Name].(type) {
		case *ir.Dim:
			d := &ir.DimVal{D: n, T: ir.Untyped}
			kc.dimVals = append(kc.dimVals, d)
			return d
		case *ir.Tensor:
			if len(n.Shape) != 0 {
				kc.errorf(a.Pos, "%s has rank %d: index it, e.g. %s[%s]", n.Name, len(n.Shape), n.Name, strings.Repeat("_, ", len(n.Shape)-1)+"_")
				return nil
			}
			return kc.load(a, n, nil)
		}
		kc.errorf(a.Pos, "undefined: %s", a.Name)
		return nil
	}
	t, ok := kc.names[a.Name].(*ir.Tensor)
	if !ok {
		if kc.names[a.Name] != nil {
			kc.errorf(a.Pos, "%s is a dimension, not a tensor", a.Name)
		} else {
			kc.errorf(a.Pos, "undefined: %s", a.Name)
		}
		return nil
	}
	if t.Kind == ir.Scalar {
		kc.errorf(a.Pos, "%s is a scalar and cannot be indexed", a.Name)
		return nil
	}
	if len(a.Index.Exprs) != len(t.Shape) {
		kc.errorf(a.Pos, "%s has rank %d but is indexed with %d indices", t.Name, len(t.Shape), len(a.Index.Exprs))
		return nil
	}
	idx := make([]ir.IExpr, len(a.Index.Exprs))
	for i, e := range a.Index.Exprs {
		ix := kc.index(e)
		if ix == nil {
			return nil
		}
		idx[i] = ix
		if v, ok := ix.(ir.IVar); ok && !kc.explicit[v.V] {
			if v.V.Range == nil {
				v.V.Range = t.Shape[i]
			} else {
				kc.unify(a.Index.Exprs[i].Pos, fmt.Sprintf("index %s of %s", v.V.Name, t.Name), v.V.Range, t.Shape[i])
			}
		}
	}
	return kc.load(a, t, idx)
}

func (kc *kchecker) load(a *parse.Access, t *ir.Tensor, idx []ir.IExpr) ir.Expr {
	if t == kc.out {
		if len(idx) != len(kc.outVars) || !sameVars(idx, kc.outVars) {
			kc.errorf(a.Pos, "%s is read at other indices than it is written: the result would depend on the order of evaluation", t.Name)
			return nil
		}
	}
	if t.Kind == ir.Out && !kc.written[t] {
		kc.errorf(a.Pos, "output %s is read before it is written (declare it inout to pass its value in)", t.Name)
		return nil
	}
	return &ir.Load{T: t, Idx: idx}
}

func sameVars(idx []ir.IExpr, vs []*ir.Var) bool {
	for i, e := range idx {
		v, ok := e.(ir.IVar)
		if !ok || v.V != vs[i] {
			return false
		}
	}
	return true
}

// index converts an index expression: an affine combination of index variables, dims and integers.
// A name that is not yet bound becomes an implicit (Einstein) summation index.
func (kc *kchecker) index(e *parse.Expr) ir.IExpr {
	if e.Op != "" {
		kc.errorf(e.Pos, "an index cannot be a comparison")
		return nil
	}
	x := kc.indexTerm(e.Left.Left)
	for _, r := range e.Left.Rest {
		y := kc.indexTerm(r.Term)
		if x == nil || y == nil {
			return nil
		}
		if r.Op == "+" {
			x = ir.IAdd(x, y)
		} else {
			x = ir.ISub(x, y)
		}
	}
	return x
}

func (kc *kchecker) indexTerm(p *parse.Product) ir.IExpr {
	x := kc.indexAtom(p.Left)
	for _, r := range p.Rest {
		y := kc.indexAtom(r.Factor)
		if x == nil || y == nil {
			return nil
		}
		_, cx := x.(ir.IConst)
		_, cy := y.(ir.IConst)
		if r.Op != "*" || (!cx && !cy) {
			kc.errorf(r.Pos, "index expressions must be affine: only multiplication by an integer constant is allowed")
			return nil
		}
		x = ir.IMul(x, y)
	}
	return x
}

func (kc *kchecker) indexAtom(u *parse.Unary) ir.IExpr {
	if u.Neg != nil {
		x := kc.indexAtom(u.Neg)
		if x == nil {
			return nil
		}
		return ir.IMul(ir.IConst{V: -1}, x)
	}
	p := u.Primary
	switch {
	case p.Number != nil:
		v, err := strconv.Atoi(*p.Number)
		if err != nil {
			kc.errorf(p.Pos, "index constant %s is not an integer", *p.Number)
			return nil
		}
		return ir.IConst{V: v}
	case p.Paren != nil:
		return kc.index(p.Paren)
	case p.Access != nil && p.Access.Index == nil:
		name := p.Access.Name
		if v := kc.scope[name]; v != nil {
			return ir.IVar{V: v}
		}
		switch n := kc.names[name].(type) {
		case *ir.Dim:
			return ir.IDim{D: n}
		case *ir.Tensor:
			kc.errorf(p.Pos, "%s is a tensor; indices must be index variables, dims or integers", name)
			return nil
		}
		if !kc.checkName(p.Pos, name) {
			return nil
		}
		// Einstein summation: a new name on the right is summed over.
		v := kc.newVar(name, p.Pos)
		kc.scope[name] = v
		kc.free = append(kc.free, v)
		return ir.IVar{V: v}
	}
	kc.errorf(p.Pos, "indices must be affine in index variables (like i, k+1, 2*i)")
	return nil
}
