// Package mkspec lists the kernels of the generated test package internal/mk and renders its files,
// shared by the generator command (internal/gen) and mk's regeneration test.
package mkspec

import (
	"github.com/kgen-dev/kgen/codegen/arm64"
)

// Kernels are the production kernels (arm64.DefaultKernels) plus shapes and unroll factors that
// exercise the generator's other paths (register lists longer than 4, unroll 1, 2 and 8).
func Kernels() []arm64.GemmKernel {
	return append(arm64.DefaultKernels(),
		arm64.GemmKernel{Name: "dgemm8x6", Elem: "f64", MR: 8, NR: 6, KUnroll: 2},
		arm64.GemmKernel{Name: "sgemm4x16", Elem: "f32", MR: 4, NR: 16, KUnroll: 8},
		arm64.GemmKernel{Name: "sgemm4x20", Elem: "f32", MR: 4, NR: 20, KUnroll: 1},
	)
}

// Files returns the generated files of package mk by name.
func Files() (map[string][]byte, error) {
	asm, stubs, err := arm64.Generate("mk", Kernels())
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"mk_arm64.s": asm, "stub_arm64.go": stubs}, nil
}
