package ptx

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen"
)

// TestGlueMethods generates passes/testdata/mma.kdsl, plus kernels.kdsl's sgemm compiled for the CPU
// (which the lowering refuses: no PTX version), for sm_80 alone and for sm_80 and sm_90a:
// ptx_cuda.go has a device method and a Host method exactly
// for the kernels some module holds, both generated files parse, and ptx_cuda_test.go is written
// only with Tests.
func TestGlueMethods(t *testing.T) {
	for _, specs := range [][]string{{"ptx:sm_80"}, {"ptx:sm_80", "ptx:sm_90a"}} {
		glueMethodsFor(t, specs)
	}
}

func glueMethodsFor(t *testing.T, specs []string) {
	var ps []*codegen.Package
	for _, spec := range specs {
		p := &codegen.Package{Name: "mma", Source: "mma.kdsl", Target: spec}
		for _, f := range compileFile(t, "../../passes/testdata/mma.kdsl", spec) {
			p.Kernels = append(p.Kernels, codegen.Kernel{K: f.Kernel, F: f})
		}
		cpu := compileFile(t, "../../kernels.kdsl", "go")[0]
		p.Kernels = append(p.Kernels, codegen.Kernel{K: cpu.Kernel, F: cpu})
		ps = append(ps, p)
	}
	files, err := Backend{Tests: true}.GenerateAll(ps)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range files {
		got[f.Name] = string(f.Data)
	}
	for _, name := range []string{"ptx_cuda.go", "ptx_cuda_test.go"} {
		if _, err := parser.ParseFile(token.NewFileSet(), name, got[name], 0); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	table := got["ptx_kernels.go"]
	unsupported := 0
	for _, k := range ps[0].Kernels {
		name := codegen.GoName(k.K.Name)
		inTable := strings.Contains(table, `{name: "`+k.K.Name+`",`)
		if !inTable {
			unsupported++
		}
		for _, m := range []string{"func (c_ *CUDA) " + name + "(", "func (c_ *CUDA) " + name + "Host("} {
			if strings.Contains(got["ptx_cuda.go"], m) != inTable {
				t.Errorf("%s: method %q present = %v, in a module's table = %v", k.K.Name, m, !inTable, inTable)
			}
		}
		if strings.Contains(got["ptx_cuda_test.go"], "func TestCUDA"+name+"(") != inTable {
			t.Errorf("%s: test present = %v, in a module's table = %v", k.K.Name, !inTable, inTable)
		}
	}
	if unsupported == 0 && len(specs) == 1 {
		t.Errorf("mma.kdsl: every kernel lowers for sm_80 now; this test needs a kernel without a PTX version")
	}
	files, err = Backend{}.GenerateAll(ps)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Name == "ptx_cuda_test.go" {
			t.Errorf("ptx_cuda_test.go written without Tests")
		}
	}
}
