package golang

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/codegen/frontend"
	"github.com/kgen-dev/kgen/ir"
)

// The portable backend defines every name of the variant registry (codegen/registry.go) that the other
// backends refer to: a renamed entry, or a template that drifts from it, fails here rather than in the
// compiler on a generated package.
func TestDefinesRegistryNames(t *testing.T) {
	p, files := generateKernels(t)
	declared := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f.Name, f.Data, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					declared[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						declared[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							declared[n.Name] = true
						}
					}
				}
			}
		}
	}
	want := []string{codegen.TransposeFits, codegen.VariantType, codegen.VariantList, codegen.ResetVLoops,
		codegen.ResetPacks, codegen.CvtF16F32, codegen.PackPairBF16(true), codegen.PackPairBF16(false),
		codegen.PackVar(true, ir.BF16), codegen.PackVar(false, ir.BF16), codegen.PackGo(true, ir.BF16), codegen.PackGo(false, ir.BF16)}
	for _, e := range []ir.DType{ir.F32, ir.F64} {
		want = append(want, codegen.GemmSlotType(e), codegen.TransposeSlotType(e), codegen.TransposeGo(e),
			codegen.MicroUGo(e), codegen.RowsGo(e), codegen.RowsCoreGo(e), codegen.RowsVia(e))
		for _, d := range []bool{true, false} {
			want = append(want, codegen.PackVar(d, e), codegen.PackGo(d, e))
		}
	}
	for _, s := range codegen.Slots(p) {
		want = append(want, s.Var)
	}
	for _, s := range codegen.PackageVLoops(p) {
		want = append(want, s.Var)
	}
	if len(want) < 40 {
		t.Fatalf("only %d names to check", len(want))
	}
	for _, n := range want {
		if !declared[n] {
			t.Errorf("the generated package does not declare %s (a name of codegen/registry.go)", n)
		}
	}
}

// generateKernels runs the portable backend on kernels.kdsl.
func generateKernels(t *testing.T) (*codegen.Package, []codegen.File) {
	t.Helper()
	src, err := os.ReadFile("../../kernels.kdsl")
	if err != nil {
		t.Fatal(err)
	}
	p, err := frontend.Package("kernels", "kernels.kdsl", string(src), "go")
	if err != nil {
		t.Fatal(err)
	}
	files, err := Backend{}.Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, files
}

// The comment above each loop nest quotes the statement as the source writes it.
func TestNestCommentsQuoteTheSource(t *testing.T) {
	_, files := generateKernels(t)
	want := map[string]string{
		"softmax.go":   "\t// let m[i] = max(j: X[i, j])\n",
		"layernorm.go": "\t// Y[i, j] = (X[i, j] - mean[i]) / sqrt(vr[i] + eps) * gamma[j] + beta[j]\n",
		"sgemm.go":     "\t// C[i, j] = alpha * sum(k: A[i, k] * B[k, j]) + beta * C[i, j]\n",
	}
	for _, f := range files {
		if w, ok := want[f.Name]; ok {
			if !strings.Contains(string(f.Data), w) {
				t.Errorf("%s lacks %q", f.Name, w)
			}
			delete(want, f.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("no files %v", want)
	}
}

// The Go backend reads every run-time symbol the IR admits, and only those.
func TestRunTimeSyms(t *testing.T) {
	for name := range ir.RunTimeSyms {
		if runTimeSyms[name] == "" {
			t.Errorf("run-time symbol %s has no Go expression", name)
		}
	}
	for name := range runTimeSyms {
		if ir.RunTimeSyms[name] == "" {
			t.Errorf("Go expression for %s, which is no run-time symbol of ir.RunTimeSyms", name)
		}
	}
}
