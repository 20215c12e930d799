package ptx

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The PTX emulator's front end (emu.go): it reads PTX text — the subset the printer (builder.go) writes — back into
// entries, so that the differential tests execute the text a driver would load, not the lowering's
// values. Anything outside that subset (an unknown directive, operand or register class, a line it
// cannot place) is an error naming the line, never a guess.

// parsePTX parses a module's text. dyn gives, per entry name, the dynamic shared memory its launch
// passes (the text declares the extern array unsized; the launch table holds the size).
func parsePTX(text string, dyn map[string]int) (*Module, error) {
	p := &ptxParser{lines: strings.Split(text, "\n"), dyn: dyn, externs: map[string]int{}}
	m, err := p.module()
	if err != nil {
		return nil, fmt.Errorf("ptx text line %d: %v (%q)", p.pos, err, p.cur())
	}
	return m, nil
}

type ptxParser struct {
	lines   []string
	pos     int // 1-based number of the line being parsed
	dyn     map[string]int
	externs map[string]int // module-level extern shared arrays and their alignment
	order   []string
}

func (p *ptxParser) cur() string {
	if p.pos >= 1 && p.pos <= len(p.lines) {
		return p.lines[p.pos-1]
	}
	return ""
}

// next advances to the next line and returns it (ok false at the end).
func (p *ptxParser) next() (string, bool) {
	if p.pos >= len(p.lines) {
		p.pos = len(p.lines) + 1
		return "", false
	}
	p.pos++
	return p.lines[p.pos-1], true
}

func (p *ptxParser) module() (*Module, error) {
	m := &Module{}
	var header, doc []string
	for {
		line, ok := p.next()
		if !ok {
			break
		}
		switch {
		case line == "":
			doc = nil
		case strings.HasPrefix(line, "// "):
			if m.Version == "" {
				header = append(header, line[3:])
			} else {
				doc = append(doc, line[3:])
			}
		case strings.HasPrefix(line, ".version "):
			m.Version = line[len(".version "):]
		case strings.HasPrefix(line, ".target "):
			m.Target = line[len(".target "):]
		case line == ".address_size 64":
		case strings.HasPrefix(line, ".extern .shared .align "):
			var align int
			var name string
			if _, err := fmt.Sscanf(line, ".extern .shared .align %d .b8 %s", &align, &name); err != nil || !strings.HasSuffix(name, "[];") {
				return nil, fmt.Errorf("extern shared declaration")
			}
			name = strings.TrimSuffix(name, "[];")
			p.externs[name] = align
			p.order = append(p.order, name)
		case strings.HasPrefix(line, ".visible .entry ") && strings.HasSuffix(line, "("):
			if m.Version == "" || m.Target == "" {
				return nil, fmt.Errorf("an entry before .version and .target")
			}
			e, err := p.entry(strings.TrimSuffix(line[len(".visible .entry "):], "("))
			if err != nil {
				return nil, err
			}
			e.Doc = strings.Join(doc, "\n")
			doc = nil
			m.Entries = append(m.Entries, e)
		default:
			return nil, fmt.Errorf("unknown module-level line")
		}
	}
	m.Header = strings.Join(header, "\n")
	if m.Version == "" {
		p.pos = 1
		return nil, fmt.Errorf("no .version")
	}
	return m, nil
}

var typeByName = func() map[string]Type {
	m := map[string]Type{}
	for t := Pred; t <= F64; t++ {
		m[t.String()] = t
	}
	return m
}()

var classByPrefix = map[string]Type{"%p": Pred, "%h": B16, "%r": B32, "%rd": B64, "%f": F32, "%fd": F64}

func (p *ptxParser) entry(name string) (*Entry, error) {
	e := NewEntry(name)
	// parameters
	for {
		line, ok := p.next()
		if !ok {
			return nil, fmt.Errorf("entry %s: unterminated parameter list", name)
		}
		if line == ")" {
			break
		}
		decl := strings.TrimSuffix(strings.TrimPrefix(line, "\t"), ",")
		var par EntryParam
		var arr string
		if _, err := fmt.Sscanf(decl, ".param .align %d .b8 %s", &par.Align, &arr); err == nil {
			i := strings.IndexByte(arr, '[')
			n, err := strconv.Atoi(strings.TrimSuffix(arr[i+1:], "]"))
			if i < 0 || err != nil || n <= 0 {
				return nil, fmt.Errorf("parameter array")
			}
			par.Name, par.Bytes = arr[:i], n
		} else {
			f := strings.Fields(decl)
			t, ok := typeByName[f[min(1, len(f)-1)]]
			if len(f) != 3 || f[0] != ".param" || !ok {
				return nil, fmt.Errorf("parameter declaration")
			}
			par.Name, par.T = f[2], t
		}
		e.Params = append(e.Params, par)
	}
	// performance directives, then the body
	for {
		line, ok := p.next()
		if !ok {
			return nil, fmt.Errorf("entry %s: no body", name)
		}
		if line == "{" {
			break
		}
		if _, err := fmt.Sscanf(line, ".maxntid %d, %d, %d", &e.MaxTid[0], &e.MaxTid[1], &e.MaxTid[2]); err == nil {
			continue
		}
		if _, err := fmt.Sscanf(line, ".minnctapersm %d", &e.MinCTAs); err == nil {
			continue
		}
		return nil, fmt.Errorf("unknown entry directive")
	}
	var body []item
	used := map[string]bool{} // symbols the body names (to find its use of extern shared arrays)
	for {
		line, ok := p.next()
		if !ok {
			return nil, fmt.Errorf("entry %s: unterminated body", name)
		}
		if line == "}" {
			break
		}
		if strings.HasPrefix(line, "$L") && strings.HasSuffix(line, ":") {
			n, err := strconv.Atoi(line[2 : len(line)-1])
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("label")
			}
			body = append(body, labelDef{Label{n}})
			e.nlabels = max(e.nlabels, n)
			continue
		}
		if !strings.HasPrefix(line, "\t") {
			return nil, fmt.Errorf("unindented line in a body")
		}
		line = line[1:]
		switch {
		case strings.HasPrefix(line, "// "):
			// consecutive comment lines are one comment item, as Entry.Comment makes them
			if c, ok := lastComment(body); ok {
				body[len(body)-1] = comment(string(c) + "\n" + line[3:])
			} else {
				body = append(body, comment(line[3:]))
			}
			continue
		case strings.HasPrefix(line, ".reg "):
			f := strings.Fields(strings.TrimSuffix(line, ";"))
			t, ok := typeByName[f[min(1, len(f)-1)]]
			if len(f) != 3 || !ok {
				return nil, fmt.Errorf("register declaration")
			}
			i := strings.IndexByte(f[2], '<')
			c, okc := classByPrefix[f[2][:max(i, 0)]]
			n, err := strconv.Atoi(strings.TrimSuffix(f[2][i+1:], ">"))
			if i < 0 || !okc || c != t || err != nil || n < 1 {
				return nil, fmt.Errorf("register declaration")
			}
			e.nregs[t] = n - 1
			continue
		case strings.HasPrefix(line, ".shared "):
			var s SharedArray
			var ts, arr string
			if _, err := fmt.Sscanf(line, ".shared .align %d %s %s", &s.Align, &ts, &arr); err != nil {
				return nil, fmt.Errorf("shared declaration")
			}
			t, okt := typeByName[ts]
			i := strings.IndexByte(arr, '[')
			if !okt || i < 0 || !strings.HasSuffix(arr, "];") {
				return nil, fmt.Errorf("shared declaration")
			}
			n, err := strconv.Atoi(arr[i+1 : len(arr)-2])
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("shared array size")
			}
			s.Name, s.T, s.Count = arr[:i], t, n
			e.Shared = append(e.Shared, s)
			continue
		case line == "ret;" && p.lines[p.pos] == "}":
			continue // the printer's closing ret: a thread ends at the end of the body
		}
		in, err := parseInstr(line, e.nregs)
		if err != nil {
			return nil, err
		}
		for _, a := range in.Args {
			if ad, ok := a.(Addr); ok {
				a = ad.Base
			}
			if s, ok := a.(Sym); ok {
				used[string(s)] = true
			}
		}
		body = append(body, in)
	}
	e.body = body
	defined := map[Label]bool{}
	for _, it := range body {
		if l, ok := it.(labelDef); ok {
			if defined[l.l] {
				return nil, fmt.Errorf("entry %s: label %s defined twice", name, l.l)
			}
			defined[l.l] = true
		}
	}
	for _, it := range body {
		if in, ok := it.(*Instr); ok {
			for _, a := range in.Args {
				if l, ok := a.(Label); ok && !defined[l] {
					return nil, fmt.Errorf("entry %s: label %s is not defined", name, l)
				}
			}
		}
	}
	// the extern shared arrays the entry names come first (as the lowering declares them), sized by the
	// launch
	var ext []SharedArray
	for _, n := range p.order {
		if !used[n] {
			continue
		}
		size := p.dyn[name]
		if size <= 0 {
			return nil, fmt.Errorf("entry %s uses extern shared %s, but its launch passes no dynamic shared memory", name, n)
		}
		ext = append(ext, SharedArray{Name: n, Count: size, Align: p.externs[n], Extern: true})
	}
	e.Shared = append(ext, e.Shared...)
	return e, nil
}

func lastComment(body []item) (comment, bool) {
	if len(body) == 0 {
		return "", false
	}
	c, ok := body[len(body)-1].(comment)
	return c, ok
}

// parseInstr parses one instruction line (without its leading tab); nregs bounds the registers.
func parseInstr(line string, nregs map[Type]int) (*Instr, error) {
	in := &Instr{}
	if i := strings.Index(line, ";\t// "); i >= 0 {
		in.Comment = line[i+len(";\t// "):]
		line = line[:i+1]
	}
	if !strings.HasSuffix(line, ";") {
		return nil, fmt.Errorf("instruction without ';'")
	}
	line = strings.TrimSuffix(line, ";")
	if line[0] == '@' {
		sp := strings.IndexByte(line, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("guard without instruction")
		}
		g := line[1:sp]
		if strings.HasPrefix(g, "!") {
			in.Neg, g = true, g[1:]
		}
		r, err := parseReg(g, nregs)
		if err != nil || r.T != Pred {
			return nil, fmt.Errorf("guard %q is not a predicate register", g)
		}
		in.Guard = &r
		line = line[sp+1:]
	}
	mnem, rest, _ := strings.Cut(line, " ")
	if strings.HasPrefix(mnem, ".") {
		return nil, fmt.Errorf("directive %s in a body (not modelled)", mnem)
	}
	in.Op, in.Mods, in.Types = splitMnemonic(mnem)
	for _, a := range splitArgs(rest) {
		o, err := parseOperand(a, nregs)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", mnem, err)
		}
		in.Args = append(in.Args, o)
	}
	return in, nil
}

// wholeMnemonics are the instructions the lowering writes as one opcode string, type suffixes included
// (the emulator reads them by their full name).
var wholeMnemonics = []string{"mma.sync.", "ldmatrix.", "wgmma.", "mbarrier.", "fence.", "cp.async.", "cvt.rna.tf32."}

func wholeMnemonic(s string) bool {
	return slices.ContainsFunc(wholeMnemonics, func(w string) bool { return strings.HasPrefix(s, w) })
}

// splitMnemonic splits "cvt.rn.f16.f32" into the opcode, its modifiers and the trailing type suffixes
// (the form Entry.Op and Entry.Cvt build); shfl.sync's mode stays in the opcode.
func splitMnemonic(s string) (op string, mods []string, types []Type) {
	if wholeMnemonic(s) {
		return s, nil, nil
	}
	tok := strings.Split(s, ".")
	n := len(tok)
	for n > 1 {
		t, ok := typeByName["."+tok[n-1]]
		if !ok {
			break
		}
		types = append([]Type{t}, types...)
		n--
	}
	op = tok[0]
	k := 1
	if op == "shfl" && n >= 3 {
		op, k = strings.Join(tok[:3], "."), 3
	}
	for _, m := range tok[k:n] {
		mods = append(mods, "."+m)
	}
	return op, mods, types
}

// splitArgs splits an operand list at the commas outside brackets and braces.
func splitArgs(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

func parseReg(s string, nregs map[Type]int) (Reg, error) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	c, ok := classByPrefix[s[:i]]
	n, err := strconv.Atoi(s[i:])
	if !ok || err != nil {
		return Reg{}, fmt.Errorf("register %q", s)
	}
	if n < 1 || n > nregs[c] {
		return Reg{}, fmt.Errorf("register %s not declared", s)
	}
	return Reg{T: c, n: n}, nil
}

var specialRegs = map[string]bool{"%laneid": true}

func init() {
	for _, r := range []string{"%tid", "%ctaid", "%ntid", "%nctaid"} {
		for _, a := range []string{".x", ".y", ".z"} {
			specialRegs[r+a] = true
		}
	}
}

func isIdent(s string) bool {
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

func parseOperand(s string, nregs map[Type]int) (Operand, error) {
	switch {
	case s == "":
		return nil, fmt.Errorf("empty operand")
	case specialRegs[s]:
		return Sym(s), nil
	case s[0] == '%':
		return parseReg(s, nregs)
	case strings.HasPrefix(s, "$L"):
		n, err := strconv.Atoi(s[2:])
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("label %q", s)
		}
		return Label{n}, nil
	case strings.HasPrefix(s, "0f") && len(s) == 10, strings.HasPrefix(s, "0d") && len(s) == 18:
		bits, err := strconv.ParseUint(s[2:], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("float immediate %q", s)
		}
		if s[1] == 'f' {
			return FImm{V: float64(math.Float32frombits(uint32(bits))), T: F32}, nil
		}
		return FImm{V: math.Float64frombits(bits), T: F64}, nil
	case s[0] == '-' || s[0] >= '0' && s[0] <= '9':
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("immediate %q", s)
		}
		return Imm(v), nil
	case s[0] == '{':
		if !strings.HasSuffix(s, "}") {
			return nil, fmt.Errorf("vector %q", s)
		}
		var v Vec
		for _, r := range splitArgs(s[1 : len(s)-1]) {
			reg, err := parseReg(r, nregs)
			if err != nil {
				return nil, err
			}
			v = append(v, reg)
		}
		return v, nil
	case s[0] == '[':
		if !strings.HasSuffix(s, "]") {
			return nil, fmt.Errorf("address %q", s)
		}
		in := s[1 : len(s)-1]
		if base, coords, ok := strings.Cut(in, ", "); ok {
			m, err := parseReg(base, nregs)
			if err != nil {
				return nil, err
			}
			c, err := parseOperand(coords, nregs)
			if err != nil {
				return nil, err
			}
			v, ok := c.(Vec)
			if !ok || m.T != B64 {
				return nil, fmt.Errorf("tensor operand %q", s)
			}
			return TensorRef{Map: m, Coords: v}, nil
		}
		a := Addr{}
		base := in
		if i := strings.IndexAny(in, "+-"); i > 0 {
			off, err := strconv.ParseInt(in[i:], 10, 64)
			if err != nil || off == 0 {
				return nil, fmt.Errorf("address offset %q", s)
			}
			base, a.Off = in[:i], off
		}
		b, err := parseOperand(base, nregs)
		if err != nil {
			return nil, err
		}
		switch x := b.(type) {
		case Reg:
			if x.T != B64 {
				return nil, fmt.Errorf("address base %s is not a 64-bit register", base)
			}
		case Sym:
		default:
			return nil, fmt.Errorf("address base %q", base)
		}
		a.Base = b
		return a, nil
	case isIdent(s):
		return Sym(s), nil
	}
	return nil, fmt.Errorf("operand %q", s)
}

// viaText returns k's entries as the emulator reads them: printed as one module and parsed back.
func viaText(k *Kernel) ([]*Entry, error) {
	// the dynamic shared memory a launch passes (LaunchInfo.DynSharedBytes, which the lowering sets to
	// what the entry uses; a planted bug may shrink the entry's)
	dyn := map[string]int{}
	for _, e := range k.Entries {
		dyn[e.Name] = e.DynamicSharedBytes()
	}
	m, err := parsePTX((&Module{Version: "8.0", Target: "sm_90a", Entries: k.Entries}).Print(), dyn)
	if err != nil {
		return nil, err
	}
	if len(m.Entries) != len(k.Entries) {
		return nil, fmt.Errorf("parsed %d entries of %d", len(m.Entries), len(k.Entries))
	}
	return m.Entries, nil
}
