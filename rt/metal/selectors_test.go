package metal

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The darwin files compile on any system only as far as the type checker sees: objc messages take
// ...any, so a message sent with too few or too many arguments for its selector would compile and
// then pass garbage on a Mac. This test parses *_darwin.go and checks, for every
// x.Send(sel, args...) and objc.Send[T](x, sel, args...), that the number of arguments equals the
// number of colons in the selector's name; that every selector is registered once, under a Go name
// derived from it, and used.
func TestSelectorArity(t *testing.T) {
	files, err := filepath.Glob("*_darwin.go")
	if err != nil || len(files) < 6 {
		t.Fatalf("darwin files: %v %v", files, err)
	}
	fset := token.NewFileSet()
	sels := map[string]string{} // Go name -> selector
	used := map[string]int{}
	var parsed []*ast.File
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || len(vs.Values) != 1 {
				return true
			}
			call, ok := vs.Values[0].(*ast.CallExpr)
			if !ok || !isSel(call.Fun, "objc", "RegisterName") {
				return true
			}
			lit, _ := strconv.Unquote(call.Args[0].(*ast.BasicLit).Value)
			goName := vs.Names[0].Name
			if _, dup := sels[goName]; dup {
				t.Errorf("%s registered twice", goName)
			}
			sels[goName] = lit
			// selName for "name", selSetBufferOffsetAtIndex for "setBuffer:offset:atIndex:".
			want := "sel"
			for _, part := range strings.Split(strings.TrimSuffix(lit, ":"), ":") {
				want += strings.ToUpper(part[:1]) + part[1:]
			}
			if goName != want {
				t.Errorf("%s = RegisterName(%q): want the Go name %s", goName, lit, want)
			}
			return true
		})
	}
	calls := 0
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			var selArg ast.Expr
			var rest []ast.Expr
			switch {
			case isMethod(call.Fun, "Send") && len(call.Args) >= 1: // x.Send(sel, args...)
				selArg, rest = call.Args[0], call.Args[1:]
			case isGenericSend(call.Fun) && len(call.Args) >= 2: // objc.Send[T](x, sel, args...)
				selArg, rest = call.Args[1], call.Args[2:]
			default:
				return true
			}
			id, ok := selArg.(*ast.Ident)
			if !ok {
				t.Errorf("%s: selector argument is not a sel variable", fset.Position(call.Pos()))
				return true
			}
			lit, ok := sels[id.Name]
			if !ok {
				t.Errorf("%s: %s is not a registered selector", fset.Position(call.Pos()), id.Name)
				return true
			}
			used[id.Name]++
			calls++
			if want := strings.Count(lit, ":"); len(rest) != want {
				t.Errorf("%s: %s sent with %d arguments, the selector takes %d", fset.Position(call.Pos()), lit, len(rest), want)
			}
			return true
		})
	}
	for goName, lit := range sels {
		if used[goName] == 0 {
			t.Errorf("selector %q (%s) is never sent", lit, goName)
		}
	}
	if calls < 40 {
		t.Errorf("found only %d message sends: the parser missed some", calls)
	}
}

func isSel(e ast.Expr, pkg, name string) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok || s.Sel.Name != name {
		return false
	}
	x, ok := s.X.(*ast.Ident)
	return ok && x.Name == pkg
}

func isMethod(e ast.Expr, name string) bool {
	s, ok := e.(*ast.SelectorExpr)
	return ok && s.Sel.Name == name && !isSel(e, "objc", name)
}

func isGenericSend(e ast.Expr) bool {
	ix, ok := e.(*ast.IndexExpr)
	return ok && isSel(ix.X, "objc", "Send")
}
