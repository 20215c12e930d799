package llvm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/f16"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
	"github.com/kgen-dev/kgen/passes"
	"github.com/kgen-dev/kgen/target"
)

// library compiles every kernel of kernels.kdsl with the llvm pipeline into package "kt".
func library(t *testing.T) *codegen.Package {
	t.Helper()
	m, err := target.Lookup("llvm")
	if err != nil {
		t.Fatal(err)
	}
	return compileKernels(t, "kt", m, kdslKernels(t))
}

// kdslKernels returns the checked kernels of kernels.kdsl.
func kdslKernels(t *testing.T) []*ir.Kernel {
	t.Helper()
	src, err := os.ReadFile("../../kernels.kdsl")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := check.File("kernels.kdsl", string(src))
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// compileKernels compiles ks for machine m (the llvm pipeline) into package name.
func compileKernels(t *testing.T, name string, m target.Machine, ks []*ir.Kernel) *codegen.Package {
	t.Helper()
	p := &codegen.Package{Name: name, Source: "kernels.kdsl", Target: "llvm"}
	for _, k := range ks {
		f, err := passes.Compile(k, m, passes.Options{})
		if err != nil {
			t.Fatal(err)
		}
		p.Kernels = append(p.Kernels, codegen.Kernel{K: k, F: f})
	}
	return p
}

// shared is the library generated as package "kernels" and compiled once for all tests (opt
// -passes=verify, opt -O3, llc -O3): dir holds kernels.ll, kernels.h, kernels.o.
var shared struct {
	once sync.Once
	p    *codegen.Package
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// compiled returns the shared compiled library (see shared), building it on first use.
func compiled(t *testing.T) (*codegen.Package, string) {
	t.Helper()
	opt, llc := tool(t, "opt", "opt-14"), tool(t, "llc", "llc-14")
	shared.once.Do(func() {
		p := library(t)
		p.Name = "kernels"
		shared.p = p
		files, err := Backend{}.Generate(p)
		if err != nil {
			shared.err = err
			return
		}
		if shared.dir, err = os.MkdirTemp("", "kgen-llvm-"); err != nil {
			shared.err = err
			return
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(shared.dir, f.Name), f.Data, 0o644); err != nil {
				shared.err = err
				return
			}
		}
		for _, args := range [][]string{
			{opt, "-passes=verify", "kernels.ll", "-o", "/dev/null"},
			{opt, "-O3", "kernels.ll", "-o", "kernels.bc"},
			{llc, "-O3", "-relocation-model=pic", "-filetype=obj", "kernels.bc", "-o", "kernels.o"},
		} {
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Dir = shared.dir
			if out, err := cmd.CombinedOutput(); err != nil {
				shared.err = fmt.Errorf("%v: %v\n%s", args, err, out)
				return
			}
		}
	})
	if shared.err == nil && shared.dir == "" {
		shared.err = fmt.Errorf("the kernel library did not compile (see the first test's failure)")
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.p, shared.dir
}

// build links the C driver (driverC) with the compiled library and returns its path.
func build(t *testing.T) (*codegen.Package, string) {
	t.Helper()
	clang := tool(t, "clang-14", "clang")
	p, lib := compiled(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "driver.c"), []byte(driverC(p)), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, clang, "-O1", "-w", "-I", lib, "driver.c", filepath.Join(lib, "kernels.o"), "-lm", "-o", "driver")
	return p, filepath.Join(dir, "driver")
}

// call is one kernel call of a driver run and what it must give.
type call struct {
	k      int
	kern   *ir.Kernel
	dims   map[string]int
	in     ir.Args
	ref    ir.Args              // interpreter's result (nil: the call must fail)
	mag    map[string][]float64 // magnitudes for the tolerance
	status int32                // the expected status
	exact  bool                 // outputs must equal the interpreter's bit for bit (NaN: any NaN)
}

func putElem(w *bytes.Buffer, d ir.DType, v float64) {
	switch d {
	case ir.F64:
		binary.Write(w, binary.LittleEndian, v)
	case ir.F32:
		binary.Write(w, binary.LittleEndian, float32(v))
	case ir.F16:
		binary.Write(w, binary.LittleEndian, uint16(f16.FromFloat64(v)))
	case ir.BF16:
		binary.Write(w, binary.LittleEndian, uint16(f16.BF16FromFloat64(v)))
	case ir.I32:
		binary.Write(w, binary.LittleEndian, int32(v))
	default:
		binary.Write(w, binary.LittleEndian, int8(v))
	}
}

func getElem(r *bytes.Reader, d ir.DType) (float64, error) {
	switch d {
	case ir.F64:
		var x float64
		err := binary.Read(r, binary.LittleEndian, &x)
		return x, err
	case ir.F32:
		var x float32
		err := binary.Read(r, binary.LittleEndian, &x)
		return float64(x), err
	case ir.F16, ir.BF16:
		var x uint16
		err := binary.Read(r, binary.LittleEndian, &x)
		if d == ir.F16 {
			return float64(f16.F16(x).Float32()), err
		}
		return float64(f16.BF16(x).Float32()), err
	case ir.I32:
		var x int32
		err := binary.Read(r, binary.LittleEndian, &x)
		return float64(x), err
	}
	var x int8
	err := binary.Read(r, binary.LittleEndian, &x)
	return float64(x), err
}

// encode writes c as driver input.
func (c *call) encode(w *bytes.Buffer) {
	binary.Write(w, binary.LittleEndian, int32(c.k))
	for _, d := range c.kern.Dims {
		binary.Write(w, binary.LittleEndian, int64(c.dims[d.Name]))
	}
	for _, p := range c.kern.Params {
		if p.Kind == ir.Scalar {
			putElem(w, p.Type, c.in.Scalars[p.Name])
			continue
		}
		data := c.in.Tensors[p.Name]
		binary.Write(w, binary.LittleEndian, int64(len(data)))
		for _, v := range data {
			putElem(w, p.Type, v)
		}
	}
}

// check reads c's results from the driver's output and compares them.
func (c *call) check(r *bytes.Reader) error {
	var st int32
	if err := binary.Read(r, binary.LittleEndian, &st); err != nil {
		return fmt.Errorf("reading status: %v", err)
	}
	if st != c.status {
		return fmt.Errorf("status %d, want %d", st, c.status)
	}
	// Read every output before comparing, so that a mismatch leaves the stream at the next call.
	outs := map[string][]float64{}
	for _, p := range c.kern.Params {
		if p.Kind != ir.Out && p.Kind != ir.InOut {
			continue
		}
		got := make([]float64, len(c.in.Tensors[p.Name]))
		for i := range got {
			v, err := getElem(r, p.Type)
			if err != nil {
				return fmt.Errorf("reading %s: %v", p.Name, err)
			}
			got[i] = v
		}
		outs[p.Name] = got
	}
	for _, p := range c.kern.Params {
		got, ok := outs[p.Name]
		if !ok {
			continue
		}
		if c.status != StatusOK {
			// Nothing written: the output holds exactly what was passed in.
			for i, v := range got {
				w := c.in.Tensors[p.Name][i]
				if math.Float64bits(v) != math.Float64bits(w) && !(v != v && w != w) {
					return fmt.Errorf("status %d but %s[%d] changed from %v to %v", st, p.Name, i, w, v)
				}
			}
			continue
		}
		if c.exact {
			for i, v := range got {
				w := c.ref.Tensors[p.Name][i]
				if math.Float64bits(v) != math.Float64bits(w) && !(v != v && w != w) {
					return fmt.Errorf("%s[%d] = %v, want %v exactly (input %v)", p.Name, i, v, w, c.in.Tensors[c.kern.Params[0].Name][i])
				}
			}
			continue
		}
		if err := kgentest.Compare(c.kern, c.dims, p, got, c.ref.Tensors[p.Name], c.mag[p.Name]); err != nil {
			return err
		}
	}
	return nil
}

// TestKernelsAgainstInterpreter compiles every kernel of kernels.kdsl through the LLVM path (opt
// -passes=verify, opt -O3, llc -O3, linked into a C driver) and compares it with the interpreter on
// ragged random shapes (ones, primes, large reductions; NaN and Inf inputs), checks that a wrong length
// gives status 2 and a window reaching outside the image status 3, with the outputs untouched.
func TestKernelsAgainstInterpreter(t *testing.T) {
	p, driver := build(t)
	rng := rand.New(rand.NewPCG(13, 5))
	var calls []*call
	for i, kk := range p.Kernels {
		k := kk.K
		shapes := kgentest.Shapes(k, rng, 5)
		for si, dims := range shapes {
			args := kgentest.RandomArgs(k, dims, rng, si)
			ref := args.Clone()
			if err := ir.RunKernel(k, ir.Storage, ref); err != nil {
				t.Fatalf("%s: interpreter on %v: %v", k.Name, dims, err)
			}
			calls = append(calls, &call{k: i, kern: k, dims: dims, in: args, ref: ref, mag: kgentest.Magnitude(k, args)})
		}
		// A tensor one element too long: status 2, nothing written.
		bad := kgentest.RandomArgs(k, shapes[1], rng, 1)
		for _, q := range k.Params {
			if q.Kind != ir.Scalar {
				bad.Tensors[q.Name] = append(bad.Tensors[q.Name], 0.5)
				break
			}
		}
		calls = append(calls, &call{k: i, kern: k, dims: shapes[1], in: bad, status: StatusLength})
		if k.Name == "maxpool2" {
			// Windows reaching past the image (2·(OH−1)+1 ≥ H): the interpreter and the kernel refuse.
			dims := map[string]int{"Nb": 1, "C": 2, "H": 3, "W": 4, "OH": 2, "OW": 2}
			args := kgentest.RandomArgs(k, dims, rng, 0)
			if err := ir.RunKernel(k, ir.Storage, args.Clone()); err == nil {
				t.Fatal("maxpool2: the interpreter accepts windows outside the image")
			}
			calls = append(calls, &call{k: i, kern: k, dims: dims, in: args, status: StatusIndex})
		}
		if conv := conversionInputs(k.Name); conv != nil {
			// The 16-bit conversions exactly: every f16, or floats at the rounding boundaries.
			dims := map[string]int{"N": len(conv)}
			args := ir.Args{Tensors: map[string][]float64{"X": conv, "Y": make([]float64, len(conv))}, Dims: dims}
			ref := args.Clone()
			if err := ir.RunKernel(k, ir.Storage, ref); err != nil {
				t.Fatal(err)
			}
			calls = append(calls, &call{k: i, kern: k, dims: dims, in: args, ref: ref, exact: true})
		}
		if k.Name == "saxpy" {
			// A negative dim: status 1.
			args := kgentest.RandomArgs(k, map[string]int{"N": 0}, rng, 0)
			calls = append(calls, &call{k: i, kern: k, dims: map[string]int{"N": -1}, in: args, status: StatusDim})
		}
	}
	runCalls(t, driver, calls)
}

// runCalls runs the driver once on all calls and checks each call's results; wrap runs the driver
// (qemu-aarch64 for another architecture's executable).
func runCalls(t *testing.T, driver string, calls []*call, wrap ...string) {
	t.Helper()
	var in bytes.Buffer
	for _, c := range calls {
		c.encode(&in)
	}
	argv := append(append([]string{}, wrap...), driver)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("driver: %v\n%s", err, stderr.Bytes())
	}
	r := bytes.NewReader(out)
	for _, c := range calls {
		if err := c.check(r); err != nil {
			t.Errorf("%s %v: %v", c.kern.Name, c.dims, err)
			if c.status != StatusOK {
				continue
			}
		}
	}
	if r.Len() != 0 {
		t.Errorf("driver wrote %d bytes more than expected", r.Len())
	}
}

// checkPackage compiles p on its own (opt verify, opt -O3, llc -O3, the C driver) and compares every
// kernel with the interpreter on ragged shapes. flags go to opt and llc (e.g. -mcpu=native).
func checkPackage(t *testing.T, p *codegen.Package, opt, llc, clang string, flags ...string) {
	t.Helper()
	dir := writePackage(t, p, driverC(p))
	ll := p.Name + ".ll"
	run(t, dir, opt, "-passes=verify", ll, "-o", "/dev/null")
	run(t, dir, opt, append([]string{"-O3", ll, "-o", "k.bc"}, flags...)...)
	run(t, dir, llc, append([]string{"-O3", "-relocation-model=pic", "-filetype=obj", "k.bc", "-o", "k.o"}, flags...)...)
	run(t, dir, clang, "-O1", "-w", "driver.c", "k.o", "-lm", "-o", "driver")
	runCalls(t, filepath.Join(dir, "driver"), randomCalls(t, p, rand.New(rand.NewPCG(21, 8)), 5))
}

// randomCalls is a call of every kernel of p on each of n ragged shapes (kgentest.Shapes), with the
// interpreter's results.
func randomCalls(t *testing.T, p *codegen.Package, rng *rand.Rand, n int) []*call {
	t.Helper()
	var calls []*call
	for i, kk := range p.Kernels {
		k := kk.K
		for si, dims := range kgentest.Shapes(k, rng, n) {
			args := kgentest.RandomArgs(k, dims, rng, si)
			ref := args.Clone()
			if err := ir.RunKernel(k, ir.Storage, ref); err != nil {
				t.Fatalf("%s: interpreter on %v: %v", k.Name, dims, err)
			}
			calls = append(calls, &call{k: i, kern: k, dims: dims, in: args, ref: ref, mag: kgentest.Magnitude(k, args)})
		}
	}
	return calls
}

// writePackage writes p's generated files and the C driver source driver.c into a temporary directory
// and returns it.
func writePackage(t *testing.T, p *codegen.Package, driver string) string {
	t.Helper()
	files, err := Backend{}.Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files = append(files, codegen.File{Name: "driver.c", Data: []byte(driver)})
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// conversionInputs returns the inputs that check a conversion kernel exactly (nil for other kernels):
// all 65536 f16 values for cvt_f16_f32; for cvt_f32_f16, floats around every f16 rounding boundary
// (halfway points, the subnormal range, overflow), infinities and NaN.
func conversionInputs(kernel string) []float64 {
	switch kernel {
	case "cvt_f16_f32":
		out := make([]float64, 1<<16)
		for i := range out {
			out[i] = float64(f16.F16(i).Float32())
		}
		return out
	case "cvt_f32_f16":
		out := []float64{math.Inf(1), math.Inf(-1), math.NaN(), 0, math.Copysign(0, -1), 65504, 65519.99, 65520, 1e6, -1e30}
		for i := 0; i < 1<<16; i += 7 {
			h := float64(f16.F16(i).Float32())
			next := float64(f16.F16(i + 1).Float32())
			if h != h || next != next || math.IsInf(h, 0) || math.IsInf(next, 0) {
				continue
			}
			mid := float32((h + next) / 2) // a tie (exactly representable in f32) or next to it
			for _, v := range []float32{mid, math.Nextafter32(mid, float32(math.Inf(1))), math.Nextafter32(mid, float32(math.Inf(-1)))} {
				out = append(out, float64(v))
			}
		}
		return out
	}
	return nil
}

// TestOtherTargets checks that llc accepts the module for aarch64, riscv64 and nvptx64 (-mtriple
// overrides the module's x86-64 triple; -O0 keeps it quick: instruction selection still sees every
// instruction), and that ptxas assembles the NVPTX output where the PTX backend's ptxas is present.
func TestOtherTargets(t *testing.T) {
	llc := tool(t, "llc", "llc-14")
	// One kernel of each kind (GEMM tiles of every element type, exp, sqrt, windows, conversions,
	// scratch rows), so that the check stays quick.
	p := library(t)
	var ks []codegen.Kernel
	for _, k := range p.Kernels {
		switch k.K.Name {
		case "sgemm", "dgemm", "hgemm", "bgemm_bf16", "softmax", "layernorm", "maxpool2", "cvt_f32_f16", "colsum_acc", "sdot":
			ks = append(ks, k)
		}
	}
	p.Kernels = ks
	files, err := Backend{}.Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kernels.ll"), files[0].Data, 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, triple := range []string{"aarch64-linux-gnu", "riscv64-unknown-linux-gnu", "nvptx64-nvidia-cuda"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(llc, "-O0", "-mtriple="+triple, "kernels.ll", "-o", triple+".s")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("llc -mtriple=%s: %v\n%.2000s", triple, err, out)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Run("ptxas", func(t *testing.T) {
		ptxas, _ := filepath.Abs("../../.tools/ptxas")
		if _, err := os.Stat(ptxas); err != nil {
			ptxas = tool(t, "ptxas")
		}
		run(t, dir, ptxas, "-arch=sm_80", "-c", "nvptx64-nvidia-cuda.s", "-o", "k.cubin")
	})
}

// TestPipeline checks the llvm pipeline's loop IR itself against the algorithm level in the
// interpreter (ir.RunFunc against ir.RunKernel) on ragged shapes, so that a wrong result is placed in
// the passes or in the backend.
func TestPipeline(t *testing.T) {
	p := library(t)
	rng := rand.New(rand.NewPCG(7, 3))
	for _, kk := range p.Kernels {
		k := kk.K
		for si, dims := range kgentest.Shapes(k, rng, 4)[:3] { // the last, large shape only in the compiled test
			args := kgentest.RandomArgs(k, dims, rng, si)
			ref, got := args.Clone(), args.Clone()
			if err := ir.RunKernel(k, ir.Storage, ref); err != nil {
				t.Fatal(err)
			}
			if err := ir.RunFunc(kk.F, ir.Storage, got, nil); err != nil {
				t.Fatalf("%s %v: %v", k.Name, dims, err)
			}
			mag := kgentest.Magnitude(k, args)
			for _, q := range k.Params {
				if q.Kind == ir.Out || q.Kind == ir.InOut {
					if err := kgentest.Compare(k, dims, q, got.Tensors[q.Name], ref.Tensors[q.Name], mag[q.Name]); err != nil {
						t.Errorf("%s %v: %v", k.Name, dims, err)
					}
				}
			}
		}
	}
}
