// Package kgentest checks generated kernels against the reference interpreter. Generated packages' tests
// call Run; it is not meant for other use.
package kgentest

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/f16"
	"github.com/kgen-dev/kgen/ir"
)

// Kernel adapts one generated function to float64 data.
type Kernel struct {
	Variants func() []string
	Use      func(string) error
	Call     func(dims map[string]int, in map[string][]float64, scalars map[string]float64) (map[string][]float64, error)
}

// Run checks a kernel on random shapes under every variant.
func Run(t *testing.T, source string, kern Kernel) {
	t.Helper()
	ks, err := check.File("kernel.kdsl", source)
	if err != nil {
		t.Fatalf("kernel source does not check: %v", err)
	}
	k := ks[0]
	defer kern.Use("")
	rng := rand.New(rand.NewPCG(1, uint64(len(source))))
	shapes := Shapes(k, rng, 7)
	for si, dims := range shapes {
		args := RandomArgs(k, dims, rng, si)
		ref := args.Clone()
		if err := ir.RunKernel(k, ir.Storage, ref); err != nil {
			t.Fatalf("interpreter on %v: %v", dims, err)
		}
		mag := Magnitude(k, args)
		for _, v := range kern.Variants() {
			if err := kern.Use(v); err != nil {
				t.Fatal(err)
			}
			in := args.Clone()
			got, err := kern.Call(dims, in.Tensors, in.Scalars)
			if err != nil {
				t.Fatalf("%s %v: %v", v, dims, err)
			}
			for _, p := range k.Params {
				if p.Kind != ir.Out && p.Kind != ir.InOut {
					continue
				}
				if err := Compare(k, dims, p, got[p.Name], ref.Tensors[p.Name], mag[p.Name]); err != nil {
					t.Errorf("variant %s, dims %v: %v", v, dims, err)
				}
			}
		}
	}
	// Every shape again under every variant with each operand ending at a guard page: an access past
	// the end of any slice faults.
	if guardSupported {
		for si, dims := range shapes {
			args := RandomArgs(k, dims, rng, si)
			for _, v := range kern.Variants() {
				kern.Use(v)
				in := args.Clone()
				guarded = true
				_, err := kern.Call(dims, in.Tensors, in.Scalars)
				guarded = false
				freeGuarded()
				if err != nil {
					t.Fatalf("guarded %s %v: %v", v, dims, err)
				}
			}
		}
	}
	checkBeta(t, k, kern, shapes, rng)
	// A wrong length is reported and nothing is written.
	dims := shapes[0]
	args := RandomArgs(k, dims, rng, 0)
	for _, p := range k.Params {
		if p.Kind == ir.Scalar {
			continue
		}
		in := args.Clone()
		in.Tensors[p.Name] = append(in.Tensors[p.Name], 0)
		before := in.Clone()
		got, err := kern.Call(dims, in.Tensors, in.Scalars)
		if err == nil {
			t.Errorf("length of %s one too long: no error", p.Name)
		}
		for _, q := range k.Params {
			if (q.Kind == ir.Out || q.Kind == ir.InOut) && q != p && !sameBits(got[q.Name], before.Tensors[q.Name]) {
				t.Errorf("%s written although the call failed", q.Name)
			}
		}
		break
	}
}

func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
			return false
		}
	}
	return true
}

var sizes = []int{1, 2, 3, 5, 7, 13, 17, 31, 37, 61, 67, 97}

// Shapes draws n dim assignments: all ones first, then random primes and ragged sizes, the last with
// the others above the small-problem thresholds and the reduction dims large (K beyond any K block), each within a work budget; dims used with affine
// indices (x+kx) are grown until every access is in range.
func Shapes(k *ir.Kernel, rng *rand.Rand, n int) []map[string]int {
	var out []map[string]int
	for s := 0; s < n; s++ {
		dims := map[string]int{}
		for _, d := range k.Dims {
			switch {
			case s == 0:
				dims[d.Name] = 1
			default:
				dims[d.Name] = sizes[rng.IntN(len(sizes))]
			}
		}
		if s == n-1 {
			// large enough that GEMM-like kernels take their packed path (not the small/skinny one)
			for _, d := range k.Dims {
				dims[d.Name] = 20 + rng.IntN(30)
			}
			for _, d := range reductionDims(k) {
				dims[d.Name] = 600 + rng.IntN(50)
			}
		}
		fitAffine(k, dims)
		for work(k, dims) > 3e6 {
			for _, d := range k.Dims {
				if dims[d.Name] > 1 && !slices.Contains(reductionDims(k), d) {
					dims[d.Name] = max(1, dims[d.Name]/2)
				}
			}
			fitAffine(k, dims)
			if work(k, dims) > 3e6 {
				for _, d := range k.Dims {
					dims[d.Name] = max(1, dims[d.Name]/2)
				}
				fitAffine(k, dims)
			}
		}
		out = append(out, dims)
	}
	return out
}

func reductionDims(k *ir.Kernel) []*ir.Dim {
	var out []*ir.Dim
	for _, s := range k.Stmts {
		ir.Walk(s.Value, func(e ir.Expr) {
			if r, ok := e.(*ir.Reduce); ok {
				for _, v := range r.Vars {
					if v.Range != nil && !slices.Contains(out, v.Range) {
						out = append(out, v.Range)
					}
				}
			}
		})
	}
	return out
}

func work(k *ir.Kernel, dims map[string]int) float64 {
	total := 0.0
	for _, s := range k.Stmts {
		w := 1.0
		seen := map[*ir.Dim]bool{}
		for _, v := range s.Vars {
			w *= float64(dims[v.Range.Name])
			seen[v.Range] = true
		}
		ir.Walk(s.Value, func(e ir.Expr) {
			if r, ok := e.(*ir.Reduce); ok {
				for _, v := range r.Vars {
					w *= float64(v.Extent(dims))
				}
			}
		})
		total += w
	}
	return total
}

func fitAffine(k *ir.Kernel, dims map[string]int) {
	for iter := 0; iter < 4; iter++ {
		for _, s := range k.Stmts {
			ir.Walk(s.Value, func(e ir.Expr) {
				l, ok := e.(*ir.Load)
				if !ok {
					return
				}
				for pos, ix := range l.Idx {
					if v, plain := ix.(ir.IVar); plain && v.V.Range == l.T.Shape[pos] {
						continue
					}
					m := map[*ir.Var]ir.IExpr{}
					ir.IVars(ix, func(v *ir.Var) { m[v] = ir.IConst{V: v.Extent(dims) - 1} })
					if c, ok := ir.SubstIExpr(ix, m).(ir.IConst); ok {
						name := l.T.Shape[pos].Name
						if dims[name] < c.V+1 {
							dims[name] = c.V + 1
						}
					}
				}
			})
		}
	}
}

// RandomArgs fills every input with values in [-1, 1) (integers in [-8, 8)), rounded to the tensor's
// type. Shape index 2 puts a NaN, shape index 3 an Inf, into the first float input.
func RandomArgs(k *ir.Kernel, dims map[string]int, rng *rand.Rand, shape int) ir.Args {
	a := ir.Args{Tensors: map[string][]float64{}, Scalars: map[string]float64{}, Dims: dims}
	injected := false
	for _, p := range k.Params {
		if p.Kind == ir.Scalar {
			a.Scalars[p.Name] = p.Type.Round(rng.Float64()*2 - 0.5)
			continue
		}
		n := 1
		for _, d := range p.Shape {
			n *= dims[d.Name]
		}
		data := make([]float64, n)
		for i := range data {
			if p.Type.IsInt() {
				data[i] = float64(rng.IntN(16) - 8)
			} else {
				data[i] = p.Type.Round(rng.Float64()*2 - 1)
			}
		}
		if !injected && p.Type.IsFloat() && p.Kind != ir.Out && n > 0 && (shape == 2 || shape == 3) {
			v := math.NaN()
			if shape == 3 {
				v = math.Inf(1)
			}
			data[rng.IntN(n)] = v
			injected = true
		}
		a.Tensors[p.Name] = data
	}
	return a
}

// Magnitude runs the kernel exactly on the absolute values of the inputs: for sums of products this is
// G = |α||A||B| + |β||C|, the quantity Higham's bound |Ĉ−C| ≤ γ_K·G scales with.
func Magnitude(k *ir.Kernel, args ir.Args) map[string][]float64 {
	abs := args.Clone()
	for _, v := range abs.Tensors {
		for i := range v {
			v[i] = math.Abs(v[i])
		}
	}
	sc := map[string]float64{}
	for n, v := range abs.Scalars {
		sc[n] = math.Abs(v)
	}
	abs.Scalars = sc
	if err := ir.RunKernel(k, ir.Exact, abs); err != nil {
		return nil
	}
	return abs.Tensors
}

// Compare checks got against the interpreter's ref elementwise: NaN must match NaN, infinities must match
// exactly, and finite values within 4·((R+2)·u_acc + 2·u_in)·max(G, |ref|, mean|ref|) + 2·u_out·|ref| +
// R·λ_acc, where R is the longest reduction, u_acc the accumulator's unit roundoff and λ_acc its smallest
// normal (a result flushed to zero at each step: VDPBF16PS, docs/LANGUAGE.md), u_out the unit roundoff
// of a 16-bit output and u_in that of the 16-bit values the kernel rounds and reads again (Rounded16): a
// 16-bit input is widened exactly, so a GEMM of bf16 or f16 inputs is held to the f32 bound
// (GEMM-NOTES §6).
func Compare(k *ir.Kernel, dims map[string]int, out *ir.Tensor, got, ref, mag []float64) error {
	if len(got) != len(ref) {
		return fmt.Errorf("%s: %d elements, want %d", out.Name, len(got), len(ref))
	}
	r := 1
	for _, s := range k.Stmts {
		ir.Walk(s.Value, func(e ir.Expr) {
			if red, ok := e.(*ir.Reduce); ok {
				n := 1
				for _, v := range red.Vars {
					n *= v.Extent(dims)
				}
				r = max(r, n)
			}
		})
	}
	r += len(k.Stmts) // each statement rounds at least once more
	uacc := out.Type.Compute().Unit()
	lacc := 0x1p-126
	if out.Type.Compute() == ir.F64 {
		lacc = 0x1p-1022
	}
	uin, uout := Rounded16(k).Unit(), 0.0
	if tf32(k) {
		uin = max(uin, ir.TF32Unit) // inputs rounded to tf32 on some target: 2·u per product
	}
	if out.Type == ir.F16 || out.Type == ir.BF16 {
		uout = out.Type.Unit()
	}
	mean := 0.0
	for _, v := range ref {
		if !math.IsInf(v, 0) && v == v {
			mean += math.Abs(v)
		}
	}
	if len(ref) > 0 {
		mean /= float64(len(ref))
	}
	for i := range ref {
		g, w := got[i], ref[i]
		switch {
		case w != w:
			if g == g {
				return fmt.Errorf("%s[%d] = %v, want NaN", out.Name, i, g)
			}
			continue
		case math.IsInf(w, 0):
			if g != w {
				return fmt.Errorf("%s[%d] = %v, want %v", out.Name, i, g, w)
			}
			continue
		}
		scale := max(math.Abs(w), mean)
		if mag != nil && i < len(mag) && !math.IsInf(mag[i], 0) && mag[i] == mag[i] {
			scale = max(scale, mag[i])
		}
		tol := 4*(float64(r)*uacc+2*uin)*scale + 2*uout*math.Abs(w) + float64(r)*lacc
		if out.Type.IsInt() {
			tol = 0
		}
		if !(math.Abs(g-w) <= tol) {
			return fmt.Errorf("%s[%d] = %v, want %v (|diff| %.3g > tol %.3g)", out.Name, i, g, w, math.Abs(g-w), tol)
		}
	}
	return nil
}

// tf32 reports whether k's schedule lets some target round f32 GEMM inputs to tf32 (`precision tf32`).
func tf32(k *ir.Kernel) bool {
	for _, d := range k.Schedule {
		if d.Name == "precision" && len(d.Args) == 1 && d.Args[0].Name == "tf32" {
			return true
		}
	}
	return false
}

// Rounded16 is the widest-roundoff 16-bit type (F16 or BF16, Invalid for none) to which k rounds a value
// that it reads again: a cast to a 16-bit type anywhere but as the whole value stored into a 16-bit
// output (that rounding is the output's own), or a read of a 16-bit tensor that is not an input parameter
// (a temporary, or an output read back). Loads of 16-bit inputs do not count: widening them is exact.
func Rounded16(k *ir.Kernel) ir.DType {
	out := ir.Invalid
	note := func(t ir.DType) {
		if (t == ir.F16 || t == ir.BF16) && t.Unit() > out.Unit() {
			out = t
		}
	}
	for _, s := range k.Stmts {
		top := s.Value
		ir.Walk(s.Value, func(e ir.Expr) {
			switch x := e.(type) {
			case *ir.Cast:
				if x != top || x.T != s.Out.Type {
					note(x.T)
				}
			case *ir.Load:
				if x.T.Kind != ir.In {
					note(x.T.Type)
				}
			}
		})
		if s.Out.Kind == ir.Temp {
			note(s.Out.Type)
		}
	}
	return out
}

// Conversions between the interpreter's float64 data and generated slices. While guarded is set, the
// slices handed to kernels end exactly at a PROT_NONE page (unix), so reading or writing one element
// past the end crashes the test.

var (
	guarded bool
	mapped  [][]byte
)

func newSlice[T any](n int) []T {
	if !guarded || n == 0 {
		return make([]T, n)
	}
	var zero T
	size := int(unsafe.Sizeof(zero))
	b := guardBytes(n * size)
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

func ToF64(v []float64) []float64 {
	o := newSlice[float64](len(v))
	copy(o, v)
	return o
}
func ToF32(v []float64) []float32 {
	o := newSlice[float32](len(v))
	for i, x := range v {
		o[i] = float32(x)
	}
	return o
}
func ToF16(v []float64) []f16.F16 {
	o := newSlice[f16.F16](len(v))
	for i, x := range v {
		o[i] = f16.FromFloat64(x)
	}
	return o
}
func ToBF16(v []float64) []f16.BF16 {
	o := newSlice[f16.BF16](len(v))
	for i, x := range v {
		o[i] = f16.BF16FromFloat64(x)
	}
	return o
}
func ToI32(v []float64) []int32 {
	o := newSlice[int32](len(v))
	for i, x := range v {
		o[i] = int32(x)
	}
	return o
}
func ToI8(v []float64) []int8 {
	o := newSlice[int8](len(v))
	for i, x := range v {
		o[i] = int8(x)
	}
	return o
}
func FromF64(v []float64) []float64 { return slices.Clone(v) }
func FromF32(v []float32) []float64 {
	o := make([]float64, len(v))
	for i, x := range v {
		o[i] = float64(x)
	}
	return o
}
func FromF16(v []f16.F16) []float64 {
	o := make([]float64, len(v))
	for i, x := range v {
		o[i] = float64(x.Float32())
	}
	return o
}
func FromBF16(v []f16.BF16) []float64 {
	o := make([]float64, len(v))
	for i, x := range v {
		o[i] = float64(x.Float32())
	}
	return o
}
func FromI32(v []int32) []float64 {
	o := make([]float64, len(v))
	for i, x := range v {
		o[i] = float64(x)
	}
	return o
}
func FromI8(v []int8) []float64 {
	o := make([]float64, len(v))
	for i, x := range v {
		o[i] = float64(x)
	}
	return o
}

// checkBeta tests the beta rule (ir.BetaFactor) for each scaled-output term whose factor is a scalar
// parameter: with the factor 0 and NaN or ±Inf in every element of the output, the output must not
// propagate them, and with the factor non-zero it must; under every variant, on the first, second and
// last shapes (the last takes a GEMM's packed path), compared with the interpreter.
func checkBeta(t *testing.T, k *ir.Kernel, kern Kernel, shapes []map[string]int, rng *rand.Rand) {
	t.Helper()
	for _, s := range k.Stmts {
		if s.Out.Kind != ir.InOut {
			continue
		}
		for _, f := range ir.BetaFactors(s.Value, s.Out) {
			l, ok := f.(*ir.Load)
			if !ok || l.T.Kind != ir.Scalar {
				continue
			}
			for _, si := range []int{0, 1, len(shapes) - 1} {
				dims := shapes[si]
				for _, beta := range []float64{0, math.Copysign(0, -1), 1.5} {
					args := RandomArgs(k, dims, rng, 0) // no NaN or Inf in the inputs
					args.Scalars = maps.Clone(args.Scalars)
					args.Scalars[l.T.Name] = beta
					for i := range args.Tensors[s.Out.Name] {
						args.Tensors[s.Out.Name][i] = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[i%3]
					}
					ref := args.Clone()
					if err := ir.RunKernel(k, ir.Storage, ref); err != nil {
						t.Fatal(err)
					}
					if beta == 0 && slices.ContainsFunc(ref.Tensors[s.Out.Name], math.IsNaN) && !readsOutElsewhere(s) {
						t.Fatalf("interpreter: %s = 0 propagated a NaN of %s", l.T.Name, s.Out.Name)
					}
					mag := Magnitude(k, args)
					for _, v := range kern.Variants() {
						kern.Use(v)
						in := args.Clone()
						got, err := kern.Call(dims, in.Tensors, in.Scalars)
						if err != nil {
							t.Fatalf("%s %v: %v", v, dims, err)
						}
						if err := Compare(k, dims, s.Out, got[s.Out.Name], ref.Tensors[s.Out.Name], mag[s.Out.Name]); err != nil {
							t.Errorf("beta rule, variant %s, %s = %v, NaN/Inf in %s, dims %v: %v", v, l.T.Name, beta, s.Out.Name, dims, err)
						}
					}
				}
			}
		}
	}
}

// readsOutElsewhere reports whether s reads its output other than through scaled-output terms.
func readsOutElsewhere(s *ir.Stmt) bool {
	v := s.Value
	for _, f := range ir.BetaFactors(v, s.Out) {
		v = ir.DropBeta(v, s.Out, f)
	}
	reads := false
	ir.Walk(v, func(e ir.Expr) {
		if l, ok := e.(*ir.Load); ok && l.T == s.Out {
			reads = true
		}
	})
	return reads
}
