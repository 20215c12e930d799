package ptx

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The PTX builder: registers with types, state spaces, labels and instructions are Go values; Print is
// the only place PTX text is made. The lowering (lower*.go) only ever calls the builder.

// Type is a PTX fundamental type (the suffix of an instruction or a register declaration).
type Type uint8

const (
	Pred Type = iota + 1
	B16
	B32
	B64
	U16
	U32
	U64
	S32
	S64
	F16
	F16x2
	BF16
	BF16x2
	F32
	F64
)

var typeNames = [...]string{"", ".pred", ".b16", ".b32", ".b64", ".u16", ".u32", ".u64", ".s32", ".s64", ".f16", ".f16x2", ".bf16", ".bf16x2", ".f32", ".f64"}

func (t Type) String() string {
	if int(t) < len(typeNames) && t != 0 {
		return typeNames[t]
	}
	return ".type?"
}

// Bits is the width of a value of type t (1 for a predicate).
func (t Type) Bits() int {
	switch t {
	case Pred:
		return 1
	case B16, U16, F16, BF16:
		return 16
	case B32, U32, S32, F16x2, BF16x2, F32:
		return 32
	}
	return 64
}

// regClass is the declared type and name prefix a register of type t lives in: PTX lets an
// instruction of type .u32/.s32/.f16x2 use a .b32 register, and so on, so one class per width (plus the
// float classes, which keep the text readable) is enough.
func (t Type) regClass() (decl Type, prefix string) {
	switch t {
	case Pred:
		return Pred, "%p"
	case B16, U16, F16, BF16:
		return B16, "%h"
	case B32, U32, S32, F16x2, BF16x2:
		return B32, "%r"
	case F32:
		return F32, "%f"
	case F64:
		return F64, "%fd"
	}
	return B64, "%rd"
}

// Space is a PTX state space.
type Space uint8

const (
	Global Space = iota + 1
	Shared
	Param
	Local
)

func (s Space) String() string {
	switch s {
	case Global:
		return ".global"
	case Shared:
		return ".shared"
	case Param:
		return ".param"
	case Local:
		return ".local"
	}
	return ".space?"
}

// Operand is an instruction argument.
type Operand interface {
	operand()
	String() string
}

// Reg is a virtual register: its type and its number within its class. Registers are made by
// Entry.Reg, which declares them.
type Reg struct {
	T Type
	n int
}

// Imm is an integer immediate.
type Imm int64

// FImm is a floating-point immediate of type T (F32 or F64), printed as its exact bits.
type FImm struct {
	V float64
	T Type
}

// Sym names a parameter, a shared array or a special register (%tid.x).
type Sym string

// Addr is a memory address [Base+Off]: Base a 64-bit register or a symbol.
type Addr struct {
	Base Operand
	Off  int64
}

// Vec is a brace-enclosed vector of registers ({%f1, %f2}).
type Vec []Reg

// Label is a branch target inside one entry.
type Label struct{ n int }

func (Reg) operand()       {}
func (Imm) operand()       {}
func (FImm) operand()      {}
func (Sym) operand()       {}
func (Addr) operand()      {}
func (Vec) operand()       {}
func (TensorRef) operand() {}
func (Label) operand()     {}

func (r Reg) String() string {
	_, p := r.T.regClass()
	return p + strconv.Itoa(r.n)
}

func (i Imm) String() string { return strconv.FormatInt(int64(i), 10) }

func (f FImm) String() string {
	if f.T == F64 {
		return fmt.Sprintf("0d%016X", math.Float64bits(f.V))
	}
	return fmt.Sprintf("0f%08X", math.Float32bits(float32(f.V)))
}

func (s Sym) String() string { return string(s) }

func (a Addr) String() string {
	switch {
	case a.Off > 0:
		return "[" + a.Base.String() + "+" + strconv.FormatInt(a.Off, 10) + "]"
	case a.Off < 0:
		return "[" + a.Base.String() + strconv.FormatInt(a.Off, 10) + "]"
	}
	return "[" + a.Base.String() + "]"
}

func (v Vec) String() string {
	s := make([]string, len(v))
	for i, r := range v {
		s[i] = r.String()
	}
	return "{" + strings.Join(s, ", ") + "}"
}

func (l Label) String() string { return "$L" + strconv.Itoa(l.n) }

// TensorRef is the tensor operand of cp.async.bulk.tensor: a tensor map's address and the box's
// coordinates, innermost first ([map, {x, y}]).
type TensorRef struct {
	Map    Reg
	Coords Vec
}

func (t TensorRef) String() string { return "[" + t.Map.String() + ", " + t.Coords.String() + "]" }

// Instr is one instruction: Op with its modifiers (".lo", ".global", ".rn") and type suffixes, its
// arguments (destination first), an optional guard predicate (@p or @!p) and a comment.
type Instr struct {
	Guard   *Reg
	Neg     bool
	Op      string
	Mods    []string
	Types   []Type
	Args    []Operand
	Comment string
}

// item is a line of an entry body: an instruction, a label definition or a comment.
type item interface{ print(b *strings.Builder) }

type labelDef struct{ l Label }
type comment string

func (in *Instr) print(b *strings.Builder) {
	b.WriteByte('\t')
	if in.Guard != nil {
		b.WriteByte('@')
		if in.Neg {
			b.WriteByte('!')
		}
		b.WriteString(in.Guard.String())
		b.WriteByte(' ')
	}
	b.WriteString(in.Op)
	for _, m := range in.Mods {
		b.WriteString(m)
	}
	for _, t := range in.Types {
		b.WriteString(t.String())
	}
	for i, a := range in.Args {
		if i == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteString(", ")
		}
		b.WriteString(a.String())
	}
	b.WriteByte(';')
	if in.Comment != "" {
		b.WriteString("\t// ")
		b.WriteString(in.Comment)
	}
	b.WriteByte('\n')
}

func (l labelDef) print(b *strings.Builder) { b.WriteString(l.l.String() + ":\n") }

func (c comment) print(b *strings.Builder) {
	for _, line := range strings.Split(string(c), "\n") {
		b.WriteString("\t// " + line + "\n")
	}
}

// EntryParam is an entry parameter (.param .u64 name).
type EntryParam struct {
	Name string
	T    Type
	// Bytes > 0: an opaque byte array of that size aligned to Align (.param .align A .b8 name[Bytes]),
	// such as a TMA tensor map (T unused).
	Bytes, Align int
}

// SharedArray is a block-level .shared array of Count elements of type T, aligned to Align bytes.
// Extern marks the entry's dynamic shared memory: the module declares it once, unsized
// (.extern .shared .align Align .b8 Name[]), Count is the number of bytes the entry uses of it,
// which a launch must pass as its dynamic shared memory size, and T is unused.
type SharedArray struct {
	Name   string
	T      Type
	Count  int
	Align  int
	Extern bool
}

// Entry is one .entry function being built.
type Entry struct {
	Name    string
	Params  []EntryParam
	Shared  []SharedArray
	MaxTid  [3]int // .maxntid: the block's dims x, y, z (all zero: none)
	MinCTAs int    // .minnctapersm (0: none)
	Doc     string
	body    []item
	nregs   map[Type]int
	nlabels int
}

// NewEntry starts an empty entry function.
func NewEntry(name string) *Entry { return &Entry{Name: name, nregs: map[Type]int{}} }

// AddParam appends a parameter and returns the symbol that names it.
func (e *Entry) AddParam(name string, t Type) Sym {
	e.Params = append(e.Params, EntryParam{Name: name, T: t})
	return Sym(name)
}

// AddShared declares a shared array and returns the symbol that names it.
func (e *Entry) AddShared(name string, t Type, count, align int) Sym {
	e.Shared = append(e.Shared, SharedArray{Name: name, T: t, Count: count, Align: align})
	return Sym(name)
}

// Bytes is the size of the array.
func (s SharedArray) Bytes() int {
	if s.Extern {
		return s.Count
	}
	return s.Count * s.T.Bits() / 8
}

// Threads is the number of threads of a block (the product of MaxTid; 0 when unset).
func (e *Entry) Threads() int { return e.MaxTid[0] * max(e.MaxTid[1], 1) * max(e.MaxTid[2], 1) }

// SharedBytes is the static shared memory the entry declares.
func (e *Entry) SharedBytes() int {
	n := 0
	for _, s := range e.Shared {
		if !s.Extern {
			n = (n+s.Align-1)/s.Align*s.Align + s.Count*s.T.Bits()/8
		}
	}
	return n
}

// DynamicSharedBytes is the dynamic shared memory the entry uses (0: none).
func (e *Entry) DynamicSharedBytes() int {
	n := 0
	for _, s := range e.Shared {
		if s.Extern {
			n += s.Count
		}
	}
	return n
}

// Reg returns a fresh register of type t.
func (e *Entry) Reg(t Type) Reg {
	c, _ := t.regClass()
	e.nregs[c]++
	return Reg{T: t, n: e.nregs[c]}
}

// NewLabel returns a fresh label (placed with Place).
func (e *Entry) NewLabel() Label {
	e.nlabels++
	return Label{n: e.nlabels}
}

// Place puts label l at the current position.
func (e *Entry) Place(l Label) { e.body = append(e.body, labelDef{l}) }

// Comment adds a comment line (or several, split at newlines).
func (e *Entry) Comment(s string) { e.body = append(e.body, comment(s)) }

// Emit appends an instruction and returns it (so that a caller may set its guard or comment).
func (e *Entry) Emit(in *Instr) *Instr {
	e.body = append(e.body, in)
	return in
}

// Op appends the instruction op (with any modifiers written into it, "mul.lo") of type t with args.
func (e *Entry) Op(op string, t Type, args ...Operand) *Instr {
	return e.Emit(&Instr{Op: op, Types: []Type{t}, Args: args})
}

// Op0 appends an instruction without a type suffix (bar.sync, bra, cp.async.commit_group).
func (e *Entry) Op0(op string, args ...Operand) *Instr {
	return e.Emit(&Instr{Op: op, Args: args})
}

// Bin computes op.t a, b into a fresh register of type t.
func (e *Entry) Bin(op string, t Type, a, b Operand) Reg {
	d := e.Reg(t)
	e.Op(op, t, d, a, b)
	return d
}

// Mov copies src into a fresh register of type t.
func (e *Entry) Mov(t Type, src Operand) Reg {
	d := e.Reg(t)
	e.Op("mov", t, d, src)
	return d
}

// Cvt converts src (of type from) into a fresh register of type to, with rounding modifier rnd ("" for
// none, ".rn", ".rzi", ...).
func (e *Entry) Cvt(to, from Type, rnd string, src Operand) Reg {
	d := e.Reg(to)
	in := &Instr{Op: "cvt", Types: []Type{to, from}, Args: []Operand{d, src}}
	if rnd != "" {
		in.Mods = []string{rnd}
	}
	e.Emit(in)
	return d
}

// Setp sets a fresh predicate to a CMP b (cmp: "lt", "ge", "eq", "nan", ...) compared as type t.
func (e *Entry) Setp(cmp string, t Type, a, b Operand) Reg {
	p := e.Reg(Pred)
	e.Emit(&Instr{Op: "setp", Mods: []string{"." + cmp}, Types: []Type{t}, Args: []Operand{p, a, b}})
	return p
}

// Bra branches to l, if guard is not nil only when guard (or, with neg, its negation) holds.
func (e *Entry) Bra(l Label, guard *Reg, neg bool) {
	in := e.Op0("bra.uni", l)
	if guard != nil {
		in.Op = "bra"
		in.Guard, in.Neg = guard, neg
	}
}

// Ld loads a value of type t from space at addr into a fresh register.
func (e *Entry) Ld(sp Space, t Type, addr Addr) Reg {
	d := e.Reg(t)
	e.Emit(&Instr{Op: "ld", Mods: []string{sp.String()}, Types: []Type{t}, Args: []Operand{d, addr}})
	return d
}

// St stores v of type t to space at addr.
func (e *Entry) St(sp Space, t Type, addr Addr, v Operand) *Instr {
	return e.Emit(&Instr{Op: "st", Mods: []string{sp.String()}, Types: []Type{t}, Args: []Operand{addr, v}})
}

// Module is a PTX module: a version, a target and entry functions.
type Module struct {
	Version string // PTX ISA version, "7.8"
	Target  string // "sm_80"
	Header  string // comment lines printed first
	Entries []*Entry
}

// Print returns the module's text. The output depends only on the module (stable across runs).
func (m *Module) Print() string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(m.Header, "\n"), "\n") {
		if line != "" {
			b.WriteString("// " + line + "\n")
		}
	}
	fmt.Fprintf(&b, ".version %s\n.target %s\n.address_size 64\n", m.Version, m.Target)
	// dynamic shared memory: one unsized declaration per name, at module scope (ptxas refuses
	// .extern .shared inside an entry), at the largest alignment an entry asks for
	align, order := map[string]int{}, []string(nil)
	for _, e := range m.Entries {
		for _, s := range e.Shared {
			if s.Extern {
				if _, ok := align[s.Name]; !ok {
					order = append(order, s.Name)
				}
				align[s.Name] = max(align[s.Name], s.Align)
			}
		}
	}
	for _, n := range order {
		fmt.Fprintf(&b, ".extern .shared .align %d .b8 %s[];\n", align[n], n)
	}
	for _, e := range m.Entries {
		b.WriteByte('\n')
		e.print(&b)
	}
	return b.String()
}

func (e *Entry) print(b *strings.Builder) {
	if e.Doc != "" {
		for _, line := range strings.Split(strings.TrimRight(e.Doc, "\n"), "\n") {
			b.WriteString("// " + line + "\n")
		}
	}
	b.WriteString(".visible .entry " + e.Name + "(")
	for i, p := range e.Params {
		if i > 0 {
			b.WriteByte(',')
		}
		if p.Bytes > 0 {
			fmt.Fprintf(b, "\n\t.param .align %d .b8 %s[%d]", p.Align, p.Name, p.Bytes)
			continue
		}
		b.WriteString("\n\t.param " + p.T.String() + " " + p.Name)
	}
	b.WriteString("\n)")
	if e.MaxTid[0] > 0 {
		fmt.Fprintf(b, "\n.maxntid %d, %d, %d", e.MaxTid[0], e.MaxTid[1], e.MaxTid[2])
	}
	if e.MinCTAs > 0 {
		fmt.Fprintf(b, "\n.minnctapersm %d", e.MinCTAs)
	}
	b.WriteString("\n{\n")
	for _, c := range []Type{Pred, B16, B32, B64, F32, F64} {
		if n := e.nregs[c]; n > 0 {
			_, p := c.regClass()
			fmt.Fprintf(b, "\t.reg %s %s<%d>;\n", c, p, n+1)
		}
	}
	for _, s := range e.Shared {
		if !s.Extern {
			fmt.Fprintf(b, "\t.shared .align %d %s %s[%d];\n", s.Align, s.T, s.Name, s.Count)
		}
	}
	for _, it := range e.body {
		it.print(b)
	}
	b.WriteString("\tret;\n}\n")
}
