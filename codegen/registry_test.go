package codegen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var identTok = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// variantCode finds the variant list and its type used as code (the words also occur in prose).
var variantCode = regexp.MustCompile(`\[\]` + VariantType + `\b|\b` + VariantList + `\s*(=[^=]|\.\.\.|[{()])`)

// sharedIdentsIn returns, for the string literals of src, the identifiers that belong to the registry
// (a stem of sharedStems starting them, or the variant list and its type written as code).
func sharedIdentsIn(fset *token.FileSet, name string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	var bad []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return true
		}
		if variantCode.MatchString(s) {
			bad = append(bad, fset.Position(lit.Pos()).String()+": "+variantCode.FindString(s))
		}
		for _, id := range identTok.FindAllString(s, -1) {
			shared := false
			for _, stem := range sharedStems {
				shared = shared || strings.HasPrefix(id, stem)
			}
			if shared {
				bad = append(bad, fset.Position(lit.Pos()).String()+": "+id)
			}
		}
		return true
	})
	return bad, nil
}

// TestBackendsNameSharedIdents: codegen and the assembly backends write the generated package's shared
// identifiers only through the registry (registry.go), never as literals of their own. The portable
// backend, which defines them in its templates, is the one exception.
func TestBackendsNameSharedIdents(t *testing.T) {
	var files []string
	for _, dir := range []string{".", "amd64", "arm64"} {
		m, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d files", len(files))
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "registry.go" {
			continue
		}
		bad, err := sharedIdentsIn(fset, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bad {
			t.Errorf("%s: a shared identifier written as a literal; take it from the registry (codegen/registry.go)", b)
		}
	}
}

// The check finds a literal name, and one built from a literal stem.
func TestSharedIdentsCheckFindsLiterals(t *testing.T) {
	src := `package p
func f(s string) string { return "rowsGo" + s + fmt.Sprintf("var %s = %s", RowsGo(t), "packDGo32") }
func g() string { return "variants = append(" }
func h() string { return "kern := " + RowsCoreGo(t) + " // unrelated: rows, packing, variant" }
`
	bad, err := sharedIdentsIn(token.NewFileSet(), "x.go", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 3 {
		t.Errorf("found %v, want rowsGo, packDGo32 and variants", bad)
	}
}
