// Package arm64 is kgen's arm64 (NEON) backend: a typed instruction builder that emits Go (Plan 9)
// assembly, 32-bit encodings for the NEON instructions Go's assembler lacks, and the GEMM
// microkernel generator that implements docs/MICROKERNEL.md.
package arm64

import (
	"fmt"
	"strings"
)

// Operand is anything that can appear as an instruction operand. Asm returns its Plan 9 spelling.
type Operand interface {
	Asm() string
}

// GPR is a general-purpose register R0..R30, or ZR / RSP.
type GPR uint8

// General-purpose registers. R18 (platform), R26 (closure context), R27 (assembler temporary),
// R28 (g), R29 (FP) and R30 (LR) exist as values but the kernel generator never allocates them.
const (
	R0 GPR = iota
	R1
	R2
	R3
	R4
	R5
	R6
	R7
	R8
	R9
	R10
	R11
	R12
	R13
	R14
	R15
	R16
	R17
	R18
	R19
	R20
	R21
	R22
	R23
	R24
	R25
	R26
	R27
	R28
	R29
	R30
	ZR  // zero register (encoding 31 in data-processing instructions)
	RSP // stack pointer (encoding 31 in addressing)
)

// Reserved reports whether the Go toolchain reserves r (R18, R26..R30, RSP); the kernel
// generator never allocates a reserved register.
func (r GPR) Reserved() bool {
	return r == R18 || r >= R26 && r <= R30 || r == RSP
}

// Asm implements Operand.
func (r GPR) Asm() string {
	switch {
	case r <= R30:
		return fmt.Sprintf("R%d", uint8(r))
	case r == ZR:
		return "ZR"
	case r == RSP:
		return "RSP"
	}
	panic(fmt.Sprintf("arm64: bad GPR %d", uint8(r)))
}

// VReg is a SIMD&FP register V0..V31.
type VReg uint8

// V returns vector register n (0..31).
func V(n int) VReg {
	if n < 0 || n > 31 {
		panic(fmt.Sprintf("arm64: bad vector register V%d", n))
	}
	return VReg(n)
}

// Num is the register number 0..31.
func (v VReg) Num() int { return int(v) }

// Arrangement is a vector arrangement (lane count × lane size).
type Arrangement uint8

// Vector arrangements.
const (
	B8 Arrangement = iota + 1
	B16
	H4
	H8
	S2
	S4
	D1
	D2
)

var arrInfo = map[Arrangement]struct {
	name  string
	lanes int
	esize int // bytes per lane
}{
	B8: {"B8", 8, 1}, B16: {"B16", 16, 1}, H4: {"H4", 4, 2}, H8: {"H8", 8, 2},
	S2: {"S2", 2, 4}, S4: {"S4", 4, 4}, D1: {"D1", 1, 8}, D2: {"D2", 2, 8},
}

// String is the Go spelling (S4) of the arrangement.
func (a Arrangement) String() string { return arrInfo[a].name }

// Lanes is the number of lanes.
func (a Arrangement) Lanes() int { return arrInfo[a].lanes }

// LaneBytes is the size of one lane in bytes.
func (a Arrangement) LaneBytes() int { return arrInfo[a].esize }

// Q reports whether the arrangement fills 128 bits.
func (a Arrangement) Q() bool { return a.Lanes()*a.LaneBytes() == 16 }

// llvm is the GNU/LLVM spelling ("4s").
func (a Arrangement) llvm() string {
	return fmt.Sprintf("%d%s", a.Lanes(), strings.ToLower(a.String()[:1]))
}

// Vec is a vector register with an arrangement: V3.S4.
type Vec struct {
	Reg VReg
	Arr Arrangement
}

// Arrangement constructors.
func (v VReg) B8() Vec  { return Vec{v, B8} }
func (v VReg) B16() Vec { return Vec{v, B16} }
func (v VReg) H4() Vec  { return Vec{v, H4} }
func (v VReg) H8() Vec  { return Vec{v, H8} }
func (v VReg) S2() Vec  { return Vec{v, S2} }
func (v VReg) S4() Vec  { return Vec{v, S4} }
func (v VReg) D1() Vec  { return Vec{v, D1} }
func (v VReg) D2() Vec  { return Vec{v, D2} }

// Asm implements Operand.
func (v Vec) Asm() string { return fmt.Sprintf("V%d.%s", v.Reg, v.Arr) }

// LLVM is the GNU/LLVM spelling ("v3.4s").
func (v Vec) LLVM() string { return fmt.Sprintf("v%d.%s", v.Reg, v.Arr.llvm()) }

// ElemSize is a lane size for element operands.
type ElemSize uint8

// Lane sizes.
const (
	SizeB ElemSize = 1
	SizeH ElemSize = 2
	SizeS ElemSize = 4
	SizeD ElemSize = 8
)

func (s ElemSize) letter() string {
	switch s {
	case SizeB:
		return "B"
	case SizeH:
		return "H"
	case SizeS:
		return "S"
	case SizeD:
		return "D"
	}
	panic("arm64: bad element size")
}

// Elem is one lane of a vector register: V3.S[1].
type Elem struct {
	Reg   VReg
	Size  ElemSize
	Index int
}

// Element constructors.
func (v VReg) B(i int) Elem { return Elem{v, SizeB, i} }
func (v VReg) H(i int) Elem { return Elem{v, SizeH, i} }
func (v VReg) S(i int) Elem { return Elem{v, SizeS, i} }
func (v VReg) D(i int) Elem { return Elem{v, SizeD, i} }

// Asm implements Operand.
func (e Elem) Asm() string { return fmt.Sprintf("V%d.%s[%d]", e.Reg, e.Size.letter(), e.Index) }

// LLVM is the GNU/LLVM spelling ("v3.s[1]").
func (e Elem) LLVM() string {
	return fmt.Sprintf("v%d.%s[%d]", e.Reg, strings.ToLower(e.Size.letter()), e.Index)
}

// FReg is the scalar view of a SIMD&FP register (F0 is the low lane of V0) used by FMOVS/FMOVD/FCMP.
type FReg uint8

// F returns scalar FP register n.
func F(n int) FReg { return FReg(V(n)) }

// Asm implements Operand.
func (f FReg) Asm() string { return fmt.Sprintf("F%d", uint8(f)) }

// VecList is a register list for VLD1/VST1: [V0.S4, V1.S4]. Registers must be consecutive (mod 32)
// with one arrangement, 1 to 4 of them.
type VecList []Vec

// Asm implements Operand.
func (l VecList) Asm() string {
	s := make([]string, len(l))
	for i, v := range l {
		s[i] = v.Asm()
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// Bytes is the number of bytes the list transfers.
func (l VecList) Bytes() int {
	n := 0
	for _, v := range l {
		n += v.Arr.Lanes() * v.Arr.LaneBytes()
	}
	return n
}

func (l VecList) check() error {
	if len(l) < 1 || len(l) > 4 {
		return fmt.Errorf("arm64: register list of %d registers", len(l))
	}
	for i := 1; i < len(l); i++ {
		if l[i].Arr != l[0].Arr || int(l[i].Reg) != (int(l[0].Reg)+i)%32 {
			return fmt.Errorf("arm64: register list %s not consecutive with one arrangement", l.Asm())
		}
	}
	return nil
}

// Imm is an immediate: $4.
type Imm int64

// Asm implements Operand.
func (i Imm) Asm() string { return fmt.Sprintf("$%d", int64(i)) }

// FZero is the floating-point immediate 0.0 accepted by FCMPS/FCMPD: $(0.0).
type FZero struct{}

// Asm implements Operand.
func (FZero) Asm() string { return "$(0.0)" }

// Mem is a memory operand: Off(Base), or with Post set a post-increment access whose increment is
// the access size (VLD1.P 32(R1), [...]): in Go syntax the offset of a post-indexed VLD1/VST1 is the
// increment. With Index set it is a register-offset address (Base)(Index<<Shift).
type Mem struct {
	Base  GPR
	Off   int64
	Index GPR
	Shift uint8
	HasIx bool
}

// Addr returns Off(Base).
func Addr(base GPR, off int64) Mem { return Mem{Base: base, Off: off} }

// Indexed returns (base)(index<<shift).
func Indexed(base, index GPR, shift uint8) Mem {
	return Mem{Base: base, Index: index, Shift: shift, HasIx: true}
}

// Asm implements Operand.
func (m Mem) Asm() string {
	if m.HasIx {
		if m.Shift == 0 {
			return fmt.Sprintf("(%s)(%s)", m.Base.Asm(), m.Index.Asm())
		}
		return fmt.Sprintf("(%s)(%s<<%d)", m.Base.Asm(), m.Index.Asm(), m.Shift)
	}
	if m.Off == 0 {
		return fmt.Sprintf("(%s)", m.Base.Asm())
	}
	return fmt.Sprintf("%d(%s)", m.Off, m.Base.Asm())
}

// Arg is an ABI0 stack argument: name+off(FP).
type Arg struct {
	Name string
	Off  int
}

// Asm implements Operand.
func (a Arg) Asm() string { return fmt.Sprintf("%s+%d(FP)", a.Name, a.Off) }

// Label is a branch target.
type Label string

// Asm implements Operand.
func (l Label) Asm() string { return string(l) }

// PrfOp is a PRFM operation.
type PrfOp string

// Prefetch operations.
const (
	PLDL1KEEP PrfOp = "PLDL1KEEP"
	PLDL2KEEP PrfOp = "PLDL2KEEP"
	PLDL1STRM PrfOp = "PLDL1STRM"
	PSTL1KEEP PrfOp = "PSTL1KEEP"
	PSTL2KEEP PrfOp = "PSTL2KEEP"
)

// Asm implements Operand.
func (p PrfOp) Asm() string { return string(p) }
