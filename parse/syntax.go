package parse

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Syntax is checked in two steps before the participle grammar builds the tree: a scan of the tokens
// (sizes, brackets, nesting) and a recognizer that follows the grammar of ast.go by recursive descent.
// Both report errors in kdsl's terms at the place the user must look, and both bound what participle
// is given: its recursion (nesting depth), its memory (source size, token count) and the length of
// every token (names echo into messages and into generated file names).

// Limits on what Parse accepts.
const (
	MaxSource = 16 << 20 // bytes of source text
	MaxTokens = 1 << 16  // tokens (participle allocates a few KiB per token while it parses)
	MaxDepth  = 256      // nesting of brackets, calls, reductions and unary minus
	MaxName   = 128      // bytes of an identifier or a number
)

type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tInt
	tFloat
	tPunct
)

type token struct {
	kind tokKind
	text string
	pos  Pos
}

// describe names a token for a message: quoted (escaped, clipped), or "the end of the file".
func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "the end of the file"
	case tIdent:
		return "name " + Quote(t.text)
	case tInt, tFloat:
		return "number " + Quote(t.text)
	}
	return Quote(t.text)
}

// syntaxError is the error of the first syntax check that fails.
type syntaxError struct {
	pos Pos
	msg string
}

func fail(pos Pos, format string, a ...any) {
	panic(syntaxError{pos, "syntax error: " + fmt.Sprintf(format, a...)})
}

// scan splits src into tokens as kdslLexer does (comments and white space dropped), checking the
// limits, and matches brackets. A bracket error is returned, not raised, so that the recognizer can
// report an earlier error first; unclosed says whether it is a bracket left open at the end.
func scan(filename, src string) (toks []token, bracket *syntaxError, unclosed bool) {
	pos := Pos{Filename: filename, Line: 1, Column: 1}
	if len(src) > MaxSource {
		fail(pos, "the file has %d bytes; kdsl files are limited to %d (16 MiB)", len(src), MaxSource)
	}
	type open struct {
		tok   token
		close string
	}
	var stack []open
	advance := func(n int) {
		s := src[pos.Offset : pos.Offset+n]
		pos.Advance(s)
	}
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	isLetter := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }
	digits := func(i int) int {
		for i < len(src) && isDigit(src[i]) {
			i++
		}
		return i
	}
	for pos.Offset < len(src) {
		i := pos.Offset
		c := src[i]
		switch {
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			n := strings.IndexByte(src[i:], '\n')
			if n < 0 {
				n = len(src) - i
			}
			advance(n)
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			j := i
			for j < len(src) && (src[j] == ' ' || src[j] == '\t' || src[j] == '\r' || src[j] == '\n') {
				j++
			}
			advance(j - i)
			continue
		}
		t := token{pos: pos}
		j := i
		switch {
		case isDigit(c):
			j = digits(i)
			t.kind = tInt
			exp := func(k int) int { // [eE][-+]?[0-9]+ at k, or -1
				if k < len(src) && (src[k] == 'e' || src[k] == 'E') {
					k++
					if k < len(src) && (src[k] == '-' || src[k] == '+') {
						k++
					}
					if k < len(src) && isDigit(src[k]) {
						return digits(k)
					}
				}
				return -1
			}
			if j < len(src) && src[j] == '.' {
				j = digits(j + 1)
				if e := exp(j); e >= 0 {
					j = e
				}
				t.kind = tFloat
			} else if e := exp(j); e >= 0 {
				j = e
				t.kind = tFloat
			}
		case isLetter(c):
			for j < len(src) && (isLetter(src[j]) || isDigit(src[j])) {
				j++
			}
			t.kind = tIdent
		default:
			t.kind = tPunct
			if j+1 < len(src) && src[j+1] == '=' && strings.IndexByte("<>=!+", c) >= 0 {
				j += 2
			} else if strings.IndexByte("-+*/(){}[],:;<>=", c) >= 0 {
				j++
			} else {
				r, _ := utf8.DecodeRuneInString(src[i:])
				what := "character " + Quote(string(r))
				if r == utf8.RuneError {
					what = "byte " + Quote(src[i:i+1])
				}
				fail(pos, "unexpected %s: kdsl has names, numbers and the operators + - * / < <= > >= == != = +=", what)
			}
		}
		t.text = src[i:j]
		if t.kind != tPunct && len(t.text) > MaxName {
			what := "name"
			if t.kind != tIdent {
				what = "number"
			}
			fail(pos, "a %s of %d bytes (%s); names and numbers are limited to %d", what, len(t.text), Quote(t.text), MaxName)
		}
		switch t.text {
		case "(", "[", "{":
			if len(stack) >= MaxDepth {
				fail(pos, "brackets nested more than %d deep", MaxDepth)
			}
			stack = append(stack, open{t, map[string]string{"(": ")", "[": "]", "{": "}"}[t.text]})
		case ")", "]", "}":
			if bracket != nil {
				break
			}
			if len(stack) == 0 {
				bracket = &syntaxError{pos, "syntax error: " + Quote(t.text) + " closes nothing: no bracket is open here"}
				break
			}
			top := stack[len(stack)-1]
			// Inside braces only, a stray ")" or "]" is reported as such; inside an expression the
			// bracket left open is the likelier mistake.
			if top.close == "}" && t.text != "}" {
				bracket = &syntaxError{pos, "syntax error: " + Quote(t.text) + " closes nothing: no " + Quote(map[string]string{")": "(", "]": "[", "}": "{"}[t.text]) + " is open here"}
				break
			}
			if top.close != t.text {
				bracket = &syntaxError{pos, fmt.Sprintf("syntax error: unclosed %s opened at %d:%d: expected %s before %s", Quote(top.tok.text), top.tok.pos.Line, top.tok.pos.Column, Quote(top.close), Quote(t.text))}
				break
			}
			stack = stack[:len(stack)-1]
		}
		toks = append(toks, t)
		if len(toks) > MaxTokens {
			fail(pos, "the file has more than %d tokens", MaxTokens)
		}
		advance(j - i)
	}
	if len(stack) > 0 && bracket == nil {
		top := stack[len(stack)-1]
		bracket = &syntaxError{top.tok.pos, fmt.Sprintf("syntax error: unclosed %s: no matching %s before the end of the file", Quote(top.tok.text), Quote(top.close))}
		unclosed = true
	}
	return append(toks, token{kind: tEOF, pos: pos}), bracket, unclosed
}

// recognizer follows the grammar of ast.go over the tokens and stops at the first error.
type recognizer struct {
	toks  []token
	i     int
	depth int
}

func (r *recognizer) peek() token      { return r.toks[r.i] }
func (r *recognizer) at(k int) token   { return r.toks[min(r.i+k, len(r.toks)-1)] }
func (r *recognizer) is(s string) bool { t := r.peek(); return t.kind != tEOF && t.text == s }
func (r *recognizer) isIdent() bool    { return r.peek().kind == tIdent }

func (r *recognizer) next() token {
	t := r.toks[r.i]
	if t.kind != tEOF {
		r.i++
	}
	return t
}

// prev is the last token consumed.
func (r *recognizer) prev() token {
	if r.i == 0 {
		return token{kind: tEOF}
	}
	return r.toks[r.i-1]
}

func (r *recognizer) failHere(format string, a ...any) {
	t := r.peek()
	fail(t.pos, format+", found %s", append(a, t.describe())...)
}

func (r *recognizer) expect(s, context string) token {
	if !r.is(s) {
		r.failHere("expected %s %s", Quote(s), context)
	}
	return r.next()
}

func (r *recognizer) ident(what string) token {
	if !r.isIdent() {
		r.failHere("expected %s", what)
	}
	return r.next()
}

func (r *recognizer) enter() {
	r.depth++
	if r.depth > MaxDepth {
		fail(r.peek().pos, "expression nested more than %d deep", MaxDepth)
	}
}

func (r *recognizer) file() {
	for r.peek().kind != tEOF {
		switch {
		case r.is("kernel"):
			r.kernel()
		case r.is("schedule"):
			r.schedule()
		default:
			r.failHere(`expected "kernel" or "schedule" at the top level`)
		}
	}
}

func (r *recognizer) kernel() {
	r.next()
	name := r.ident(`a kernel name after "kernel"`)
	r.expect("(", "after the kernel name "+clipName(name.text)+" (its parameters)")
	for !r.is(")") {
		p := r.ident(`a parameter "name: type[dims]" or ")"`)
		r.expect(":", "after the parameter name "+clipName(p.text)+" (name: type[dims])")
		if r.is("in") || r.is("out") || r.is("inout") {
			r.next()
		}
		r.ident("a type (f64, f32, f16, bf16, i32, i8) for parameter " + clipName(p.text))
		if r.is("[") {
			r.next()
			for first := true; first && !r.is("]") || r.prev().text == ","; first = false {
				r.ident("a dim name in the shape of " + clipName(p.text))
				if !r.is("]") {
					r.expect(",", "or \"]\" between the dims of "+clipName(p.text))
				}
			}
			r.next()
		}
		if r.is(",") {
			r.next()
		} else if !r.is(")") {
			r.failHere(`expected "," or ")" after parameter %s`, clipName(p.text))
		}
	}
	r.next()
	if r.is("where") {
		r.next()
		for {
			r.ident(`a dim name in the where clause (where N == K)`)
			r.expect("==", "in the where clause (where N == K)")
			r.ident(`a dim name after "=="`)
			if !r.is(",") {
				break
			}
			r.next()
		}
	}
	r.expect("{", "to start the body of kernel "+clipName(name.text))
	for !r.is("}") {
		r.stmt()
		if r.is(";") {
			r.next()
		}
	}
	r.next()
}

func (r *recognizer) stmt() {
	let := r.is("let")
	if let {
		r.next()
	}
	ti := r.i
	what := `a statement (out[i, j] = expr) or "}"`
	if let {
		what = `a temporary's name after "let"`
	}
	target := r.ident(what)
	what = clipName(target.text)
	if r.is("[") {
		r.next()
		for first := true; first && !r.is("]") || r.prev().text == ","; first = false {
			r.ident("an index name on the left of =")
			if !r.is("]") {
				r.expect(",", `or "]" between the indices on the left of =`)
			}
		}
		r.next()
		what += "[...]"
	}
	if !r.is("=") && !r.is("+=") {
		if p := r.toks[max(ti-1, 0)]; !let && ti > 0 && target.pos.Line == p.pos.Line && (p.kind != tPunct || p.text == ")" || p.text == "]") {
			// `A[i] = a b`: the expression ended at a, and b was read as the next statement.
			fail(target.pos, "missing an operator before %s", target.describe())
		}
		r.failHere(`expected "=" or "+=" after %s`, what)
	}
	r.next()
	r.expr()
}

func (r *recognizer) expr() {
	r.enter()
	r.sum()
	if t := r.peek(); t.kind == tPunct && (t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">=" || t.text == "==" || t.text == "!=") {
		r.next()
		r.sum()
		if t := r.peek(); t.kind == tPunct && (t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">=" || t.text == "==" || t.text == "!=") {
			fail(t.pos, "comparisons do not chain: parenthesise one, (a < b) == c")
		}
	}
	r.depth--
}

func (r *recognizer) sum() {
	r.product()
	for r.is("+") || r.is("-") {
		r.next()
		r.product()
	}
}

func (r *recognizer) product() {
	r.unary()
	for r.is("*") || r.is("/") {
		r.next()
		r.unary()
	}
}

func (r *recognizer) unary() {
	n := 0
	for r.is("-") {
		r.next()
		n++
		r.enter()
	}
	r.primary()
	r.depth -= n
}

func (r *recognizer) primary() {
	t := r.peek()
	switch {
	case t.kind == tInt || t.kind == tFloat:
		r.next()
	case r.is("("):
		r.next()
		r.expr()
		r.expect(")", "to close the parenthesis")
	case t.kind == tIdent && r.at(1).text == "(" && r.at(1).kind == tPunct:
		r.next()
		r.next()
		if r.isReduce() {
			r.reduce(t)
			return
		}
		for first := true; first && !r.is(")") || r.prev().text == ","; first = false {
			r.expr()
			if r.is(",") {
				r.next()
			} else if !r.is(")") {
				if (t.text == "sum" || t.text == "max" || t.text == "min") && r.prev().kind == tIdent && r.at(-2).text == "(" {
					r.failHere(`expected ":" after the indices of %s (%s(k: expr))`, t.text, t.text)
				}
				r.failHere(`expected "," or ")" in the arguments of %s`, clipName(t.text))
			}
		}
		r.next()
	case t.kind == tIdent:
		r.next()
		if r.is("[") {
			r.next()
			for first := true; first && !r.is("]") || r.prev().text == ","; first = false {
				r.expr()
				if r.is(",") {
					r.next()
				} else if !r.is("]") {
					r.failHere(`expected "," or "]" in the indices of %s`, clipName(t.text))
				}
			}
			r.next()
			if r.is("[") {
				r.failHere(`expected one index list: write %s[i, j], not %s[i][j]`, clipName(t.text), clipName(t.text))
			}
		}
	default:
		p := r.prev()
		switch {
		case p.kind == tPunct && operators[p.text]:
			r.failHere("missing operand after %s", Quote(p.text))
		case p.kind == tPunct && (p.text == "=" || p.text == "+=" || p.text == "(" || p.text == "," || p.text == ":" || p.text == "["):
			r.failHere("expected an expression after %s", Quote(p.text))
		}
		r.failHere("expected an expression")
	}
}

// isReduce reports whether the tokens after `op(` are reduction indices: `k, l < 2, m < M:`.
func (r *recognizer) isReduce() bool {
	k := 0
	for {
		if r.at(k).kind != tIdent {
			return false
		}
		k++
		if r.at(k).kind == tPunct && r.at(k).text == "<" {
			if b := r.at(k + 1); b.kind != tIdent && b.kind != tInt {
				return false
			}
			k += 2
		}
		switch t := r.at(k); {
		case t.kind == tPunct && t.text == ":":
			return true
		case t.kind == tPunct && t.text == ",":
			k++
		default:
			return false
		}
	}
}

func (r *recognizer) reduce(op token) {
	for {
		r.next() // index name
		if r.is("<") {
			r.next()
			r.next() // bound (checked by isReduce)
		}
		if r.next().text == ":" {
			break
		}
	}
	r.expr()
	r.expect(")", "to close "+clipName(op.text)+"(...)")
}

var operators = map[string]bool{"+": true, "-": true, "*": true, "/": true, "<": true, "<=": true, ">": true, ">=": true, "==": true, "!=": true}

var directiveNames = map[string]bool{"tile": true, "reorder": true, "vectorize": true, "unroll": true, "parallel": true, "pack": true, "precision": true, "nopack": true}

func (r *recognizer) schedule() {
	r.next()
	name := r.ident(`a kernel name after "schedule"`)
	r.expect("{", "after schedule "+clipName(name.text))
	r.directives()
	for r.is("for") {
		r.next()
		r.ident(`a target (go, amd64, arm64, ...) after "for"`)
		r.expect("{", "to start the target block")
		r.directives()
		r.expect("}", "to close the target block (directives: tile, reorder, vectorize, unroll, parallel, pack, nopack, precision)")
		if r.is(";") {
			r.next()
		}
		if t := r.peek(); t.kind == tIdent && directiveNames[t.text] {
			fail(t.pos, "directive %s after a for block: plain directives come before the for blocks", t.text)
		}
	}
	r.expect("}", `to close the schedule (or a directive: tile, reorder, vectorize, unroll, parallel, pack, nopack, precision, or "for target {")`)
}

func (r *recognizer) directives() {
	for t := r.peek(); t.kind == tIdent && directiveNames[t.text]; t = r.peek() {
		r.next()
		if r.isIdent() {
			for {
				r.next()
				if r.is("-") {
					r.failHere("expected a positive size")
				}
				for r.peek().kind == tInt {
					n := r.next()
					if _, err := strconv.Atoi(n.text); err != nil {
						fail(n.pos, "size %s is too large", Quote(n.text))
					}
				}
				if !r.is(",") {
					break
				}
				r.next()
				if !r.isIdent() {
					r.failHere("expected an index, tensor or type name after \",\" in %s", t.text)
				}
			}
		}
		if r.is(";") {
			r.next()
		}
	}
}

// clipName shortens a name for a message (names are at most MaxName bytes anyway).
func clipName(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}

// check runs the scan and the recognizer; it returns the first syntax error, or nil.
func syntaxCheck(filename, src string) (err *Error) {
	defer func() {
		if x := recover(); x != nil {
			se, ok := x.(syntaxError)
			if !ok {
				panic(x)
			}
			err = &Error{Pos: se.pos, Msg: se.msg}
		}
	}()
	toks, bracket, unclosed := scan(filename, src)
	r := &recognizer{toks: toks}
	defer func() {
		// Of a bracket error and the recognizer's, report the first; a bracket left open at the end
		// counts as found at the end (an earlier error usually explains it).
		x := recover()
		if x == nil {
			if bracket != nil {
				panic(*bracket)
			}
			return
		}
		se, ok := x.(syntaxError)
		if !ok {
			panic(x)
		}
		if bracket != nil {
			at := bracket.pos.Offset
			if unclosed {
				at = toks[len(toks)-1].pos.Offset
			}
			if at <= se.pos.Offset {
				se = *bracket
			}
		}
		panic(se)
	}()
	r.file()
	return nil
}
