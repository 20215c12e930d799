package ptx

import (
	"bytes"
	"fmt"
	"go/format"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

// kgentestConv names kgentest's converters from and to float64 slices per element type.
var kgentestConv = map[ir.DType]string{ir.F64: "F64", ir.F32: "F32", ir.F16: "F16", ir.BF16: "BF16", ir.I32: "I32", ir.I8: "I8"}

// glueTestFile writes ptx_cuda_test.go: for every kernel with a PTX version, TestCUDAName runs
// NameHost through kgentest.Run (the reference interpreter on ragged random shapes, precision-derived
// tolerances, a wrong length refused with nothing written). Without a usable GPU each test skips
// saying why (OpenCUDA's error); KGEN_REQUIRE_GPU=1 makes that a failure. It builds with
// CGO_ENABLED=0, so `go test -c` makes a binary to run on a GPU machine without Go.
func glueTestFile(p *codegen.Package, mods []modInfo) ([]byte, error) {
	have := map[string]bool{}
	for _, m := range mods {
		for _, k := range m.kernels {
			have[k.Name] = true
		}
	}
	var b bytes.Buffer
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	mod := p.KgenModule()
	b.WriteString(codegen.Header)
	w("\npackage %s\n", p.Name)
	tma := map[string]bool{}  // kernels with a TMA version (sm_90a)
	prod := map[string]bool{} // kernels with a production version (sm_90a)
	for _, m := range mods {
		for _, k := range m.kernels {
			if k.TMA != nil {
				tma[k.Name] = true
			}
			if k.Prod != nil {
				prod[k.Name] = true
			}
		}
	}
	if len(tma) > 0 {
		w("import (\n\"math/rand/v2\"\n\"os\"\n\"sync\"\n\"testing\"\n\n%q\n%q\n%q\n%q\n)\n", mod+"/check", mod+"/f16", mod+"/ir", mod+"/kgentest")
	} else {
		w("import (\n\"os\"\n\"sync\"\n\"testing\"\n\n%q\n%q\n)\n", mod+"/f16", mod+"/kgentest")
	}
	w(`var (
	cudaOnce_ sync.Once
	cudaDev_  *CUDA
	cudaErr_  error
)

// cudaFor_ returns the CUDA handle the tests share, skipping the test (saying why) when OpenCUDA
// fails; KGEN_REQUIRE_GPU=1 makes that a failure.
func cudaFor_(t *testing.T) *CUDA {
	t.Helper()
	cudaOnce_.Do(func() { cudaDev_, cudaErr_ = OpenCUDA() })
	if cudaErr_ != nil {
		if os.Getenv("KGEN_REQUIRE_GPU") == "1" {
			t.Fatalf("KGEN_REQUIRE_GPU=1: %%v", cudaErr_)
		}
		t.Skipf("no usable GPU: %%v", cudaErr_)
	}
	return cudaDev_
}

var _ f16.F16
`)
	w(`// cudaKernel_ is one kernel's GPU method adapted to float64 data (kgentest's form).
type cudaKernel_ struct {
	source string
	call   func(c *CUDA, dims map[string]int, in map[string][]float64, scalars map[string]float64) (map[string][]float64, error)
}

// cudaRun_ checks kernel name's Host method against the reference interpreter.
func cudaRun_(t *testing.T, name string) {
	c := cudaFor_(t)
	k := cudaKernels_[name]
	kgentest.Run(t, k.source, kgentest.Kernel{
		Variants: func() []string { return []string{"cuda:" + c.Target()} },
		Use:      func(string) error { return nil },
		Call: func(dims map[string]int, in map[string][]float64, scalars map[string]float64) (map[string][]float64, error) {
			return k.call(c, dims, in, scalars)
		},
	})
}
`)
	var tests bytes.Buffer
	w("// cudaKernels_ holds every kernel with a PTX version, by kdsl name.\nvar cudaKernels_ = map[string]cudaKernel_{")
	for _, kk := range p.Kernels {
		k := kk.K
		if !have[k.Name] {
			continue
		}
		name := codegen.GoName(k.Name)
		w("%q: {source: %q,", k.Name, k.Source)
		w("call: func(c *CUDA, dims map[string]int, in map[string][]float64, scalars map[string]float64) (map[string][]float64, error) {")
		var args []string
		for _, d := range k.Dims {
			args = append(args, fmt.Sprintf("dims[%q]", d.Name))
		}
		for _, t := range k.Params {
			conv, ok := kgentestConv[t.Type]
			if !ok {
				return nil, fmt.Errorf("ptx: kernel %s: parameter %s: type %s", k.Name, t.Name, t.Type)
			}
			if t.Kind == ir.Scalar {
				cv := goTypes[t.Type]
				switch t.Type {
				case ir.F16:
					cv = "f16.FromFloat64"
				case ir.BF16:
					cv = "f16.BF16FromFloat64"
				}
				w("%s := %s(scalars[%q])", t.Name, cv, t.Name)
			} else {
				w("%s := kgentest.To%s(in[%q])", t.Name, conv, t.Name)
			}
			args = append(args, t.Name)
		}
		w("err := c.%sHost(%s)\nout := map[string][]float64{}", name, joinComma(args))
		for _, t := range k.Params {
			if t.Kind == ir.Out || t.Kind == ir.InOut {
				w("out[%q] = kgentest.From%s(%s)", t.Name, kgentestConv[t.Type], t.Name)
			}
		}
		w("return out, err\n}},")
		fmt.Fprintf(&tests, "// TestCUDA%s compares the GPU's %sHost with the reference interpreter.\nfunc TestCUDA%s(t *testing.T) { cudaRun_(t, %q) }\n\n", name, name, name, k.Name)
		if tma[k.Name] {
			fmt.Fprintf(&tests, "// TestCUDATMA%s runs %sHost's TMA version (sm_90a) on shapes whose rows TMA loads, against the\n// reference interpreter.\nfunc TestCUDATMA%s(t *testing.T) { cudaRunTMA_(t, %q, false) }\n\n", name, name, name, k.Name)
		}
		if prod[k.Name] {
			fmt.Fprintf(&tests, "// TestCUDAProd%s runs %sHost's production version (sm_90a; forced onto small shapes) on shapes\n// whose rows TMA loads, against the reference interpreter.\nfunc TestCUDAProd%s(t *testing.T) { cudaRunTMA_(t, %q, true) }\n\n", name, name, name, k.Name)
		}
	}
	if len(tma) > 0 {
		tests.WriteString(tmaTestHelper)
	}
	w("}\n")
	b.Write(tests.Bytes())
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("ptx: generated ptx_cuda_test.go does not format: %v", err)
	}
	return src, nil
}

// tmaTestHelper runs a kernel's TMA version (written into ptx_cuda_test.go when some kernel has one).
const tmaTestHelper = `// cudaRunTMA_ runs kernel name on the GPU on shapes whose tensor rows are multiples of 16 bytes (the
// TMA version runs; M, N, K = 1, primes and non-multiples of the 64-wide tiles elsewhere) against the
// reference interpreter, and checks that the TMA version ran: the production one (KGEN_PTX_PROD=1
// forces it onto shapes smaller than the GPU) when prod, else the 64×64 one (KGEN_PTX_PROD=0). It
// skips on GPUs without sm_90a.
func cudaRunTMA_(t *testing.T, name string, prod bool) {
	c := cudaFor_(t)
	if c.Target() != "sm_90a" {
		t.Skipf("TMA versions run on sm_90a; this GPU runs %s", c.Target())
	}
	if prod {
		t.Setenv("KGEN_PTX_PROD", "1")
	} else {
		t.Setenv("KGEN_PTX_PROD", "0")
	}
	prodBefore := c.prodRuns
	k := cudaKernels_[name]
	ks, err := check.File("k.kdsl", k.source)
	if err != nil {
		t.Fatal(err)
	}
	kern := ks[0]
	rng := rand.New(rand.NewPCG(7, 11))
	before := c.tmaRuns
	for si, mnk := range [][3]int{{1, 8, 8}, {17, 24, 72}, {67, 136, 200}, {130, 72, 8}, {257, 264, 520}} {
		dims := map[string]int{}
		for _, d := range kern.Dims {
			dims[d.Name] = map[string]int{"M": mnk[0], "N": mnk[1], "K": mnk[2]}[d.Name]
			if dims[d.Name] == 0 {
				dims[d.Name] = 3
			}
		}
		args := kgentest.RandomArgs(kern, dims, rng, si)
		ref := args.Clone()
		if err := ir.RunKernel(kern, ir.Storage, ref); err != nil {
			t.Fatal(err)
		}
		mag := kgentest.Magnitude(kern, args)
		out, err := k.call(c, dims, args.Clone().Tensors, args.Scalars)
		if err != nil {
			t.Fatalf("%v: %v", dims, err)
		}
		for _, p := range kern.Params {
			if p.Kind == ir.Out || p.Kind == ir.InOut {
				if err := kgentest.Compare(kern, dims, p, out[p.Name], ref.Tensors[p.Name], mag[p.Name]); err != nil {
					t.Errorf("%v: %v", dims, err)
				}
			}
		}
	}
	if c.tmaRuns == before && os.Getenv("KGEN_PTX_TMA") != "0" {
		t.Errorf("the TMA version of %s never ran", name)
	}
	if ran := c.prodRuns != prodBefore; ran != (prod && os.Getenv("KGEN_PTX_TMA") != "0") {
		t.Errorf("the production version of %s ran: %v", name, ran)
	}
}
`

func joinComma(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(x)
	}
	return b.String()
}
