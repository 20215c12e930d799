package ptx

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/passes"
	"github.com/kgen-dev/kgen/target"
)

var (
	compiledMu sync.Mutex
	compiled   = map[string][]*ir.Func{}
)

// compileFile checks a kdsl file and compiles every kernel with the pipeline of spec (once per test
// binary: the lowering does not modify the IR).
func compileFile(t *testing.T, path, spec string) []*ir.Func {
	t.Helper()
	compiledMu.Lock()
	defer compiledMu.Unlock()
	if fs, ok := compiled[path+" "+spec]; ok {
		return fs
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := check.File(filepath.Base(path), string(src))
	if err != nil {
		t.Fatal(err)
	}
	m, err := target.Lookup(spec)
	if err != nil {
		t.Fatal(err)
	}
	var fs []*ir.Func
	for _, k := range ks {
		f, err := passes.Compile(k, m, passes.Options{})
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		fs = append(fs, f)
	}
	compiled[path+" "+spec] = fs
	return fs
}
