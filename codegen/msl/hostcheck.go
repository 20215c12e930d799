package msl

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

// The argument checks of a generated Metal method are those of the kernel's CPU function (the go
// backend's exported wrapper) written for lengths instead of slices, so that the device-buffer
// method and the host-slice method share them: each dim within rt.MaxDim (rt.DimError), each
// tensor's length equal to the product of its dims (rt.CheckLen), and every affine index of a load
// within its dim for all loop values (rt.Within, rt.Errorf), in that order and with the same
// messages. The generated test TestMetalChecks compares the two on random wrong arguments.

// checkFunc writes `func <kernel>MetalCheck(dims..., <tensor> int...) error`: the CPU function's
// checks on lengths.
func checkFunc(b *strings.Builder, k *ir.Kernel) error {
	var ps []string
	for _, d := range k.Dims {
		ps = append(ps, d.Name+" int")
	}
	for _, t := range k.Params {
		if t.Kind != ir.Scalar {
			ps = append(ps, t.Name+" int")
		}
	}
	fmt.Fprintf(b, "// %sMetalCheck checks the dims and the tensor lengths of %s as its CPU function does.\n", k.Name, k.Name)
	fmt.Fprintf(b, "func %sMetalCheck(%s) error {\n", k.Name, strings.Join(ps, ", "))
	for _, d := range k.Dims {
		fmt.Fprintf(b, "\tif uint(%s) > rt.MaxDim {\n\t\treturn rt.DimError(%q, %q, %s)\n\t}\n", d.Name, k.Name, d.Name, d.Name)
	}
	for _, t := range k.Params {
		if t.Kind == ir.Scalar {
			continue
		}
		var names []string
		for _, d := range t.Shape {
			names = append(names, d.Name)
		}
		shape, dl := "1", ""
		if len(names) > 0 {
			shape, dl = strings.Join(names, "*"), ", "+strings.Join(names, ", ")
		}
		fmt.Fprintf(b, "\tif err := rt.CheckLen(%q, %q, %s, %q%s); err != nil {\n\t\treturn err\n\t}\n", k.Name, t.Name, t.Name, shape, dl)
	}
	if err := boundsChecks(b, k); err != nil {
		return err
	}
	b.WriteString("\treturn nil\n}\n\n")
	return nil
}

// boundsChecks writes the CPU wrapper's affine index checks (codegen.IndexChecks).
func boundsChecks(b *strings.Builder, k *ir.Kernel) error {
	checks, err := codegen.IndexChecks(k)
	if err != nil {
		return fmt.Errorf("msl: kernel %s: %v", k.Name, err)
	}
	for _, c := range checks {
		fmt.Fprintf(b, "\tif %s {\n\t\t%s\n\t}\n", c.Cond, c.Return)
	}
	return nil
}
