package emu

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// AVX512_BF16. The Go assembler has no mnemonic for VDPBF16PS, so kgen's
// generators write it as its EVEX bytes on one line ("BYTE $0x62; BYTE …").
// decodeBytes turns such a line back into the instruction it encodes, for the
// one form kgen emits (register operands, no writemask, no broadcast); any
// other byte sequence is refused.

// decodeBytes returns the Go assembler text of the instruction a line of
// BYTE directives encodes.
func decodeBytes(line string) (string, error) {
	var b []byte
	for _, st := range strings.Split(line, ";") {
		f := strings.Fields(st)
		if len(f) != 2 || f[0] != "BYTE" || !strings.HasPrefix(f[1], "$") {
			return "", fmt.Errorf("%q is not a BYTE directive", strings.TrimSpace(st))
		}
		v, err := strconv.ParseUint(f[1][1:], 0, 8)
		if err != nil {
			return "", fmt.Errorf("BYTE %s: %v", f[1], err)
		}
		b = append(b, byte(v))
	}
	if len(b) != 6 || b[0] != 0x62 {
		return "", fmt.Errorf("BYTE sequence % x is not a modeled instruction (only EVEX VDPBF16PS zmm, zmm, zmm)", b)
	}
	p0, p1, p2, op, modrm := b[1], b[2], b[3], b[4], b[5]
	bit := func(x byte, i uint) int { return int(x>>i) & 1 }
	switch {
	case p0&0x0c != 0 || p0&3 != 2: // reserved bits, map 0F38
		return "", fmt.Errorf("EVEX % x: not opcode map 0F38", b)
	case p1&0x80 != 0 || p1&4 == 0 || p1&3 != 2: // W0, fixed bit, pp = F3
		return "", fmt.Errorf("EVEX % x: not W0.F3", b)
	case p2&0x80 != 0 || p2&0x60 != 0x40 || p2&0x10 != 0 || p2&7 != 0:
		return "", fmt.Errorf("EVEX % x: zeroing, a vector length other than 512, broadcast or a writemask is not modeled", b)
	case op != 0x52:
		return "", fmt.Errorf("EVEX opcode %#x is not modeled (only 0x52, VDPBF16PS)", op)
	case modrm>>6 != 3:
		return "", fmt.Errorf("EVEX % x: a memory operand is not modeled", b)
	}
	reg := int(modrm>>3&7) | (1-bit(p0, 7))<<3 | (1-bit(p0, 4))<<4
	rm := int(modrm&7) | (1-bit(p0, 5))<<3 | (1-bit(p0, 6))<<4
	vvvv := int(^p1>>3&15) | (1-bit(p2, 3))<<4
	// Go operand order: the r/m source, the vvvv source, the destination.
	return fmt.Sprintf("VDPBF16PS Z%d, Z%d, Z%d", rm, vvvv, reg), nil
}

// dpbf16 is one 32-bit lane of VDPBF16PS (Intel SDM): acc += src1.hi·src2.hi,
// then acc += src1.lo·src2.lo, each bf16 product exact, each sum rounded to
// nearest even once with an unbounded exponent, a result below 2^-126 in
// magnitude flushed to a zero of its sign (after rounding); bf16 denormal
// inputs and a denormal accumulator read as zeros of their sign; MXCSR is
// ignored. A NaN result is the first NaN among src1.lo, src2.lo, src1.hi,
// src2.hi, acc, quieted, or the default NaN when the operation itself is
// invalid (Inf·0, Inf-Inf). These are the semantics measured on a Zen 5
// against the hardware (codegen/amd64/internal/mk TestBF16Special, emu probes).
func dpbf16(acc, src1, src2 uint32) uint32 {
	bf := func(h uint32) uint32 { // bf16 → f32 bits, denormals read as zero
		x := h << 16
		if x&0x7f800000 == 0 {
			return x & 0x80000000
		}
		return x
	}
	a1, a0, b1, b0 := bf(src1>>16), bf(src1&0xffff), bf(src2>>16), bf(src2&0xffff)
	if acc&0x7f800000 == 0 {
		acc &= 0x80000000
	}
	for _, x := range []uint32{a0, b0, a1, b1, acc} {
		if isNaN32(x) {
			return quiet32(x)
		}
	}
	step := func(acc, a, b uint32) uint32 {
		p := float64(math.Float32frombits(a)) * float64(math.Float32frombits(b)) // exact: 16 significant bits
		s := addRoundFTZ(float64(math.Float32frombits(acc)), p)
		if math.IsNaN(s) {
			return 0xffc00000
		}
		return math.Float32bits(float32(s))
	}
	return step(step(acc, a1, b1), a0, b0)
}

func isNaN32(x uint32) bool { return x&0x7f800000 == 0x7f800000 && x&0x007fffff != 0 }

// addRoundFTZ returns a + p rounded once to f32 (nearest even, exponent
// unbounded: no gradual underflow), flushed to a zero of its sign when the
// rounded magnitude is below 2^-126. a is an f32 value, p exact in float64.
func addRoundFTZ(a, p float64) float64 {
	s := a + p
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return s
	}
	bb := s - a
	e := (a - (s - bb)) + (p - bb) // s + e == a + p exactly (TwoSum)
	scale := 1.0
	if math.Abs(s) < 0x1p-100 { // round as if normal: scale up, then f32's rounding has 24 bits
		scale = 0x1p100
	}
	ss, es := s*scale, e*scale
	r := float32(ss)
	if es != 0 { // float32(ss) rounds a tie of ss itself; the error term breaks that tie
		lo, hi := r, r
		if float64(r) < ss {
			hi = math.Nextafter32(r, float32(math.Inf(1)))
		} else if float64(r) > ss {
			lo = math.Nextafter32(r, float32(math.Inf(-1)))
		}
		mid := func(x, y float32) float64 {
			if math.IsInf(float64(y), 1) {
				return math.MaxFloat32 + 0x1p103
			}
			if math.IsInf(float64(x), -1) {
				return -math.MaxFloat32 - 0x1p103
			}
			return (float64(x) + float64(y)) / 2
		}
		if lo != hi && mid(lo, hi) == ss {
			if es > 0 {
				r = hi
			} else {
				r = lo
			}
		}
	}
	v := float64(r) / scale
	if math.Abs(v) < 0x1p-126 {
		return math.Copysign(0, v)
	}
	return v
}
