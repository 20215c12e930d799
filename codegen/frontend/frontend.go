// Package frontend turns kdsl source into the codegen.Package a backend generates from: check, then the
// pass pipeline of one target for every kernel. It is what `kgen gen` does before its backends run,
// for the generators and tests that drive a backend directly.
package frontend

import (
	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/passes"
	"github.com/kgen-dev/kgen/target"
)

// Package checks src (named file in messages) and compiles each kernel for the static model of
// targetName into a package called name.
func Package(name, file, src, targetName string) (*codegen.Package, error) {
	ks, err := check.File(file, src)
	if err != nil {
		return nil, err
	}
	m, err := target.Lookup(targetName)
	if err != nil {
		return nil, err
	}
	p := &codegen.Package{Name: name, Source: file}
	for _, k := range ks {
		f, err := passes.Compile(k, m, passes.Options{})
		if err != nil {
			return nil, err
		}
		p.Kernels = append(p.Kernels, codegen.Kernel{K: k, F: f})
	}
	return p, nil
}
