package golang

import (
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

func TestDropBlankUses(t *testing.T) {
	src := `package p

var g = 1
var _ = g

func f(M, N int, X []float32) {
	_ = M
	acc := float32(0)
	_ = acc
	unused := float32(1)
	_ = unused
	X2, M2, un2 := X, M, N
	_, _, _ = X2, M2, un2
	acc = acc + X2[M2]
	{
		acc := float32(2) // shadows: its own blank use stays, the outer one is still removed
		_ = acc
	}
	for p0_, e_ := 0, N; p0_ < e_; p0_ = e_ {
	}
	dead := float32(0) // only written: Go counts no use
	_ = dead
	dead += 1
	dead = 2
	cnt := 0
	_ = cnt
	cnt++
}
`
	want := `package p

var g = 1
var _ = g

func f(M, N int, X []float32) {
	acc := float32(0)
	unused := float32(1)
	_ = unused
	X2, M2, un2 := X, M, N
	_ = un2
	acc = acc + X2[M2]
	{
		acc := float32(2) // shadows: its own blank use stays, the outer one is still removed
		_ = acc
	}
	for p0_, e_ := 0, N; p0_ < e_; p0_ = e_ {
	}
	dead := float32(0) // only written: Go counts no use
	_ = dead
	dead += 1
	dead = 2
	cnt := 0
	_ = cnt
	cnt++
}
`
	in, err := format.Source([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got, err := dropBlankUses(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("dropBlankUses:\n%s\nwant\n%s", got, want)
	}
	// and the result compiles: go/types reports a local declared and not used
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", got, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&types.Config{}).Check("p", fset, []*ast.File{f}, nil); err != nil {
		t.Errorf("the result does not type-check: %v", err)
	}
}

func TestIsConversion(t *testing.T) {
	for expr, want := range map[string]bool{
		"float32(0)":                 true,
		"float32(math.Inf(-1))":      true,
		"float32(a) + float32(b)":    false,
		"float32(a) * (b)":           false,
		"float64(x)":                 false,
		"(float32(a))":               false,
		"float32(f(a), g(b)[(i)+1])": true,
	} {
		if got := isConversion(expr, "float32"); got != want {
			t.Errorf("isConversion(%q, float32) = %v, want %v", expr, got, want)
		}
	}
}

func TestImportBlock(t *testing.T) {
	got := importBlock(map[string]bool{"math": true, "github.com/kgen-dev/kgen/rt": true, "unsafe": true, "github.com/kgen-dev/kgen/f16": true})
	want := "import (\n\t\"math\"\n\t\"unsafe\"\n\n\t\"github.com/kgen-dev/kgen/f16\"\n\t\"github.com/kgen-dev/kgen/rt\"\n)\n\n"
	if got != want {
		t.Errorf("importBlock = %q, want %q", got, want)
	}
	if got := importBlock(map[string]bool{"github.com/kgen-dev/kgen/rt": true}); strings.Contains(got, "\n\n\t") {
		t.Errorf("importBlock with no standard imports has a blank line: %q", got)
	}
}

// A scratch buffer sized by a loop variable comes from the pool in each iteration and goes back after
// its body (no defer inside a loop), an integer one from the generic pool.
func TestLoopSizedScratch(t *testing.T) {
	N := &ir.Dim{Name: "N"}
	out := &ir.Tensor{Name: "O", Type: ir.F32, Shape: []*ir.Dim{N}, Kind: ir.Out}
	i, j := &ir.Var{Name: "i"}, &ir.Var{Name: "j"}
	row := &ir.Tensor{Name: "row", Type: ir.F32, Kind: ir.Scratch, Size: ir.IAdd(ir.IVar{V: i}, ir.IConst{V: 1})}
	irow := &ir.Tensor{Name: "irow", Type: ir.I32, Kind: ir.Scratch, Size: ir.IAdd(ir.IVar{V: i}, ir.IConst{V: 1})}
	k := &ir.Kernel{Name: "k", Params: []*ir.Tensor{out}, Dims: []*ir.Dim{N}}
	body := []ir.Node{&ir.Loop{Var: i, Lo: ir.IConst{V: 0}, Hi: ir.IDim{D: N}, Step: ir.IConst{V: 1}, Body: []ir.Node{
		&ir.Alloc{T: row, Body: []ir.Node{&ir.Alloc{T: irow, Body: []ir.Node{
			&ir.Loop{Var: j, Lo: ir.IConst{V: 0}, Hi: ir.IAdd(ir.IVar{V: i}, ir.IConst{V: 1}), Step: ir.IConst{V: 1}, Body: []ir.Node{
				&ir.Store{T: row, Idx: []ir.IExpr{ir.IVar{V: j}}, Value: &ir.Const{Val: 1, T: ir.F32}},
			}},
			&ir.Store{T: out, Idx: []ir.IExpr{ir.IVar{V: i}}, Value: &ir.Load{T: row, Idx: []ir.IExpr{ir.IVar{V: i}}}},
		}}}},
	}}}
	files, err := Backend{}.Generate(&codegen.Package{Name: "p", Source: "k.kdsl", Kernels: []codegen.Kernel{{K: k, F: &ir.Func{Kernel: k, Body: body}}}})
	if err != nil {
		t.Fatal(err)
	}
	var src string
	for _, f := range files {
		if f.Name == "k.go" {
			src = string(f.Data)
		}
	}
	for _, want := range []string{"row := rt.Scratch32(i + 1)\n", "irow := rt.Scratch[int32](i + 1)\n", "O[i] = row[i]\n\t\t\t\trt.Release(irow)\n\t\t\t}\n\t\t\trt.Release32(row)\n"} {
		if !strings.Contains(src, want) {
			t.Errorf("generated code lacks %q:\n%s", want, src)
		}
	}
	if strings.Contains(src, "defer") {
		t.Errorf("a loop-sized buffer is released by defer:\n%s", src)
	}
}
