// Command gen writes the generated test package codegen/amd64/internal/mk:
// mk_amd64.s and stub_amd64.go, holding the default packed, unpacked and bf16
// GEMM microkernels and FMA-peak kernels of package amd64.
//
// Usage (from internal/mk, via go generate):
//
//	go run ../gen [-out dir] [-pkg name]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kgen-dev/kgen/codegen/amd64"
)

func main() {
	// A private flag set: avo's build package registers its own flags
	// (-out, -stubs, ...) on flag.CommandLine at init.
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	out := fs.String("out", ".", "output directory")
	pkg := fs.String("pkg", "mk", "Go package name of the output")
	fs.Parse(os.Args[1:])
	if err := run(*out, *pkg); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out, pkg string) error {
	kernels := append(amd64.DefaultKernels(), amd64.DefaultKernelsU()...)
	kernels = append(kernels, amd64.DefaultKernelsBF16()...)
	kernels = append(kernels, TestKernelsU()...)
	asm, stubs, err := amd64.Generate(pkg, kernels, amd64.DefaultPeaks()...)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "mk_amd64.s"), asm, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "stub_amd64.go"), stubs, 0o644)
}

// TestKernelsU returns unpacked kernels that exist for testing only: AVX2
// tiles taller than 6 rows, which use the row addressing of the AVX-512
// 14-row tiles (two bases + scaled index registers on full tiles, a row
// pointer table on edge tiles), so that code runs on AVX2-only machines.
func TestKernelsU() []amd64.GemmKernel {
	s := amd64.NewGemmKernelU(amd64.F32, amd64.AVX2)
	s.Name, s.MR, s.NR = "sgemm13x8AVX2U", 13, 8
	d := amd64.NewGemmKernelU(amd64.F64, amd64.AVX2)
	d.Name, d.MR, d.NR = "dgemm12x4AVX2U", 12, 4
	return []amd64.GemmKernel{s, d}
}
