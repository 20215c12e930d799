package kgentest

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/rt"
)

// extremeDims are the dims the wrapper fuzzer tries besides small ones: negative, around the largest
// accepted dim, and values whose products or sums wrap an int around.
var extremeDims = []int{
	-1, -2, math.MinInt, math.MaxInt, math.MaxInt/2 + 1, rt.MaxDim, rt.MaxDim + 1,
	math.MaxInt32, 1 << 31, 1<<32 + 1, 3037000500, // 3037000500² overflows int64
	0, 1, 7, 64, 4097,
}

// maxFuzzLen bounds the slices the fuzzer allocates.
const maxFuzzLen = 1 << 12

// CallTimeout bounds one call of a kernel under the fuzzer: every call it makes is either rejected or
// small.
var CallTimeout = 10 * time.Second

// Fuzz is the wrapper fuzzer of a generated kernel. Each input picks a variant, the dims (small, zero,
// negative, huge, products and sums that wrap), the slice lengths (right, one off, arbitrary) and the
// scalars; the call must return an *rt.ArgError exactly when the arguments are invalid (a dim negative or
// above rt.MaxDim, a length not the product of its dims, an index outside its dim: all decided here with
// exact arithmetic, independently of the wrapper), must leave every output unchanged when it fails,
// must not panic and must return within CallTimeout. Valid small calls are compared with the
// interpreter. The seed corpus (run by plain go test) sets each dim to each extreme value in turn.
func Fuzz(f *testing.F, source string, kern Kernel) {
	ks, err := check.File("kernel.kdsl", source)
	if err != nil {
		f.Fatalf("kernel source does not check: %v", err)
	}
	k := ks[0]
	nd := len(k.Dims)
	small := func(v int) byte { return byte(2 * v) }     // dims 0..5
	extreme := func(i int) byte { return byte(2*i + 1) } // extremeDims[i]
	seed := func(dims []byte, lens byte) []byte {
		b := []byte{0}
		b = append(b, dims...)
		for range k.Params {
			b = append(b, lens, 3)
		}
		return b
	}
	ones := make([]byte, nd)
	for i := range ones {
		ones[i] = small(1)
	}
	f.Add(seed(ones, 0))
	f.Add(seed(ones, 2)) // one element too many
	f.Add(seed(ones, 6)) // one too few
	for e := range extremeDims {
		all := make([]byte, nd)
		for i := range all {
			all[i] = extreme(e)
		}
		f.Add(seed(all, 0))
		for d := 0; d < nd; d++ {
			one := append([]byte(nil), ones...)
			one[d] = extreme(e)
			f.Add(seed(one, 0))
			one[d], one[(d+1)%nd] = extreme(e), small(0)
			f.Add(seed(one, 0))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzCall(t, k, kern, data)
	})
}

// fuzzCall decodes one fuzz input and checks the call it describes.
func fuzzCall(t *testing.T, k *ir.Kernel, kern Kernel, data []byte) {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	vs := kern.Variants()
	v := vs[int(next())%len(vs)]
	if err := kern.Use(v); err != nil {
		t.Fatal(err)
	}
	defer kern.Use("")
	dims := map[string]int{}
	for _, d := range k.Dims {
		b := next()
		if b%2 == 0 {
			dims[d.Name] = int(b/2) % 6
		} else {
			dims[d.Name] = extremeDims[int(b/2)%len(extremeDims)]
		}
	}
	in := ir.Args{Tensors: map[string][]float64{}, Scalars: map[string]float64{}, Dims: dims}
	for _, p := range k.Params {
		mode, arb := next(), next()
		if p.Kind == ir.Scalar {
			x := float64(int8(mode)) / 4
			if arb == 255 {
				x = math.NaN()
			}
			in.Scalars[p.Name] = p.Type.Round(x)
			continue
		}
		n := int(arb) % 17
		if want, ok := numel(p, dims); ok && want.IsInt64() && want.Int64() <= maxFuzzLen {
			switch mode % 8 {
			case 0, 1, 3, 4, 5:
				n = int(want.Int64())
			case 2:
				n = int(want.Int64()) + 1
			case 6:
				n = max(int(want.Int64())-1, 0)
			}
		}
		s := make([]float64, n)
		for i := range s {
			s[i] = float64(i%7 - 3) // exact in every type
		}
		in.Tensors[p.Name] = s
	}
	why := invalid(k, in)
	args := in.Clone()
	before := in.Clone()
	desc := fmt.Sprintf("variant %s, dims %v, lengths %v", v, dims, lengths(in))

	type result struct {
		out   map[string][]float64
		err   error
		panic any
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			r.panic = recover()
			done <- r
		}()
		r.out, r.err = kern.Call(dims, args.Tensors, args.Scalars)
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(CallTimeout):
		t.Fatalf("%s: no return within %v", desc, CallTimeout)
	}
	switch {
	case r.panic != nil:
		t.Fatalf("%s: panic: %v", desc, r.panic)
	case why != "" && r.err == nil:
		t.Fatalf("%s: no error, but %s", desc, why)
	case why == "" && r.err != nil:
		t.Fatalf("%s: valid call rejected: %v", desc, r.err)
	case r.err != nil:
		var ae *rt.ArgError
		if !errors.Is(r.err, rt.ErrArgs) || !errors.As(r.err, &ae) || !strings.HasPrefix(r.err.Error(), k.Name+": ") {
			t.Errorf("%s: error %q (%T) is not an *rt.ArgError starting %q", desc, r.err, r.err, k.Name+": ")
		}
		for _, p := range k.Params {
			if (p.Kind == ir.Out || p.Kind == ir.InOut) && !sameBits(r.out[p.Name], before.Tensors[p.Name]) {
				t.Fatalf("%s: %s written although the call failed (%v)", desc, p.Name, r.err)
			}
		}
		return
	}
	// A valid call: small ones are checked against the interpreter.
	for _, d := range k.Dims {
		if dims[d.Name] > 64 {
			return
		}
	}
	ref := in.Clone()
	if err := ir.RunKernel(k, ir.Storage, ref); err != nil {
		t.Fatalf("%s: interpreter: %v", desc, err)
	}
	mag := Magnitude(k, in)
	for _, p := range k.Params {
		if p.Kind == ir.Out || p.Kind == ir.InOut {
			if err := Compare(k, dims, p, r.out[p.Name], ref.Tensors[p.Name], mag[p.Name]); err != nil {
				t.Errorf("%s: %v", desc, err)
			}
		}
	}
}

func lengths(a ir.Args) map[string]int {
	out := map[string]int{}
	for n, s := range a.Tensors {
		out[n] = len(s)
	}
	return out
}

// numel is the exact element count of p; ok is false when a dim is negative.
func numel(p *ir.Tensor, dims map[string]int) (*big.Int, bool) {
	n := big.NewInt(1)
	for _, d := range p.Shape {
		if dims[d.Name] < 0 {
			return nil, false
		}
		n.Mul(n, big.NewInt(int64(dims[d.Name])))
	}
	return n, true
}

// invalid says why a call is invalid ("" when it is valid), with exact arithmetic: a dim negative or
// above rt.MaxDim, a tensor whose length is not the product of its dims, or an affine index that reaches
// outside its dim at a corner of its variables' ranges (when they are all non-empty).
func invalid(k *ir.Kernel, a ir.Args) string {
	for _, d := range k.Dims {
		if v := a.Dims[d.Name]; v < 0 || v > rt.MaxDim {
			return fmt.Sprintf("dim %s = %d is out of range", d.Name, v)
		}
	}
	for _, p := range k.Params {
		if p.Kind == ir.Scalar {
			continue
		}
		if want, _ := numel(p, a.Dims); want.Cmp(big.NewInt(int64(len(a.Tensors[p.Name])))) != 0 {
			return fmt.Sprintf("%s has length %d, want %v", p.Name, len(a.Tensors[p.Name]), want)
		}
	}
	why := ""
	for _, s := range k.Stmts {
		ir.Walk(s.Value, func(e ir.Expr) {
			l, ok := e.(*ir.Load)
			if !ok || why != "" {
				return
			}
			for pos, ix := range l.Idx {
				var vars []*ir.Var
				ir.IVars(ix, func(v *ir.Var) {
					for _, w := range vars {
						if w == v {
							return
						}
					}
					vars = append(vars, v)
				})
				empty := false
				for _, v := range vars {
					empty = empty || v.Extent(a.Dims) == 0 // a window index (r < 2) has a constant range
				}
				if empty {
					continue
				}
				n := big.NewInt(int64(a.Dims[l.T.Shape[pos].Name]))
				for corner := 0; corner < 1<<len(vars); corner++ {
					at := map[*ir.Var]*big.Int{}
					for i, v := range vars {
						at[v] = big.NewInt(0)
						if corner>>i&1 == 1 {
							at[v] = big.NewInt(int64(v.Extent(a.Dims) - 1))
						}
					}
					x := bigIndex(ix, at, a.Dims)
					if x.Sign() < 0 || x.Cmp(n) >= 0 {
						why = fmt.Sprintf("index %s of %s reaches %v, outside dim %s = %v", ix, l.T.Name, x, l.T.Shape[pos].Name, n)
						return
					}
				}
			}
		})
	}
	return why
}

// bigIndex evaluates an affine index exactly.
func bigIndex(e ir.IExpr, at map[*ir.Var]*big.Int, dims map[string]int) *big.Int {
	switch e := e.(type) {
	case ir.IConst:
		return big.NewInt(int64(e.V))
	case ir.IVar:
		return new(big.Int).Set(at[e.V])
	case ir.IDim:
		return big.NewInt(int64(dims[e.D.Name]))
	case ir.IBin:
		x, y := bigIndex(e.X, at, dims), bigIndex(e.Y, at, dims)
		switch e.Op {
		case '+':
			return x.Add(x, y)
		case '-':
			return x.Sub(x, y)
		case '*':
			return x.Mul(x, y)
		}
	}
	panic(fmt.Sprintf("kgentest: index %v is not affine", e))
}

// CheckVariants tests a generated package's variant selection: Use rejects a name that is not one of
// Variants (a wrong case too) and keeps the current one, selectVariant (the package's KGEN_VARIANT
// handling) warns on w naming every usable variant and falls back to the best, and accepts each usable
// name silently.
func CheckVariants(t *testing.T, variants func() []string, use func(string) error, current func() string, selectVariant func(string, io.Writer)) {
	defer use("")
	vs := variants()
	for _, bad := range []string{"bogus", strings.ToUpper(vs[0]), vs[0] + " "} {
		use(vs[len(vs)-1])
		err := use(bad)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) || current() != vs[len(vs)-1] {
			t.Errorf("Use(%q): error %v, variant now %s", bad, err, current())
		}
		var w strings.Builder
		selectVariant(bad, &w)
		msg := w.String()
		if !strings.Contains(msg, "KGEN_VARIANT") || strings.Count(msg, "\n") != 1 || current() != vs[0] {
			t.Errorf("KGEN_VARIANT=%q: warning %q, variant %s (want %s)", bad, msg, current(), vs[0])
		}
		for _, v := range vs {
			if !strings.Contains(msg, v) {
				t.Errorf("KGEN_VARIANT=%q: warning %q does not name variant %s", bad, msg, v)
			}
		}
	}
	for _, v := range append([]string{""}, vs...) {
		var w strings.Builder
		selectVariant(v, &w)
		want := v
		if v == "" {
			want = vs[0]
		}
		if w.Len() != 0 || current() != want {
			t.Errorf("KGEN_VARIANT=%q: warning %q, variant %s", v, w.String(), current())
		}
	}
}
