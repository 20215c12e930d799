package golang

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"strings"
)

// isConversion reports whether expr is one conversion to type t as a whole, t(...), so that a local
// initialized with it can be declared with := and still have type t.
func isConversion(expr, t string) bool {
	if !strings.HasPrefix(expr, t+"(") || !strings.HasSuffix(expr, ")") {
		return false
	}
	depth := 0
	for i := len(t); i < len(expr); i++ {
		switch expr[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 && i != len(expr)-1 {
				return false // t(a) + (b)
			}
		}
	}
	return depth == 0
}

// dropBlankUses removes the `_ = x` statements of formatted generated Go that the compiler does not
// need: the generator writes one after each local it declares (an accumulator, a closure's copy of a
// variable) because it cannot tell while emitting whether the local will be read; here the parsed file
// tells. A statement stays, shortened to the locals that need it, when some local it names is read
// nowhere else (Go rejects a local that is never used).
func dropBlankUses(src []byte) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("generated Go does not parse: %v", err)
	}
	type blank struct {
		stmt  *ast.AssignStmt
		names []*ast.Ident
	}
	var blanks []blank
	inBlank := map[*ast.Ident]bool{}
	declared := map[*ast.Ident]bool{} // identifiers that declare or assign, which are not uses
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IncDecStmt:
			if id, ok := n.X.(*ast.Ident); ok {
				declared[id] = true // x++ does not use x
			}
		case *ast.AssignStmt:
			// A bare identifier on the left declares or assigns: not a use (x = y, x += y, x := y).
			for _, l := range n.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
					declared[id] = true
				}
			}
			if n.Tok != token.ASSIGN || len(n.Lhs) != len(n.Rhs) {
				return true
			}
			// _, _ = x, y
			var names []*ast.Ident
			for i, l := range n.Lhs {
				lid, ok := l.(*ast.Ident)
				rid, ok2 := n.Rhs[i].(*ast.Ident)
				if !ok || !ok2 || lid.Name != "_" {
					return true
				}
				names = append(names, rid)
			}
			for _, id := range names {
				inBlank[id] = true
			}
			blanks = append(blanks, blank{n, names})
		case *ast.ValueSpec:
			for _, id := range n.Names {
				declared[id] = true
			}
		}
		return true
	})
	used := map[*ast.Object]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Obj != nil && !inBlank[id] && !declared[id] {
			used[id.Obj] = true
		}
		return true
	})
	// local reports whether the object is a variable declared inside a function body (parameters,
	// results and package-level names may go unused).
	local := func(o *ast.Object) bool {
		if o == nil || o.Kind != ast.Var {
			return false
		}
		switch o.Decl.(type) {
		case *ast.AssignStmt:
			return true
		case *ast.ValueSpec:
			return !isTopLevel(f, o.Decl.(*ast.ValueSpec))
		}
		return false
	}
	lines := strings.SplitAfter(string(src), "\n")
	for _, b := range blanks {
		var keep []string
		for _, id := range b.names {
			if local(id.Obj) && !used[id.Obj] {
				keep = append(keep, id.Name)
			}
		}
		start, end := fset.Position(b.stmt.Pos()), fset.Position(b.stmt.End())
		if start.Line != end.Line {
			continue // not the generator's one-line form: leave it
		}
		i := start.Line - 1
		indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], "\t"))]
		if len(keep) == 0 {
			lines[i] = ""
		} else {
			lines[i] = indent + strings.TrimSuffix(strings.Repeat("_, ", len(keep)), ", ") + " = " + strings.Join(keep, ", ") + "\n"
		}
	}
	out, err := format.Source([]byte(strings.Join(lines, "")))
	if err != nil {
		return nil, fmt.Errorf("generated Go does not parse after removing blank uses: %v", err)
	}
	return bytes.TrimLeft(out, "\n"), nil
}

// isTopLevel reports whether spec is a package-level declaration of f.
func isTopLevel(f *ast.File, spec *ast.ValueSpec) bool {
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok {
			for _, s := range g.Specs {
				if s == spec {
					return true
				}
			}
		}
	}
	return false
}
