package parse_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

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
	// Window reductions, where clauses and the syntax errors users make.
	`kernel p(I: f32[H, W], F: f32[R2], O: out f32[OH, OW]) where R2 == H {
    O[y, x] = max(r < 2, s < R2: I[2*y + r, 2*x + s]) + sum(t < 3: F[t])
}`,
	"kernel f(A: out f32[N]) {\n    A[i] = max(a, b]\n}",
	"kernel f(A: out f32[N]) {\n    A[i] = sum(k X[i, k])\n}",
	"kernel f(x f32[N]) where N = {}",
	// Hostile input: deep nesting, long names, binary.
	strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300),
	strings.Repeat("-", 300) + "X[i]",
	strings.Repeat("sum(k: ", 260) + "1" + strings.Repeat(")", 260),
	"kernel " + strings.Repeat("n", 200) + "(A: out f32[N]) {\n    A[i] = 1\n}",
	"X[i] + 1" + strings.Repeat("0", 200),
	"kernel f(A: out f32[N]) {\n    A[i] = \x1b[2J\x00\xff\xfe // \x07\n}",
	"\x00\x01\x02\xff\xfe\x80kernel\x00",
	// Structured inputs (see structured): op, size, bytes.
	"\x00\xff", "\x01\x90", "\x02\x60", "\x03\x50", "\x04\x10\x1b[31m\xff", "\x05\x58", "\x06\x30",
}

// structured turns fuzz bytes into source that reaches the parser's limits, which the mutator would
// rarely type: in[0] picks a shape, in[1] a size (up to 765, past MaxDepth, and past MaxName), the
// rest is spliced in.
func structured(in string) string {
	if len(in) < 2 {
		return in
	}
	op, n, rest := in[0]%7, int(in[1])*3, in[2:]
	wrap := func(open, close string) string {
		return strings.Repeat(open, n) + "X[i]" + rest + strings.Repeat(close, n)
	}
	switch op {
	case 0:
		return inKernel(wrap("(", ")"))
	case 1:
		return inKernel(strings.Repeat("-", n) + "X[i]" + rest)
	case 2:
		return inKernel(wrap("exp(", ")"))
	case 3:
		name := strings.Repeat("q", n/3+64)
		return "kernel " + name + "(" + name + ": f32[" + name + "], Y: out f32[N]) {\n    Y[" + name + "] = " + name + "[" + name + "]" + rest + "\n}\n"
	case 4:
		base := inKernel("X[i] + sum(k: Z[i, k])")
		at := n % len(base)
		return base[:at] + rest + base[at:]
	case 5:
		return inKernel(wrap("sum(k: ", ")"))
	}
	return inKernel(wrap("Z[i, ", "]"))
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
		roundTrip(t, structured(in))
	})
}

func roundTrip(t *testing.T, src string) {
	t.Helper()
	file, err := parse.Parse("f.kd", src)
	if err != nil {
		checkErrors(t, src, err, 1)
		// The syntax checks in front of the grammar reject nothing it accepts, but what is past a limit.
		msg := err.Error()
		limit := strings.Contains(msg, "nested more than") || strings.Contains(msg, "limited to") || strings.Contains(msg, "tokens")
		if !limit && parse.GrammarOnly(src) == nil {
			t.Fatalf("rejected what the grammar accepts: %v\n%q", err, src)
		}
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
	out := parse.Format(err, src)
	if !strings.HasPrefix(out, list[0].Error()) {
		t.Fatalf("Format output %q", out)
	}
	// Messages are printable (no control bytes, valid UTF-8), bounded, and speak kdsl.
	for i := 0; i < len(out); {
		r, n := utf8.DecodeRuneInString(out[i:])
		if r == utf8.RuneError && n == 1 || r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 {
			t.Fatalf("raw byte %q in message:\n%q", out[i:i+n], out)
		}
		i += n
	}
	if len(out) > 1500*len(list) {
		t.Fatalf("%d bytes of messages for %d errors", len(out), len(list))
	}
	for _, e := range list {
		if len(e.Error()) > 600 {
			t.Fatalf("message of %d bytes: %.200q", len(e.Error()), e.Error())
		}
		if strings.HasPrefix(e.Msg, "syntax error") && (strings.Contains(e.Msg, "(expected") || strings.Contains(e.Msg, "<EOF>") || strings.Contains(e.Msg, "lexer:")) {
			t.Fatalf("grammar internals in %q", e.Msg)
		}
	}
}
