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
	participle.UseLookahead(64),
)

// Pos is a source position (1-based line and column).
type Pos = lexer.Position

// Error is one diagnostic at a source position.
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.Pos.Filename, e.Pos.Line, e.Pos.Column, e.Msg)
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
			line := strings.TrimRight(lines[e.Pos.Line-1], "\r")
			b.WriteString("\t" + line + "\n\t")
			col := e.Pos.Column - 1
			for i := 0; i < col && i < len(line); i++ {
				if line[i] == '\t' {
					b.WriteByte('\t')
				} else {
					b.WriteByte(' ')
				}
			}
			b.WriteString("^\n")
		}
	}
	return b.String()
}

// Parse reads one kdsl file. On a syntax error it returns an ErrorList with the position of the first
// token it could not use and what it expected there.
func Parse(filename, src string) (*File, error) {
	f, err := parser.ParseString(filename, src)
	if err != nil {
		var perr participle.Error
		if errors.As(err, &perr) {
			pos := perr.Position()
			if pos.Filename == "" {
				pos.Filename = filename
			}
			if pos.Line == 0 {
				pos.Line, pos.Column = 1, 1
			}
			return nil, ErrorList{{Pos: pos, Msg: "syntax error: " + perr.Message()}}
		}
		return nil, ErrorList{{Pos: Pos{Filename: filename, Line: 1, Column: 1}, Msg: err.Error()}}
	}
	return f, nil
}
