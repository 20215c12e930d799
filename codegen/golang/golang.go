// Package golang is kgen's portable backend: it emits plain Go from the loop IR. Its output is the whole
// generated package on GOARCHes without an assembly backend and under the purego build tag, and the
// frame (validating wrappers, cache-blocked loops, packing) around the assembly microkernels elsewhere.
// The microkernel it emits for a GEMM slot is register-blocked and unrolled scalar Go.
package golang

import (
	"bytes"
	"fmt"
	"go/format"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

// Backend is the portable Go backend.
type Backend struct {
	// Module is the import path of kgen itself (for the rt and f16 packages).
	Module string
	// TestImports adds the interpreter-based test file.
	Tests bool
}

// Name implements codegen.Backend.
func (Backend) Name() string { return "go" }

// Generate implements codegen.Backend.
func (b Backend) Generate(p *codegen.Package) ([]codegen.File, error) {
	mod := b.Module
	if mod == "" {
		mod = "github.com/kgen-dev/kgen"
	}
	if len(p.Kernels) == 0 {
		return nil, fmt.Errorf("package %s has no kernels: nothing to generate", p.Name)
	}
	var files []codegen.File
	for _, k := range p.Kernels {
		g := &gen{mod: mod, k: k.K, f: k.F, imports: map[string]bool{}}
		g.pairs, _ = codegen.PairPanels(k.F)
		src, err := g.file(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", k.K.Name, err)
		}
		files = append(files, codegen.File{Name: k.K.Name + ".go", Data: src})
	}
	sup, err := support(p, mod)
	if err != nil {
		return nil, err
	}
	files = append(files, codegen.File{Name: "kgen.go", Data: sup})
	if b.Tests {
		t, err := testFile(p, mod)
		if err != nil {
			return nil, err
		}
		files = append(files, codegen.File{Name: "kgen_test.go", Data: t})
	}
	return files, nil
}

type gen struct {
	mod     string
	k       *ir.Kernel
	f       *ir.Func
	imports map[string]bool
	b       bytes.Buffer
	depth   int
	// hoisted allocations: emitted at function start (or parallel chunk start)
	hoisted map[*ir.Alloc]bool
	// scope lists the Go variables declared at the current point of the emitted function (for the
	// copies that keep a parallel loop's closure from moving them to the heap).
	scope []string
	// vloops are the kernel's vector-loop slots (codegen.VLoop), by loop
	vloops map[*ir.Loop]*codegen.VLoop
	// inWorker is set while emitting the body of a parallel loop's closure: code there runs on a pool
	// worker, so packs stay serial (a nested ParallelFor would wait on workers that are all busy).
	inWorker bool
	// pairs are the panel buffers of slots that may pack bf16 pairs (codegen.PairPanels): their packs
	// call packDBF16/packPBBF16, which a variant points at its own format.
	pairs map[*ir.Tensor]bool
}

func (g *gen) line(format string, a ...any) {
	g.b.WriteString(strings.Repeat("\t", g.depth))
	fmt.Fprintf(&g.b, format, a...)
	g.b.WriteByte('\n')
}

// goType is the Go storage type of d; compute values use goType(d.Compute()).
func goType(d ir.DType) string {
	switch d {
	case ir.F64:
		return "float64"
	case ir.F32:
		return "float32"
	case ir.F16:
		return "f16.F16"
	case ir.BF16:
		return "f16.BF16"
	case ir.I32:
		return "int32"
	case ir.I8:
		return "int8"
	case ir.Bool:
		return "bool"
	}
	return "invalid"
}

func suffix(d ir.DType) string {
	switch d.Compute() {
	case ir.F64:
		return "64"
	case ir.F32:
		return "32"
	case ir.I32:
		return "I32"
	case ir.I8:
		return "I8"
	}
	return "X"
}

// params lists the Go parameters of a kernel: dims first (first-appearance order), then the declared
// parameters in order.
func params(k *ir.Kernel) []string {
	var out []string
	if len(k.Dims) > 0 {
		names := make([]string, len(k.Dims))
		for i, d := range k.Dims {
			names[i] = d.Name
		}
		out = append(out, strings.Join(names, ", ")+" int")
	}
	for _, p := range k.Params {
		if p.Kind == ir.Scalar {
			out = append(out, p.Name+" "+goType(p.Type))
		} else {
			out = append(out, p.Name+" []"+goType(p.Type))
		}
	}
	return out
}

func args(k *ir.Kernel) string {
	var out []string
	for _, d := range k.Dims {
		out = append(out, d.Name)
	}
	for _, p := range k.Params {
		out = append(out, p.Name)
	}
	return strings.Join(out, ", ")
}

func shapeExpr(t *ir.Tensor) (string, []string) {
	var names []string
	for _, d := range t.Shape {
		names = append(names, d.Name)
	}
	if len(names) == 0 {
		return "1", nil
	}
	return strings.Join(names, "*"), names
}

func (g *gen) file(p *codegen.Package) ([]byte, error) {
	k := g.k
	name := codegen.GoName(k.Name)
	var body bytes.Buffer
	g.b = bytes.Buffer{}
	// exported wrapper
	g.line("// %s runs kernel %s from %s:", name, k.Name, p.Source)
	g.line("//")
	for _, l := range strings.Split(k.Source, "\n") {
		g.line("//\t%s", strings.TrimRight(l, " \t"))
	}
	g.line("//")
	g.line("// Tensors are row-major slices whose lengths must match the dims; nothing is written when an")
	g.line("// error is returned.")
	g.line("func %s(%s) error {", name, strings.Join(params(k), ", "))
	g.depth++
	for _, d := range k.Dims {
		g.line("if uint(%s) > rt.MaxDim {", d.Name)
		g.line("\treturn rt.DimError(%q, %q, %s)", k.Name, d.Name, d.Name)
		g.line("}")
	}
	for _, t := range k.Params {
		if t.Kind == ir.Scalar {
			continue
		}
		shape, dims := shapeExpr(t)
		dl := ""
		if len(dims) > 0 {
			dl = ", " + strings.Join(dims, ", ")
		}
		if len(dims) == 2 {
			// The common case without a call (dims are known non-negative here); CheckLen reports.
			if dims[0] == dims[1] {
				g.line("if uint(%s) > rt.MaxHalf || %s*%s != len(%s) {", dims[0], dims[0], dims[1], t.Name)
			} else {
				g.line("if uint(%s) > rt.MaxHalf || uint(%s) > rt.MaxHalf || %s*%s != len(%s) {", dims[0], dims[1], dims[0], dims[1], t.Name)
			}
			g.depth++
		}
		g.line("if err := rt.CheckLen(%q, %q, len(%s), %q%s); err != nil {", k.Name, t.Name, t.Name, shape, dl)
		g.line("\treturn err")
		g.line("}")
		if len(dims) == 2 {
			g.depth--
			g.line("}")
		}
	}
	if err := g.boundsChecks(); err != nil {
		return nil, err
	}
	var outs []string
	for _, t := range k.Params {
		if t.Kind == ir.Out || t.Kind == ir.InOut {
			if len(t.Shape) == 0 {
				outs = nil // a one-element output is never empty
				break
			}
			outs = append(outs, "len("+t.Name+") == 0")
		}
	}
	if len(outs) > 0 {
		g.line("if %s {", strings.Join(outs, " && "))
		g.line("\treturn nil // nothing to write (and no loop over a huge dim of an empty tensor)")
		g.line("}")
	}
	g.line("%sImpl(%s)", k.Name, args(k))
	g.line("return nil")
	g.depth--
	g.line("}")
	g.line("")
	// implementation
	g.line("func %sImpl(%s) {", k.Name, strings.Join(params(k), ", "))
	g.depth++
	g.scope = nil
	for _, d := range k.Dims {
		g.scope = append(g.scope, d.Name)
	}
	for _, p := range k.Params {
		g.scope = append(g.scope, p.Name)
	}
	for _, t := range k.Temps {
		// A let tensor is written before it is read (check makes sure), so a pooled buffer will do.
		shape, _ := shapeExpr(t)
		g.scratch(t.Name, t.Type, shape, true)
		g.scope = append(g.scope, t.Name)
	}
	g.hoisted = map[*ir.Alloc]bool{}
	g.vloops = map[*ir.Loop]*codegen.VLoop{}
	vls := codegen.VLoops(codegen.Kernel{K: g.k, F: g.f})
	for _, v := range vls {
		g.vloops[v.Loop] = v
	}
	g.hoistAllocs(g.f.Body, false, true)
	if err := g.nodes(g.f.Body); err != nil {
		return nil, err
	}
	g.depth--
	g.line("}")
	for _, v := range vls {
		g.line("")
		g.line("// %s runs a Vector loop of %s on a SIMD variant (codegen.VLoop); nil runs the Go loop.", v.Var, k.Name)
		g.line("var %s %s", v.Var, v.Signature())
		if v.HasF16() {
			g.imports[g.mod+"/f16"] = true
		}
	}
	body.Write(g.b.Bytes())

	var out bytes.Buffer
	out.WriteString(codegen.Header + "\n")
	fmt.Fprintf(&out, "package %s\n\n", p.Name)
	g.imports[g.mod+"/rt"] = true
	out.WriteString(importBlock(g.imports))
	out.Write(body.Bytes())
	src, err := format.Source(out.Bytes())
	if err != nil {
		return nil, fmt.Errorf("generated Go does not parse: %v\n%s", err, out.String())
	}
	return dropBlankUses(src)
}

// importBlock groups imports as goimports does: the standard library, a blank line, the others.
func importBlock(imports map[string]bool) string {
	var std, other []string
	for i := range imports {
		first, _, _ := strings.Cut(i, "/")
		if strings.Contains(first, ".") {
			other = append(other, "\t"+strconv.Quote(i))
		} else {
			std = append(std, "\t"+strconv.Quote(i))
		}
	}
	sort.Strings(std)
	sort.Strings(other)
	groups := std
	if len(std) > 0 && len(other) > 0 {
		groups = append(groups, "")
	}
	groups = append(groups, other...)
	return "import (\n" + strings.Join(groups, "\n") + "\n)\n\n"
}

// scratch declares name as a buffer of n elements of type t from rt's pools (their contents are
// undefined until written, which the loop IR's Alloc and let tensors allow: no allocation per call),
// given back with a deferred release when deferred is set (the caller releases it otherwise, with
// g.release). f32 and f64 buffers use rt.Scratch32/64, other types the generic rt.Scratch.
func (g *gen) scratch(name string, t ir.DType, n string, deferred bool) {
	if t == ir.F32 || t == ir.F64 {
		g.line("%s := rt.Scratch%s(%s)", name, suffix(t), n)
	} else {
		if t == ir.F16 || t == ir.BF16 {
			g.imports[g.mod+"/f16"] = true
		}
		g.line("%s := rt.Scratch[%s](%s)", name, goType(t), n)
	}
	if deferred {
		g.line("defer %s", g.release(name, t))
	}
}

// release is the call that gives back a buffer of type t obtained through scratch.
func (g *gen) release(name string, t ir.DType) string {
	if t == ir.F32 || t == ir.F64 {
		return fmt.Sprintf("rt.Release%s(%s)", suffix(t), name)
	}
	return fmt.Sprintf("rt.Release(%s)", name)
}

// boundsChecks emits the run-time checks of the kernel's affine load indices (codegen.IndexChecks).
func (g *gen) boundsChecks() error {
	checks, err := codegen.IndexChecks(g.k)
	for _, c := range checks {
		g.line("// %s", c.Comment)
		g.line("if %s {", c.Cond)
		g.line("\t%s", c.Return)
		g.line("}")
	}
	return err
}

// hoistAllocs marks scratch allocations whose size uses no loop variable: they are made once, at the
// start of the function, of the enclosing parallel chunk or of a branch. deferred gives them back with a
// deferred release; otherwise the caller releases the returned buffers after the body (g.releaseAll):
// branches may sit inside loops, and one defer inside a loop makes Go run every defer of the function
// through the run-time defer chain on every return (about 10 ns per call of an 8×8×8 sgemm, which never
// takes the branch that allocates).
func (g *gen) hoistAllocs(body []ir.Node, inParallel, deferred bool) []*ir.Alloc {
	var out []*ir.Alloc
	ir.WalkNodes(body, func(n ir.Node) bool {
		if a, ok := n.(*ir.Alloc); ok {
			usesVar := false
			ir.IVars(a.T.Size, func(*ir.Var) { usesVar = true })
			if !usesVar && !inParallel {
				g.hoisted[a] = true
				g.scratch(a.T.Name, a.T.Type, g.iexpr(a.T.Size), deferred)
				g.scope = append(g.scope, a.T.Name)
				out = append(out, a)
			}
		}
		if l, ok := n.(*ir.Loop); ok && l.Kind == ir.Parallel {
			return false
		}
		if _, ok := n.(*ir.If); ok {
			return false // each branch allocates what it needs (see node)
		}
		return true
	})
	return out
}

// releaseAll gives back the buffers hoistAllocs took without a deferred release.
func (g *gen) releaseAll(as []*ir.Alloc) {
	for _, a := range as {
		g.line("%s", g.release(a.T.Name, a.T.Type))
	}
}

// runTimeSyms are the Go expressions of the IR's run-time symbols (ir.RunTimeSyms; the verifier admits no
// other, TestRunTimeSyms keeps the two lists equal).
var runTimeSyms = map[string]string{"Workers": "rt.Workers()"}

// iexpr renders an index expression, simplified (ir.Simplify), with only the parentheses Go needs.
func (g *gen) iexpr(e ir.IExpr) string {
	s, _ := g.iexprPrec(ir.Simplify(e))
	return s
}

// iexprPrec renders e and returns its Go operator precedence (4 for + -, 5 for * /, 6 for operands).
func (g *gen) iexprPrec(e ir.IExpr) (string, int) {
	switch e := e.(type) {
	case ir.IConst:
		return strconv.Itoa(e.V), 6
	case ir.IVar:
		return e.V.Name, 6
	case ir.IDim:
		return e.D.Name, 6
	case ir.ISym:
		if e.RunTime {
			return runTimeSyms[e.RunTimeField()], 6
		}
		slot, field, _ := strings.Cut(e.Name, ".")
		return codegen.SlotVar(slot) + "." + field, 6
	case ir.IBin:
		x, px := g.iexprPrec(e.X)
		y, py := g.iexprPrec(e.Y)
		switch e.Op {
		case 'm':
			return "min(" + x + ", " + y + ")", 6
		case 'M':
			return "max(" + x + ", " + y + ")", 6
		}
		// '/' truncates in Go: the IR's floor division, since dividends are non-negative here
		// (ir.Simplify keeps them so).
		prec := 4 // + - ^
		switch e.Op {
		case '*', '/', '%', '&', '<', '>': // Go's multiplicative operators, shifts and & included
			prec = 5
		}
		if px < prec {
			x = "(" + x + ")"
		}
		if py <= prec {
			y = "(" + y + ")"
		}
		return x + " " + ir.IOpString(e.Op) + " " + y, prec
	}
	return "?", 6
}

// distance is the flat offset of element to of t minus that of element from (whose offset the variable
// base holds): an expression of the dims when every index differs by a constant (the usual case: a row
// stride is N), otherwise the difference of the two offsets.
func (g *gen) distance(t *ir.Tensor, from, to []ir.IExpr, base string) string {
	if t.Kind != ir.Scratch {
		var s ir.IExpr = ir.IConst{V: 0} // Σ (to[i] - from[i]) · Π shape[i+1:], by Horner's rule
		for i := range from {
			c, ok := ir.Simplify(ir.ISub(to[i], from[i])).(ir.IConst)
			if !ok {
				s = nil
				break
			}
			if i > 0 {
				s = ir.IMul(s, ir.IDim{D: t.Shape[i]})
			}
			s = ir.IAdd(s, c)
		}
		if s != nil {
			return g.iexpr(s)
		}
	}
	return "(" + g.offset(t, to) + ") - " + base
}

// offset is the flat element offset of an index list into t.
func (g *gen) offset(t *ir.Tensor, idx []ir.IExpr) string {
	if t.Kind == ir.Scratch {
		return g.iexpr(idx[0])
	}
	if len(idx) == 0 {
		return "0"
	}
	flat := idx[0]
	for i := 1; i < len(idx); i++ {
		flat = ir.IAdd(ir.IMul(flat, ir.IDim{D: t.Shape[i]}), idx[i])
	}
	return g.iexpr(flat)
}

func floatLit(v float64, t ir.DType) string {
	ct := goType(t.Compute())
	switch {
	case math.IsInf(v, 1):
		return ct + "(math.Inf(1))"
	case math.IsInf(v, -1):
		return ct + "(math.Inf(-1))"
	case v != v:
		return ct + "(math.NaN())"
	}
	return ct + "(" + strconv.FormatFloat(v, 'g', -1, 64) + ")"
}

// expr renders e as a Go expression of type goType(e.Type().Compute()) that can stand as an operand
// anywhere (a binary operation comes parenthesized).
func (g *gen) expr(e ir.Expr) string {
	x, prec := g.exprPrec(e)
	if prec < precUnary {
		return "(" + x + ")"
	}
	return x
}

// exprTop renders e for a place that needs no parentheses around it: the right side of an
// assignment, a call argument.
func (g *gen) exprTop(e ir.Expr) string {
	x, _ := g.exprPrec(e)
	return x
}

// Go's operator precedences (the spec's five binary levels, and operands above them).
const (
	precCompare = 3
	precAdd     = 4 // + - | ^
	precMul     = 5 // * / % << >> & &^
	precUnary   = 6 // unary operators, operands, calls
)

// operand parenthesizes a rendered operand of a binary operator of precedence prec: the left operand
// when it binds less tightly, the right one also at the same level (Go's binary operators associate to
// the left), so that the printed expression has exactly the IR's tree and order of evaluation.
func operand(x string, px, prec int, right bool) string {
	if px < prec || (right && px == prec) {
		return "(" + x + ")"
	}
	return x
}

// exprPrec renders e and returns its precedence.
func (g *gen) exprPrec(e ir.Expr) (string, int) {
	switch e := e.(type) {
	case *ir.Const:
		if math.IsInf(e.Val, 0) || e.Val != e.Val {
			g.imports["math"] = true
		}
		if e.T == ir.Bool {
			return strconv.FormatBool(e.Val != 0), precUnary
		}
		return floatLit(e.Val, e.T), precUnary
	case *ir.Load:
		var v string
		if e.T.Kind == ir.Scalar {
			v = e.T.Name
		} else {
			v = e.T.Name + "[" + g.offset(e.T, e.Idx) + "]"
		}
		switch e.T.Type {
		case ir.F16, ir.BF16:
			g.imports[g.mod+"/f16"] = true
			return v + ".Float32()", precUnary
		}
		return v, precUnary
	case *ir.DimVal:
		return goType(e.T.Compute()) + "(" + e.D.Name + ")", precUnary
	case *ir.VarVal:
		return goType(e.T.Compute()) + "(" + e.V.Name + ")", precUnary
	case *ir.PlanVal:
		slot, field, _ := strings.Cut(e.Name, ".")
		return goType(e.T.Compute()) + "(" + codegen.SlotVar(slot) + "." + field + ")", precUnary
	case *ir.Local:
		return e.L.Name, precUnary
	case *ir.Cast:
		from := e.X.Type().Compute()
		switch e.T {
		case ir.F16:
			g.imports[g.mod+"/f16"] = true
			return "f16.FromFloat64(float64(" + g.exprTop(e.X) + ")).Float32()", precUnary
		case ir.BF16:
			g.imports[g.mod+"/f16"] = true
			return "f16.BF16FromFloat64(float64(" + g.exprTop(e.X) + ")).Float32()", precUnary
		case ir.I32, ir.I8:
			if from.IsFloat() {
				return "toInt" + suffix(e.T) + "(float64(" + g.exprTop(e.X) + "))", precUnary
			}
		}
		if from == e.T.Compute() {
			return g.exprPrec(e.X)
		}
		return goType(e.T.Compute()) + "(" + g.exprTop(e.X) + ")", precUnary
	case *ir.Select:
		if c, ok := constBool(e.C); ok {
			if c {
				return g.exprPrec(e.A)
			}
			return g.exprPrec(e.B)
		}
		if sameConst(e.A, e.B) {
			return g.exprPrec(e.A)
		}
		return "sel(" + g.exprTop(e.C) + ", " + g.exprTop(e.A) + ", " + g.exprTop(e.B) + ")", precUnary
	case *ir.Unary:
		t := e.T.Compute()
		switch e.Op {
		case ir.Neg:
			x := g.expr(e.X)
			if strings.HasPrefix(x, "-") {
				x = "(" + x + ")" // not --
			}
			return "-" + x, precUnary
		case ir.Abs, ir.Sqrt, ir.Exp, ir.Log, ir.Tanh:
			x := g.exprTop(e.X)
			if t.IsInt() {
				return "abs" + suffix(t) + "(" + x + ")", precUnary
			}
			g.imports["math"] = true
			fn := map[ir.Op]string{ir.Abs: "Abs", ir.Sqrt: "Sqrt", ir.Exp: "Exp", ir.Log: "Log", ir.Tanh: "Tanh"}[e.Op]
			if t == ir.F64 {
				return "math." + fn + "(" + x + ")", precUnary
			}
			return "float32(math." + fn + "(float64(" + x + ")))", precUnary
		case ir.Relu:
			return "relu" + suffix(t) + "(" + g.exprTop(e.X) + ")", precUnary
		case ir.Sigmoid:
			return "sigmoid" + suffix(t) + "(" + g.exprTop(e.X) + ")", precUnary
		}
	case *ir.Binary:
		t := e.T.Compute()
		switch {
		case e.Op == ir.Max, e.Op == ir.Min:
			return string(e.Op) + suffix(e.T.Compute()) + "(" + g.exprTop(e.X) + ", " + g.exprTop(e.Y) + ")", precUnary
		case e.Op == ir.Div && !e.Op.IsCompare() && t.IsInt():
			return "div" + suffix(t) + "(" + g.exprTop(e.X) + ", " + g.exprTop(e.Y) + ")", precUnary
		}
		if c, ok := constBool(e); ok {
			return strconv.FormatBool(c), precUnary
		}
		if x, y, ok := intCompare(e); ok {
			return x + " " + string(e.Op) + " " + y, precCompare
		}
		prec := precAdd
		switch {
		case e.Op.IsCompare():
			prec = precCompare
		case e.Op == ir.Mul || e.Op == ir.Div:
			prec = precMul
		}
		x, px := g.exprPrec(e.X)
		y, py := g.exprPrec(e.Y)
		return operand(x, px, prec, false) + " " + string(e.Op) + " " + operand(y, py, prec, true), prec
	}
	return "?", precUnary
}

// exactConst returns the value of a constant as its type holds it, false when the IR's float64 is not
// exactly that (an f32 constant with more digits, a fraction in an integer type, ...).
func exactConst(e ir.Expr) (float64, ir.DType, bool) {
	c, ok := e.(*ir.Const)
	if !ok || c.Val != c.Val {
		return 0, 0, false
	}
	switch c.T {
	case ir.F64:
		return c.Val, c.T, true
	case ir.F32:
		return c.Val, c.T, float64(float32(c.Val)) == c.Val
	case ir.I32, ir.Bool:
		return c.Val, c.T, c.Val == math.Trunc(c.Val) && math.Abs(c.Val) < 1<<31
	}
	return 0, 0, false
}

// constBool folds a boolean constant, or a comparison of two exact constants of one type (the
// generated code's select(pc == 0, ...) once pc is known), so the generated Go does not compare 0 with 0.
func constBool(e ir.Expr) (value, ok bool) {
	if c, isConst := e.(*ir.Const); isConst && c.T == ir.Bool {
		return c.Val != 0, true
	}
	b, isBin := e.(*ir.Binary)
	if !isBin || !b.Op.IsCompare() {
		return false, false
	}
	x, tx, okx := exactConst(b.X)
	y, ty, oky := exactConst(b.Y)
	if !okx || !oky || tx != ty {
		return false, false
	}
	switch b.Op {
	case ir.Lt:
		return x < y, true
	case ir.Le:
		return x <= y, true
	case ir.Gt:
		return x > y, true
	case ir.Ge:
		return x >= y, true
	case ir.Eq:
		return x == y, true
	case ir.Ne:
		return x != y, true
	}
	return false, false
}

// intCompare renders a comparison of a dim or index variable, converted to f64, with an integral f64
// constant below 2^53 as the comparison of the integers (if float64(M) <= float64(4) reads M <= 4):
// rounding to f64 is monotone and keeps such a constant exact, so both agree for every int.
func intCompare(b *ir.Binary) (x, y string, ok bool) {
	if !b.Op.IsCompare() {
		return "", "", false
	}
	side := func(e ir.Expr) (string, bool, bool) { // text, is a constant, usable
		switch e := e.(type) {
		case *ir.DimVal:
			return e.D.Name, false, e.T == ir.F64
		case *ir.VarVal:
			return e.V.Name, false, e.T == ir.F64
		case *ir.Const:
			v := e.Val
			return strconv.FormatFloat(v, 'f', -1, 64), true, e.T == ir.F64 && v == math.Trunc(v) && math.Abs(v) < 1<<53
		}
		return "", false, false
	}
	x, cx, okx := side(b.X)
	y, cy, oky := side(b.Y)
	return x, y, okx && oky && cx != cy
}

// sameConst reports whether a and b are the same constant of the same type.
func sameConst(a, b ir.Expr) bool {
	x, okx := a.(*ir.Const)
	y, oky := b.(*ir.Const)
	return okx && oky && x.T == y.T && math.Float64bits(x.Val) == math.Float64bits(y.Val)
}

// epArg renders a Micro's epilogue code as an int argument: a literal when it folds to a constant.
func (g *gen) epArg(e ir.Expr) string {
	for {
		s, ok := e.(*ir.Select)
		if !ok {
			break
		}
		if c, ok := constBool(s.C); ok {
			e = s.A
			if !c {
				e = s.B
			}
			continue
		}
		if sameConst(s.A, s.B) {
			e = s.A
			continue
		}
		break
	}
	if v, _, ok := exactConst(e); ok {
		return strconv.Itoa(int(v))
	}
	return "int(" + g.exprTop(e) + ")"
}

// stmtText is a statement as the kdsl source writes it (its line of the kernel's source), or, where the
// source does not have it on one line, as the IR prints it.
func (g *gen) stmtText(s *ir.Stmt) string {
	lines := strings.Split(g.k.Source, "\n")
	if i := s.Pos.Line - g.k.Pos.Line; s.Pos.Line > 0 && i >= 0 && i < len(lines) {
		l := strings.TrimSpace(lines[i])
		target := strings.TrimSpace(strings.TrimPrefix(l, "let "))
		if strings.HasPrefix(target, s.Out.Name) && strings.Count(l, "(") == strings.Count(l, ")") &&
			strings.Count(l, "[") == strings.Count(l, "]") && strings.Contains(l, "=") {
			return l
		}
	}
	return s.Out.Name + "[" + varNames(s.Vars) + "] = " + ir.FormatExpr(s.Value)
}

// increment is a loop's post statement: v++ or v += step.
func increment(v, step string) string {
	if step == "1" {
		return v + "++"
	}
	return v + " += " + step
}

// assign writes dst = v, as dst op= y when v is (dst op y) for an arithmetic op (self tells whether an
// operand is dst itself). Go evaluates x op= y as x = x op (y): the same operations in the same order.
func (g *gen) assign(dst string, v ir.Expr, self func(ir.Expr) bool) {
	if b, ok := v.(*ir.Binary); ok && self(b.X) && !b.Op.IsCompare() {
		t := b.T.Compute()
		switch {
		case b.Op == ir.Add, b.Op == ir.Sub, b.Op == ir.Mul, b.Op == ir.Div && !t.IsInt():
			if b.X.Type().Compute() == t {
				g.line("%s %s= %s", dst, b.Op, g.exprTop(b.Y))
				return
			}
		}
	}
	g.line("%s = %s", dst, g.exprTop(v))
}

// storeValue converts a compute value for storing into t.
func (g *gen) storeValue(t *ir.Tensor, v string) string {
	switch t.Type {
	case ir.F16:
		g.imports[g.mod+"/f16"] = true
		return "f16.FromFloat32(" + v + ")"
	case ir.BF16:
		g.imports[g.mod+"/f16"] = true
		return "f16.BF16FromFloat32(" + v + ")"
	}
	return v
}

func (g *gen) nodes(body []ir.Node) error {
	mark := len(g.scope)
	defer func() { g.scope = g.scope[:mark] }()
	for _, n := range body {
		if err := g.node(n); err != nil {
			return err
		}
	}
	return nil
}

var identRe = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// closureCopies declares fresh copies of the in-scope variables the closure text uses, so that the
// closure captures the copies (made only on the parallel path) rather than moving the originals to the
// heap on every call.
func (g *gen) closureCopies(closure, loopVar string) {
	used := map[string]bool{}
	for _, id := range identRe.FindAllString(closure, -1) {
		used[id] = true
	}
	seen := map[string]bool{}
	var names []string
	for _, n := range g.scope {
		if used[n] && n != loopVar && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return
	}
	list := strings.Join(names, ", ")
	g.line("%s := %s", list, list)
	g.line("%s = %s", strings.Repeat("_, ", len(names)-1)+"_", list)
}

func (g *gen) node(n ir.Node) error {
	switch n := n.(type) {
	case *ir.Nest:
		for _, s := range n.Stmts {
			g.line("// %s", g.stmtText(s))
		}
		return g.nodes(n.Body)
	case *ir.Loop:
		lo, hi, step := g.iexpr(n.Lo), g.iexpr(n.Hi), g.iexpr(n.Step)
		v := n.Var.Name
		if n.Kind == ir.Parallel {
			cost := "1"
			if n.Cost != nil {
				// the cost expression may mention the loop variable at its first value
				cost = g.iexpr(ir.SubstIExpr(n.Cost, map[*ir.Var]ir.IExpr{n.Var: n.Lo}))
			}
			// Small loops run inline, without building the closure the worker pool needs.
			g.line("if cost_ := %s; rt.Inline(%s, %s, %s, cost_) {", cost, lo, hi, step)
			g.depth++
			mark := len(g.scope)
			serial := *n
			serial.Kind = ir.Serial
			hoisted := g.hoistAllocs(n.Body, false, false)
			if err := g.node(&serial); err != nil {
				return err
			}
			g.releaseAll(hoisted)
			g.scope = g.scope[:mark]
			g.depth--
			g.line("} else {")
			g.depth++
			saved := g.b
			g.b = bytes.Buffer{}
			g.line("rt.ParallelFor(%s, %s, %s, cost_, func(lo_, hi_ int) {", lo, hi, step)
			g.depth++
			g.hoistAllocs(n.Body, false, true)
			g.line("for %s := lo_; %s < hi_; %s {", v, v, increment(v, step))
			g.scope = append(g.scope, v)
			g.depth++
			outer := g.inWorker
			g.inWorker = true
			err := g.nodes(n.Body)
			g.inWorker = outer
			if err != nil {
				return err
			}
			g.depth--
			g.line("}")
			g.depth--
			g.line("})")
			g.scope = g.scope[:mark]
			closure := g.b.String()
			g.b = saved
			g.closureCopies(closure, v)
			g.b.WriteString(closure)
			g.depth--
			g.line("}")
			return nil
		} else if one, ok := ir.Simplify(ir.ISub(n.Hi, n.Lo)).(ir.IConst); ok && one.V == 1 {
			// a one-trip loop (a value computed once, passes.balanceRowBlocks): a block binding it
			g.line("{")
			g.depth++
			g.line("%s := %s", v, lo)
			mark := len(g.scope)
			g.scope = append(g.scope, v)
			if err := g.nodes(n.Body); err != nil {
				return err
			}
			g.scope = g.scope[:mark]
			g.depth--
			g.line("}")
			return nil
		} else if vl := g.vloops[n]; vl != nil {
			g.vloopCall(vl, v, lo, hi)
			g.line("for ; %s < %s; %s += %s {", v, hi, v, step)
		} else {
			g.line("for %s := %s; %s < %s; %s {", v, lo, v, hi, increment(v, step))
		}
		g.scope = append(g.scope, v)
		g.depth++
		if err := g.nodes(ir.ExpandLanes(n)); err != nil {
			return err
		}
		g.depth--
		g.line("}")
		g.scope = g.scope[:len(g.scope)-1]
		if g.vloops[n] != nil {
			g.depth--
			g.line("}")
		}
	case *ir.Decl:
		t, init := goType(n.L.T.Compute()), g.exprTop(n.Init)
		if isConversion(init, t) {
			g.line("%s := %s", n.L.Name, init)
		} else {
			g.line("var %s %s = %s", n.L.Name, t, init)
		}
		g.line("_ = %s", n.L.Name) // removed by dropBlankUses where the local is used
		g.scope = append(g.scope, n.L.Name)
	case *ir.Assign:
		g.assign(n.L.Name, n.Value, func(x ir.Expr) bool {
			l, ok := x.(*ir.Local)
			return ok && l.L == n.L
		})
	case *ir.Store:
		if c, ok := n.Value.(*ir.Cast); ok && c.T == ir.F16 && n.T.Type == ir.F16 && c.X.Type().Compute().IsFloat() {
			// Storing a value cast to f16 rounds once (rounding the widened f16 again changes nothing).
			g.imports[g.mod+"/f16"] = true
			fn := "f16.FromFloat32("
			if c.X.Type().Compute() == ir.F64 {
				fn = "f16.FromFloat64("
			}
			g.line("%s[%s] = %s%s)", n.T.Name, g.offset(n.T, n.Idx), fn, g.exprTop(c.X))
			break
		}
		dst := n.T.Name + "[" + g.offset(n.T, n.Idx) + "]"
		if n.T.Type == n.T.Type.Compute() {
			g.assign(dst, n.Value, func(x ir.Expr) bool {
				l, ok := x.(*ir.Load)
				return ok && l.T == n.T && g.offset(l.T, l.Idx) == g.offset(n.T, n.Idx)
			})
			break
		}
		g.line("%s = %s", dst, g.storeValue(n.T, g.exprTop(n.Value)))
	case *ir.Alloc:
		if g.hoisted[n] {
			return g.nodes(n.Body)
		}
		// sized by a loop variable: taken from the pool and given back after its body, each iteration
		g.line("{")
		g.depth++
		g.scratch(n.T.Name, n.T.Type, g.iexpr(n.T.Size), false)
		mark := len(g.scope)
		g.scope = append(g.scope, n.T.Name)
		err := g.nodes(n.Body)
		g.scope = g.scope[:mark]
		if err != nil {
			return err
		}
		g.line("%s", g.release(n.T.Name, n.T.Type))
		g.depth--
		g.line("}")
	case *ir.Pack:
		g.pack(n)
	case *ir.If:
		g.line("if %s {", g.exprTop(n.Cond))
		g.depth++
		mark := len(g.scope)
		hoisted := g.hoistAllocs(n.Then, false, false)
		if err := g.nodes(n.Then); err != nil {
			return err
		}
		g.releaseAll(hoisted)
		g.scope = g.scope[:mark]
		g.depth--
		g.line("} else {")
		g.depth++
		hoisted = g.hoistAllocs(n.Else, false, false)
		if err := g.nodes(n.Else); err != nil {
			return err
		}
		g.releaseAll(hoisted)
		g.scope = g.scope[:mark]
		g.depth--
		g.line("}")
	case *ir.Micro:
		switch n.Kind() {
		case ir.MicroUnpacked, ir.MicroRows, ir.MicroBatched:
			return g.microU(n)
		case ir.MicroUnbound:
			return fmt.Errorf("micro %s: no microkernel reads the operands A=%s B=%s (run the pack pass)", n.Slot, n.A, n.B)
		}
		bias := "nil"
		if n.Bias != nil {
			bias = n.Bias.Name + "[" + g.iexpr(n.BiasOff) + ":]"
		}
		g.line("%s.Micro(%s, %s[%s:], %s[%s:], %s[%s:], %s, %s, %s, %s, %s, %s, %s)", codegen.SlotVar(n.Slot),
			g.iexpr(n.KC), n.A.T.Name, g.iexpr(n.A.Off), n.B.T.Name, g.iexpr(n.B.Off), n.C.Name, g.iexpr(n.COff),
			g.iexpr(n.LDC), g.iexpr(n.M), g.iexpr(n.N), g.exprTop(n.Alpha), g.exprTop(n.Beta), bias, g.epArg(n.EP))
	case *ir.Transpose:
		g.transpose(n)
	default:
		return fmt.Errorf("cannot generate Go for %T", n)
	}
	return nil
}

// transpose emits one tile of a transpose through its slot (codegen.TransposeSlot), passing the source
// and destination sliced to exactly the elements the tile spans: the slot's routine cannot reach past
// them, and an offset outside the tensors fails here, in Go.
func (g *gen) transpose(t *ir.Transpose) {
	g.line("{")
	g.depth++
	g.line("rows_, cols_, lds_, ldd_ := %s, %s, %s, %s", g.iexpr(t.Rows), g.iexpr(t.Cols), g.iexpr(t.LDS), g.iexpr(t.LDD))
	g.line("if rows_ > 0 && cols_ > 0 {")
	g.line("	so_, do_ := %s, %s", g.iexpr(t.SrcOff), g.iexpr(t.DstOff))
	g.line("	%s.T(rows_, cols_, %s[so_:so_+(rows_-1)*lds_+cols_], lds_, %s[do_:do_+(cols_-1)*ldd_+rows_], ldd_)",
		codegen.SlotVar(t.Slot), t.Src.Name, t.Dst.Name)
	g.line("}")
	g.depth--
	g.line("}")
}

// vloopCall opens a block declaring the loop variable v at lo and, when a SIMD variant set the slot, lets
// it run the first part of the loop (codegen.VLoop contract); the Go loop then continues from v.
func (g *gen) vloopCall(vl *codegen.VLoop, v, lo, hi string) {
	g.line("{")
	g.depth++
	g.line("%s := %s", v, lo)
	g.line("if %s != nil && %s < %s {", vl.Var, v, hi)
	g.depth++
	args := []string{v, hi}
	for _, a := range vl.Access {
		args = append(args, a.T.Name, g.offset(a.T, a.Idx))
	}
	for _, e := range vl.Invariants {
		args = append(args, g.expr(e))
	}
	call := vl.Var + "(" + strings.Join(args, ", ") + ")"
	if vl.Reduction() {
		ln := vl.Loop.Reduce
		p := ln.Parts[0].Name
		var comb string
		switch ln.Op {
		case ir.Max, ir.Min:
			comb = string(ln.Op) + suffix(ln.Acc.T) + "(" + p + ", r_)"
		default:
			comb = "(" + p + " " + string(ln.Op) + " r_)"
		}
		g.line("if next_, r_ := %s; next_ > %s {", call, v)
		g.line("	%s, %s = next_, %s", v, p, comb)
		g.line("}")
	} else {
		g.line("%s = %s", v, call)
	}
	g.depth--
	g.line("}")
}

func varNames(vs []*ir.Var) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = v.Name
	}
	return strings.Join(s, ", ")
}

// pack emits the panel copy. The loop order follows the source's contiguous direction: when the
// depth index D moves along the source's last dimension, rows are read contiguously (A panels),
// otherwise columns are (B panels).
func (g *gen) pack(p *ir.Pack) {
	// Emit the copy into its own buffer, then run its panel loop on the worker pool: packing is
	// O(n²) but ran on one core between the parallel sections of a GEMM.
	saved := g.b
	g.b = bytes.Buffer{}
	g.packSerial(p)
	text := g.b.String()
	g.b = saved
	if g.inWorker {
		g.b.WriteString(text)
		return
	}
	const loop = "for p0_ := 0; p0_ < n_; p0_ += panel_ {"
	head, parHead := loop, "for p0_ := lo_; p0_ < hi_; p0_ += panel_ {"
	if strings.Contains(text, packBlockLoop) { // one call for the worker's whole chunk of panels
		head, parHead = packBlockLoop, "for p0_, e_ := lo_, hi_; p0_ < e_; p0_ = e_ {"
	}
	i, end := strings.Index(text, head), strings.LastIndex(strings.TrimRight(text, "\n"), "\n")
	if i < 0 || end < i {
		g.b.WriteString(text)
		return
	}
	body, tail := text[i+len(head):end], text[end:]
	// The conversion buffer of an f16 A pack (packFast) is given back after the panels are done.
	const release = "rt.Release32(cbuf_)"
	if j := strings.LastIndex(body, "\n"); j >= 0 && strings.TrimSpace(body[j:]) == release {
		body, tail = body[:j], "\n"+release+tail
	}
	par := text[:i] + "body_ := func(lo_, hi_ int) {\n" + parHead + body +
		"\n}\nrt.ParallelFor(0, n_, panel_, depth_*panel_, body_)" + tail
	g.closureCopies(par, "")
	g.b.WriteString(par)
}

// packBlockLoop runs its body once over all the panels [p0_, e_) of a pack (the parallel form gives each
// worker its chunk): for routines that pack many panels per call.
const packBlockLoop = "for p0_, e_ := 0, n_; p0_ < e_; p0_ = e_ {"

// packSerial emits the panel copy as one loop over the panels.
func (g *gen) packSerial(p *ir.Pack) {
	if g.packFast(p) {
		return
	}
	depthInner := false
	ir.Walk(p.Value, func(e ir.Expr) {
		if l, ok := e.(*ir.Load); ok && len(l.Idx) > 0 {
			ir.IVars(l.Idx[len(l.Idx)-1], func(v *ir.Var) {
				if v == p.D {
					depthInner = true
				}
			})
		}
	})
	P, D := p.P.Name, p.D.Name
	g.line("{")
	g.depth++
	g.line("n_, depth_, panel_, off_ := %s, %s, %s, %s", g.iexpr(p.N), g.iexpr(p.Depth), g.iexpr(p.Panel), g.iexpr(p.DstOff))
	g.line("for p0_ := 0; p0_ < n_; p0_ += panel_ {")
	g.depth++
	g.line("dst_ := %s[off_+p0_*depth_ : off_+(p0_+panel_)*depth_]", p.Dst.Name)
	g.line("w_ := min(panel_, n_-p0_)")
	val := g.exprTop(p.Value)
	if depthInner {
		g.line("for q_ := 0; q_ < w_; q_++ {")
		g.line("\t%s := p0_ + q_", P)
		g.line("\tfor %s := 0; %s < depth_; %s++ {", D, D, D)
		g.line("\t\tdst_[%s*panel_+q_] = %s", D, val)
		g.line("\t}")
		g.line("}")
		g.line("for q_ := w_; q_ < panel_; q_++ {")
		g.line("\tfor d_ := 0; d_ < depth_; d_++ {")
		g.line("\t\tdst_[d_*panel_+q_] = 0")
		g.line("\t}")
		g.line("}")
	} else {
		g.line("for %s := 0; %s < depth_; %s++ {", D, D, D)
		g.line("\trow_ := dst_[%s*panel_ : %s*panel_+panel_]", D, D)
		g.line("\tfor q_ := 0; q_ < w_; q_++ {")
		g.line("\t\t%s := p0_ + q_", P)
		g.line("\t\trow_[q_] = %s", val)
		g.line("\t}")
		g.line("\tfor q_ := w_; q_ < panel_; q_++ {")
		g.line("\t\trow_[q_] = 0")
		g.line("\t}")
		g.line("}")
	}
	g.depth--
	g.line("}")
	g.depth--
	g.line("}")
}

// packSource matches a Pack whose Value is a plain load (possibly widened by a cast) and returns the load
// and a function rendering the conversion of one source element.
func (g *gen) packSource(p *ir.Pack) (*ir.Load, func(string) string) {
	v := p.Value
	var cast *ir.Cast
	if c, ok := v.(*ir.Cast); ok {
		cast, v = c, c.X
	}
	l, ok := v.(*ir.Load)
	if !ok || l.T.Kind == ir.Scratch || len(l.Idx) == 0 {
		return nil, nil
	}
	conv := func(x string) string {
		switch l.T.Type {
		case ir.F16, ir.BF16:
			g.imports[g.mod+"/f16"] = true
			x += ".Float32()"
		case ir.F32, ir.F64:
		default:
			return ""
		}
		if cast != nil && cast.T.Compute() != l.T.Type.Compute() {
			x = goType(cast.T.Compute()) + "(" + x + ")"
		}
		return x
	}
	if conv("x") == "" {
		return nil, nil
	}
	return l, conv
}

// unitIn reports whether consecutive values of v read consecutive elements of l.
func unitIn(l *ir.Load, v *ir.Var) bool { return ir.Stride(l.Idx, v) == 1 }

// packFast emits the panel copy for a plain source with a unit-stride direction: B-like panels copy
// whole runs of a source row per depth step; A-like panels walk one contiguous source row per panel
// row. No index arithmetic per element.
func (g *gen) packFast(p *ir.Pack) bool {
	l, conv := g.packSource(p)
	if l == nil {
		return false
	}
	zero := func(v *ir.Var) string {
		idx := make([]ir.IExpr, len(l.Idx))
		for i, ix := range l.Idx {
			idx[i] = ir.SubstIExpr(ix, map[*ir.Var]ir.IExpr{v: ir.IConst{V: 0}})
		}
		return g.offset(l.T, idx)
	}
	P, D := p.P.Name, p.D.Name
	pair := g.pairs[p.Dst] && codegen.PairPackable(p)
	if pair || conv("x") == "x" && (l.T.Type == ir.F32 || l.T.Type == ir.F64) && (unitIn(l, p.P) || unitIn(l, p.D)) {
		// A plain copy through packD (one call per panel) or packPB (one call for all the panels: each
		// source row is then read left to right; a panel at a time it would be KC lines a row apart,
		// which the prefetchers do not follow). support.go has both; a variant may run them in assembly.
		idxAt := func(dp, dd int) []ir.IExpr {
			idx := make([]ir.IExpr, len(l.Idx))
			m := map[*ir.Var]ir.IExpr{p.P: ir.IAdd(ir.IVar{V: p.P}, ir.IConst{V: dp}), p.D: ir.IConst{V: dd}}
			for i, ix := range l.Idx {
				idx[i] = ir.SubstIExpr(ix, m)
			}
			return idx
		}
		// the source's distance between consecutive elements along the panel (dp) or the depth (dd)
		step := func(dp, dd int) string { return g.distance(l.T, idxAt(0, 0), idxAt(dp, dd), "b_") }
		// b_ is clamped to len: with an empty reduction (depth 0) nothing is read and b_ may lie past the end.
		src := fmt.Sprintf("%s[min(b_, len(%s)):]", l.T.Name, l.T.Name)
		elem := l.T.Type
		if pair {
			elem = ir.BF16 // f32 or bf16 pair panels, as the variant's microkernel wants (codegen.PairPanels)
		}
		if unitIn(l, p.P) {
			g.line("{ // pack: rows of %s are contiguous along the panel; all panels in one call (%s)", l.T.Name, codegen.PackStem(false))
			g.depth++
			g.line("n_, depth_, panel_, off_ := %s, %s, %s, %s", g.iexpr(p.N), g.iexpr(p.Depth), g.iexpr(p.Panel), g.iexpr(p.DstOff))
			g.line(packBlockLoop)
			g.line("	%s := p0_", P)
			g.line("	b_ := %s", g.offset(l.T, idxAt(0, 0)))
			g.line("	%s(%s[off_+p0_*depth_:], %s, %s, e_-p0_, panel_, depth_)", codegen.PackVar(false, elem), p.Dst.Name, src, step(0, 1))
		} else {
			g.line("{ // pack: each panel row is a contiguous run of %s (%s)", l.T.Name, codegen.PackStem(true))
			g.depth++
			g.line("n_, depth_, panel_, off_ := %s, %s, %s, %s", g.iexpr(p.N), g.iexpr(p.Depth), g.iexpr(p.Panel), g.iexpr(p.DstOff))
			g.line("for p0_ := 0; p0_ < n_; p0_ += panel_ {")
			g.line("	dst_ := %s[off_+p0_*depth_ : off_+(p0_+panel_)*depth_]", p.Dst.Name)
			g.line("	%s := p0_", P)
			g.line("	b_ := %s", g.offset(l.T, idxAt(0, 0)))
			g.line("	%s(dst_, %s, %s, min(panel_, n_-p0_), panel_, depth_)", codegen.PackVar(true, elem), src, step(1, 0))
		}
		g.line("}")
		g.depth--
		g.line("}")
		return true
	}
	// f16 runs widen through cvtF16F32 (codegen.CvtF16F32: the variant's F16C/NEON conversion).
	cvt := codegen.PackReadsF16(p) && p.Dst.Type == ir.F32
	switch {
	case unitIn(l, p.P):
		g.line("{ // pack: rows of %s are contiguous along the panel", l.T.Name)
		g.depth++
		g.line("n_, depth_, panel_, off_ := %s, %s, %s, %s", g.iexpr(p.N), g.iexpr(p.Depth), g.iexpr(p.Panel), g.iexpr(p.DstOff))
		g.line("for p0_ := 0; p0_ < n_; p0_ += panel_ {")
		g.line("	dst_ := %s[off_+p0_*depth_ : off_+(p0_+panel_)*depth_]", p.Dst.Name)
		g.line("	w_ := min(panel_, n_-p0_)")
		g.line("	%s := p0_", P)
		g.line("	for %s := 0; %s < depth_; %s++ {", D, D, D)
		g.line("		src_ := %s[%s:][:w_]", l.T.Name, zero(p.P)+" + "+P)
		g.line("		row_ := dst_[%s*panel_ : %s*panel_+panel_]", D, D)
		if conv("x") == "x" {
			g.line("		copy(row_, src_)")
		} else if cvt {
			g.line("		cvtF16F32(row_[:w_], src_)")
		} else {
			g.line("		for q_, x := range src_ {")
			g.line("			row_[q_] = %s", conv("x"))
			g.line("		}")
		}
		g.line("		clear(row_[w_:])")
		g.line("	}")
		g.line("}")
		g.depth--
		g.line("}")
	case unitIn(l, p.D) && cvt:
		// Each run is widened into its own part of a scratch buffer (cvtF16F32, vectorized), then
		// scattered into the panel: 3.6x faster than widening element by element in the scatter, which
		// the go variant keeps (there the second pass costs more than it saves; docs/PERF.md).
		g.line("{ // pack: each panel row is a contiguous run of %s, widened through cbuf_", l.T.Name)
		g.depth++
		g.line("n_, depth_, panel_, off_ := %s, %s, %s, %s", g.iexpr(p.N), g.iexpr(p.Depth), g.iexpr(p.Panel), g.iexpr(p.DstOff))
		g.line("cbuf_ := rt.Scratch32(n_ * depth_)")
		g.line("for p0_ := 0; p0_ < n_; p0_ += panel_ {")
		g.line("	dst_ := %s[off_+p0_*depth_ : off_+(p0_+panel_)*depth_]", p.Dst.Name)
		g.line("	w_ := min(panel_, n_-p0_)")
		g.line("	for q_ := 0; q_ < panel_; q_++ {")
		g.line("		if q_ >= w_ {")
		g.line("			for d_ := 0; d_ < depth_; d_++ {")
		g.line("				dst_[d_*panel_+q_] = 0")
		g.line("			}")
		g.line("			continue")
		g.line("		}")
		g.line("		%s := p0_ + q_", P)
		g.line("		src_ := %s[%s:][:depth_]", l.T.Name, zero(p.D))
		g.line("		if %s == nil { // the go variant: widening in the scatter is faster than a second pass", codegen.CvtF16F32)
		g.line("			for %s, x := range src_ {", D)
		g.line("				dst_[%s*panel_+q_] = %s", D, conv("x"))
		g.line("			}")
		g.line("			continue")
		g.line("		}")
		g.line("		run_ := cbuf_[%s*depth_ : %s*depth_+depth_]", P, P)
		g.line("		cvtF16F32(run_, src_)")
		g.line("		for %s, x := range run_ {", D)
		g.line("			dst_[%s*panel_+q_] = x", D)
		g.line("		}")
		g.line("	}")
		g.line("}")
		g.line("rt.Release32(cbuf_)")
		g.depth--
		g.line("}")
	case unitIn(l, p.D):
		g.line("{ // pack: each panel row is a contiguous run of %s", l.T.Name)
		g.depth++
		g.line("n_, depth_, panel_, off_ := %s, %s, %s, %s", g.iexpr(p.N), g.iexpr(p.Depth), g.iexpr(p.Panel), g.iexpr(p.DstOff))
		g.line("for p0_ := 0; p0_ < n_; p0_ += panel_ {")
		g.line("	dst_ := %s[off_+p0_*depth_ : off_+(p0_+panel_)*depth_]", p.Dst.Name)
		g.line("	w_ := min(panel_, n_-p0_)")
		g.line("	for q_ := 0; q_ < panel_; q_++ {")
		g.line("		if q_ >= w_ {")
		g.line("			for d_ := 0; d_ < depth_; d_++ {")
		g.line("				dst_[d_*panel_+q_] = 0")
		g.line("			}")
		g.line("			continue")
		g.line("		}")
		g.line("		%s := p0_ + q_", P)
		g.line("		src_ := %s[%s:][:depth_]", l.T.Name, zero(p.D))
		g.line("		for %s, x := range src_ {", D)
		g.line("			dst_[%s*panel_+q_] = %s", D, conv("x"))
		g.line("		}")
		g.line("	}")
		g.line("}")
		g.depth--
		g.line("}")
	default:
		return false
	}
	return true
}

// microU emits a Micro whose operands are read in place (strided layouts; B's columns contiguous) as a
// call of the slot's unpacked microkernel, or of its rows kernel for a whole-problem tile (ir.MicroRows):
// each operand is a base offset and strides.
func (g *gen) microU(n *ir.Micro) error {
	a, b := n.A, n.B
	al, bl := a.Layout.(*ir.Strided), b.Layout.(*ir.Strided)
	g.line("{")
	g.depth++
	g.line("aoff_, boff_ := %s, %s", g.iexpr(a.Off), g.iexpr(b.Off))
	g.line("ars_, acs_ := %s, %s", g.iexpr(al.RowStride), g.iexpr(al.ColStride))
	g.line("ldb_ := %s", g.iexpr(bl.RowStride))
	bias := "nil"
	if n.Bias != nil {
		bias = n.Bias.Name + "[" + g.iexpr(n.BiasOff) + ":]"
	}
	fn, batch := "MicroU", ""
	switch n.Kind() {
	case ir.MicroRows:
		fn = "Rows"
	case ir.MicroBatched:
		fn = "MicroB"
		batch = fmt.Sprintf(", %s, %s, %s, %s", g.iexpr(n.Batch.Count), g.iexpr(n.Batch.AStride), g.iexpr(n.Batch.BStride), g.iexpr(n.Batch.CStride))
	}
	// The operands are sliced at min(offset, len): when the reduction is empty (K = 0) A and B are not
	// read, when M = 0 (a rows call) C is not written, and the offsets of an empty tensor may lie past
	// its end.
	g.line("%s.%s(%s, %s[min(aoff_, len(%s)):], ars_, acs_, %s[min(boff_, len(%s)):], ldb_, %s[min(%s, len(%s)):], %s, %s, %s, %s, %s, %s, %s%s)", codegen.SlotVar(n.Slot), fn,
		g.iexpr(n.KC), a.T.Name, a.T.Name, b.T.Name, b.T.Name, n.C.Name, g.iexpr(n.COff), n.C.Name, g.iexpr(n.LDC), g.iexpr(n.M), g.iexpr(n.N),
		g.exprTop(n.Alpha), g.exprTop(n.Beta), bias, g.epArg(n.EP), batch)
	g.depth--
	g.line("}")
	return nil
}
