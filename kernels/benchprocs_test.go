package kernels

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// TestBenchmarksHonorCPUList keeps testing.B.Loop out of this package's benchmarks. Under a -test.cpu
// list, a sub-benchmark whose body is a b.Loop loop measures its first entry at the GOMAXPROCS the
// previous run left (go1.26: `-test.cpu 1,2` ran the "one core" line of BenchmarkBgemm on two workers,
// 580 GFLOP/s against 310–350 with GOMAXPROCS really 1; docs/PERF.md "Session 15"). A b.N loop runs
// each entry at its own GOMAXPROCS, and every kernel here parallelizes on GOMAXPROCS.
func TestBenchmarksHonorCPUList(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 0 {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Loop" {
				t.Errorf("%s: b.Loop() in a benchmark of this package: under -test.cpu 1,2 its first entry runs at the wrong GOMAXPROCS; use b.ResetTimer and `for range b.N`", fset.Position(call.Pos()))
			}
			return true
		})
	}
}
