//go:build amd64 && !purego

package mk

import (
	"testing"

	"github.com/kgen-dev/kgen/codegen/amd64"
	"github.com/kgen-dev/kgen/codegen/amd64/emu"
)

// float is the element type of a kernel.
type float interface{ float32 | float64 }

// kernFunc is the microkernel contract of docs/MICROKERNEL.md.
type kernFunc[T float] func(kc int, a, b, c *T, ldc int, m, n int, alpha, beta T, bias *T, ep int)

type kernel[T float] struct {
	name   string
	isa    string
	mr, nr int
	fn     kernFunc[T]

	// bind, set when fn is the emulated kernel (emu_test.go), gives it
	// the slices it may access before each call.
	bind func(rs ...emu.Region)
}

func (k kernel[T]) runnable() bool { return amd64.HostSupports(k.isa) }

var f32Kernels = []kernel[float32]{
	{name: "sgemm6x16AVX2", isa: amd64.AVX2, mr: 6, nr: 16, fn: sgemm6x16AVX2},
	{name: "sgemm14x32AVX512", isa: amd64.AVX512, mr: 14, nr: 32, fn: sgemm14x32AVX512},
}

var f64Kernels = []kernel[float64]{
	{name: "dgemm6x8AVX2", isa: amd64.AVX2, mr: 6, nr: 8, fn: dgemm6x8AVX2},
	{name: "dgemm14x16AVX512", isa: amd64.AVX512, mr: 14, nr: 16, fn: dgemm14x16AVX512},
}

type peak struct {
	amd64.PeakKernel
	fn func(iters int)
}

var peaks = []peak{
	{amd64.NewPeakKernel(amd64.F32, amd64.AVX2), fmaPeakAVX2F32},
	{amd64.NewPeakKernel(amd64.F64, amd64.AVX2), fmaPeakAVX2F64},
	{amd64.NewPeakKernel(amd64.F32, amd64.AVX512), fmaPeakAVX512F32},
	{amd64.NewPeakKernel(amd64.F64, amd64.AVX512), fmaPeakAVX512F64},
}

// TestTables checks that the tables above match the generator's defaults.
func TestTables(t *testing.T) {
	want := map[string]amd64.GemmKernel{}
	for _, k := range append(amd64.DefaultKernels(), amd64.DefaultKernelsBF16()...) {
		want[k.Name] = k
	}
	check := func(name, isa string, mr, nr int) {
		k, ok := want[name]
		if !ok || k.ISA != isa || k.MR != mr || k.NR != nr {
			t.Errorf("%s: table says %s %dx%d, generator %+v", name, isa, mr, nr, k)
		}
		delete(want, name)
	}
	for _, k := range f32Kernels {
		check(k.name, k.isa, k.mr, k.nr)
	}
	for _, k := range f64Kernels {
		check(k.name, k.isa, k.mr, k.nr)
	}
	for _, k := range bf16Kernels {
		check(k.name, k.isa, k.mr, k.nr)
	}
	for name := range want {
		t.Errorf("kernel %s is generated but not tested", name)
	}
	for _, p := range peaks {
		if p.Name == "" || p.FlopsPerIter() <= 0 {
			t.Errorf("bad peak kernel %+v", p.PeakKernel)
		}
	}
}

func skipUnlessRunnable(t testing.TB, isa string) {
	t.Helper()
	if !amd64.HostSupports(isa) {
		t.Skipf("CPU lacks %s", isa)
	}
}
