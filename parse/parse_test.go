package parse

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

const examplePrinted = `kernel sgemm(A: f32[M, K], B: f32[K, N], C: inout f32[M, N], alpha: f32, beta: f32) {
    C[i, j] = alpha * sum(k: A[i, k] * B[k, j]) + beta * C[i, j]
}

kernel softmax(X: f32[M, N], Y: out f32[M, N]) {
    let m[i] = max(j: X[i, j])
    Y[i, j] = exp(X[i, j] - m[i])
    let s[i] = sum(j: Y[i, j])
    Y[i, j] = Y[i, j] / s[i]
}

schedule sgemm {
    tile i 96 6, j 4096 16, k 256
    parallel i
    for amd64 {
        vectorize j
    }
}
`

func mustParse(t *testing.T, src string) *File {
	t.Helper()
	f, err := Parse("t.kd", src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return f
}

func TestParseExample(t *testing.T) {
	f := mustParse(t, example)
	if len(f.Decls) != 3 || f.Decls[0].Kernel == nil || f.Decls[1].Kernel == nil || f.Decls[2].Schedule == nil {
		t.Fatalf("want kernel, kernel, schedule; got %d decls", len(f.Decls))
	}
	k := f.Decls[0].Kernel
	if k.Name != "sgemm" || len(k.Params) != 5 || len(k.Body) != 1 {
		t.Fatalf("sgemm: name %q, %d params, %d stmts", k.Name, len(k.Params), len(k.Body))
	}
	if p := k.Params[2]; p.Name != "C" || p.Mode != "inout" || p.Type != "f32" || len(p.Shape.Dims) != 2 {
		t.Errorf("param C parsed as %+v", p)
	}
	if p := k.Params[3]; p.Shape != nil || p.Mode != "" {
		t.Errorf("scalar alpha parsed with shape %v, mode %q", p.Shape, p.Mode)
	}
	if pos := k.Body[0].Pos; pos.Line != 2 || pos.Column != 5 || pos.Filename != "t.kd" {
		t.Errorf("statement position %v, want t.kd:2:5", pos)
	}
	s := f.Decls[2].Schedule
	if len(s.Directives) != 2 || len(s.Targets) != 1 || s.Targets[0].Target != "amd64" {
		t.Fatalf("schedule parsed as %d directives, %d targets", len(s.Directives), len(s.Targets))
	}
	if d := s.Directives[0]; d.Name != "tile" || len(d.Args) != 3 || fmt.Sprint(d.Args[0].Sizes) != "[96 6]" || fmt.Sprint(d.Args[2].Sizes) != "[256]" {
		t.Errorf("tile parsed as %+v", d)
	}
	// Reductions and calls share a prefix; `max(j: ...)` is a reduction, `max(a, b)` a call.
	sm := f.Decls[1].Kernel
	if r := sm.Body[0].Value.Left.Left.Left.Primary.Reduce; r == nil || r.Op != "max" || r.Vars[0].Name != "j" {
		t.Errorf("max(j: ...) not parsed as a reduction")
	}
	if c := sm.Body[1].Value.Left.Left.Left.Primary.Call; c == nil || c.Func != "exp" || len(c.Args) != 1 {
		t.Errorf("exp(...) not parsed as a call")
	}
}

func TestParseEmpty(t *testing.T) {
	for _, src := range []string{"", "  \n\t", "// only a comment\n"} {
		f := mustParse(t, src)
		if len(f.Decls) != 0 {
			t.Errorf("%q: %d decls", src, len(f.Decls))
		}
		if got := Print(f); got != "" {
			t.Errorf("Print(%q) = %q, want empty", src, got)
		}
	}
}

// TestSyntaxErrors: syntax errors speak kdsl, not the grammar's internals, and point where the user
// must look (issue 10, item 9).
func TestSyntaxErrors(t *testing.T) {
	for _, tc := range []struct {
		src, pos, msg string
	}{
		// Brackets.
		{"kernel f(A: out f32[N]) {\n    A[i] = (a + b\n}", "3:1", `unclosed "(" opened at 2:12: expected ")" before "}"`},
		{"kernel f(A: out f32[N]) {\n    A[i] = max(a, b]\n}", "2:20", `unclosed "(" opened at 2:15: expected ")" before "]"`},
		{"kernel f(A: out f32[N]) {\n    A[i] = X[i, j\n}", "3:1", `unclosed "[" opened at 2:13: expected "]" before "}"`},
		{"kernel f(A: out f32[N]) {\n    A[i] = a)\n}", "2:13", `")" closes nothing: no "(" is open here`},
		{"kernel f(A: out f32[N]) {\n    A[i] = 1\n", "1:25", `unclosed "{": no matching "}" before the end of the file`},
		{"kernel f(A: f32[N] {\n}", "1:20", `expected "," or ")" after parameter A, found "{"`},
		// Operands and operators.
		{"kernel f(A: f32[N]) {\n    A[i] = \n}", "3:1", `expected an expression after "=", found "}"`},
		{"kernel f(A: out f32[N]) {\n    A[i] = a + * b\n}", "2:16", `missing operand after "+", found "*"`},
		{"kernel f(A: out f32[N]) {\n    A[i] = a *\n}", "3:1", `missing operand after "*", found "}"`},
		{"kernel f(A: out f32[N]) {\n    A[i] = exp()\n    A[i] = max(a, )\n}", "3:19", `expected an expression after ",", found ")"`},
		{"kernel f(A: out f32[N]) {\n    A[i] = a b\n}", "2:14", `missing an operator before name "b"`},
		{"kernel f(A: out f32[N]) {\n    A[i] = a < b < c\n}", "2:18", `comparisons do not chain: parenthesise one, (a < b) == c`},
		{"kernel f(A: out f32[N]) {\n    A[i] = X[i][j]\n}", "2:16", `expected one index list: write X[i, j], not X[i][j], found "["`},
		{"kernel f(A: out f32[N]) {\n    A[i] = X[i j]\n}", "2:16", `expected "," or "]" in the indices of X, found name "j"`},
		// Statements.
		{"kernel f(A: out f32[N]) {\n    A[i] * 2\n}", "2:10", `expected "=" or "+=" after A[...], found "*"`},
		{"kernel f(A: out f32[N]) {\n    A[i] = 1 ;;\n}", "2:15", `expected a statement (out[i, j] = expr) or "}", found ";"`},
		{"kernel f(A: out f32[N]) {\n    let = 1\n}", "2:9", `expected a temporary's name after "let", found "="`},
		{"kernel f(A: out f32[N]) {\n    A[i] = 1\n    @\n}", "3:5", `unexpected character "@"`},
		// Reductions.
		{"kernel f(A: out f32[N]) {\n    A[i] = sum(k X[i, k])\n}", "2:18", `expected ":" after the indices of sum (sum(k: expr)), found name "X"`},
		{"kernel f(A: out f32[N]) {\n    A[i] = sum(k < : X[i, k])\n}", "2:20", `missing operand after "<", found ":"`},
		// Declarations.
		{"kernel", "1:7", `expected a kernel name after "kernel", found the end of the file`},
		{"x", "1:1", `expected "kernel" or "schedule" at the top level, found name "x"`},
		{"kernel f(x: in) {}", "1:15", `expected a type (f64, f32, f16, bf16, i32, i8) for parameter x, found ")"`},
		{"kernel f(x f32[N]) {}", "1:12", `expected ":" after the parameter name x (name: type[dims]), found name "f32"`},
		{"kernel f(x: [N]) {}", "1:13", `expected a type (f64, f32, f16, bf16, i32, i8) for parameter x, found "["`},
		{"kernel f(x: f32[N M]) {}", "1:19", `expected "," or "]" between the dims of x, found name "M"`},
		{"kernel f(x: f32[N]) where N = M {}", "1:29", `expected "==" in the where clause (where N == K), found "="`},
		{"kernel f(A: out f32[N]) {\n    A[i] = 1\n}\n\nkernel", "5:7", `expected a kernel name after "kernel", found the end of the file`},
		// Schedules.
		{"schedule s {\n    tile i -3\n}", "2:12", `expected a positive size, found "-"`},
		{"schedule s {\n    for amd64 { tile i 4 }\n    parallel i\n}", "3:5", `directive parallel after a for block: plain directives come before the for blocks`},
		{"schedule s {\n    fuse i\n}", "2:5", `expected "}" to close the schedule (or a directive: tile, reorder, vectorize, unroll, parallel, pack, nopack, precision, or "for target {"), found name "fuse"`},
		{"schedule s {\n    tile i 99999999999999999999999\n}", "2:12", `size "99999999999999999999999" is too large`},
	} {
		_, err := Parse("t.kd", tc.src)
		var list ErrorList
		if !errors.As(err, &list) || len(list) != 1 {
			t.Errorf("Parse(%q): got %v (%T), want one error", tc.src, err, err)
			continue
		}
		e := list[0]
		if got := fmt.Sprintf("%d:%d", e.Pos.Line, e.Pos.Column); got != tc.pos || e.Pos.Filename != "t.kd" {
			t.Errorf("Parse(%q): error at %s:%s, want t.kd:%s (%v)", tc.src, e.Pos.Filename, got, tc.pos, e)
		}
		if e.Msg != "syntax error: "+tc.msg && !strings.HasPrefix(e.Msg, "syntax error: "+tc.msg+":") {
			t.Errorf("Parse(%q): message\n%q, want\n%q", tc.src, e.Msg, "syntax error: "+tc.msg)
		}
		for _, internal := range []string{"Expr", "Product", "Unary", "(expected", "<EOF>", "lexer:", "invalid input text"} {
			if strings.Contains(e.Msg, internal) {
				t.Errorf("Parse(%q): message %q shows parser internals (%s)", tc.src, e.Msg, internal)
			}
		}
	}
}

func TestFormatCaret(t *testing.T) {
	src := "kernel f(A: out f32[N]) {\n    A[i] = a + * b\n}\n"
	_, err := Parse("t.kd", src)
	if err == nil {
		t.Fatal("no error")
	}
	want := "t.kd:2:16: syntax error: missing operand after \"+\", found \"*\"\n" +
		"\t    A[i] = a + * b\n" +
		"\t               ^\n"
	if got := Format(err, src); got != want {
		t.Errorf("Format:\n%s\nwant:\n%s", got, want)
	}

	// Tabs in the source line are kept in the caret line so the caret lines up; CR is dropped; a
	// position past the last line prints no source line; a non-kdsl error prints as itself.
	list := ErrorList{
		{Pos: Pos{Filename: "x.kd", Line: 1, Column: 3}, Msg: "first"},
		{Pos: Pos{Filename: "x.kd", Line: 2, Column: 4}, Msg: "second"},
		{Pos: Pos{Filename: "x.kd", Line: 9, Column: 1}, Msg: "beyond"},
	}
	src = "\tab\r\n\tcde\n"
	want = "x.kd:1:3: first\n\t\tab\n\t\t ^\n" +
		"x.kd:2:4: second\n\t\tcde\n\t\t  ^\n" +
		"x.kd:9:1: beyond\n"
	if got := Format(list, src); got != want {
		t.Errorf("Format(list):\n%q\nwant:\n%q", got, want)
	}
	one := &Error{Pos: Pos{Filename: "x.kd", Line: 2, Column: 2}, Msg: "single"}
	if got, want := Format(fmt.Errorf("wrapped: %w", one), src), "x.kd:2:2: single\n\t\tcde\n\t\t^\n"; got != want {
		t.Errorf("Format(*Error) = %q, want %q", got, want)
	}
	if got := Format(errors.New("plain"), src); got != "plain" {
		t.Errorf("Format(plain) = %q", got)
	}
}

func TestPrintExample(t *testing.T) {
	got := Print(mustParse(t, example))
	if got != examplePrinted {
		t.Errorf("Print(example):\n%s\nwant:\n%s", got, examplePrinted)
	}
	if again := Print(mustParse(t, got)); again != got {
		t.Errorf("Print is not idempotent:\n%s\nthen\n%s", got, again)
	}
}

// TestPrintExpr checks the parenthesisation: the printed form drops the parentheses the grammar makes
// redundant and keeps the ones that change the tree.
func TestPrintExpr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a + b * c", "a + b * c"},
		{"(a + b) * c", "(a + b) * c"},
		{"a * (b + c)", "a * (b + c)"},
		{"(a * b) + c", "a * b + c"},
		{"((a))", "a"},
		{"(a + b) + c", "a + b + c"},
		{"a + (b + c)", "a + (b + c)"},
		{"a - (b - c)", "a - (b - c)"},
		{"(a - b) - c", "a - b - c"},
		{"a - (b + c)", "a - (b + c)"},
		{"a / (b * c)", "a / (b * c)"},
		{"(a / b) * c", "a / b * c"},
		{"a * (b / c)", "a * (b / c)"},
		{"-a * b", "-a * b"},
		{"(-a) * b", "-a * b"},
		{"-(a * b)", "-(a * b)"},
		{"-(a)", "-a"},
		{"-(-a)", "--a"},
		{"- - a", "--a"},
		{"a - -1", "a - -1"},
		{"a*-b", "a * -b"},
		{"-(a + b) * c", "-(a + b) * c"},
		{"a < b", "a < b"},
		{"(a < b)", "a < b"},
		{"(a<=b) == (c>=d)", "(a <= b) == (c >= d)"},
		{"(a < b) != c", "(a < b) != c"},
		{"a > (b != c)", "a > (b != c)"},
		{"a + b < c * d", "a + b < c * d"},
		{"(a + b) < (c - d)", "a + b < c - d"},
		{"(a < b) + 1", "(a < b) + 1"},
		{"1 + (a < b)", "1 + (a < b)"},
		{"1.50", "1.50"},
		{"1e3 + 2.E-4 + 0.5 + 7 + 1.", "1e3 + 2.E-4 + 0.5 + 7 + 1."},
		{"f(  (a),b ,( c+d ) )", "f(a, b, c + d)"},
		{"g()", "g()"},
		{"sum( k , l : (A[i,k]) *B[k , l])", "sum(k, l: A[i, k] * B[k, l])"},
		{"max(j: (X[i, j] < 0))", "max(j: X[i, j] < 0)"},
		{"X[(i), k + 1, 2*i, -(j - 1), (k+1)*2]", "X[i, k + 1, 2 * i, -(j - 1), (k + 1) * 2]"},
		{"E[]", "E[]"},
		{"select(a < b, (c), -d)", "select(a < b, c, -d)"},
		{"a - (b - (c - (d - e)))", "a - (b - (c - (d - e)))"},
		{"((((a - b) - c) - d) - e)", "a - b - c - d - e"},
	} {
		src := "kernel f() {\n    x = " + tc.in + "\n}\n"
		want := "kernel f() {\n    x = " + tc.want + "\n}\n"
		got := Print(mustParse(t, src))
		if got != want {
			t.Errorf("%s: printed\n%s\nwant\n%s", tc.in, got, want)
			continue
		}
		if again := Print(mustParse(t, got)); again != got {
			t.Errorf("%s: not idempotent: %q then %q", tc.in, got, again)
		}
	}
}

func TestPrintLayout(t *testing.T) {
	src := `// header comment
kernel  f ( A : f32 [ M,K ] , s : in f32, Z: out f32[], W: inout bf16[M], ) { let t[i] = A[i, 0];Z = 1 ; W[i,j] += t[i] }
kernel e() {}
schedule f { tile i 4; reorder i, j ; vectorize j 8 for go {} for amd64 { unroll k 4; parallel i } }
schedule e { nopack A;
  unroll;
  precision f64 }
`
	want := `kernel f(A: f32[M, K], s: in f32, Z: out f32[], W: inout bf16[M]) {
    let t[i] = A[i, 0]
    Z = 1
    W[i, j] += t[i]
}

kernel e() {
}

schedule f {
    tile i 4
    reorder i, j
    vectorize j 8
    for go {
    }
    for amd64 {
        unroll k 4
        parallel i
    }
}

schedule e {
    nopack A
    unroll;
    precision f64
}
`
	got := Print(mustParse(t, src))
	if got != want {
		t.Errorf("Print:\n%s\nwant:\n%s", got, want)
	}
	f2 := mustParse(t, got)
	if again := Print(f2); again != got {
		t.Errorf("not idempotent:\n%s\nthen\n%s", got, again)
	}
	// The argument-less directive stays argument-less after the round trip.
	if d := f2.Decls[3].Schedule.Directives; len(d) != 3 || d[1].Name != "unroll" || len(d[1].Args) != 0 || d[2].Name != "precision" {
		t.Errorf("directives after round trip: %v", d)
	}
}

// example is the shared test kernel file (also used by check's tests and the fuzz seeds).
var example = func() string {
	b, err := os.ReadFile("testdata/example.kdsl")
	if err != nil {
		panic(err)
	}
	return string(b)
}()
