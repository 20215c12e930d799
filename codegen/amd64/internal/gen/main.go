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
	"github.com/kgen-dev/kgen/codegen/frontend"
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
	vloops, err := TestVLoops()
	if err != nil {
		return err
	}
	asm, stubs, err := amd64.GenerateWithPeaks(pkg, kernels, vloops, amd64.DefaultPeaks()...)
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

// vloopSrc has f64 vector loops (kgen's own kernels have none): every elementwise operation the
// generator handles, and the +, max and min reductions.
const vloopSrc = `
kernel dops(x: f64[N], y: f64[N], z: out f64[N], a: f64) {
    z[i] = relu(max(x[i], y[i]) * a) + min(abs(x[i]), -y[i]) - sqrt(abs(y[i])) / a
}
kernel dsum(x: f64[N], y: f64[N], r: out f64[]) {
    r[] = sum(i: x[i] * y[i])
}
kernel dmax(x: f64[N], r: out f64[]) {
    r[] = max(i: x[i])
}
kernel dmin(x: f64[N], r: out f64[]) {
    r[] = min(i: x[i])
}
`

// TestVLoops returns the AVX2 and AVX-512 routines of the vector loops of vloopSrc, for the tests of
// package mk (vloop_<kernel>_0AVX2, vloop_<kernel>_0AVX512).
func TestVLoops() ([]amd64.VLoopKernel, error) {
	p, err := frontend.Package("mk", "vloop.kdsl", vloopSrc, "go")
	if err != nil {
		return nil, err
	}
	var out []amd64.VLoopKernel
	for _, isa := range []string{amd64.AVX2, amd64.AVX512} {
		vs, _ := amd64.VLoopKernels(p, isa)
		if len(vs) != len(p.Kernels) {
			return nil, fmt.Errorf("%s: %d of %d test vector loops generated", isa, len(vs), len(p.Kernels))
		}
		out = append(out, vs...)
	}
	return out, nil
}
