package msl

import (
	"fmt"
	"go/format"
	"strings"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

// testFile writes metal_test.go for the kernels ks that have Metal methods:
//
//   - TestMetalOpen: off macOS, OpenMetal must fail with an error wrapping metal.ErrNoDevice.
//   - TestMetalChecks (no device needed): on random dims and lengths, right and wrong, each Host
//     method on a nil *Metal returns exactly the CPU function's error (and each device method with
//     nil tensors, the CPU function's with nil slices); where the CPU function
//     accepts the arguments it returns nil (every output empty) or the "no Metal device" error,
//     so the checks run before the device is touched.
//   - TestMetal<Kernel>: on a Mac with a GPU, the Host method and the device method against the
//     reference interpreter through kgentest.Run (ragged shapes, guard pages, NaN and Inf inputs, the beta rule, a wrong
//     length); elsewhere it skips saying why (fails instead with KGEN_REQUIRE_GPU=1).
func testFile(p *codegen.Package, ks []*ir.Kernel) ([]byte, error) {
	var b strings.Builder
	b.WriteString(codegen.Header)
	fmt.Fprintf(&b, `
package %[1]s

import (
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"

	%[2]q
	%[3]q
	%[4]q
)

var _ = f16.FromFloat64

func TestMetalOpen(t *testing.T) {
	m, err := OpenMetal()
	if err == nil {
		m.Close()
		if runtime.GOOS != "darwin" {
			t.Fatalf("OpenMetal succeeded on %%s", runtime.GOOS)
		}
		return
	}
	if !metal.IsNoDevice(err) && runtime.GOOS != "darwin" {
		t.Fatalf("OpenMetal on %%s: %%v, want an error wrapping metal.ErrNoDevice", runtime.GOOS, err)
	}
	if err.Error() == "" {
		t.Fatal("OpenMetal: empty error")
	}
	t.Logf("OpenMetal: %%v", err)
}

// openMetalForTest opens the device or skips (fails with KGEN_REQUIRE_GPU=1) saying why.
func openMetalForTest(t *testing.T) *Metal {
	t.Helper()
	m, err := OpenMetal()
	if err != nil {
		if metal.IsNoDevice(err) && os.Getenv("KGEN_REQUIRE_GPU") != "1" {
			t.Skipf("no Metal GPU here (set KGEN_REQUIRE_GPU=1 to fail instead): %%v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// metalTestDim draws a dim: mostly small, sometimes 0, negative or beyond rt.MaxDim.
func metalTestDim(rng *rand.Rand) int {
	switch rng.IntN(20) {
	case 0:
		return -1 - rng.IntN(3)
	case 1:
		return 1 << 62
	}
	return rng.IntN(6)
}

// metalTestLen is the length of a tensor of shape dims, sometimes one off (or small when a dim is
// out of range).
func metalTestLen(rng *rand.Rand, dims ...int) int {
	n := 1
	for _, d := range dims {
		if d < 0 || d > 64 {
			return rng.IntN(3)
		}
		n *= d
	}
	switch rng.IntN(12) {
	case 0:
		return n + 1
	case 1:
		if n > 0 {
			return n - 1
		}
	}
	return n
}

// metalChecked counts, per kernel, the calls the CPU function accepted ([0]) and refused ([1]).
var metalChecked = map[string]*[2]int{}

// metalSameCheck compares a Host method's error on a nil *Metal with the CPU function's.
func metalSameCheck(t *testing.T, kernel string, dims []int, cpu, gpu error) {
	t.Helper()
	if metalChecked[kernel] == nil {
		metalChecked[kernel] = new([2]int)
	}
	if cpu == nil {
		metalChecked[kernel][0]++
	} else {
		metalChecked[kernel][1]++
	}
	metalCompare(t, kernel, dims, cpu, gpu)
}

// metalCompare fails t unless gpu is cpu's error, or cpu is nil and gpu is nil or errMetalNil.
func metalCompare(t *testing.T, kernel string, dims []int, cpu, gpu error) {
	t.Helper()
	switch {
	case cpu == nil && gpu != nil && !errors.Is(gpu, errMetalNil):
		t.Errorf("%%s %%v: CPU accepts, Metal: %%v", kernel, dims, gpu)
	case cpu != nil && (gpu == nil || gpu.Error() != cpu.Error()):
		t.Errorf("%%s %%v: CPU: %%v, Metal: %%v", kernel, dims, cpu, gpu)
	}
}

// metalTestUpload copies s to a new MetalTensor, recording its Free in free; after the first
// failure (kept in *errp) it does nothing and returns nil.
func metalTestUpload[T metalElem](m *Metal, s []T, free *[]func() error, errp *error) *MetalTensor[T] {
	if *errp != nil {
		return nil
	}
	d, err := MetalTensorFrom(m, s)
	if err != nil {
		*errp = err
		return nil
	}
	*free = append(*free, d.Free)
	return d
}

func TestMetalChecks(t_ *testing.T) {
	rng_ := rand.New(rand.NewPCG(7, 11))
	var m_ *Metal
	for range 300 {
`, p.Name, p.KgenModule()+"/f16", p.KgenModule()+"/kgentest", p.KgenModule()+"/rt/metal")
	for _, k := range ks {
		checkCase(&b, k)
	}
	b.WriteString("\t}\n")
	b.WriteString(`	// Both outcomes must have been compared for every kernel, or the test proves little.
	for k, n := range metalChecked {
		if n[0] == 0 || n[1] == 0 {
			t_.Errorf("%s: %d accepted and %d refused calls: want both", k, n[0], n[1])
		}
	}
}
`)
	for _, k := range ks {
		deviceTest(&b, k)
	}
	out, err := format.Source([]byte(b.String()))
	if err != nil {
		return nil, fmt.Errorf("msl: generated metal_test.go does not parse: %v", err)
	}
	return out, nil
}

// checkCase writes one random call of kernel k's CPU function and of its Host method on a nil Metal.
func checkCase(b *strings.Builder, k *ir.Kernel) {
	b.WriteString("\t{\n")
	var dims, args, args2 []string
	for _, d := range k.Dims {
		fmt.Fprintf(b, "\t\t%s := metalTestDim(rng_)\n", d.Name)
		dims = append(dims, d.Name)
	}
	args = append(args, dims...)
	args2 = append(args2, dims...)
	for _, t := range k.Params {
		if t.Kind == ir.Scalar {
			fmt.Fprintf(b, "\t\tvar %s %s\n", t.Name, goElem(t.Type))
			args, args2 = append(args, t.Name), append(args2, t.Name)
			continue
		}
		var sh []string
		for _, d := range t.Shape {
			sh = append(sh, d.Name)
		}
		fmt.Fprintf(b, "\t\t%[1]s := make([]%[2]s, metalTestLen(rng_, %[3]s))\n\t\t%[1]s2_ := make([]%[2]s, len(%[1]s))\n",
			t.Name, goElem(t.Type), strings.Join(sh, ", "))
		args, args2 = append(args, t.Name), append(args2, t.Name+"2_")
	}
	name := codegen.GoName(k.Name)
	fmt.Fprintf(b, "\t\tcpu_ := %s(%s)\n\t\tgpu_ := m_.%sHost(%s)\n", name, strings.Join(args, ", "), name, strings.Join(args2, ", "))
	fmt.Fprintf(b, "\t\tmetalSameCheck(t_, %q, []int{%s}, cpu_, gpu_)\n", k.Name, strings.Join(dims, ", "))
	// The device method with nil tensors (length 0) against the CPU function with nil slices.
	var nilArgs, devNil []string
	nilArgs = append(nilArgs, dims...)
	devNil = append(devNil, dims...)
	for _, t := range k.Params {
		if t.Kind == ir.Scalar {
			nilArgs, devNil = append(nilArgs, t.Name), append(devNil, t.Name)
		} else {
			nilArgs, devNil = append(nilArgs, "nil"), append(devNil, "nil")
		}
	}
	fmt.Fprintf(b, "\t\tmetalCompare(t_, %q, []int{%s}, %s(%s), m_.%s(%s))\n\t}\n", k.Name+" (nil tensors)", strings.Join(dims, ", "), name, strings.Join(nilArgs, ", "), name, strings.Join(devNil, ", "))
}

// convert returns the kgentest conversions of a type: to Go from float64 slices, back, and of a
// scalar.
func convert(d ir.DType) (to, from, scalar string) {
	switch d {
	case ir.F16:
		return "kgentest.ToF16", "kgentest.FromF16", "f16.FromFloat64(%s)"
	case ir.BF16:
		return "kgentest.ToBF16", "kgentest.FromBF16", "f16.BF16FromFloat64(%s)"
	case ir.I32:
		return "kgentest.ToI32", "kgentest.FromI32", "int32(%s)"
	case ir.I8:
		return "kgentest.ToI8", "kgentest.FromI8", "int8(%s)"
	}
	return "kgentest.ToF32", "kgentest.FromF32", "float32(%s)"
}

// deviceTest writes TestMetal<Kernel>: both methods against the interpreter, as two kgentest
// variants ("host": the Host method on slices; "device": the slices uploaded to MetalTensors, the
// device method, the outputs downloaded only when it succeeds).
func deviceTest(b *strings.Builder, k *ir.Kernel) {
	name := codegen.GoName(k.Name)
	fmt.Fprintf(b, "\nfunc TestMetal%s(t *testing.T) {\n\tm_ := openMetalForTest(t)\n\tvariant_ := \"\"\n", name)
	fmt.Fprintf(b, "\tkgentest.Run(t, %q, kgentest.Kernel{\n", k.Source)
	b.WriteString("\t\tVariants: func() []string { return []string{\"host\", \"device\"} },\n")
	b.WriteString("\t\tUse: func(v string) error { variant_ = v; return nil },\n")
	b.WriteString("\t\tCall: func(dims_ map[string]int, in_ map[string][]float64, scalars_ map[string]float64) (map[string][]float64, error) {\n")
	var args, devArgs []string
	for _, d := range k.Dims {
		args = append(args, fmt.Sprintf("dims_[%q]", d.Name))
	}
	devArgs = append(devArgs, args...)
	for _, t := range k.Params {
		to, _, sc := convert(t.Type)
		if t.Kind == ir.Scalar {
			fmt.Fprintf(b, "\t\t\t%s := %s\n", t.Name, fmt.Sprintf(sc, fmt.Sprintf("scalars_[%q]", t.Name)))
			devArgs = append(devArgs, t.Name)
		} else {
			fmt.Fprintf(b, "\t\t\t%s := %s(in_[%q])\n", t.Name, to, t.Name)
			devArgs = append(devArgs, t.Name+"D_")
		}
		args = append(args, t.Name)
	}
	fmt.Fprintf(b, "\t\t\tvar err_ error\n\t\t\tif variant_ == \"host\" {\n\t\t\t\terr_ = m_.%sHost(%s)\n\t\t\t} else {\n", name, strings.Join(args, ", "))
	b.WriteString("\t\t\t\tvar free_ []func() error\n")
	for _, t := range k.Params {
		if t.Kind != ir.Scalar {
			fmt.Fprintf(b, "\t\t\t\t%sD_ := metalTestUpload(m_, %s, &free_, &err_)\n", t.Name, t.Name)
		}
	}
	fmt.Fprintf(b, "\t\t\t\tif err_ == nil {\n\t\t\t\t\terr_ = m_.%s(%s)\n\t\t\t\t}\n", name, strings.Join(devArgs, ", "))
	for _, t := range k.Params {
		if t.Kind == ir.Out || t.Kind == ir.InOut {
			fmt.Fprintf(b, "\t\t\t\tif err_ == nil {\n\t\t\t\t\terr_ = %sD_.Download(%s)\n\t\t\t\t}\n", t.Name, t.Name)
		}
	}
	b.WriteString("\t\t\t\tfor _, f := range free_ {\n\t\t\t\t\tf()\n\t\t\t\t}\n\t\t\t}\n")
	b.WriteString("\t\t\tout_ := map[string][]float64{}\n")
	for _, t := range k.Params {
		if t.Kind == ir.Out || t.Kind == ir.InOut {
			_, from, _ := convert(t.Type)
			fmt.Fprintf(b, "\t\t\tout_[%q] = %s(%s)\n", t.Name, from, t.Name)
		}
	}
	b.WriteString("\t\t\treturn out_, err_\n\t\t},\n\t})\n}\n")
}
