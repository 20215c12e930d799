package check_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/parse"
)

func mustCheck(t *testing.T, src string) []*ir.Kernel {
	t.Helper()
	ks, err := check.File("t.kd", src)
	if err != nil {
		t.Fatalf("check:\n%s", parse.Format(err, src))
	}
	for _, k := range ks {
		if err := ir.VerifyKernel(k); err != nil {
			t.Errorf("checked kernel does not verify: %v", err)
		}
	}
	return ks
}

func dimNames(k *ir.Kernel) string {
	var s []string
	for _, d := range k.Dims {
		s = append(s, d.Name)
	}
	return strings.Join(s, " ")
}

func TestExample(t *testing.T) {
	ks := mustCheck(t, example)
	if len(ks) != 2 || ks[0].Name != "sgemm" || ks[1].Name != "softmax" {
		t.Fatalf("kernels %v", ks)
	}
	sg, sm := ks[0], ks[1]
	if got := dimNames(sg); got != "M K N" {
		t.Errorf("sgemm dims %q, want M K N", got)
	}
	if len(sg.Params) != 5 || sg.Params[2].Kind != ir.InOut || sg.Params[3].Kind != ir.Scalar || sg.Params[0].Kind != ir.In {
		t.Errorf("sgemm params %v", sg.Params)
	}
	if len(sg.Stmts) != 1 {
		t.Fatalf("sgemm has %d statements", len(sg.Stmts))
	}
	var reds []string
	ir.Walk(sg.Stmts[0].Value, func(e ir.Expr) {
		if r, ok := e.(*ir.Reduce); ok {
			for _, v := range r.Vars {
				reds = append(reds, v.Name+"<"+v.Range.Name)
			}
		}
	})
	if fmt.Sprint(reds) != "[k<K]" {
		t.Errorf("sgemm reductions %v, want [k<K]", reds)
	}
	var sched []string
	for _, d := range sg.Schedule {
		sched = append(sched, ir.FormatDirective(d))
	}
	if got, want := strings.Join(sched, "; "), "tile i 96 6, j 4096 16, k 256; parallel i; for amd64 { vectorize j }"; got != want {
		t.Errorf("sgemm schedule %q, want %q", got, want)
	}
	if !strings.HasPrefix(sg.Source, "kernel sgemm(") || !strings.HasSuffix(sg.Source, "}") || strings.Contains(sg.Source, "softmax") {
		t.Errorf("sgemm source %q", sg.Source)
	}
	if got := dimNames(sm); got != "M N" {
		t.Errorf("softmax dims %q", got)
	}
	if len(sm.Temps) != 2 || sm.Temps[0].Name != "m" || sm.Temps[1].Name != "s" || len(sm.Temps[0].Shape) != 1 || sm.Temps[0].Shape[0] != sm.Dims[0] {
		t.Errorf("softmax temps %v", sm.Temps)
	}
	if len(sm.Stmts) != 4 || len(sm.Schedule) != 0 {
		t.Errorf("softmax: %d statements, %d directives", len(sm.Stmts), len(sm.Schedule))
	}
}

// TestPrintRoundTrip checks that the canonical form of a file checks to the same IR.
func TestPrintRoundTrip(t *testing.T) {
	for _, src := range []string{example, fp16OK, einstein, `kernel c(X: f32[N], Y: out f32[N], I: out i32[N]) {
    Y[i] = select(X[i] < 0, -(X[i] - 1) * 2, (X[i]))
    I[i] = i32(-X[i + 1 - 1] / (2 - N))
}`} {
		f, err := parse.Parse("t.kd", src)
		if err != nil {
			t.Fatal(err)
		}
		printed := parse.Print(f)
		a, b := mustCheck(t, src), mustCheck(t, printed)
		for i := range a {
			if a[i].String() != b[i].String() {
				t.Errorf("IR differs after Print:\n%s\nvs\n%s", a[i], b[i])
			}
		}
	}
}

const einstein = `kernel mm(A: f32[M, K], B: f32[K, N], C: inout f32[M, N]) {
    C[i, j] += A[i, k] * B[k, j]
}`

func TestEinsteinSum(t *testing.T) {
	k := mustCheck(t, einstein)[0]
	s := k.Stmts[0]
	// C[i,j] = C[i,j] + sum(k: A[i,k]*B[k,j])
	b, ok := s.Value.(*ir.Binary)
	if !ok || b.Op != ir.Add {
		t.Fatalf("value %s, want an addition", ir.FormatExpr(s.Value))
	}
	if l, ok := b.X.(*ir.Load); !ok || l.T.Name != "C" {
		t.Errorf("left operand %s, want C[i, j]", ir.FormatExpr(b.X))
	}
	r, ok := b.Y.(*ir.Reduce)
	if !ok || r.Op != ir.Add || len(r.Vars) != 1 || r.Vars[0].Name != "k" || r.Vars[0].Range != k.Dims[1] {
		t.Fatalf("right operand %s, want sum(k: ...) over K", ir.FormatExpr(b.Y))
	}
	if got, want := ir.FormatExpr(s.Value), "(C[i, j] + sum(k: (A[i, k] * B[k, j])))"; got != want {
		t.Errorf("value %s, want %s", got, want)
	}
	if r.T != ir.F32 {
		t.Errorf("reduction type %s", r.T)
	}
}

func TestDimUnification(t *testing.T) {
	k := mustCheck(t, `kernel mm(A: f32[M, K], B: f32[K2, N], C: out f32[M, N]) where K2 == K {
    C[i, j] = sum(k: A[i, k] * B[k, j])
}`)[0]
	if got := dimNames(k); got != "M K N" {
		t.Errorf("dims %q, want M K N (K2 unified into K)", got)
	}
	a, b := k.Params[0], k.Params[1]
	if a.Shape[1] != b.Shape[0] {
		t.Errorf("A's second dim %s and B's first %s are not the same *Dim", a.Shape[1].Name, b.Shape[0].Name)
	}
	// Unification through an output index and across statements.
	k = mustCheck(t, `kernel t(X: f32[P], Y: out f32[Q], Z: out f32[R]) where P == Q, R == Q {
    Y[i] = X[i]
    Z[j] = Y[j]
}`)[0]
	if got := dimNames(k); got != "P" || k.Params[2].Shape[0] != k.Params[0].Shape[0] {
		t.Errorf("dims %q, want P", got)
	}
}

const fp16OK = `kernel h(A: f16[N], B: f16[N], C: out f16[N], D: out f32[N]) {
    C[i] = f16(A[i] * B[i])
    D[i] = A[i] * B[i] + 1
}`

func TestF16ComputesInF32(t *testing.T) {
	k := mustCheck(t, fp16OK)[0]
	cast, ok := k.Stmts[0].Value.(*ir.Cast)
	if !ok || cast.T != ir.F16 {
		t.Fatalf("C's value %s, want an f16 cast", ir.FormatExpr(k.Stmts[0].Value))
	}
	if got := cast.X.Type(); got != ir.F32 {
		t.Errorf("f16*f16 has type %s, want f32", got)
	}
	if got := k.Stmts[1].Value.Type(); got != ir.F32 {
		t.Errorf("f16*f16+1 has type %s, want f32", got)
	}
	_, err := check.File("t.kd", `kernel h(A: f16[N], B: f16[N], C: out f16[N]) {
    C[i] = A[i] * B[i]
    C[i] = A[i]
}`)
	if err == nil || err.Error() != "t.kd:2:12: cannot store a f32 value in f16 tensor C without an explicit cast: write f16(...)" {
		t.Errorf("storing f16*f16 in f16: got %v", err)
	}
	// Copying an f16 value (no arithmetic) needs no cast; neither does storing it in f32.
	mustCheck(t, `kernel h(A: f16[N], C: out f16[N], D: out f32[N], E: out bf16[N]) {
    C[i] = A[i]
    D[i] = A[i]
    E[i] = bf16(A[i])
}`)
}

// body wraps statements (starting on line 2, column 5) in a kernel that declares inputs X (rank 1) and Z
// (rank 2), a scalar s, and outputs Y and W, which it writes after the given statements.
func body(stmts string) string {
	return "kernel f(X: f32[N], Z: f32[N, N], s: f32, Y: out f32[N], W: out f32[N, N]) {\n" +
		stmts + "\n    Y[i] = X[i]\n    W[i, j] = Z[i, j]\n}\n"
}

// sched appends a schedule (directives starting on line 8, column 5) to a file with a contraction mm
// (indices i, j, reduction k) and an elementwise kernel ew (indices i, j).
func sched(dirs string) string {
	return `kernel mm(A: f32[M, K], B: f32[K, N], C: out f32[M, N]) {
    C[i, j] = sum(k: A[i, k] * B[k, j])
}
kernel ew(X: f32[M, N], Y: out f32[M, N]) {
    Y[i, j] = X[i, j]
}
schedule mm {
` + dirs + "\n}\n"
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src, pos, msg string
	}{
		// Parameters.
		{"unknown type", "kernel f(X: f33[N], Y: out f32[N]) {\n    Y[i] = 1\n}", "1:10", "unknown type f33 for X: expected f64, f32, f16, bf16, i32 or i8"},
		{"param redeclared", "kernel f(X: f32[N], X: f32[N], Y: out f32[N]) {\n    Y[i] = 1\n}", "1:21", "parameter X redeclared"},
		{"scalar out", "kernel f(s: out f32, Y: out f32[N]) {\n    Y[i] = 1\n}", "1:10", "scalar parameter s cannot be out: outputs are tensors (use f32[] for a single value)"},
		{"scalar inout", "kernel f(s: inout i32, Y: out f32[N]) {\n    Y[i] = 1\n}", "1:10", "scalar parameter s cannot be inout"},
		{"param as dim", "kernel f(X: f32[N], Y: out f32[X]) {\n    Y = 1\n}", "1:32", "X is a parameter, not a dimension"},
		{"dim as param", "kernel f(X: f32[N], N: f32, Y: out f32[N]) {\n    Y[i] = X[i]\n}", "1:21", "N is already a dimension name"},
		{"dim named like its param", "kernel f(M: f32[M], Y: out f32[N]) {\n    Y[i] = 1\n}", "1:10", "M is already a dimension name"},
		{"never written", "kernel f(X: f32[N], Y: out f32[N], Z: inout f32[N]) {\n    Y[i] = X[i]\n}", "1:36", "output Z is never written"},

		// Statement targets.
		{"index twice on LHS", body("    W[i, i] = Z[i, i]"), "2:10", "index i appears twice on the left"},
		{"reserved kernel name", "kernel func(Y: out f32[N]) {\n    Y[i] = 1\n}", "1:1", "func is reserved (a Go keyword or a name the generated code uses); choose another name"},
		{"reserved param name", "kernel f(len: f32, Y: out f32[N]) {\n    Y[i] = 1\n}", "1:10", "len is reserved"},
		{"reserved dim name", "kernel f(X: f32[N_], Y: out f32[N]) {\n    Y[i] = 1\n}", "1:17", "N_ is reserved"},
		{"predeclared dim name", "kernel f(X: f32[uint], Y: out f32[N]) {\n    Y[i] = 1\n}", "1:17", "uint is reserved"},
		{"keyword LHS index", body("    Y[in] = 1"), "2:7", "in is reserved"},
		{"reserved let target", body("    let accSlot[i] = X[i]"), "2:5", "accSlot is reserved"},
		{"reserved reduction index", body("    Y[i] = sum(rt: Z[i, rt])"), "2:16", "rt is reserved"},
		{"LHS index named like dim", body("    Y[N] = 1"), "2:7", "index N has the name of a parameter or dimension"},
		{"LHS index named like param", body("    let t[X] = 1"), "2:11", "index X has the name of a parameter or dimension"},
		{"let redeclares param", body("    let X[i] = Y[i]"), "2:5", "X redeclared (let declares a new temporary)"},
		{"let redeclares temp", body("    let t[i] = X[i]\n    let t[i] = X[i]"), "3:5", "t redeclared"},
		{"let +=", body("    let t[i] += X[i]"), "2:5", "let t += ...: a new temporary has no value to add to; use ="},
		{"undefined target", body("    T[i] = X[i]"), "2:5", "undefined: T (declare a temporary with let T[...] = ...)"},
		{"assign to dim", body("    N[i] = X[i]"), "2:5", "cannot assign to dimension N"},
		{"assign to input", body("    X[i] = 1"), "2:5", "cannot assign to input X: declare it out or inout"},
		{"assign to scalar", body("    s = 1"), "2:5", "cannot assign to scalar parameter s"},
		{"rank mismatch on write", body("    W[i] = X[i]"), "2:5", "W has rank 2 but is written with 1 indices"},
		{"+= on fresh out", body("    Y[i] += X[i]"), "2:5", "Y += ...: output Y has no value yet (declare it inout, or assign it first)"},
		{"cannot infer range", body("    let t[i] = 1"), "2:11", "cannot infer the range of index i: use it alone as an index of a tensor"},
		{"cannot infer reduction range", body("    Y[i] = sum(k: s)"), "2:16", "cannot infer the range of index k"},
		{"cannot infer range from affine use", body("    let t[i] = X[i + 1]"), "2:11", "cannot infer the range of index i"},

		// Stored values.
		{"comparison in temp", body("    let t[i] = X[i] < 1"), "2:16", "temporary t would hold a comparison result; use select(cond, a, b)"},
		{"comparison stored", body("    Y[i] = X[i] < 1"), "2:12", "cannot store a comparison result in Y: use select(cond, a, b)"},
		{"narrowing store", "kernel h(X: f32[N], Y: out f16[N]) {\n    Y[i] = X[i]\n    Y[i] = f16(X[i])\n}", "2:12", "cannot store a f32 value in f16 tensor Y without an explicit cast: write f16(...)"},
		{"narrowing store f64", "kernel h(X: f64[N], Y: out f32[N]) {\n    Y[i] = X[i] * 2\n    Y[i] = f32(X[i])\n}", "2:12", "cannot store a f64 value in f32 tensor Y"},
		{"int to float store", "kernel h(I: i32[N], Y: out f32[N]) {\n    Y[i] = I[i]\n    Y[i] = 1\n}", "2:12", "cannot store a i32 value in f32 tensor Y"},

		// Expression types.
		{"mismatched i32 f32", "kernel h(X: f32[N], I: i32[N], Y: out f32[N]) {\n    Y[i] = X[i] + I[i]\n    Y[i] = X[i]\n}", "2:17", "mismatched types f32 and i32 for +: convert one operand explicitly, e.g. i32(...)"},
		{"mismatched in comparison", "kernel h(X: f32[N], I: i32[N], Y: out f32[N]) {\n    Y[i] = select(I[i] < X[i], 1, 2)\n    Y[i] = X[i]\n}", "2:19", "mismatched types i32 and f32 for <"},
		{"mismatched in select", "kernel h(X: f32[N], I: i32[N], Y: out f32[N]) {\n    Y[i] = select(X[i] < 0, X[i], I[i])\n    Y[i] = X[i]\n}", "2:12", "mismatched types f32 and i32 for select"},
		{"mismatched in max", "kernel h(X: f32[N], I: i32[N], Y: out f32[N]) {\n    Y[i] = max(X[i], I[i])\n    Y[i] = X[i]\n}", "2:12", "mismatched types f32 and i32 for max"},
		{"negated comparison", body("    Y[i] = -(X[i] < 1)"), "2:12", "- needs a number, got a comparison result"},
		{"comparison operand", body("    Y[i] = (X[i] < 1) * 2"), "2:23", "* needs a number, got a comparison result"},
		{"comparison of comparison", body("    Y[i] = select((X[i] < 1) == (X[i] > 2), 1, 0)"), "2:19", "== needs a number, got a comparison result"},
		{"cast of comparison", body("    Y[i] = f32(X[i] < 1)"), "2:12", "f32 needs a number, got a comparison result"},
		{"exp of comparison", body("    Y[i] = exp(X[i] < 1)"), "2:12", "exp needs a number, got a comparison result"},
		{"sum of comparison", body("    Y[i] = sum(k: Z[i, k] < 1)"), "2:12", "sum needs a number, got a comparison result"},
		{"sqrt of int", "kernel h(I: i32[N], Y: out f32[N]) {\n    Y[i] = f32(sqrt(I[i]))\n    Y[i] = 1\n}", "2:16", "sqrt needs a floating-point operand, got i32: convert with f32(...)"},
		{"bad number", body("    Y[i] = 1e999"), "2:12", "bad number 1e999"},
		{"fraction into int", "kernel h(I: i32[N], J: out i32[N]) {\n    J[i] = I[i] + 0.5\n    J[i] = I[i]\n}", "2:17", "constant 0.5 is not representable as i32"},
		{"fraction stored in int", "kernel h(J: out i32[N]) {\n    J[i] = 1.5\n}", "2:12", "constant 1.5 is not representable as i32"},
		{"fraction cast to int", "kernel h(J: out i32[N]) {\n    J[i] = i32(2.5)\n    J[i] = 2\n}", "2:12", "constant 2.5 is not representable as i32"},
		{"int8 overflow", "kernel h(B: out i8[N]) {\n    B[i] = 300\n}", "2:12", "constant 300 is not representable as i8"},
		{"int32 overflow", "kernel h(J: out i32[N]) {\n    J[i] = 2147483648\n}", "2:12", "constant 2147483648 is not representable as i32"},
		{"int8 overflow negative", "kernel h(B: out i8[N]) {\n    B[i] = -(129)\n}", "2:12", "constant -129 is not representable as i8"},
		{"f32 overflow", body("    Y[i] = X[i] * 1e39"), "2:17", "constant 1e+39 is not representable as f32"},
		{"f32 overflow in comparison", body("    Y[i] = select(X[i] < 1e39, 1, 0)"), "2:19", "constant 1e+39 is not representable as f32"},

		// Calls and reductions.
		{"unknown function", body("    Y[i] = foo(X[i])"), "2:12", "unknown function foo: expected abs, sqrt, exp, log, tanh, relu, sigmoid, neg, min, max, select, or a cast"},
		{"wrong arg count", body("    Y[i] = exp(X[i], X[i])"), "2:12", "exp takes 1 argument(s), got 2"},
		{"wrong arg count max", body("    Y[i] = max(X[i])"), "2:12", "max takes 2 argument(s), got 1"},
		{"wrong arg count select", body("    Y[i] = select(X[i] < 0, 1)"), "2:12", "select takes 3 argument(s), got 2"},
		{"wrong arg count cast", body("    Y[i] = f32()"), "2:12", "f32 takes 1 argument(s), got 0"},
		{"select non-bool", body("    Y[i] = select(X[i], 1, 2)"), "2:19", "select needs a comparison as its first argument, got f32"},
		{"sum without indices", body("    Y[i] = sum(X[i])"), "2:12", "sum needs its reduction indices: sum(k: expr)"},
		{"unknown reduction", body("    Y[i] = prod(k: Z[i, k])"), "2:12", "unknown reduction prod: expected sum, max or min"},
		{"reduction shadows LHS index", body("    Y[i] = sum(i: Z[i, i])"), "2:16", "reduction index i is already an index here"},
		{"reduction shadows reduction", body("    Y[i] = sum(k: sum(k: Z[i, k]))"), "2:23", "reduction index k is already an index here"},
		{"reduction index repeated", body("    W[i, j] = sum(k, k: Z[k, k])"), "2:22", "reduction index k is already an index here"},
		{"reduction index named like dim", body("    Y[i] = sum(N: X[i])"), "2:16", "reduction index N has the name of a parameter or dimension"},

		// Names and accesses.
		{"undefined name", body("    Y[i] = q"), "2:12", "undefined: q"},
		{"undefined tensor", body("    Y[i] = Q[i]"), "2:12", "undefined: Q"},
		{"rank mismatch on read", body("    Y[i] = Z[i]"), "2:12", "Z has rank 2 but is indexed with 1 indices"},
		{"indexing a scalar", body("    Y[i] = s[i]"), "2:12", "s is a scalar and cannot be indexed"},
		{"tensor without index", body("    Y[i] = Z"), "2:12", "Z has rank 2: index it, e.g. Z[_, _]"},
		{"dim used as tensor", body("    Y[i] = N[i]"), "2:12", "N is a dimension, not a tensor"},
		{"tensor in index", body("    Y[i] = X[s]"), "2:14", "s is a tensor; indices must be index variables, dims or integers"},
		{"non-affine index", body("    W[i, j] = Z[i * j, j]"), "2:19", "index expressions must be affine: only multiplication by an integer constant is allowed"},
		{"division in index", body("    Y[i] = X[i / 2]"), "2:16", "index expressions must be affine"},
		{"non-integer index constant", body("    Y[i] = X[1.5]"), "2:14", "index constant 1.5 is not an integer"},
		{"comparison as index", body("    Y[i] = X[i < 1]"), "2:14", "an index cannot be a comparison"},
		{"keyword as index", body("    Y[i] = X[for]"), "2:14", "for is reserved"},
		{"reserved implicit index", body("    Y[i] = sum(k: Z[i, k] * X[err])"), "2:31", "err is reserved"},
		{"call in index", body("    Y[i] = X[exp(i)]"), "2:14", "indices must be affine in index variables (like i, k+1, 2*i)"},
		{"load in index", body("    Y[i] = X[X[i]]"), "2:14", "indices must be affine"},
		{"read at other indices", body("    W[i, j] = X[i] + W[j, i]"), "2:22", "W is read at other indices than it is written: the result would depend on the order of evaluation"},
		{"read at shifted index", "kernel f(X: f32[N], Y: inout f32[N]) {\n    Y[i] = Y[i + 1] + X[i]\n    Y[i] = 1\n}", "2:12", "Y is read at other indices than it is written"},
		{"read before write", body("    Y[i] = W[i, i]"), "2:12", "output W is read before it is written (declare it inout to pass its value in)"},
		{"0-d read before write", "kernel f(X: f32[N], Y: out f32[N], T: out f32[]) {\n    Y[i] = X[i] + T\n    T = 1\n    Y[i] = X[i] + T\n}", "2:19", "output T is read before it is written"},

		// Declarations.
		{"kernel redeclared", "kernel f(Y: out f32[N]) {\n    Y[i] = 1\n}\n\nkernel f(Y: out f32[N]) {\n    Y[i] = 2\n}", "5:1", "kernel f redeclared"},
		{"schedule for unknown kernel", sched("") + "schedule nope {\n}\n", "10:1", "schedule for unknown kernel nope"},
		{"second schedule", sched("") + "schedule mm {\n}\n", "10:1", "second schedule for kernel mm"},

		// Schedules.
		{"unknown target", sched("    for sparc {\n    }"), "8:5", "unknown target sparc: expected one of [go amd64 arm64 ptx msl llvm]"},
		{"second target block", sched("    for amd64 {\n    }\n    for amd64 {\n    }"), "10:5", "second block for target amd64"},
		{"directive without args", sched("    unroll"), "8:5", "unroll needs arguments"},
		{"directive without args in target", sched("    for arm64 {\n        parallel\n    }"), "9:9", "parallel needs arguments"},
		{"unknown index in tile", sched("    tile q 4"), "8:10", "tile: unknown index q in kernel mm"},
		{"index of another kernel", sched("    tile i 4, x 4"), "8:15", "tile: unknown index x in kernel mm"},
		{"zero size", sched("    tile i 0"), "8:10", "tile i: sizes must be positive"},
		{"tile not multiple", sched("    tile i 96 7"), "8:10", "tile i 96 7: the outer tile must be a multiple of the inner tile"},
		{"tile 3 sizes", sched("    tile i 8 4 2"), "8:10", "tile i: give one size, or an outer (cache) and an inner (register) size"},
		{"tile no size", sched("    tile i"), "8:10", "tile i: give one size"},
		{"reorder twice", sched("    reorder i, j, i"), "8:19", "reorder: index i listed twice"},
		{"reorder with size", sched("    reorder i 4, j"), "8:13", "reorder takes index names only"},
		{"reorder unknown", sched("    reorder i, q"), "8:16", "reorder: unknown index q in kernel mm"},
		{"vectorize non-innermost", sched("    vectorize i"), "8:15", "vectorize i: i is not the innermost loop of the statement at line 2 (the innermost is j); reorder first"},
		{"vectorize reduction of contraction", sched("    vectorize k"), "8:15", "vectorize k: k is not the innermost loop of the statement at line 2 (the innermost is j)"},
		{"vectorize big factor", sched("    vectorize j 128"), "8:15", "vectorize j: give at most one factor, at most 64"},
		{"unroll two factors", sched("    unroll j 2 2"), "8:12", "unroll j: give at most one factor, at most 64"},
		{"vectorize unknown", sched("    vectorize q"), "8:15", "vectorize: unknown index q in kernel mm"},
		{"parallel on reduction index", sched("    parallel k"), "8:14", "parallel k: k is a reduction index; running its iterations in parallel would race on the sum"},
		{"parallel with size", sched("    parallel i 4"), "8:14", "parallel takes index names only"},
		{"pack of output", sched("    pack A, C"), "8:13", "pack C: only input tensors of rank 2 or more can be packed"},
		{"nopack of unknown", sched("    nopack Q"), "8:12", "nopack Q: only input tensors of rank 2 or more can be packed"},
		{"precision f16", sched("    precision f16"), "8:15", "precision f16: the accumulation type must be f32 or f64"},
		{"precision int", sched("    for ptx {\n        precision i32\n    }"), "9:19", "precision i32: the accumulation type must be f32 or f64"},
		{"precision two args", sched("    precision f32, f64"), "8:5", "precision takes one accumulation type: precision f64"},
		{"precision with size", sched("    precision f64 2"), "8:5", "precision takes one accumulation type"},
	} {
		_, err := check.File("t.kd", tc.src)
		var list parse.ErrorList
		if !errors.As(err, &list) {
			t.Errorf("%s: got %v, want an error at %s", tc.name, err, tc.pos)
			continue
		}
		e := list[0]
		got := fmt.Sprintf("%d:%d", e.Pos.Line, e.Pos.Column)
		if len(list) != 1 || got != tc.pos || e.Pos.Filename != "t.kd" || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%s: got\n%s\nwant one error t.kd:%s: ...%s...", tc.name, parse.Format(err, tc.src), tc.pos, tc.msg)
		}
	}
}

func TestValid(t *testing.T) {
	for _, src := range []string{
		// Reorder then vectorize the new innermost index.
		sched("") + "schedule ew {\n    reorder j, i\n    vectorize i 8\n}\n",
		// Vectorize only for one target, after reordering only for that target.
		sched("    for amd64 {\n        vectorize j\n    }\n    for arm64 {\n        unroll i 4\n        pack A, B\n        precision f64\n    }"),
		sched("    tile i 96 6, j 64, k 256; parallel i, j; nopack B; unroll j 4"),
		sched("    for ptx {\n        precision tf32\n    }"),
		// Index arithmetic, dims as values and as index terms, constants of every kind.
		`kernel s(X: f32[N], Y: out f32[N], I: out i32[N], B: out f64[]) {
    Y[i] = X[N - 1 - i] * 2 + -X[(i + 1) * 1 - 1] + X[-1 * -i] + N
    I[i] = i32(X[i]) + 3 - i
    B = sum(k: X[k]) + 0.5
}`,
		// inout read and written at the same indices; min/max/select; explicit reduction over two indices.
		`kernel r(X: f32[M, N], Y: inout f32[M], Z: out f32[M], m: f32) {
    Y[i] = max(Y[i], sum(j, k: X[i, j] * X[i, k])) / m
    Z[i] = select(Y[i] >= 0, min(Y[i], 1), abs(Y[i]))
}`,
		// Constants that the destination type represents.
		`kernel c(X: f32[N], I: i32[N], J: out i32[N], B: out i8[N], D: out f64[N]) {
    J[i] = I[i] * 2 + i32(X[i] * 0.5) - 2147483647 + i32(-2147483648)
    B[i] = -128 + 127 * 0
    D[i] = 1e300 * f64(X[i]) + 4.0
}`,
		// Mixed f16 and bf16 compute in f32.
		`kernel mix(A: f16[N], B: bf16[N], C: out f32[N]) {
    C[i] = A[i] * B[i]
}`,
	} {
		mustCheck(t, src)
	}
}

// TestErrorOrder checks that every error in a file is reported, sorted by position, including errors
// found late (an output never written, a schedule) at positions early in the file, and that outputs
// only failed statements were to write are not reported as "never written" (issue 10, item 8).
func TestErrorOrder(t *testing.T) {
	src := `kernel f(X: f32[N], Y: out f32[N], Z: out f32[N]) {
    Y[i] = foo(X[i])
    Y[i] = X[i] + q
}
schedule g {
}
schedule f {
    tile i 0
}
kernel f(X: f32[N]) {
}
`
	_, err := check.File("t.kd", src)
	want := `t.kd:1:36: output Z is never written
t.kd:2:12: unknown function foo: expected ` + "abs, sqrt, exp, log, tanh, relu, sigmoid, neg, min, max, select, or a cast f64/f32/f16/bf16/i32/i8" + `
t.kd:3:19: undefined: q
t.kd:5:1: schedule for unknown kernel g
t.kd:8:10: tile i: sizes must be positive
t.kd:8:10: tile: unknown index i in kernel f
t.kd:10:1: kernel f redeclared`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
	var list parse.ErrorList
	if !errors.As(err, &list) || len(list) != 7 {
		t.Fatalf("got %T with %d errors", err, len(list))
	}
	formatted := parse.Format(err, src)
	if !strings.Contains(formatted, "t.kd:3:19: undefined: q\n\t    Y[i] = X[i] + q\n\t                  ^\n") {
		t.Errorf("Format:\n%s", formatted)
	}
}

func TestSyntaxErrorThroughFile(t *testing.T) {
	_, err := check.File("t.kd", "kernel f(X: f32[N]) {\n    X[i] = = 1\n}")
	if err == nil || err.Error() != `t.kd:2:12: syntax error: expected an expression after "=", found "="` {
		t.Errorf("got %v", err)
	}
}

// example is parse's shared test kernel file.
var example = func() string {
	b, err := os.ReadFile("../parse/testdata/example.kdsl")
	if err != nil {
		panic(err)
	}
	return string(b)
}()
