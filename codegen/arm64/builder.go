package arm64

import (
	"bytes"
	"fmt"
	"strings"
)

// Inst is one emitted line: a native Go-assembler instruction (Op with Args in Go operand order,
// destination last), a WORD-encoded instruction (Enc set, Op is the Arm mnemonic), a label, a
// comment or a directive.
type Inst struct {
	Op      string
	Args    []Operand
	Enc     *Encoding
	Label   Label
	Comment string
	raw     string // directives (TEXT) only
}

// Native reports whether the instruction is spelled with a Go assembler mnemonic.
func (in Inst) Native() bool { return in.Op != "" && in.Enc == nil }

// Line renders the instruction as one line of Plan 9 assembly.
func (in Inst) Line() string {
	switch {
	case in.raw != "":
		return in.raw
	case in.Label != "":
		return string(in.Label) + ":"
	case in.Enc != nil:
		return fmt.Sprintf("\tWORD\t$0x%08x // %s", in.Enc.Word, in.Enc.Text)
	case in.Op == "":
		if in.Comment == "" {
			return ""
		}
		return "\t// " + in.Comment
	}
	s := make([]string, len(in.Args))
	for i, a := range in.Args {
		s[i] = a.Asm()
	}
	line := "\t" + in.Op
	if len(s) > 0 {
		line += "\t" + strings.Join(s, ", ")
	}
	if in.Comment != "" {
		line += " // " + in.Comment
	}
	return line
}

// VRegs returns the vector registers the instruction names (for WORD-encoded instructions too).
func (in Inst) VRegs() []VReg {
	var out []VReg
	for _, a := range in.Args {
		switch a := a.(type) {
		case Vec:
			out = append(out, a.Reg)
		case Elem:
			out = append(out, a.Reg)
		case FReg:
			out = append(out, VReg(a))
		case VecList:
			for _, v := range a {
				out = append(out, v.Reg)
			}
		}
	}
	return out
}

// Builder accumulates instructions. Methods named after Go assembler mnemonics (MOVD, VLD1, VFMLA,
// ...) take operands in Go order, destination last. Methods for instructions Go's assembler lacks
// (FMLAElem, FADD, FMAX, FADDP, FCVTL, FCVTN, BFDOT, ...) take Arm order, destination first, like
// the Enc* functions, and emit `WORD $0x...`. The first error is kept and reported by Err.
type Builder struct {
	insts []Inst
	err   error
}

// Err returns the first error recorded by an emitting method.
func (b *Builder) Err() error { return b.err }

// Insts returns the instructions emitted so far.
func (b *Builder) Insts() []Inst { return b.insts }

func (b *Builder) fail(err error) {
	if b.err == nil && err != nil {
		b.err = err
	}
}

// Op emits a native instruction. Prefer the typed methods; Op exists for mnemonics without one.
func (b *Builder) Op(op string, args ...Operand) {
	b.insts = append(b.insts, Inst{Op: op, Args: args})
}

func (b *Builder) word(args []Operand) func(Encoding, error) {
	return func(e Encoding, err error) {
		if err != nil {
			b.fail(err)
			return
		}
		b.insts = append(b.insts, Inst{Op: strings.Fields(e.Text)[0], Args: args, Enc: &e})
	}
}

// Comment emits an indented comment line.
func (b *Builder) Comment(format string, args ...any) {
	b.insts = append(b.insts, Inst{Comment: fmt.Sprintf(format, args...)})
}

// Doc emits an unindented comment line (for comments above TEXT).
func (b *Builder) Doc(format string, args ...any) {
	b.insts = append(b.insts, Inst{raw: "// " + fmt.Sprintf(format, args...)})
}

// Blank emits an empty line.
func (b *Builder) Blank() { b.insts = append(b.insts, Inst{}) }

// Label places a label.
func (b *Builder) Label(l Label) { b.insts = append(b.insts, Inst{Label: l}) }

// TEXT starts an ABI0 function ·name with the given flags (e.g. "NOSPLIT"), frame and argument size.
func (b *Builder) TEXT(name, flags string, frame, args int) {
	b.insts = append(b.insts, Inst{raw: fmt.Sprintf("TEXT ·%s(SB), %s, $%d-%d", name, flags, frame, args)})
}

// Native instructions (Go operand order, destination last).

func (b *Builder) RET()                        { b.Op("RET") }
func (b *Builder) MOVD(src, dst Operand)       { b.Op("MOVD", src, dst) }
func (b *Builder) MOVW(src, dst Operand)       { b.Op("MOVW", src, dst) }
func (b *Builder) MOVWU(src, dst Operand)      { b.Op("MOVWU", src, dst) }
func (b *Builder) FMOVS(src, dst Operand)      { b.Op("FMOVS", src, dst) }
func (b *Builder) FMOVD(src, dst Operand)      { b.Op("FMOVD", src, dst) }
func (b *Builder) ADD(src Operand, rn, rd GPR) { b.Op("ADD", src, rn, rd) }
func (b *Builder) SUB(src Operand, rn, rd GPR) { b.Op("SUB", src, rn, rd) }

// SUBS subtracts and sets flags.
func (b *Builder) SUBS(src Operand, rn, rd GPR) { b.Op("SUBS", src, rn, rd) }
func (b *Builder) AND(src Operand, rn, rd GPR)  { b.Op("AND", src, rn, rd) }
func (b *Builder) LSL(sh Imm, rn, rd GPR)       { b.Op("LSL", sh, rn, rd) }
func (b *Builder) LSR(sh Imm, rn, rd GPR)       { b.Op("LSR", sh, rn, rd) }

// CMP sets flags from r - src (Go order: CMP src, r).
func (b *Builder) CMP(src Operand, r GPR)       { b.Op("CMP", src, r) }
func (b *Builder) B(l Label)                    { b.Op("B", l) }
func (b *Builder) BEQ(l Label)                  { b.Op("BEQ", l) }
func (b *Builder) BNE(l Label)                  { b.Op("BNE", l) }
func (b *Builder) BLT(l Label)                  { b.Op("BLT", l) }
func (b *Builder) BLE(l Label)                  { b.Op("BLE", l) }
func (b *Builder) BGT(l Label)                  { b.Op("BGT", l) }
func (b *Builder) BGE(l Label)                  { b.Op("BGE", l) }
func (b *Builder) CBZ(r GPR, l Label)           { b.Op("CBZ", r, l) }
func (b *Builder) CBNZ(r GPR, l Label)          { b.Op("CBNZ", r, l) }
func (b *Builder) TBZ(bit Imm, r GPR, l Label)  { b.Op("TBZ", bit, r, l) }
func (b *Builder) TBNZ(bit Imm, r GPR, l Label) { b.Op("TBNZ", bit, r, l) }
func (b *Builder) PRFM(m Mem, op PrfOp)         { b.Op("PRFM", m, op) }

// FCMPS compares f with src (FZero or FReg) and sets flags; FCMPD is the double form.
func (b *Builder) FCMPS(src Operand, f FReg) { b.Op("FCMPS", src, f) }
func (b *Builder) FCMPD(src Operand, f FReg) { b.Op("FCMPD", src, f) }

// FCVTSH narrows the single in src to the half in dst (scalar FCVT Hd, Sn; FPCR rounding).
func (b *Builder) FCVTSH(src, dst FReg) { b.Op("FCVTSH", src, dst) }

// VLD1 loads list from m (no writeback).
func (b *Builder) VLD1(m Mem, list VecList) {
	b.fail(list.check())
	b.Op("VLD1", m, list)
}

// VLD1P loads list from (base) and post-increments base by the list size.
func (b *Builder) VLD1P(base GPR, list VecList) {
	b.fail(list.check())
	b.Op("VLD1.P", Addr(base, int64(list.Bytes())), list)
}

// VST1 stores list to m (no writeback).
func (b *Builder) VST1(list VecList, m Mem) {
	b.fail(list.check())
	b.Op("VST1", list, m)
}

// VST1P stores list to (base) and post-increments base by the list size.
func (b *Builder) VST1P(list VecList, base GPR) {
	b.fail(list.check())
	b.Op("VST1.P", list, Addr(base, int64(list.Bytes())))
}

// VLD1Lane loads one lane (VLD1 (R0), V4.S[3]); VST1Lane stores one.
func (b *Builder) VLD1Lane(m Mem, e Elem) { b.Op("VLD1", m, e) }

// VST1Lane stores one lane.
func (b *Builder) VST1Lane(e Elem, m Mem) { b.Op("VST1", e, m) }

// VEOR is d = n ^ m (Go order: VEOR m, n, d).
func (b *Builder) VEOR(m, n, d Vec) { b.Op("VEOR", m, n, d) }

// VDUP broadcasts a lane: VDUP V1.S[0], V2.S4.
func (b *Builder) VDUP(e Elem, d Vec) { b.Op("VDUP", e, d) }

// VDUPR broadcasts a general register: VDUP R3, V2.S4 (the low lane-size bits of r).
func (b *Builder) VDUPR(r GPR, d Vec) { b.Op("VDUP", r, d) }

// VMOV copies a vector register: VMOV V1.B16, V2.B16 (an alias of ORR).
func (b *Builder) VMOV(src, dst Vec) { b.Op("VMOV", src, dst) }

// VADD is the integer vector d = n + m (Go order: VADD m, n, d).
func (b *Builder) VADD(m, n, d Vec) { b.Op("VADD", m, n, d) }

// VSUB is the integer vector d = n - m (Go order: VSUB m, n, d).
func (b *Builder) VSUB(m, n, d Vec) { b.Op("VSUB", m, n, d) }

// VSHL shifts each integer lane of n left by sh into d.
func (b *Builder) VSHL(sh Imm, n, d Vec) { b.Op("VSHL", sh, n, d) }

// VFMLS is the native vector FMLS, d -= n*m fused (Go order: VFMLS m, n, d); 2S, 4S, 2D only.
func (b *Builder) VFMLS(m, n, d Vec) {
	if _, _, _, ok := fpArr(d.Arr); !ok || d.Arr == H4 || d.Arr == H8 || m.Arr != d.Arr || n.Arr != d.Arr {
		b.fail(errorf("VFMLS: Go assembler form needs 2S/4S/2D, got %s", d.Asm()))
	}
	b.Op("VFMLS", m, n, d)
}

// VFMLA is the native vector FMLA, d += n*m (Go order: VFMLA m, n, d); 2S, 4S, 2D only.
func (b *Builder) VFMLA(m, n, d Vec) {
	if _, _, _, ok := fpArr(d.Arr); !ok || d.Arr == H4 || d.Arr == H8 || m.Arr != d.Arr || n.Arr != d.Arr {
		b.fail(errorf("VFMLA: Go assembler form needs 2S/4S/2D, got %s", d.Asm()))
	}
	b.Op("VFMLA", m, n, d)
}

// WORD-encoded instructions (Arm order, destination first).

// FMLA emits d += n*m: native VFMLA for 2S/4S/2D, a WORD for 4H/8H.
func (b *Builder) FMLA(d, n, m Vec) {
	if d.Arr == H4 || d.Arr == H8 {
		b.word([]Operand{d, n, m})(EncFMLA(d, n, m))
		return
	}
	b.VFMLA(m, n, d)
}

// FMLAElem emits FMLA (by element) d += n*m[i].
func (b *Builder) FMLAElem(d, n Vec, m Elem) { b.word([]Operand{d, n, m})(EncFMLAElem(d, n, m)) }

// FMULElem emits FMUL (by element) d = n*m[i].
func (b *Builder) FMULElem(d, n Vec, m Elem) { b.word([]Operand{d, n, m})(EncFMULElem(d, n, m)) }

// FADD emits FADD (vector).
func (b *Builder) FADD(d, n, m Vec) { b.word([]Operand{d, n, m})(EncFADD(d, n, m)) }

// FMUL emits FMUL (vector).
func (b *Builder) FMUL(d, n, m Vec) { b.word([]Operand{d, n, m})(EncFMUL(d, n, m)) }

// FMAX emits FMAX (vector), NaN-propagating.
func (b *Builder) FMAX(d, n, m Vec) { b.word([]Operand{d, n, m})(EncFMAX(d, n, m)) }

// FMIN emits FMIN (vector), NaN-propagating.
func (b *Builder) FMIN(d, n, m Vec) { b.word([]Operand{d, n, m})(EncFMIN(d, n, m)) }

// FADDP emits FADDP (vector).
func (b *Builder) FADDP(d, n, m Vec) { b.word([]Operand{d, n, m})(EncFADDP(d, n, m)) }

// FSUB emits FSUB (vector), d = n - m.
func (b *Builder) FSUB(d, n, m Vec) { b.word([]Operand{d, n, m})(EncFSUB(d, n, m)) }

// FDIV emits FDIV (vector), d = n / m.
func (b *Builder) FDIV(d, n, m Vec) { b.word([]Operand{d, n, m})(EncFDIV(d, n, m)) }

// FMAXP emits FMAXP (vector), pairwise and NaN-propagating.
func (b *Builder) FMAXP(d, n, m Vec) { b.word([]Operand{d, n, m})(EncFMAXP(d, n, m)) }

// FMINP emits FMINP (vector), pairwise and NaN-propagating.
func (b *Builder) FMINP(d, n, m Vec) { b.word([]Operand{d, n, m})(EncFMINP(d, n, m)) }

// FNEG emits FNEG (vector).
func (b *Builder) FNEG(d, n Vec) { b.word([]Operand{d, n})(EncFNEG(d, n)) }

// FABS emits FABS (vector).
func (b *Builder) FABS(d, n Vec) { b.word([]Operand{d, n})(EncFABS(d, n)) }

// FSQRT emits FSQRT (vector).
func (b *Builder) FSQRT(d, n Vec) { b.word([]Operand{d, n})(EncFSQRT(d, n)) }

// FRINTN emits FRINTN (vector), round to integral with ties to even.
func (b *Builder) FRINTN(d, n Vec) { b.word([]Operand{d, n})(EncFRINTN(d, n)) }

// FCVTZS emits FCVTZS (vector), float to signed integer toward zero.
func (b *Builder) FCVTZS(d, n Vec) { b.word([]Operand{d, n})(EncFCVTZS(d, n)) }

// SSHR emits SSHR (vector, immediate), arithmetic shift right by sh.
func (b *Builder) SSHR(d, n Vec, sh int) { b.word([]Operand{d, n})(EncSSHR(d, n, sh)) }

// FCMEQ emits FCMEQ (vector, register): all ones where n == m, zero otherwise (and for NaN).
func (b *Builder) FCMEQ(d, n, m Vec) { b.word([]Operand{d, n, m})(EncFCMEQ(d, n, m)) }

// VUSHR shifts each integer lane of n right (logical) by sh into d (Go order: VUSHR $sh, n, d).
func (b *Builder) VUSHR(sh Imm, n, d Vec) { b.Op("VUSHR", sh, n, d) }

// VORR is d = n | m (Go order: VORR m, n, d).
func (b *Builder) VORR(m, n, d Vec) { b.Op("VORR", m, n, d) }

// VBIT is BIT d, n, m: d takes n's bits where m is one (Go order: VBIT m, n, d).
func (b *Builder) VBIT(m, n, d Vec) { b.Op("VBIT", m, n, d) }

// FCVTL emits FCVTL/FCVTL2 (chosen by n's arrangement).
func (b *Builder) FCVTL(d, n Vec) { b.word([]Operand{d, n})(EncFCVTL(d, n)) }

// FCVTN emits FCVTN/FCVTN2 (chosen by d's arrangement).
func (b *Builder) FCVTN(d, n Vec) { b.word([]Operand{d, n})(EncFCVTN(d, n)) }

// BFDOT emits BFDOT (vector).
func (b *Builder) BFDOT(d, n, m Vec) { b.word([]Operand{d, n, m})(EncBFDOT(d, n, m)) }

// BFDOTElem emits BFDOT (by element).
func (b *Builder) BFDOTElem(d, n Vec, m Elem) { b.word([]Operand{d, n, m})(EncBFDOTElem(d, n, m)) }

// Bytes renders all instructions, one per line.
func (b *Builder) Bytes() []byte {
	var buf bytes.Buffer
	for _, in := range b.insts {
		buf.WriteString(in.Line())
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}
