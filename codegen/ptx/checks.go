package ptx

import (
	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

// boundsChecks returns the lines of the CPU wrapper's affine index checks (codegen.IndexChecks).
func boundsChecks(k *ir.Kernel) ([]string, error) {
	checks, err := codegen.IndexChecks(k)
	var lines []string
	for _, c := range checks {
		lines = append(lines, "if "+c.Cond+" {", c.Return, "}")
	}
	return lines, err
}
