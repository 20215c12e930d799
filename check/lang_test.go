package check_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/parse"
)

// wantErrors checks that src fails with exactly the errors want ("line:col: message" each, the message
// matched as a substring), in order.
func wantErrors(t *testing.T, name, src string, want ...string) {
	t.Helper()
	_, err := check.File("t.kd", src)
	var list parse.ErrorList
	if !errors.As(err, &list) {
		t.Errorf("%s: got %v, want errors %q", name, err, want)
		return
	}
	ok := len(list) == len(want)
	for i := 0; ok && i < len(want); i++ {
		pos, msg, _ := strings.Cut(want[i], ": ")
		e := list[i]
		ok = fmt.Sprintf("%d:%d", e.Pos.Line, e.Pos.Column) == pos && strings.Contains(e.Msg, msg)
	}
	if !ok {
		t.Errorf("%s: got\n%s\nwant\n%s", name, parse.Format(err, src), strings.Join(want, "\n"))
	}
}

// Issue 10, item 5: an implicit sum that would scale a term, or sum one term and broadcast it.
func TestImplicitSumTerms(t *testing.T) {
	const hdr = "kernel f(A: f32[M, K], B: f32[K, N], bias: f32[N], bk: f32[K], C: out f32[M, N], y: out f32[M]) {\n"
	for _, tc := range []struct{ name, stmt, want string }{
		{"bias scaled by K", "    C[i, j] = A[i, k] * B[k, j] + bias[j]", "2:35: k is summed implicitly but does not occur in bias[j]; write sum(k: ...) explicitly"},
		{"first term lacks it", "    C[i, j] = bias[j] - A[i, k] * B[k, j]", "2:15: k is summed implicitly but does not occur in bias[j]"},
		{"inside parentheses", "    C[i, j] = 2 * (A[i, k] * B[k, j] + 1)", "2:40: k is summed implicitly but does not occur in 1;"},
		{"product of sums", "    C[i, j] = (A[i, k] + 1) * (B[k, j] + bias[j])", "2:26: k is summed implicitly but does not occur in 1;"},
		{"constant term", "    y[i] = A[i, k] + 1", "2:22: k is summed implicitly but does not occur in 1"},
		{"explicit sum term", "    C[i, j] = sum(l: A[i, l] * B[l, j]) + A[i, k] * bk[k] * bias[j]", "2:15: k is summed implicitly but does not occur in sum(l: A[i, l] * B[l, j])"},
		{"stray index summed and broadcast", "    C[i, j] = A[i, k] * B[k, j] + bk[k]", "2:35: k is summed implicitly over bk[k], which does not use i: the sum would be broadcast over i; write sum(k: ...) explicitly"},
		{"stray index broadcast over one index", "    C[i, j] = A[i, k] * B[k, j] + A[i, k] * bk[k]", "2:35: k is summed implicitly over A[i, k] * bk[k], which does not use j"},
		{"stray index in a product", "    y[i] = A[i, 0] * bk[k]", "2:22: k is summed implicitly over bk[k], which does not use i: the sum would be broadcast over i"},
		{"matrix-vector product broadcast", "    C[i, j] = A[i, k] * bk[k] * bias[j]", "2:15: k is summed implicitly over A[i, k] * bk[k], which does not use j"},
	} {
		src := hdr + tc.stmt + "\n    y[i] = 1\n}\n"
		src = strings.Replace(src, "    y[i] = 1\n", "    y[i] = 1\n    C[i, j] = 0\n", 1)
		wantErrors(t, tc.name, src, tc.want)
	}
	// What the rule accepts: the index in every term (through products, quotients and functions), a
	// single term, an explicit sum with a broadcast term, += after the sum.
	for _, stmt := range []string{
		"C[i, j] = A[i, k] * B[k, j]",
		"C[i, j] += A[i, k] * B[k, j] * 2",
		"C[i, j] = A[i, k] * B[k, j] + A[i, k] * B[k, j] * bias[j]",
		"C[i, j] = A[i, k] * (B[k, j] + 1)",
		"C[i, j] = -(A[i, k] * B[k, j]) + bias[j] / bk[k] * B[k, j] * A[i, k]",
		"C[i, j] = sum(k: A[i, k] * bk[k]) * bias[j]",
		"y[i] = A[i, k] * bk[k] * 2",
		"C[i, j] = sum(k: A[i, k] * B[k, j]) + bias[j]",
		"C[i, j] = exp(A[i, k] - bias[j]) * B[k, j]",
		"y[i] = A[i, k]",
	} {
		src := hdr + "    C[i, j] = 0\n    y[i] = 0\n    " + stmt + "\n}\n"
		mustCheck(t, src)
	}
}

// Issue 10, item 6: dims of different names are unified only when a where clause says so.
func TestDimNamesUnify(t *testing.T) {
	wantErrors(t, "nt with B[K, N]", `kernel f(A: f32[M, K], B: f32[K, N], C: out f32[M, N]) {
    C[i, j] = sum(k: A[i, k] * B[j, k])
}`, "2:34: index j of B makes dims N (declared at t.kd:1:34) and K (declared at t.kd:1:20) the same size: use one name, or say so with `where N == K` after the parameters")
	wantErrors(t, "through the output", `kernel f(X: f32[P], Y: out f32[Q]) {
    Y[i] = X[i]
}`, "2:14: index i of X makes dims Q (declared at t.kd:1:32) and P (declared at t.kd:1:17)")
	wantErrors(t, "where names a parameter", `kernel f(X: f32[P], Y: out f32[Q]) where X == Q {
    Y[i] = 1
}`, "1:42: where X == Q: X is not a dim of kernel f")
	wantErrors(t, "where names one dim twice", `kernel f(X: f32[P], Y: out f32[P]) where P == P {
    Y[i] = X[i]
}`, "1:42: where P == P: a dim is always equal to itself")
	wantErrors(t, "where is reserved", `kernel f(where: f32[P], Y: out f32[P]) {
    Y[i] = 1
}`, "1:10: where is reserved")

	k := mustCheck(t, `kernel f(A: f32[M, K], B: f32[K2, N], C: out f32[M, N]) where K == K2, N == M {
    C[i, j] = sum(k: A[i, k] * B[k, j])
}`)[0]
	if got := dimNames(k); got != "M K" {
		t.Errorf("dims %q, want M K", got)
	}
	// The same name needs no clause.
	mustCheck(t, `kernel f(A: f32[M, K], B: f32[K, N], C: out f32[M, N]) {
    C[i, j] = sum(k: A[i, k] * B[k, j])
}`)
}

// Issue 10, item 7: window reductions with explicit ranges.
func TestWindowReduction(t *testing.T) {
	src := `kernel pool(I: f32[Nb, C, H, W], O: out f32[Nb, C, OH, OW], A: out f32[Nb, C, OH, OW]) {
    O[n, c, y, x] = max(r < 2, s < 2: I[n, c, 2*y + r, 2*x + s])
    A[n, c, y, x] = sum(r < 2, s < 2: I[n, c, 2*y + r, 2*x + s]) / 4
}
kernel box(X: f32[N], F: f32[R], Y: out f32[N]) {
    Y[i] = sum(r < R: X[i + r] * F[r]) + sum(t < 3: F[t])
}`
	ks := mustCheck(t, src)
	pool, box := ks[0], ks[1]
	if got := dimNames(pool); got != "Nb C H W OH OW" {
		t.Errorf("pool dims %q", got)
	}
	var ranges []string
	for _, k := range ks {
		for _, s := range k.Stmts {
			ir.Walk(s.Value, func(e ir.Expr) {
				if r, ok := e.(*ir.Reduce); ok {
					for _, v := range r.Vars {
						ranges = append(ranges, v.Name+"<"+v.RangeName())
					}
				}
			})
		}
	}
	if got := strings.Join(ranges, " "); got != "r<2 s<2 r<2 s<2 r<R t<3" {
		t.Errorf("reduction ranges %q", got)
	}
	if got := dimNames(box); got != "N R" {
		t.Errorf("box dims %q", got)
	}
	// The interpreter: a 1x1x4x4 image pooled to 2x2.
	in := make([]float64, 16)
	for i := range in {
		in[i] = float64((i * 7) % 16)
	}
	args := ir.Args{Tensors: map[string][]float64{"I": in, "O": make([]float64, 4), "A": make([]float64, 4)},
		Dims: map[string]int{"Nb": 1, "C": 1, "H": 4, "W": 4, "OH": 2, "OW": 2}}
	if err := ir.RunKernel(pool, ir.Exact, args); err != nil {
		t.Fatal(err)
	}
	for y := 0; y < 2; y++ {
		for x := 0; x < 2; x++ {
			mx, sum := math.Inf(-1), 0.0
			for r := 0; r < 2; r++ {
				for s := 0; s < 2; s++ {
					v := in[(2*y+r)*4+2*x+s]
					mx, sum = math.Max(mx, v), sum+v
				}
			}
			if o, a := args.Tensors["O"][y*2+x], args.Tensors["A"][y*2+x]; o != mx || a != sum/4 {
				t.Errorf("(%d,%d): max %v avg %v, want %v %v", y, x, o, a, mx, sum/4)
			}
		}
	}

	hdr := "kernel f(X: f32[N], Y: out f32[N], s: f32) {\n"
	for _, tc := range []struct{ name, stmt, want string }{
		{"zero range", "    Y[i] = sum(r < 0: X[i + r])", "2:20: range of r: 0 is not an integer from 1 to 1048576"},
		{"huge range", "    Y[i] = sum(r < 99999999999999999999: X[i + r])", "2:20: range of r: 99999999999999999999 is not an integer from 1"},
		{"scalar as range", "    Y[i] = sum(r < s: X[i + r])", "2:20: range of r: s is not a dim of kernel f (a range is an integer or a dim)"},
		{"window without range", "    Y[i] = max(r: X[2*i + r])", "2:16: cannot infer the range of index r: use it alone as an index of a tensor, or give it a range: sum(r < 3: ...)"},
	} {
		wantErrors(t, tc.name, hdr+tc.stmt+"\n}\n", tc.want)
	}
}

// Issue 10, item 8: a statement error is not preceded by "output ... is never written".
func TestNoFalseNeverWritten(t *testing.T) {
	for _, tc := range []struct{ name, stmt, want string }{
		{"unknown name", "    Y[i] = q\n    H[i] = f16(X[i])", "2:12: undefined: q"},
		{"unknown index", "    Y[i] = X[i] + X[k2 + 1]\n    H[i] = f16(X[i])", "2:21: cannot infer the range of index k2"},
		{"unknown tensor", "    Y[i] = X[i] + Z[i, k2]\n    H[i] = f16(X[i])", "2:19: undefined: Z"},
		{"unknown function", "    Y[i] = foo(X[i])\n    H[i] = f16(X[i])", "2:12: unknown function foo"},
		{"f32 into f16", "    H[i] = X[i]\n    Y[i] = X[i]", "2:12: cannot store a f32 value in f16 tensor H without an explicit cast"},
	} {
		src := "kernel f(X: f32[N], Y: out f32[N], H: out f16[N]) {\n" + tc.stmt + "\n}\n"
		wantErrors(t, tc.name, src, tc.want)
	}
	// An output no failed statement was to write is still reported.
	wantErrors(t, "other output", "kernel f(X: f32[N], Y: out f32[N], H: out f16[N]) {\n    H[i] = X[i]\n}\n",
		"1:21: output Y is never written", "2:12: cannot store a f32 value in f16 tensor H")
	// Without a failed statement, an unwritten output is still reported.
	wantErrors(t, "really never written", "kernel f(X: f32[N], Y: out f32[N], H: out f16[N]) {\n    Y[i] = X[i]\n}\n",
		"1:36: output H is never written")
}
