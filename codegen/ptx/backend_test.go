package ptx

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen"
)

func libraryPackage(t *testing.T, spec string) *codegen.Package {
	p := &codegen.Package{Name: "kernels", Source: "kernels.kdsl", Target: spec}
	for _, f := range compileFile(t, "../../kernels.kdsl", spec) {
		p.Kernels = append(p.Kernels, codegen.Kernel{K: f.Kernel, F: f})
	}
	return p
}

// TestGenerateAll generates the library for ptx:sm_80 and ptx:sm_90a and type-checks the Go table:
// one embedded module per sub-target, every kernel either in the table or listed as unsupported.
func TestGenerateAll(t *testing.T) {
	var _ codegen.MultiBackend = Backend{}
	ps := []*codegen.Package{libraryPackage(t, "ptx:sm_80"), libraryPackage(t, "ptx:sm_90a")}
	files, err := Backend{}.GenerateAll(ps)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, f := range files {
		names[f.Name] = string(f.Data)
	}
	for _, want := range []string{"ptx_sm_80.ptx", "ptx_sm_90a.ptx", "ptx_kernels.go"} {
		if _, ok := names[want]; !ok {
			t.Fatalf("no %s among %v", want, files)
		}
	}
	if !strings.Contains(names["ptx_sm_80.ptx"], ".target sm_80") || !strings.Contains(names["ptx_sm_90a.ptx"], ".target sm_90") {
		t.Errorf("modules without their .target")
	}
	src := names["ptx_kernels.go"]
	for _, k := range ps[0].Kernels {
		if !strings.Contains(src, `name: "`+k.K.Name+`"`) && !strings.Contains(src, `"`+k.K.Name+`":`) {
			t.Errorf("kernel %s neither in the table nor unsupported", k.K.Name)
		}
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "ptx_kernels.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	if _, err := conf.Check("kernels", fset, []*ast.File{f}, nil); err != nil {
		t.Fatalf("generated table does not type-check: %v", err)
	}
}

func TestGenerateErrors(t *testing.T) {
	p := &codegen.Package{Name: "k", Target: "ptx:sm_75"}
	if _, err := (Backend{}).GenerateAll([]*codegen.Package{p}); err == nil || !strings.Contains(err.Error(), "unknown sub-target") {
		t.Errorf("sm_75: %v", err)
	}
	q := &codegen.Package{Name: "k", Target: "ptx:sm_80"}
	if _, err := (Backend{}).GenerateAll([]*codegen.Package{q, q}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate: %v", err)
	}
}

// TestGoIExpr checks the Go form of grid expressions, including floor division of a negative value.
func TestGoIExpr(t *testing.T) {
	fs := compileFile(t, "../../kernels.kdsl", "ptx:sm_80")
	for _, f := range fs {
		if f.Kernel.Name != "sgemm" {
			continue
		}
		k, err := Lower(f, "sm_80")
		if err != nil {
			t.Fatal(err)
		}
		got, err := goIExpr(k.Launches[0].Grid[0], []string{"M", "K", "N"})
		if err != nil {
			t.Fatal(err)
		}
		// Grid x runs over N in blocks of BX·NR = 64 columns.
		if got != "ptxFloorDiv((d[2] + 63), 64)" {
			t.Errorf("sgemm grid x = %s", got)
		}
	}
}
