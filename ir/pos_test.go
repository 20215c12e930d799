package ir

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The IR is the middle of the compiler: the parser, the checker and every backend depend on it, never
// the other way round. Its non-test files import the standard library and f16 only.
func TestIRImportsNoParser(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files: %v", err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(path, ".") && path != "github.com/kgen-dev/kgen/f16" {
				t.Errorf("%s imports %s: ir may depend only on the standard library and f16", name, path)
			}
		}
	}
}

func TestPosString(t *testing.T) {
	for _, tc := range []struct {
		p    Pos
		want string
	}{
		{Pos{File: "k.kdsl", Line: 3, Col: 7}, "k.kdsl:3:7"},
		{Pos{Line: 3, Col: 7}, "3:7"},
		{Pos{File: "k.kdsl"}, "k.kdsl"},
		{Pos{}, ""},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.p, got, tc.want)
		}
	}
}
