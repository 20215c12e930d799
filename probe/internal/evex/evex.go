// Package evex encodes the register form of the 512-bit EVEX instructions the probe's kernels need and
// the Go assembler lacks (VDPBF16PS, VFMADD231PH), for probe/internal/gen to emit as BYTE directives.
package evex

// Op is one EVEX.512.W0 instruction with three zmm operands and no mask.
type Op struct {
	PP    byte // implied prefix: 1 = 66, 2 = F3, 3 = F2
	Map   byte // opcode map: 2 = 0F38, 5 = MAP5, 6 = MAP6
	Code  byte // opcode byte
	Flops int  // floating-point operations one instruction does on a zmm register
}

var (
	// VDPBF16PS zmm1, zmm2, zmm3 (AVX512_BF16): EVEX.512.F3.0F38.W0 52 /r; per 32-bit lane two bf16
	// products added to the f32 accumulator: 16 lanes × 4 flops.
	VDPBF16PS = Op{PP: 2, Map: 2, Code: 0x52, Flops: 64}
	// VFMADD231PH zmm1, zmm2, zmm3 (AVX512_FP16): EVEX.512.66.MAP6.W0 B8 /r; 32 f16 lanes × 2 flops.
	VFMADD231PH = Op{PP: 1, Map: 6, Code: 0xb8, Flops: 64}
)

// Encode returns the bytes of op zmm(dst), zmm(src1), zmm(src2) in Intel operand order (the Go
// assembler's order is reversed). EVEX P0 = R X B R' 0 m m m (R, X, B, R' inverted), P1 = W vvvv 1 pp
// (vvvv = inverted src1), P2 = z L'L b V' aaa (L'L = 10 for 512 bits, V' = inverted src1 bit 4); then
// the opcode and ModRM = 11 reg rm. In the register form EVEX.X extends ModRM.rm to 32 registers.
func (op Op) Encode(dst, src1, src2 int) [6]byte {
	inv := func(x, bit int) byte { return byte((x>>bit)&1) ^ 1 }
	p0 := inv(dst, 3)<<7 | inv(src2, 4)<<6 | inv(src2, 3)<<5 | inv(dst, 4)<<4 | op.Map&7
	p1 := byte((^src1)&15)<<3 | 1<<2 | op.PP&3
	p2 := byte(0b10)<<5 | inv(src1, 4)<<3
	modrm := byte(0xc0) | byte(dst&7)<<3 | byte(src2&7)
	return [6]byte{0x62, p0, p1, p2, op.Code, modrm}
}
