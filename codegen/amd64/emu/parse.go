package emu

import (
	"fmt"
	"strconv"
	"strings"
)

// Program is a parsed Go assembler file: its functions (TEXT blocks) and its
// static data (DATA/GLOBL).
type Program struct {
	funcs map[string]*function
	data  map[string]*symbol
	order []string // function names in file order
}

// function is one TEXT block.
type function struct {
	name    string
	line    int
	frame   int // local frame size ($frame-argsize)
	argsize int
	code    []inst
	labels  map[string]int
	err     error // first instruction or operand form the emulator does not model
}

// symbol is a GLOBL data symbol.
type symbol struct {
	name string
	mem  []uint64 // 8-byte aligned backing store
	size int
}

func (s *symbol) bytes() []byte { return u64bytes(s.mem)[:s.size] }

// Error is an emulation error: an unsupported instruction, an access outside
// the registered regions, a fault or a runaway loop.
type Error struct {
	Func string // TEXT symbol
	Line int    // 1-based line in the assembly text
	Text string // the instruction as written
	Msg  string
}

func (e *Error) Error() string {
	if e.Text == "" {
		return fmt.Sprintf("emu: %s (line %d): %s", e.Func, e.Line, e.Msg)
	}
	return fmt.Sprintf("emu: %s line %d: %q: %s", e.Func, e.Line, e.Text, e.Msg)
}

// Parse reads Go assembler text. Syntax it cannot read is an error; an
// instruction or operand form the interpreter does not model is recorded on
// its function and reported when that function is called (Program.Check
// lists them all).
func Parse(text string) (*Program, error) {
	p := &Program{funcs: map[string]*function{}, data: map[string]*symbol{}}
	type dataLine struct {
		sym        string
		off, width int
		val        uint64
		line       int
	}
	var datas []dataLine
	var cur *function
	for i, raw := range strings.Split(text, "\n") {
		lineNo := i + 1
		line := raw
		if j := strings.Index(line, "//"); j >= 0 {
			line = line[:j]
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#include") {
			continue
		}
		perr := func(format string, args ...any) error {
			return fmt.Errorf("emu: line %d: %q: %s", lineNo, strings.TrimSpace(raw), fmt.Sprintf(format, args...))
		}
		if strings.HasPrefix(line, "BYTE") { // an instruction the Go assembler lacks, as its bytes
			dec, err := decodeBytes(line)
			if err != nil {
				return nil, perr("%v", err)
			}
			line = dec
		}
		if strings.Contains(line, ";") {
			return nil, perr("several statements on one line are not supported")
		}
		fields := strings.Fields(line)
		switch fields[0] {
		case "TEXT":
			name, frame, argsize, err := parseText(line)
			if err != nil {
				return nil, perr("%v", err)
			}
			if _, dup := p.funcs[name]; dup {
				return nil, perr("duplicate TEXT %s", name)
			}
			cur = &function{name: name, line: lineNo, frame: frame, argsize: argsize, labels: map[string]int{}}
			p.funcs[name] = cur
			p.order = append(p.order, name)
			continue
		case "DATA":
			sym, off, width, val, err := parseData(line)
			if err != nil {
				return nil, perr("%v", err)
			}
			datas = append(datas, dataLine{sym, off, width, val, lineNo})
			continue
		case "GLOBL":
			sym, size, err := parseGlobl(line)
			if err != nil {
				return nil, perr("%v", err)
			}
			p.data[sym] = &symbol{name: sym, mem: make([]uint64, (size+7)/8), size: size}
			continue
		}
		if strings.HasSuffix(line, ":") && len(fields) == 1 {
			if cur == nil {
				return nil, perr("label outside a TEXT block")
			}
			l := strings.TrimSuffix(line, ":")
			if _, dup := cur.labels[l]; dup {
				return nil, perr("duplicate label %s", l)
			}
			cur.labels[l] = len(cur.code)
			continue
		}
		if cur == nil {
			return nil, perr("instruction outside a TEXT block")
		}
		in := inst{line: lineNo, text: line}
		mn := fields[0]
		rest := strings.TrimSpace(line[len(mn):])
		parts := strings.Split(mn, ".")
		in.op = parts[0]
		for _, s := range parts[1:] {
			switch s {
			case "Z":
				in.zeroing = true
			case "BCST":
				in.bcst = true
			default:
				in.bad = fmt.Sprintf("suffix .%s is not modeled", s)
			}
		}
		if rest != "" {
			for _, a := range splitOperands(rest) {
				o, err := parseOperand(a)
				if err != nil {
					return nil, perr("%v", err)
				}
				in.args = append(in.args, o)
			}
		}
		cur.code = append(cur.code, in)
	}
	for _, d := range datas {
		s, ok := p.data[d.sym]
		if !ok {
			return nil, fmt.Errorf("emu: line %d: DATA for %s without GLOBL", d.line, d.sym)
		}
		if d.off < 0 || d.off+d.width > s.size {
			return nil, fmt.Errorf("emu: line %d: DATA %s+%d/%d outside its %d bytes", d.line, d.sym, d.off, d.width, s.size)
		}
		b := s.bytes()
		for k := 0; k < d.width; k++ {
			b[d.off+k] = byte(d.val >> (8 * k))
		}
	}
	for _, name := range p.order {
		f := p.funcs[name]
		for i := range f.code {
			if err := compile(p, f, &f.code[i]); err != nil && f.err == nil {
				f.err = err
			}
		}
	}
	return p, nil
}

// Functions returns the TEXT symbols of the program in file order (without the leading middle dot).
func (p *Program) Functions() []string { return append([]string(nil), p.order...) }

// Check returns, per function, the first instruction the interpreter does not model.
func (p *Program) Check() map[string]error {
	out := map[string]error{}
	for _, name := range p.order {
		if err := p.funcs[name].err; err != nil {
			out[name] = err
		}
	}
	return out
}

func parseText(line string) (name string, frame, argsize int, err error) {
	// TEXT ·name(SB), FLAGS, $frame-argsize
	rest := strings.TrimSpace(strings.TrimPrefix(line, "TEXT"))
	parts := strings.Split(rest, ",")
	sym := strings.TrimSpace(parts[0])
	if !strings.HasSuffix(sym, "(SB)") {
		return "", 0, 0, fmt.Errorf("TEXT symbol %q is not name(SB)", sym)
	}
	name = strings.TrimPrefix(strings.TrimSuffix(sym, "(SB)"), "·")
	sz := strings.TrimSpace(parts[len(parts)-1])
	if len(parts) < 2 || !strings.HasPrefix(sz, "$") {
		return "", 0, 0, fmt.Errorf("TEXT without $frame-argsize")
	}
	sz = sz[1:]
	fs, as, ok := strings.Cut(sz, "-")
	if !ok {
		return "", 0, 0, fmt.Errorf("TEXT %s: frame %q has no argument size", name, sz)
	}
	if frame, err = strconv.Atoi(fs); err != nil || frame < 0 || frame > 1<<20 {
		return "", 0, 0, fmt.Errorf("TEXT %s: bad frame size %q", name, fs)
	}
	if argsize, err = strconv.Atoi(as); err != nil || argsize < 0 || argsize > 1<<20 {
		return "", 0, 0, fmt.Errorf("TEXT %s: bad argument size %q", name, as)
	}
	return name, frame, argsize, nil
}

func parseData(line string) (sym string, off, width int, val uint64, err error) {
	// DATA sym<>+off(SB)/width, $value
	rest := strings.TrimSpace(strings.TrimPrefix(line, "DATA"))
	lhs, rhs, ok := strings.Cut(rest, ",")
	if !ok {
		return "", 0, 0, 0, fmt.Errorf("DATA without value")
	}
	lhs, rhs = strings.TrimSpace(lhs), strings.TrimSpace(rhs)
	loc, ws, ok := strings.Cut(lhs, "/")
	if !ok || !strings.HasSuffix(loc, "(SB)") {
		return "", 0, 0, 0, fmt.Errorf("DATA location %q is not sym+off(SB)/width", lhs)
	}
	loc = strings.TrimSuffix(loc, "(SB)")
	sym, off, err = symOffset(loc)
	if err != nil {
		return "", 0, 0, 0, err
	}
	if width, err = strconv.Atoi(ws); err != nil || (width != 1 && width != 2 && width != 4 && width != 8) {
		return "", 0, 0, 0, fmt.Errorf("DATA width %q", ws)
	}
	if !strings.HasPrefix(rhs, "$") {
		return "", 0, 0, 0, fmt.Errorf("DATA value %q is not $constant", rhs)
	}
	v, err := parseInt(rhs[1:])
	if err != nil {
		return "", 0, 0, 0, err
	}
	return sym, off, width, uint64(v), nil
}

func parseGlobl(line string) (string, int, error) {
	rest := strings.TrimSpace(strings.TrimPrefix(line, "GLOBL"))
	parts := strings.Split(rest, ",")
	sym := strings.TrimSpace(parts[0])
	if !strings.HasSuffix(sym, "(SB)") {
		return "", 0, fmt.Errorf("GLOBL symbol %q", sym)
	}
	sz := strings.TrimSpace(parts[len(parts)-1])
	if len(parts) < 2 || !strings.HasPrefix(sz, "$") {
		return "", 0, fmt.Errorf("GLOBL without $size")
	}
	n, err := strconv.Atoi(sz[1:])
	if err != nil || n <= 0 || n > 1<<24 {
		return "", 0, fmt.Errorf("GLOBL size %q", sz)
	}
	return strings.TrimSuffix(sym, "(SB)"), n, nil
}

// symOffset splits "name+off" / "name-off" / "name".
func symOffset(s string) (string, int, error) {
	i := strings.LastIndexAny(s, "+-")
	if i <= 0 {
		return s, 0, nil
	}
	v, err := parseInt(s[i:])
	if err != nil {
		return "", 0, err
	}
	return s[:i], int(v), nil
}

func parseInt(s string) (int64, error) {
	s = strings.TrimSpace(s)
	neg := false
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	} else if strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	u, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("bad constant %q", s)
	}
	if neg {
		return -int64(u), nil
	}
	return int64(u), nil
}

// splitOperands splits at commas outside parentheses.
func splitOperands(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
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

// Operand kinds.
const (
	kGPR = iota + 1
	kVec
	kMask
	kImm
	kMem
	kLabel
)

// Memory operand bases.
const (
	memReg      = iota + 1 // disp(base)(index*scale)
	memFP                  // name+off(FP): the argument frame
	memPseudoSP            // name-off(SP): the top of the local frame
	memSym                 // sym<>+off(SB): static data
)

type operand struct {
	kind  int
	reg   int // GPR number, vector register, K register
	width int // vector register width in bytes: 16 (X), 32 (Y), 64 (Z)
	imm   int64
	label string

	mem         int
	base, index int // GPR numbers, -1 for none
	scale       int
	disp        int64
	sym         string
	symp        *symbol
}

var gprNames = map[string]int{
	"AX": 0, "CX": 1, "DX": 2, "BX": 3, "SP": 4, "BP": 5, "SI": 6, "DI": 7,
	"R8": 8, "R9": 9, "R10": 10, "R11": 11, "R12": 12, "R13": 13, "R14": 14, "R15": 15,
}

var gprString = [16]string{"AX", "CX", "DX", "BX", "SP", "BP", "SI", "DI", "R8", "R9", "R10", "R11", "R12", "R13", "R14", "R15"}

const regCL = 100 // CL as a shift count

func parseReg(s string) (operand, bool) {
	if r, ok := gprNames[s]; ok {
		return operand{kind: kGPR, reg: r}, true
	}
	if s == "CL" {
		return operand{kind: kGPR, reg: regCL}, true
	}
	if len(s) >= 2 {
		n, err := strconv.Atoi(s[1:])
		if err == nil && strconv.Itoa(n) == s[1:] {
			switch s[0] {
			case 'X':
				if n < 32 {
					return operand{kind: kVec, reg: n, width: 16}, true
				}
			case 'Y':
				if n < 32 {
					return operand{kind: kVec, reg: n, width: 32}, true
				}
			case 'Z':
				if n < 32 {
					return operand{kind: kVec, reg: n, width: 64}, true
				}
			case 'K':
				if n < 8 {
					return operand{kind: kMask, reg: n}, true
				}
			}
		}
	}
	return operand{}, false
}

func parseOperand(s string) (operand, error) {
	if s == "" {
		return operand{}, fmt.Errorf("empty operand")
	}
	if s[0] == '$' {
		v, err := parseInt(s[1:])
		if err != nil {
			return operand{}, err
		}
		return operand{kind: kImm, imm: v}, nil
	}
	if o, ok := parseReg(s); ok {
		return o, nil
	}
	i := strings.IndexByte(s, '(')
	if i < 0 {
		if isIdent(s) {
			return operand{kind: kLabel, label: s}, nil
		}
		return operand{}, fmt.Errorf("operand %q not understood", s)
	}
	o := operand{kind: kMem, base: -1, index: -1, scale: 1}
	pre := s[:i]
	rest := s[i:]
	j := strings.IndexByte(rest, ')')
	if j < 0 {
		return operand{}, fmt.Errorf("operand %q: missing )", s)
	}
	inner := rest[1:j]
	rest = rest[j+1:]
	switch inner {
	case "FP", "SB":
		name, off, err := symOffset(pre)
		if err != nil {
			return operand{}, err
		}
		o.disp = int64(off)
		if inner == "FP" {
			o.mem = memFP
		} else {
			if name == "" {
				return operand{}, fmt.Errorf("operand %q: (SB) without a symbol", s)
			}
			o.mem, o.sym = memSym, name
		}
		if rest != "" {
			return operand{}, fmt.Errorf("operand %q: index on a %s reference is not modeled", s, inner)
		}
		return o, nil
	}
	r, ok := gprNames[inner]
	if !ok {
		return operand{}, fmt.Errorf("operand %q: base %q is not a general register", s, inner)
	}
	o.mem, o.base = memReg, r
	if pre != "" {
		if inner == "SP" && !startsNumeric(pre) {
			name, off, err := symOffset(pre)
			if err != nil || name == "" {
				return operand{}, fmt.Errorf("operand %q not understood", s)
			}
			o.mem, o.base, o.disp = memPseudoSP, -1, int64(off)
		} else {
			v, err := parseInt(pre)
			if err != nil {
				return operand{}, fmt.Errorf("operand %q: displacement: %v", s, err)
			}
			o.disp = v
		}
	}
	if rest != "" {
		if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
			return operand{}, fmt.Errorf("operand %q: index not understood", s)
		}
		idx := rest[1 : len(rest)-1]
		rs, sc, ok := strings.Cut(idx, "*")
		if !ok {
			return operand{}, fmt.Errorf("operand %q: index without *scale", s)
		}
		x, ok := gprNames[rs]
		if !ok || x == 4 {
			return operand{}, fmt.Errorf("operand %q: bad index register %q", s, rs)
		}
		switch sc {
		case "1", "2", "4", "8":
			o.scale = int(sc[0] - '0')
		default:
			return operand{}, fmt.Errorf("operand %q: bad scale %q", s, sc)
		}
		if o.mem == memPseudoSP {
			return operand{}, fmt.Errorf("operand %q: index on a pseudo-SP reference", s)
		}
		o.index = x
	}
	return o, nil
}

func startsNumeric(s string) bool {
	return s != "" && (s[0] == '-' || s[0] == '+' || (s[0] >= '0' && s[0] <= '9'))
}

func isIdent(s string) bool {
	for i, c := range s {
		if c == '_' || c == '·' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9') {
			continue
		}
		return false
	}
	return s != ""
}

func (o *operand) String() string {
	switch o.kind {
	case kGPR:
		if o.reg == regCL {
			return "CL"
		}
		return gprString[o.reg]
	case kVec:
		return fmt.Sprintf("%c%d", map[int]byte{16: 'X', 32: 'Y', 64: 'Z'}[o.width], o.reg)
	case kMask:
		return fmt.Sprintf("K%d", o.reg)
	case kImm:
		return fmt.Sprintf("$%d", o.imm)
	case kLabel:
		return o.label
	}
	return "mem"
}

// form describes the operand kinds of an instruction, e.g. "mem, Y, Y".
func form(args []operand) string {
	var b strings.Builder
	for i := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		switch o := &args[i]; o.kind {
		case kGPR:
			if o.reg == regCL {
				b.WriteString("CL")
			} else {
				b.WriteString("r64")
			}
		case kVec:
			b.WriteByte(map[int]byte{16: 'X', 32: 'Y', 64: 'Z'}[o.width])
		case kMask:
			b.WriteString("K")
		case kImm:
			b.WriteString("$imm")
		case kMem:
			b.WriteString("mem")
		case kLabel:
			b.WriteString("label")
		}
	}
	return b.String()
}
