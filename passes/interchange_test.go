package passes

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
	"github.com/kgen-dev/kgen/target"
)

// interchangeKernels are the library's strided reductions plus cases the library lacks: two reduction
// indices, a min under a tile directive (already-bounded k loop, no blocking), a widened accumulator
// (scratch row of f64 for an f32 output), a scaled elementwise body with a scalar, an inout output that
// is not read (partial sums stored in it), and a fused nest where only one of the two reductions is
// strided (the other keeps its loops).
const interchangeExtra = `
kernel mid2(A: f32[M, N, L, K], O: out f32[M, K]) {
    O[i, k] = sum(j, l: A[i, j, l, k])
}
kernel tiled(A: f32[M, N, K], O: out f32[M, K]) {
    O[i, k] = min(j: A[i, j, k])
}
schedule tiled { tile k 5 }
kernel wide(A: f32[M, N], s: out f32[N]) {
    s[j] = sum(i: A[i, j])
}
schedule wide { precision f64 }
kernel scaled(A: f32[M, N], w: f32[M], s: out f32[N], alpha: f32) {
    s[j] = alpha * sum(i: w[i] * A[i, j] * A[i, j]) + alpha
}
kernel over(A: f64[M, N], s: inout f64[N]) {
    s[j] = max(i: A[i, j])
}
kernel mixed(X: f32[C, C], a: out f32[C], b: out f32[C]) {
    a[c] = sum(n: X[n, c])
    b[c] = sum(n: X[c, n]) + a[c]
}
`

func interchangeKernels(t *testing.T) []*ir.Kernel {
	extra, err := check.File("extra.kdsl", interchangeExtra)
	if err != nil {
		t.Fatal(err)
	}
	var out []*ir.Kernel
	for _, k := range library(t) {
		if slices.Contains([]string{"colsum", "dcolsum", "colsum_acc", "sum_mid", "max_mid", "hsum_mid", "batch_stats"}, k.Name) {
			out = append(out, k)
		}
	}
	if len(out) != 7 {
		t.Fatalf("found %d of the 7 strided reductions in kernels.kdsl", len(out))
	}
	return append(out, extra...)
}

// TestInterchangeExact compiles the strided reductions through the whole pipeline, on the go target and on
// a machine whose L1 makes the output blocks 3 (f32) and 1 (f64) wide (so every shape spans several
// blocks and a partial one), and checks that the interpreted loop IR gives exactly the values of the
// loop IR before interchange (the algorithm-level interpreter's, but for the widened accumulator of
// `precision f64`): interchanging keeps each element's operations and their order. (The row sums b of
// kernel mixed are not interchanged: vectorize reassociates them, so they are compared within the
// usual bound.)
func TestInterchangeExact(t *testing.T) {
	goM, _ := target.Lookup("go")
	tiny := goM
	tiny.L1.Size = 48
	for _, k := range interchangeKernels(t) {
		for _, m := range []target.Machine{goM, tiny} {
			changed := false
			f, err := Compile(k, m, Options{After: func(pass string, _ *ir.Func, c bool) {
				if pass == "interchange" {
					changed = c
				}
			}})
			if err != nil {
				t.Fatalf("%s: %v", k.Name, err)
			}
			before, err := Compile(k, m, Options{Skip: Names(m)[slices.Index(Names(m), "interchange"):]})
			if err != nil {
				t.Fatal(err)
			}
			if !changed {
				t.Fatalf("%s: interchange changed nothing:\n%s", k.Name, f)
			}
			rng := rand.New(rand.NewPCG(11, uint64(len(k.Name))))
			shapes := kgentest.Shapes(k, rng, 5)
			shapes = append(shapes, map[string]int{"M": 3, "N": 9, "K": 11, "L": 2, "C": 13, "Nb": 10})
			for si, dims := range shapes {
				args := kgentest.RandomArgs(k, dims, rng, si)
				ref := args.Clone()
				if err := ir.RunFunc(before, ir.Storage, ref, nil); err != nil {
					t.Fatal(err)
				}
				got := args.Clone()
				if err := ir.RunFunc(f, ir.Storage, got, nil); err != nil {
					t.Fatalf("%s dims %v: %v", k.Name, dims, err)
				}
				for _, p := range k.Params {
					if p.Kind != ir.Out && p.Kind != ir.InOut {
						continue
					}
					g, r := got.Tensors[p.Name], ref.Tensors[p.Name]
					if k.Name == "mixed" && p.Name == "b" {
						if err := kgentest.Compare(k, dims, p, g, r, kgentest.Magnitude(k, args)[p.Name]); err != nil {
							t.Fatalf("%s dims %v: %v", k.Name, dims, err)
						}
						continue
					}
					for i := range r {
						if g[i] != r[i] && !(math.IsNaN(g[i]) && math.IsNaN(r[i])) {
							t.Fatalf("%s (L1 %d) dims %v: %s[%d] = %v, want %v", k.Name, m.L1.Size, dims, p.Name, i, g[i], r[i])
						}
					}
				}
			}
		}
	}
}

// TestInterchangeRespectsSchedule: a vectorize or unroll directive on the reduction index keeps the
// reduction loop innermost.
func TestInterchangeRespectsSchedule(t *testing.T) {
	m, _ := target.Lookup("go")
	for _, d := range []string{"", "vectorize i 4", "unroll i 2", "unroll j 2"} {
		src := "kernel cs(A: f32[M, N], s: out f32[N]) {\n s[j] = sum(i: A[i, j])\n}\nschedule cs { " + d + " }\n"
		if d == "" {
			src = "kernel cs(A: f32[M, N], s: out f32[N]) {\n s[j] = sum(i: A[i, j])\n}\n"
		}
		ks, err := check.File("cs.kdsl", src)
		if err != nil {
			t.Fatal(err)
		}
		changed := false
		if _, err := Compile(ks[0], m, Options{After: func(p string, _ *ir.Func, c bool) {
			if p == "interchange" {
				changed = c
			}
		}}); err != nil {
			t.Fatal(err)
		}
		if want := d == "" || d == "unroll j 2"; changed != want {
			t.Errorf("schedule %q: interchange changed = %v, want %v", d, changed, want)
		}
	}
}

// TestInterchangeShape checks what the pass makes: partial results in the output when it can hold them,
// in a scratch row otherwise; the block loop keeps the statement index (and the parallel pass picks it);
// rows unrolled by U within the stream budget; the row-wise reduction of a fused nest left alone.
func TestInterchangeShape(t *testing.T) {
	m, _ := target.Lookup("go")
	byName := map[string]*ir.Kernel{}
	for _, k := range interchangeKernels(t) {
		byName[k.Name] = k
	}
	after := func(name, pass string) string {
		var out string
		_, err := Compile(byName[name], m, Options{After: func(p string, f *ir.Func, _ bool) {
			if p == pass {
				out = f.String()
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, c := range []struct {
		kernel, pass string
		want, not    []string
	}{
		{"colsum", "interchange", []string{"for j = 0 .. N step 2048", "s[j2] = 0:f32", "for i = 0 .. ((M / 8) * 8) step 8", "+ A[(i + 7), j2])"}, []string{"alloc"}},
		{"colsum", "parallel", []string{"parallel j = 0 .. N step 2048"}, nil},
		{"sum_mid", "parallel", []string{"parallel i = 0 .. M", "for k = 0 .. K step 2048"}, nil},
		{"hsum_mid", "interchange", []string{"alloc global accrow f32[2048]", "O[i, k2] = f16(accrow[(k2 - k)])"}, nil},
		{"colsum_acc", "interchange", []string{"alloc global accrow f32[2048]", "s[j2] = (s[j2] + accrow[(j2 - j)])"}, nil},
		{"wide", "interchange", []string{"alloc global accrow f64[1024]"}, nil},
		{"over", "interchange", []string{"s[j2] = -Inf:f64"}, []string{"alloc"}},
		{"batch_stats", "interchange", []string{"mean[c2] = (mean[c2] / Nb:f32)", "for n = 0 .. ((Nb / 8) * 8) step 8", "for n = 0 .. ((Nb / 4) * 4) step 4"}, []string{"alloc"}},
		{"tiled", "interchange", []string{"for k = kt .. min((kt + 5), K) step 1\n", "O[i, k] = +Inf:f32"}, []string{"step 2048"}},
		{"mixed", "interchange", []string{"a[c2] = 0:f32", "var %acc2 f32 = 0:f32"}, nil},
	} {
		s := after(c.kernel, c.pass)
		for _, w := range c.want {
			if !strings.Contains(s, w) {
				t.Errorf("%s after %s: no %q in\n%s", c.kernel, c.pass, w, s)
			}
		}
		for _, w := range c.not {
			if strings.Contains(s, w) {
				t.Errorf("%s after %s: unexpected %q in\n%s", c.kernel, c.pass, w, s)
			}
		}
	}
}
