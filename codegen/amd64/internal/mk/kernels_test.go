//go:build amd64 && !purego

package mk

import (
	"testing"

	"github.com/kgen-dev/kgen/codegen/amd64"
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
}

func (k kernel[T]) runnable() bool { return amd64.HostSupports(k.isa) }

var f32Kernels = []kernel[float32]{
	{"sgemm6x16AVX2", amd64.AVX2, 6, 16, sgemm6x16AVX2},
	{"sgemm14x32AVX512", amd64.AVX512, 14, 32, sgemm14x32AVX512},
}

var f64Kernels = []kernel[float64]{
	{"dgemm6x8AVX2", amd64.AVX2, 6, 8, dgemm6x8AVX2},
	{"dgemm14x16AVX512", amd64.AVX512, 14, 16, dgemm14x16AVX512},
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
