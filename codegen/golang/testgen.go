package golang

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"strings"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

// testFile emits kgen_test.go: every kernel against the reference interpreter (run on the kernel's own
// kdsl source) on random shapes — all ones, primes, ragged sizes, one with K beyond the K block — under
// every variant available, plus NaN/Inf propagation and the wrapper's length checks (TestX); the wrapper
// fuzzer (FuzzX: extreme and negative dims, wrong lengths; its seeds run with every go test); and the
// variant selection (TestVariants_). It builds for a package without kernels too.
func testFile(p *codegen.Package, mod string) ([]byte, error) {
	var b bytes.Buffer
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	for _, k := range p.Kernels {
		name := codegen.GoName(k.K.Name)
		// The names end in "_", which kdsl names never do.
		w("const %sSource_ = %q\n\n", k.K.Name, k.K.Source)
		w("func Test%s(t *testing.T) { kgentest.Run(t, %sSource_, %sKernel_) }\n\n", name, k.K.Name, k.K.Name)
		w("func Fuzz%s(f *testing.F) { kgentest.Fuzz(f, %sSource_, %sKernel_) }\n\n", name, k.K.Name, k.K.Name)
		w("var %sKernel_ = kgentest.Kernel{\n", k.K.Name)
		w("\tVariants: Variants, Use: Use,\n")
		w("\tCall: func(dims map[string]int, in map[string][]float64, scalars map[string]float64) (map[string][]float64, error) {\n")
		var callArgs []string
		for _, d := range k.K.Dims {
			callArgs = append(callArgs, fmt.Sprintf("dims[%q]", d.Name))
		}
		for _, prm := range k.K.Params {
			if prm.Kind == ir.Scalar {
				// A 16-bit scalar is a bit pattern: convert by value (the interpreter's value is already rounded).
				cv := goType(prm.Type)
				switch prm.Type {
				case ir.F16:
					cv = "f16.FromFloat64"
				case ir.BF16:
					cv = "f16.BF16FromFloat64"
				}
				w("\t\t\t%s := %s(scalars[%q])\n", prm.Name, cv, prm.Name)
			} else {
				w("\t\t\t%s := %s(in[%q])\n", prm.Name, conv(prm.Type, true), prm.Name)
			}
			callArgs = append(callArgs, prm.Name)
		}
		w("\t\t\terr := %s(%s)\n", name, strings.Join(callArgs, ", "))
		w("\t\t\tout := map[string][]float64{}\n")
		for _, prm := range k.K.Params {
			if prm.Kind == ir.Out || prm.Kind == ir.InOut {
				w("\t\t\tout[%q] = %s(%s)\n", prm.Name, conv(prm.Type, false), prm.Name)
			}
		}
		w("\t\t\treturn out, err\n\t\t},\n}\n\n")
	}
	w("func TestVariants_(t *testing.T) { kgentest.CheckVariants(t, Variants, Use, Variant, selectVariant) }\n")
	// Import f16 only where a kernel has 16-bit scalars (the body names it then).
	body, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+b.String(), 0)
	if err != nil {
		return nil, fmt.Errorf("test file does not parse: %v\n%s", err, b.String())
	}
	imports := map[string]bool{"testing": true, mod + "/kgentest": true}
	ast.Inspect(body, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "f16" && id.Obj == nil {
				imports[mod+"/f16"] = true
			}
		}
		return true
	})
	var out bytes.Buffer
	fmt.Fprintf(&out, "%s\npackage %s\n\n%s", codegen.Header, p.Name, importBlock(imports))
	out.Write(b.Bytes())
	src, err := format.Source(out.Bytes())
	if err != nil {
		return nil, fmt.Errorf("test file does not parse: %v\n%s", err, b.String())
	}
	return src, nil
}

// conv names the kgentest conversion between []float64 and the Go slice type of d.
func conv(d ir.DType, to bool) string {
	n := map[ir.DType]string{ir.F64: "F64", ir.F32: "F32", ir.F16: "F16", ir.BF16: "BF16", ir.I32: "I32", ir.I8: "I8"}[d]
	if to {
		return "kgentest.To" + n
	}
	return "kgentest.From" + n
}
