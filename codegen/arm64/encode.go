package arm64

import (
	"fmt"
)

// Encoding is a 32-bit A64 instruction word with its GNU/LLVM disassembly text. The builder emits
// it as `WORD $0x........ // text` for instructions Go's assembler does not accept.
type Encoding struct {
	Word uint32
	Text string // LLVM syntax, e.g. "fmla v1.4s, v2.4s, v3.s[1]"
}

func errorf(format string, args ...any) error { return fmt.Errorf("arm64: "+format, args...) }

// fpArr classifies a floating-point arrangement: half reports FP16 lanes, sz is the
// single/double size bit, q the 128-bit bit.
func fpArr(a Arrangement) (half bool, sz, q uint32, ok bool) {
	switch a {
	case H4:
		return true, 0, 0, true
	case H8:
		return true, 0, 1, true
	case S2:
		return false, 0, 0, true
	case S4:
		return false, 0, 1, true
	case D2:
		return false, 1, 1, true
	}
	return false, 0, 0, false
}

func rrr(d, n, m VReg) uint32 { return uint32(m)<<16 | uint32(n)<<5 | uint32(d) }

// threeSameFP encodes the "Advanced SIMD three same" floating-point group
// (and its FP16 counterpart): op5 is the single/double opcode, op3 the FP16 opcode.
func threeSameFP(mn string, u, a, op5, op3 uint32, d, n, m Vec) (Encoding, error) {
	if d.Arr != n.Arr || d.Arr != m.Arr {
		return Encoding{}, errorf("%s: arrangements differ: %s, %s, %s", mn, d.Asm(), n.Asm(), m.Asm())
	}
	half, sz, q, ok := fpArr(d.Arr)
	if !ok {
		return Encoding{}, errorf("%s: bad arrangement %s", mn, d.Arr)
	}
	var w uint32
	if half {
		w = 0x0E400400 | q<<30 | u<<29 | a<<23 | op3<<11
	} else {
		w = 0x0E200400 | q<<30 | u<<29 | a<<23 | sz<<22 | op5<<11
	}
	w |= rrr(d.Reg, n.Reg, m.Reg)
	return Encoding{w, fmt.Sprintf("%s %s, %s, %s", mn, d.LLVM(), n.LLVM(), m.LLVM())}, nil
}

// EncFMLA encodes FMLA (vector): d += n*m lane-wise; arrangements 4H, 8H (FEAT_FP16), 2S, 4S, 2D.
func EncFMLA(d, n, m Vec) (Encoding, error) { return threeSameFP("fmla", 0, 0, 0x19, 0x1, d, n, m) }

// EncFADD encodes FADD (vector).
func EncFADD(d, n, m Vec) (Encoding, error) { return threeSameFP("fadd", 0, 0, 0x1A, 0x2, d, n, m) }

// EncFMUL encodes FMUL (vector).
func EncFMUL(d, n, m Vec) (Encoding, error) { return threeSameFP("fmul", 1, 0, 0x1B, 0x3, d, n, m) }

// EncFMAX encodes FMAX (vector). FMAX returns NaN if either operand is NaN (unlike FMAXNM).
func EncFMAX(d, n, m Vec) (Encoding, error) { return threeSameFP("fmax", 0, 0, 0x1E, 0x6, d, n, m) }

// EncFMIN encodes FMIN (vector); NaN-propagating like FMAX.
func EncFMIN(d, n, m Vec) (Encoding, error) { return threeSameFP("fmin", 0, 1, 0x1E, 0x6, d, n, m) }

// EncFADDP encodes FADDP (vector): pairwise add of the concatenation n:m.
func EncFADDP(d, n, m Vec) (Encoding, error) { return threeSameFP("faddp", 1, 0, 0x1A, 0x2, d, n, m) }

// byElemFP encodes the "Advanced SIMD vector x indexed element" floating-point group.
func byElemFP(mn string, op4 uint32, d, n Vec, m Elem) (Encoding, error) {
	if d.Arr != n.Arr {
		return Encoding{}, errorf("%s: arrangements differ: %s, %s", mn, d.Asm(), n.Asm())
	}
	half, sz, q, ok := fpArr(d.Arr)
	if !ok || int(m.Size) != d.Arr.LaneBytes() {
		return Encoding{}, errorf("%s: bad operands %s, %s, %s", mn, d.Asm(), n.Asm(), m.Asm())
	}
	var w uint32
	idx := uint32(m.Index)
	rm := uint32(m.Reg)
	switch {
	case half: // index H:L:M, Rm restricted to V0..V15
		if m.Index < 0 || m.Index > 7 || rm > 15 {
			return Encoding{}, errorf("%s: element %s out of range (V0..V15, [0..7])", mn, m.Asm())
		}
		w = 0x0F000000 | (idx>>2)<<11 | (idx>>1&1)<<21 | (idx&1)<<20 | rm<<16
	case sz == 0: // index H:L, Rm = M:Rm
		if m.Index < 0 || m.Index > 3 {
			return Encoding{}, errorf("%s: element %s out of range", mn, m.Asm())
		}
		w = 0x0F800000 | (idx>>1)<<11 | (idx&1)<<21 | rm<<16
	default: // double: index H, L = 0
		if m.Index < 0 || m.Index > 1 {
			return Encoding{}, errorf("%s: element %s out of range", mn, m.Asm())
		}
		w = 0x0F800000 | 1<<22 | idx<<11 | rm<<16
	}
	w |= q<<30 | op4<<12 | uint32(n.Reg)<<5 | uint32(d.Reg)
	return Encoding{w, fmt.Sprintf("%s %s, %s, %s", mn, d.LLVM(), n.LLVM(), m.LLVM())}, nil
}

// EncFMLAElem encodes FMLA (by element): d += n * m[i]; 4H/8H (m in V0..V15), 2S/4S, 2D.
func EncFMLAElem(d, n Vec, m Elem) (Encoding, error) { return byElemFP("fmla", 0x1, d, n, m) }

// EncFMULElem encodes FMUL (by element): d = n * m[i].
func EncFMULElem(d, n Vec, m Elem) (Encoding, error) { return byElemFP("fmul", 0x9, d, n, m) }

// EncFCVTL encodes FCVTL/FCVTL2 (widen): d.4S from n.4H (FCVTL) or n.8H (FCVTL2); d.2D from n.2S
// (FCVTL) or n.4S (FCVTL2).
func EncFCVTL(d, n Vec) (Encoding, error) {
	var sz, q uint32
	switch {
	case d.Arr == S4 && n.Arr == H4:
	case d.Arr == S4 && n.Arr == H8:
		q = 1
	case d.Arr == D2 && n.Arr == S2:
		sz = 1
	case d.Arr == D2 && n.Arr == S4:
		sz, q = 1, 1
	default:
		return Encoding{}, errorf("fcvtl: bad operands %s, %s", d.Asm(), n.Asm())
	}
	mn := "fcvtl"
	if q == 1 {
		mn = "fcvtl2"
	}
	w := 0x0E217800 | q<<30 | sz<<22 | uint32(n.Reg)<<5 | uint32(d.Reg)
	return Encoding{w, fmt.Sprintf("%s %s, %s", mn, d.LLVM(), n.LLVM())}, nil
}

// EncFCVTN encodes FCVTN/FCVTN2 (narrow, FPCR rounding): d.4H (FCVTN) or d.8H (FCVTN2, upper half)
// from n.4S; d.2S (FCVTN) or d.4S (FCVTN2) from n.2D.
func EncFCVTN(d, n Vec) (Encoding, error) {
	var sz, q uint32
	switch {
	case d.Arr == H4 && n.Arr == S4:
	case d.Arr == H8 && n.Arr == S4:
		q = 1
	case d.Arr == S2 && n.Arr == D2:
		sz = 1
	case d.Arr == S4 && n.Arr == D2:
		sz, q = 1, 1
	default:
		return Encoding{}, errorf("fcvtn: bad operands %s, %s", d.Asm(), n.Asm())
	}
	mn := "fcvtn"
	if q == 1 {
		mn = "fcvtn2"
	}
	w := 0x0E216800 | q<<30 | sz<<22 | uint32(n.Reg)<<5 | uint32(d.Reg)
	return Encoding{w, fmt.Sprintf("%s %s, %s", mn, d.LLVM(), n.LLVM())}, nil
}

// EncBFDOT encodes BFDOT (vector, FEAT_BF16): d.2S/4S += pairwise bf16 dot of n, m (.4H/.8H).
func EncBFDOT(d, n, m Vec) (Encoding, error) {
	var q uint32
	switch {
	case d.Arr == S2 && n.Arr == H4 && m.Arr == H4:
	case d.Arr == S4 && n.Arr == H8 && m.Arr == H8:
		q = 1
	default:
		return Encoding{}, errorf("bfdot: bad operands %s, %s, %s", d.Asm(), n.Asm(), m.Asm())
	}
	w := 0x2E40FC00 | q<<30 | rrr(d.Reg, n.Reg, m.Reg)
	return Encoding{w, fmt.Sprintf("bfdot %s, %s, %s", d.LLVM(), n.LLVM(), m.LLVM())}, nil
}

// EncBFDOTElem encodes BFDOT (by element): d.2S/4S += bf16 dot of n (.4H/.8H) with the bf16 pair
// m.2H[i] (i in 0..3), m.Size must be SizeS (the pair is addressed as a 32-bit lane).
func EncBFDOTElem(d, n Vec, m Elem) (Encoding, error) {
	var q uint32
	switch {
	case d.Arr == S2 && n.Arr == H4:
	case d.Arr == S4 && n.Arr == H8:
		q = 1
	default:
		return Encoding{}, errorf("bfdot: bad operands %s, %s", d.Asm(), n.Asm())
	}
	if m.Size != SizeS || m.Index < 0 || m.Index > 3 {
		return Encoding{}, errorf("bfdot: bad element %s (want Vm.S[0..3] = Vm.2H[i])", m.Asm())
	}
	i := uint32(m.Index)
	w := 0x0F40F000 | q<<30 | (i&1)<<21 | uint32(m.Reg)<<16 | (i>>1)<<11 | uint32(n.Reg)<<5 | uint32(d.Reg)
	return Encoding{w, fmt.Sprintf("bfdot %s, %s, v%d.2h[%d]", d.LLVM(), n.LLVM(), m.Reg, m.Index)}, nil
}

// EncFSUB encodes FSUB (vector): d = n - m.
func EncFSUB(d, n, m Vec) (Encoding, error) { return threeSameFP("fsub", 0, 1, 0x1A, 0x2, d, n, m) }

// EncFDIV encodes FDIV (vector): d = n / m (correctly rounded).
func EncFDIV(d, n, m Vec) (Encoding, error) { return threeSameFP("fdiv", 1, 0, 0x1F, 0x7, d, n, m) }

// EncFCMEQ encodes FCMEQ (vector, register): each lane of d is all ones where n == m (ordered: never
// for a NaN operand), else zero.
func EncFCMEQ(d, n, m Vec) (Encoding, error) { return threeSameFP("fcmeq", 0, 0, 0x1C, 0x4, d, n, m) }

// EncFMAXP encodes FMAXP (vector): pairwise NaN-propagating max of the concatenation n:m.
func EncFMAXP(d, n, m Vec) (Encoding, error) { return threeSameFP("fmaxp", 1, 0, 0x1E, 0x6, d, n, m) }

// EncFMINP encodes FMINP (vector): pairwise NaN-propagating min of the concatenation n:m.
func EncFMINP(d, n, m Vec) (Encoding, error) { return threeSameFP("fminp", 1, 1, 0x1E, 0x6, d, n, m) }

// twoRegMiscFP encodes the "Advanced SIMD two-register miscellaneous" floating-point group (and its
// FP16 counterpart): u and a select the operation with opcode (bits 16..12).
func twoRegMiscFP(mn string, u, a, opcode uint32, d, n Vec) (Encoding, error) {
	if d.Arr != n.Arr {
		return Encoding{}, errorf("%s: arrangements differ: %s, %s", mn, d.Asm(), n.Asm())
	}
	half, sz, q, ok := fpArr(d.Arr)
	if !ok {
		return Encoding{}, errorf("%s: bad arrangement %s", mn, d.Arr)
	}
	var w uint32
	if half {
		w = 0x0E780800 | q<<30 | u<<29 | a<<23 | opcode<<12
	} else {
		w = 0x0E200800 | q<<30 | u<<29 | a<<23 | sz<<22 | opcode<<12
	}
	w |= uint32(n.Reg)<<5 | uint32(d.Reg)
	return Encoding{w, fmt.Sprintf("%s %s, %s", mn, d.LLVM(), n.LLVM())}, nil
}

// EncFNEG encodes FNEG (vector): d = -n (sign bit flipped, NaN included).
func EncFNEG(d, n Vec) (Encoding, error) { return twoRegMiscFP("fneg", 1, 1, 0x0F, d, n) }

// EncFABS encodes FABS (vector): d = |n| (sign bit cleared).
func EncFABS(d, n Vec) (Encoding, error) { return twoRegMiscFP("fabs", 0, 1, 0x0F, d, n) }

// EncFSQRT encodes FSQRT (vector), correctly rounded.
func EncFSQRT(d, n Vec) (Encoding, error) { return twoRegMiscFP("fsqrt", 1, 1, 0x1F, d, n) }

// EncFRINTN encodes FRINTN (vector): round to integral, ties to even.
func EncFRINTN(d, n Vec) (Encoding, error) { return twoRegMiscFP("frintn", 0, 0, 0x18, d, n) }

// EncFCVTZS encodes FCVTZS (vector, integer): float to signed integer of the same width, toward zero.
func EncFCVTZS(d, n Vec) (Encoding, error) { return twoRegMiscFP("fcvtzs", 0, 1, 0x1B, d, n) }

// EncSSHR encodes SSHR (vector, immediate): arithmetic shift right of each lane by sh (1..lane bits);
// arrangements 8B..2D.
func EncSSHR(d, n Vec, sh int) (Encoding, error) {
	if d.Arr != n.Arr || d.Arr == D1 {
		return Encoding{}, errorf("sshr: bad operands %s, %s", d.Asm(), n.Asm())
	}
	esize := 8 * d.Arr.LaneBytes()
	if sh < 1 || sh > esize {
		return Encoding{}, errorf("sshr: shift %d out of range 1..%d", sh, esize)
	}
	var q uint32
	if d.Arr.Q() {
		q = 1
	}
	immhb := uint32(2*esize - sh) // immh:immb; the leading one of immh gives the lane size
	w := 0x0F000400 | q<<30 | immhb<<16 | uint32(n.Reg)<<5 | uint32(d.Reg)
	return Encoding{w, fmt.Sprintf("sshr %s, %s, #%d", d.LLVM(), n.LLVM(), sh)}, nil
}
