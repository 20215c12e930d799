package parse

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text from a source file reaches messages only through these functions: they escape what a terminal
// would interpret (control characters, escape sequences, invalid UTF-8) and bound the length.

// escapeRune is how r (or, when invalid, the byte b) appears in a message: itself when printable, else
// a Go escape such as \x1b, \x00, \u200b or \xff.
func escapeRune(r rune, b byte, invalid bool) string {
	switch {
	case invalid:
		return `\x` + strconv.FormatUint(uint64(b)|0x100, 16)[1:]
	case r == ' ' || unicode.IsPrint(r):
		return string(r)
	}
	q := strconv.QuoteRuneToASCII(r)
	return q[1 : len(q)-1]
}

// Printable escapes the non-printable runes and invalid bytes of s; printable text, quotes and
// backslashes stay as they are.
func Printable(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		b.WriteString(escapeRune(r, s[i], r == utf8.RuneError && n == 1))
		i += n
	}
	return b.String()
}

// Quote quotes source text for a message: Go-escaped, at most 40 bytes of it (longer text is cut and
// its length given).
func Quote(s string) string {
	const max = 40
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

// clipMessage bounds a whole message.
func clipMessage(s string) string {
	const max = 400
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// sourceLine renders one source line for an error, escaped and cut to a window around column col
// (1-based, in runes, as positions count), with the caret line under it. Tabs stay tabs so that the
// caret lines up.
func sourceLine(line string, col int) (text, caret string) {
	var pieces []string
	for i := 0; i < len(line); {
		r, n := utf8.DecodeRuneInString(line[i:])
		if r == '\t' {
			pieces = append(pieces, "\t")
		} else {
			pieces = append(pieces, escapeRune(r, line[i], r == utf8.RuneError && n == 1))
		}
		i += n
	}
	const width = 120 // runes of the line shown around the caret
	c := max(0, col-1)
	start, end := 0, len(pieces)
	if end > width {
		start = max(0, min(c-width/2, end-width))
		end = min(end, start+width)
	}
	var t, p strings.Builder
	if start > 0 {
		t.WriteString("...")
		p.WriteString("   ")
	}
	for i := start; i < end; i++ {
		t.WriteString(pieces[i])
		if i < c {
			if pieces[i] == "\t" {
				p.WriteByte('\t')
			} else {
				p.WriteString(strings.Repeat(" ", utf8.RuneCountInString(pieces[i])))
			}
		}
	}
	if end < len(pieces) {
		t.WriteString("...")
	}
	p.WriteByte('^')
	return t.String(), p.String()
}
