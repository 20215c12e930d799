package parse

import (
	"errors"
	"fmt"
	"strings"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

var parser = participle.MustBuild[File](
	participle.Lexer(kdslLexer),
	participle.Elide("Comment", "Whitespace"),
	participle.UseLookahead(MaxTokens), // the recognizer has checked the syntax: backtracking only chooses between a reduction and a call
)

// Pos is a source position (1-based line and column).
type Pos = lexer.Position

// Error is one diagnostic at a source position.
type Error struct {
	Pos Pos
	Msg string
}

// Error prints "file:line:col: message", with non-printable text escaped and the message bounded.
func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", Printable(clipMessage(e.Pos.Filename)), e.Pos.Line, e.Pos.Column, Printable(clipMessage(e.Msg)))
}

// ErrorList is every diagnostic found in one file, in source order.
type ErrorList []*Error

func (l ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Format renders the diagnostics with the offending source line and a caret under the column.
func Format(err error, src string) string {
	var list ErrorList
	var one *Error
	switch {
	case errors.As(err, &list):
	case errors.As(err, &one):
		list = ErrorList{one}
	default:
		return err.Error()
	}
	lines := strings.Split(src, "\n")
	var b strings.Builder
	for _, e := range list {
		b.WriteString(e.Error())
		b.WriteByte('\n')
		if e.Pos.Line >= 1 && e.Pos.Line <= len(lines) {
			text, caret := sourceLine(strings.TrimRight(lines[e.Pos.Line-1], "\r"), e.Pos.Column)
			b.WriteString("\t" + text + "\n\t" + caret + "\n")
		}
	}
	return b.String()
}

// Parse reads one kdsl file. On a syntax error it returns an ErrorList with the position of the first
// token it could not use and what it expected there.
//
// Syntax is checked first by a scan and a recognizer of the same grammar (syntax.go), which speak kdsl
// in their messages and bound the input (MaxSource, MaxTokens, MaxDepth, MaxName); only then does the
// participle grammar build the tree.
func Parse(filename, src string) (*File, error) {
	if e := syntaxCheck(filename, src); e != nil {
		return nil, ErrorList{e}
	}
	f, err := parser.ParseString(filename, src)
	if err != nil {
		// The recognizer accepted what the grammar did not (the fuzzer looks for such inputs). Say
		// where, without the grammar's internals.
		pos := Pos{Filename: filename, Line: 1, Column: 1}
		msg := "syntax error: kgen's parser cannot read this"
		var perr participle.Error
		if errors.As(err, &perr) {
			if p := perr.Position(); p.Line > 0 {
				pos = p
				pos.Filename = filename
			}
		}
		var ut *participle.UnexpectedTokenError
		if errors.As(err, &ut) {
			msg = "syntax error: unexpected " + Quote(ut.Unexpected.Value)
		}
		return nil, ErrorList{{Pos: pos, Msg: msg}}
	}
	return f, nil
}
