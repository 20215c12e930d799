package parse_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/parse"
)

var fuzzSeeds = []string{
	`kernel mm(A: f16[M, K], B: f16[K2, N], C: inout f16[M, N]) { C[i,j] += f16(A[i,k]*B[k,j]) }
schedule mm { tile i 64 4; reorder j, i; precision f64; for arm64 { unroll k 4; pack A, B } }`,
	`// comment
kernel conv(X: f32[N], W: f32[R], Y: out f32[N]) {
    Y[i] = sum(r: X[i + r - 1] * W[r]) // trailing
    Y[i] = select(Y[i] < 0, -(Y[i] - 1) * 2, relu(Y[i]))
}`,
	`kernel ew(X: f32[M, N], s: f32, Y: out f32[M, N], Z: out i32[]) {
    let t[i, j] = (X[i, j] + s) * 1.5e-3
    Y[i, j] = min(t[i, j], M) / -N
    Z = i32(sum(i, j: X[i, j]))
}
schedule ew { vectorize j 8; parallel i, j; nopack X }`,
	`kernel bad(X: f33[N], X: f32[N], Y: out f32[X]) { Y[i, i] = q; let Y = 1 }
schedule nope { tile i 96 7 }`,
	`kernel f(A: out f32[N]) { A[i] = (a + }`,
	// Expressions and directives, which the target also tries inside a fixed kernel and schedule.
	`X[i] * 2 + sum(k: Z[i, k] * Z[k, i]) - -s / (N - 1)`,
	`select(X[i] < s, -X[i], (X[i] - 1) / 2) + max(X[i], Y[i]) + f32(I[i])`,
	`exp(X[i + 1 - 1]) * Z[i, 2 * j] + H[i]`,
	`tile i 64 4, j 16
parallel i; for amd64 { vectorize j 8 } for arm64 { unroll k 4; pack Z }`,
}

// inKernel puts a fuzz input on the right of an assignment in a kernel with inputs of several types, so
// that the fuzzer explores expressions without having to invent the declarations.
func inKernel(expr string) string {
	return "kernel f(X: f32[N], Z: f32[N, N], s: f32, I: i32[N], H: f16[N], Y: inout f32[N]) {\n    Y[i] = " +
		expr + "\n}\n"
}

// inSchedule puts a fuzz input in a schedule of a contraction and an elementwise statement.
func inSchedule(dirs string) string {
	return "kernel f(Z: f32[M, K], W: f32[K, N], X: f32[M, N], Y: out f32[M, N], T: out f32[M, N]) {\n" +
		"    Y[i, j] = sum(k: Z[i, k] * W[k, j])\n    T[i, j] = X[i, j] * 2\n}\nschedule f {\n" + dirs + "\n}\n"
}

// FuzzParseCheck: parsing and checking never panic and report positioned errors in order; a file that
// checks prints to canonical source that parses and checks to the same IR, and printing is idempotent.
func FuzzParseCheck(f *testing.F) {
	example, err := os.ReadFile("testdata/example.kdsl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(example))
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		roundTrip(t, in)
		roundTrip(t, inKernel(in))
		roundTrip(t, inSchedule(in))
	})
}

func roundTrip(t *testing.T, src string) {
	t.Helper()
	file, err := parse.Parse("f.kd", src)
	if err != nil {
		checkErrors(t, src, err, 1)
		return
	}
	kernels, cerr := check.Check(file, src)
	if cerr != nil {
		checkErrors(t, src, cerr, 0)
	}
	for _, k := range kernels {
		if err := ir.VerifyKernel(k); err != nil {
			t.Fatalf("checked kernel does not verify: %v\n%s", err, src)
		}
	}

	printed := parse.Print(file)
	file2, err := parse.Parse("f.kd", printed)
	if err != nil {
		if cerr == nil {
			t.Fatalf("printed form does not parse: %v\nsource:\n%s\nprinted:\n%s", err, src, printed)
		}
		return // some files that do not check (e.g. calls with dozens of arguments) do not round-trip
	}
	if again := parse.Print(file2); again != printed {
		t.Fatalf("Print is not idempotent:\n%s\nthen\n%s", printed, again)
	}
	if cerr != nil {
		return
	}
	kernels2, err := check.Check(file2, printed)
	if err != nil {
		t.Fatalf("printed form does not check: %v\nsource:\n%s\nprinted:\n%s", err, src, printed)
	}
	if len(kernels2) != len(kernels) {
		t.Fatalf("%d kernels, then %d", len(kernels), len(kernels2))
	}
	for i := range kernels {
		if a, b := kernels[i].String(), kernels2[i].String(); a != b {
			t.Fatalf("IR changed by printing:\n%s\nthen\n%s\nprinted:\n%s", a, b, printed)
		}
	}
}

// checkErrors checks that err is a non-empty parse.ErrorList in position order with usable positions
// (exactly want errors, when want > 0), and that formatting it does not fail.
func checkErrors(t *testing.T, src string, err error, want int) {
	t.Helper()
	var list parse.ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		t.Fatalf("error %v (%T) is not a parse.ErrorList", err, err)
	}
	if want > 0 && len(list) != want {
		t.Fatalf("%d errors, want %d: %v", len(list), want, err)
	}
	for i, e := range list {
		if e.Pos.Filename != "f.kd" || e.Pos.Line < 1 || e.Pos.Column < 1 || e.Msg == "" {
			t.Fatalf("bad error %q at %+v", e.Msg, e.Pos)
		}
		if i > 0 {
			p := list[i-1].Pos
			if p.Line > e.Pos.Line || (p.Line == e.Pos.Line && p.Column > e.Pos.Column) {
				t.Fatalf("errors out of order:\n%v", err)
			}
		}
	}
	if out := parse.Format(err, src); !strings.HasPrefix(out, list[0].Error()) {
		t.Fatalf("Format output %q", out)
	}
}
