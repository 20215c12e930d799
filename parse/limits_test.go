package parse

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

func oneError(t *testing.T, src string) *Error {
	t.Helper()
	_, err := Parse("t.kd", src)
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 1 {
		t.Fatalf("got %v, want one error", err)
	}
	return list[0]
}

func at(e *Error) string { return fmt.Sprintf("%d:%d", e.Pos.Line, e.Pos.Column) }

// Issue 10, item 10: deep nesting ends in a positioned error, not a stack overflow, and the source
// size is bounded.
func TestNestingLimit(t *testing.T) {
	const deep = 200000
	for _, tc := range []struct{ name, expr, pos, msg string }{
		{"parentheses", strings.Repeat("(", deep) + "1" + strings.Repeat(")", deep), "2:267", "brackets nested more than 256 deep"},
		{"unary minus", strings.Repeat("-", 60000) + "1", "2:268", "expression nested more than 256 deep"},
		{"calls", strings.Repeat("exp(", deep) + "1" + strings.Repeat(")", deep), "2:1035", "brackets nested more than 256 deep"},
		{"indices", strings.Repeat("X[", deep) + "1" + strings.Repeat("]", deep), "2:523", "brackets nested more than 256 deep"},
		{"minus and parentheses", strings.Repeat("-(", deep) + "1" + strings.Repeat(")", deep), "2:", "nested more than 256 deep"},
	} {
		src := "kernel f(X: f32[N], Y: out f32[N]) {\n    Y[i] = " + tc.expr + "\n}\n"
		e := oneError(t, src)
		if !strings.HasPrefix(at(e), tc.pos) || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%s: got %s: %s, want %s: %s", tc.name, at(e), e.Msg, tc.pos, tc.msg)
		}
	}
	// Nesting up to the limit parses.
	ok := "kernel f(X: f32[N], Y: out f32[N]) {\n    Y[i] = " + strings.Repeat("(", 200) + "X[i]" + strings.Repeat(")", 200) + "\n}\n"
	if _, err := Parse("t.kd", ok); err != nil {
		t.Errorf("200 levels: %v", err)
	}
}

func TestSourceLimits(t *testing.T) {
	big := strings.Repeat(" ", MaxSource+1)
	e := oneError(t, big)
	if at(e) != "1:1" || !strings.Contains(e.Msg, "limited to 16777216 (16 MiB)") {
		t.Errorf("got %s: %s", at(e), e.Msg)
	}
	many := "kernel f(Y: out f32[N]) {\n    Y[i] = " + strings.Repeat("1+", MaxTokens/2+1) + "1\n}\n"
	e = oneError(t, many)
	if !strings.Contains(e.Msg, "more than 65536 tokens") {
		t.Errorf("got %s: %s", at(e), e.Msg)
	}
}

// The memory the parser takes for the largest file it accepts stays bounded.
func TestParserMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates")
	}
	src := "kernel f(Y: out f32[N]) {\n    Y[i] = " + strings.Repeat("1+", MaxTokens/2-20) + "1\n}\n"
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := Parse("t.kd", src); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 512<<20 {
		t.Errorf("parsing %d tokens allocated %d MiB", MaxTokens, got>>20)
	} else {
		t.Logf("parsing %d tokens allocated %d MiB", MaxTokens, got>>20)
	}
}

// Issue 10, item 11: names are limited, with a positioned error that does not echo the name.
func TestNameLimit(t *testing.T) {
	long := strings.Repeat("k", 1<<20)
	for _, tc := range []struct{ src, pos string }{
		{"kernel " + long + "(Y: out f32[N]) {\n    Y[i] = 1\n}\n", "1:8"},
		{"kernel f(Y: out f32[N]) {\n    Y[i] = X" + long + "\n}\n", "2:12"},
		{"kernel f(Y: out f32[N]) {\n    Y[i] = 1" + strings.Repeat("0", 1000) + "\n}\n", "2:12"},
	} {
		e := oneError(t, tc.src)
		if at(e) != tc.pos || !strings.Contains(e.Msg, "names and numbers are limited to 128") {
			t.Errorf("got %s: %s, want %s", at(e), e.Msg, tc.pos)
		}
		if len(e.Error()) > 300 {
			t.Errorf("message of %d bytes", len(e.Error()))
		}
		if out := Format(ErrorList{e}, tc.src); len(out) > 600 {
			t.Errorf("formatted message of %d bytes:\n%s", len(out), out)
		}
	}
	ok := "kernel " + strings.Repeat("k", MaxName) + "(Y: out f32[N]) {\n    Y[i] = 1\n}\n"
	if _, err := Parse("t.kd", ok); err != nil {
		t.Errorf("a name of %d bytes: %v", MaxName, err)
	}
}

// Issue 10, item 12: no raw control bytes or invalid UTF-8 reach the terminal, and the caret stays
// under the error.
func TestEscapedSource(t *testing.T) {
	for _, tc := range []struct{ name, line, pos, shown, caret string }{
		// Errors at the byte itself (only a comment could hide such bytes before a token).
		{"escape sequence", "    Y[i] = \x1b[31mX", "2:12", `    Y[i] = \x1b[31mX`, "           ^"},
		{"NUL", "    Y[i] = 1 + \x00", "2:16", `    Y[i] = 1 + \x00`, "               ^"},
		{"invalid UTF-8", "  \xff\xfe  Y[i] = 1", "2:3", `  \xff\xfe  Y[i] = 1`, "  ^"},
		{"bell", "\tY[i] = 1\a\b 2", "2:10", "\tY[i] = 1\\a\\b 2", "\t        ^"},
		{"unicode", "    Y[i] = é", "2:12", "    Y[i] = é", "           ^"},
		// A later error on a line with such bytes in a comment.
		{"comment after", "    Y[i] = 1 + // \x1b]0;title\a \xff", "3:1", "}", "^"},
	} {
		src := "kernel f(Y: out f32[N]) {\n" + tc.line + "\n}\n"
		_, err := Parse("t\x1b.kd", src)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		out := Format(err, src)
		assertPrintable(t, tc.name, out)
		lines := strings.Split(out, "\n")
		if !strings.HasPrefix(lines[0], `t\x1b.kd:`+tc.pos+":") || len(lines) < 3 || lines[1] != "\t"+tc.shown || lines[2] != "\t"+tc.caret {
			t.Errorf("%s: got\n%s\nwant t\\x1b.kd:%s:\n\t%s\n\t%s", tc.name, out, tc.pos, tc.shown, tc.caret)
		}
	}
	// Format with errors anywhere on such lines (as the checker reports them): the caret counts an
	// escaped rune as the width of its escape.
	src := "a\x1b[2Jb\xffc\té\x00d\n"
	for _, tc := range []struct {
		col   int
		caret string
	}{{1, "^"}, {2, " ^"}, {3, "     ^"}, {7, "         ^"}, {8, "             ^"}, {9, "              ^"}, {10, "              \t^"}, {11, "              \t ^"}, {12, "              \t     ^"}} {
		out := Format(ErrorList{{Pos: Pos{Filename: "f", Line: 1, Column: tc.col}, Msg: "m"}}, src)
		assertPrintable(t, "Format", out)
		lines := strings.Split(out, "\n")
		if want := "\t" + `a\x1b[2Jb\xffc` + "\t" + `é\x00d`; lines[1] != want || lines[2] != "\t"+tc.caret {
			t.Errorf("column %d: got\n%s\nwant\n%s\n\t%s", tc.col, out, want, tc.caret)
		}
	}
}

func assertPrintable(t *testing.T, name, out string) {
	t.Helper()
	for i := 0; i < len(out); {
		r, n := utf8.DecodeRuneInString(out[i:])
		if r == utf8.RuneError && n == 1 || r < 0x20 && r != '\n' && r != '\t' || r == 0x7f {
			t.Errorf("%s: raw byte %q in\n%s", name, out[i:i+n], out)
			return
		}
		i += n
	}
}

// A long line is shown as a window around the caret.
func TestLongLineWindow(t *testing.T) {
	src := "kernel f(Y: out f32[N]) {\n    Y[i] = " + strings.Repeat("1 + ", 500) + "@\n}\n"
	_, err := Parse("t.kd", src)
	out := Format(err, src)
	lines := strings.Split(out, "\n")
	if len(lines) < 3 || len(lines[1]) > 130 || !strings.HasPrefix(lines[1], "\t...") || !strings.HasSuffix(lines[1], "@") {
		t.Fatalf("got\n%s", out)
	}
	if c := strings.Index(lines[2], "^"); lines[1][c] != '@' {
		t.Errorf("caret under %q:\n%s", lines[1][c], out)
	}
}
