package msl

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/f16"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
	"github.com/kgen-dev/kgen/passes"
	"github.com/kgen-dev/kgen/target"
)

const clangName = "clang++-14"

// clangPath finds clang++-14: missing, the test skips, or fails when KGEN_REQUIRE_TOOLS=1.
func clangPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath(clangName)
	if err != nil {
		if os.Getenv("KGEN_REQUIRE_TOOLS") == "1" {
			t.Fatalf("%s not found (KGEN_REQUIRE_TOOLS=1): install clang-14 (scripts/setup.sh)", clangName)
		}
		t.Skipf("%s not found: the MSL kernels are not compiled and run on the CPU (set KGEN_REQUIRE_TOOLS=1 to fail instead)", clangName)
	}
	return p
}

// compilePackage compiles every kernel of src with the pipeline of spec (an msl target).
func compilePackage(t *testing.T, file, text, spec string) *codegen.Package {
	t.Helper()
	ks, err := check.File(file, text)
	if err != nil {
		t.Fatal(err)
	}
	m, err := target.Lookup(spec)
	if err != nil {
		t.Fatal(err)
	}
	p := &codegen.Package{Name: "k", Source: filepath.Base(file), Target: spec}
	for _, k := range ks {
		f, err := passes.Compile(k, m, passes.Options{})
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		p.Kernels = append(p.Kernels, codegen.Kernel{K: k, F: f})
	}
	return p
}

func libraryPackage(t *testing.T) *codegen.Package {
	t.Helper()
	text, err := os.ReadFile("../../kernels.kdsl")
	if err != nil {
		t.Fatal(err)
	}
	return compilePackage(t, "kernels.kdsl", string(text), "msl:3.1")
}

var cxxFlags = []string{"-std=c++20", "-O0", "-pthread", "-Wall", "-Wno-unknown-attributes", "-Wno-unused-variable", "-Werror"}

// buildDriver compiles testdata/driver.cpp with the emitted source and its entries into one binary,
// cached under the temporary directory by the hash of everything that goes into it, after checking
// the same source in the shim's strict address-space mode.
func buildDriver(clang string, src *Source) (string, error) {
	shim, err := os.ReadFile("testdata/metal_shim.h")
	if err != nil {
		return "", err
	}
	drv, err := os.ReadFile("testdata/driver.cpp")
	if err != nil {
		return "", err
	}
	entries := CPPEntries(src.Launches)
	h := sha256.New()
	for _, part := range [][]byte{shim, drv, []byte(src.Text), []byte(entries), []byte(strings.Join(cxxFlags, " "))} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	dir := filepath.Join(os.TempDir(), "kgen-msl-"+hex.EncodeToString(h.Sum(nil))[:16])
	bin := filepath.Join(dir, "driver")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for name, data := range map[string]string{"kernels.metal": src.Text, "entries.inc": entries} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			return "", err
		}
	}
	abs, err := filepath.Abs("testdata")
	if err != nil {
		return "", err
	}
	tmp := bin + fmt.Sprintf(".%d.tmp", os.Getpid())
	args := append(append([]string{}, cxxFlags...), "-I", abs, "-I", filepath.Join(abs, "include"), "-I", dir, "-o", tmp, filepath.Join(abs, "driver.cpp"))
	cmd := exec.Command(clang, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s:\n%s\n(the emitted source is %s)", clang, strings.Join(args, " "), limit(string(out), 6000), filepath.Join(dir, "kernels.metal"))
	}
	// The same source again, syntax only, with Metal's address spaces as distinct clang address
	// spaces: a pointer into the wrong space (threadgroup where device is expected) fails here.
	if out, err := strictCheck(clang, dir); err != nil {
		return "", fmt.Errorf("strict address spaces: %v:\n%s\n(the emitted source is %s)", err, limit(string(out), 6000), filepath.Join(dir, "kernels.metal"))
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// strictCheck compiles the driver with the kernels.metal and entries.inc of dir syntax-only in the
// shim's strict mode (KG_STRICT: Metal's address spaces as distinct clang address spaces).
func strictCheck(clang, dir string) ([]byte, error) {
	abs, err := filepath.Abs("testdata")
	if err != nil {
		return nil, err
	}
	args := append(append([]string{}, cxxFlags...), "-fsyntax-only", "-DKG_STRICT", "-I", abs, "-I", filepath.Join(abs, "include"), "-I", dir, filepath.Join(abs, "driver.cpp"))
	return exec.Command(clang, args...).CombinedOutput()
}

func limit(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func encode(t ir.DType, v []float64) []byte {
	b := make([]byte, len(v)*t.Size())
	for i, x := range v {
		switch t {
		case ir.F32:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(x)))
		case ir.F16:
			binary.LittleEndian.PutUint16(b[2*i:], uint16(f16.FromFloat64(x)))
		case ir.BF16:
			binary.LittleEndian.PutUint16(b[2*i:], uint16(f16.BF16FromFloat64(x)))
		case ir.I32:
			binary.LittleEndian.PutUint32(b[4*i:], uint32(int32(x)))
		default:
			panic("encode " + t.String())
		}
	}
	return b
}

func decode(t ir.DType, b []byte) []float64 {
	out := make([]float64, len(b)/t.Size())
	for i := range out {
		switch t {
		case ir.F32:
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		case ir.F16:
			out[i] = float64(f16.F16(binary.LittleEndian.Uint16(b[2*i:])).Float32())
		case ir.BF16:
			out[i] = float64(f16.BF16(binary.LittleEndian.Uint16(b[2*i:])).Float32())
		case ir.I32:
			out[i] = float64(int32(binary.LittleEndian.Uint32(b[4*i:])))
		}
	}
	return out
}

func numel(t *ir.Tensor, dims map[string]int) int {
	n := 1
	for _, d := range t.Shape {
		n *= dims[d.Name]
	}
	return n
}

// runOnCPU runs the launches of kernel k in order through the driver, with args' tensors (and zeroed
// temporaries) as buffers, and updates args' tensors with what the kernels wrote.
func runOnCPU(driver string, k *ir.Kernel, launches []*Launch, args ir.Args, reverse bool) error {
	temps := map[string][]float64{}
	for _, tt := range k.Temps {
		temps[tt.Name] = make([]float64, numel(tt, args.Dims))
	}
	dir, err := os.MkdirTemp("", "kgen-msl-run")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, l := range launches {
		var req bytes.Buffer
		var grid [3]uint32
		for i := range grid {
			grid[i] = 1
			if i < len(l.Grid) {
				v, err := evalGrid(l.Grid[i], args.Dims)
				if err != nil {
					return err
				}
				if v <= 0 {
					return nil // an empty grid: nothing to run
				}
				grid[i] = uint32(v)
			}
		}
		binary.Write(&req, binary.LittleEndian, grid)
		binary.Write(&req, binary.LittleEndian, uint32(l.Threads))
		binary.Write(&req, binary.LittleEndian, uint32(len(l.Params)))
		data := func(p LaunchParam) []float64 {
			if p.Tensor.Kind == ir.Temp {
				return temps[p.Tensor.Name]
			}
			return args.Tensors[p.Tensor.Name]
		}
		for _, p := range l.Params {
			var b []byte
			switch p.Kind {
			case BufferParam:
				b = encode(p.Tensor.Type, data(p))
			case ScalarParam:
				b = encode(p.Tensor.Type, []float64{args.Scalars[p.Tensor.Name]})
			case DimsParam:
				var d bytes.Buffer
				for _, dim := range l.Dims {
					binary.Write(&d, binary.LittleEndian, int32(args.Dims[dim.Name]))
				}
				if len(l.Dims) == 0 {
					binary.Write(&d, binary.LittleEndian, int32(0))
				}
				b = d.Bytes()
			}
			binary.Write(&req, binary.LittleEndian, uint64(len(b)))
			req.Write(b)
		}
		in, out := filepath.Join(dir, "req"), filepath.Join(dir, "res")
		if err := os.WriteFile(in, req.Bytes(), 0o644); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		argv := []string{l.Function, in, out}
		if reverse {
			argv = append(argv, "reverse")
		}
		msg, err := exec.CommandContext(ctx, driver, argv...).CombinedOutput()
		cancel()
		if err != nil {
			return fmt.Errorf("%s grid %v × %d threads: %v: %s", l.Function, grid, l.Threads, err, strings.TrimSpace(string(msg)))
		}
		res, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		for _, p := range l.Params {
			var n int
			switch p.Kind {
			case BufferParam:
				n = len(data(p)) * p.Tensor.Type.Size()
			case ScalarParam:
				n = p.Tensor.Type.Size()
			case DimsParam:
				n = 4 * max(1, len(l.Dims))
			}
			if len(res) < n {
				return fmt.Errorf("%s: short result", l.Function)
			}
			if p.Kind == BufferParam && p.Written {
				copy(data(p), decode(p.Tensor.Type, res[:n]))
			}
			res = res[n:]
		}
	}
	return nil
}

func evalGrid(e ir.IExpr, dims map[string]int) (int, error) {
	switch e := e.(type) {
	case ir.IConst:
		return e.V, nil
	case ir.IDim:
		return dims[e.D.Name], nil
	case ir.IBin:
		x, err := evalGrid(e.X, dims)
		if err != nil {
			return 0, err
		}
		y, err := evalGrid(e.Y, dims)
		if err != nil {
			return 0, err
		}
		v, msg := ir.IBinOp(e.Op, x, y)
		if msg != "" {
			return 0, fmt.Errorf("grid %s: %s", e, msg)
		}
		return v, nil
	}
	return 0, fmt.Errorf("grid expression %s is not of dims", e)
}

// maxGroups bounds the threadgroups of one test run: the driver runs every MSL thread in turn on the
// CPU; maxElems bounds the elements of all tensors (the interpreter runs twice per shape).
const (
	maxGroups = 16
	maxElems  = 1 << 15
)

// cheapShapes draws n shapes from kgentest.Shapes (all ones first, then ragged primes; never its last,
// large one), drawing again while a shape needs more than maxGroups threadgroups or maxElems elements.
func cheapShapes(k *ir.Kernel, launches []*Launch, rng *rand.Rand, n int) []map[string]int {
	var out []map[string]int
	for tries := 0; len(out) < n && tries < 50; tries++ {
		s := kgentest.Shapes(k, rng, 3)
		dims := s[0]
		if len(out) > 0 {
			dims = s[1]
		}
		elems := 0
		for _, p := range append(append([]*ir.Tensor{}, k.Params...), k.Temps...) {
			elems += numel(p, dims)
		}
		groups := 0
		for _, l := range launches {
			g := 1
			for _, e := range l.Grid {
				v, err := evalGrid(e, dims)
				if err != nil {
					return nil
				}
				g *= v
			}
			groups += g
		}
		if groups <= maxGroups && elems <= maxElems {
			out = append(out, dims)
		}
	}
	return out
}

func launchesOf(src *Source, k *ir.Kernel) []*Launch {
	var out []*Launch
	for _, l := range src.Launches {
		if l.Kernel == k {
			out = append(out, l)
		}
	}
	return out
}

// kernelErrors runs k's launches on shapes from cheapShapes (all ones, then ragged primes, the third
// with a NaN input), each in forward and in reverse thread order, compares the outputs of the forward
// run with the interpreter's and those of the two runs bit for bit; it returns what went wrong.
func kernelErrors(driver string, src *Source, k *ir.Kernel, seed uint64, nshapes int) []error {
	launches := launchesOf(src, k)
	if len(launches) == 0 {
		return []error{fmt.Errorf("%s: no launches", k.Name)}
	}
	var errs []error
	rng := rand.New(rand.NewPCG(seed, 7))
	shapes := cheapShapes(k, launches, rng, nshapes)
	if len(shapes) < nshapes {
		errs = append(errs, fmt.Errorf("%s: only %d of %d shapes within %d threadgroups", k.Name, len(shapes), nshapes, maxGroups))
	}
	for si, dims := range shapes {
		errs = append(errs, shapeErrors(driver, k, launches, dims, rng, si)...)
	}
	return errs
}

// shapeErrors runs k's launches on one shape (arguments from kgentest.RandomArgs with shape index si)
// in forward and in reverse thread order, compares the outputs of the forward run with the
// interpreter's and those of the two runs bit for bit.
func shapeErrors(driver string, k *ir.Kernel, launches []*Launch, dims map[string]int, rng *rand.Rand, si int) []error {
	var errs []error
	args := kgentest.RandomArgs(k, dims, rng, si)
	ref := args.Clone()
	if err := ir.RunKernel(k, ir.Storage, ref); err != nil {
		return []error{fmt.Errorf("%s %v: interpreter: %v", k.Name, dims, err)}
	}
	mag := kgentest.Magnitude(k, args)
	got, rev := args.Clone(), args.Clone()
	if err := runOnCPU(driver, k, launches, got, false); err != nil {
		return []error{fmt.Errorf("%s %v: %v", k.Name, dims, err)}
	}
	if err := runOnCPU(driver, k, launches, rev, true); err != nil {
		return []error{fmt.Errorf("%s %v, reverse thread order: %v", k.Name, dims, err)}
	}
	for _, p := range k.Params {
		if p.Kind != ir.Out && p.Kind != ir.InOut {
			continue
		}
		if err := kgentest.Compare(k, dims, p, got.Tensors[p.Name], ref.Tensors[p.Name], mag[p.Name]); err != nil {
			errs = append(errs, fmt.Errorf("%s %v: %v", k.Name, dims, err))
		}
		if err := sameBits(p.Name, got.Tensors[p.Name], rev.Tensors[p.Name]); err != nil {
			errs = append(errs, fmt.Errorf("%s %v: %v", k.Name, dims, err))
		}
	}
	return errs
}

// sameBits checks that two runs in opposite thread orders wrote the same values: every element is
// computed by one thread in a fixed order, so a difference is a race (a read that depends on which
// thread ran first).
func sameBits(name string, fwd, rev []float64) error {
	for i := range fwd {
		if math.Float64bits(fwd[i]) != math.Float64bits(rev[i]) && !(math.IsNaN(fwd[i]) && math.IsNaN(rev[i])) {
			return fmt.Errorf("%s[%d] = %v in forward thread order, %v in reverse order: a race", name, i, fwd[i], rev[i])
		}
	}
	return nil
}
