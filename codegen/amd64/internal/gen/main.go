// Command gen writes the generated test package codegen/amd64/internal/mk:
// mk_amd64.s and stub_amd64.go, holding the default GEMM microkernels and
// FMA-peak kernels of package amd64.
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
	asm, stubs, err := amd64.Generate(pkg, amd64.DefaultKernels(), amd64.DefaultPeaks()...)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "mk_amd64.s"), asm, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "stub_amd64.go"), stubs, 0o644)
}
