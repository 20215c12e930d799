package ptx

import (
	"math"
)

// tf32 instructions of the emulator (emu.go), from the PTX ISA: cvt.rna.tf32.f32 and
// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32.

// roundTF32 is cvt.rna.tf32.f32: the f32 bits rounded to 10 mantissa bits, to nearest with ties away
// from zero (the 13 low bits cleared); NaN stays NaN, a carry out of the largest finite values gives
// infinity.
func roundTF32(v uint64) uint64 {
	x := uint32(v)
	if math.IsNaN(float64(math.Float32frombits(x))) {
		return uint64(x)
	}
	return uint64((x + 0x1000) &^ 0x1FFF)
}

// warpMMATF32 runs mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 for a warp ("Matrix Fragments
// for mma.m16n8k8", .tf32; g = lane>>2, t = lane%4): A a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4);
// B b0 (k = t, n = g), b1 (k = t+4, n = g); C and D as for m16n8k16. The unit reads only the tf32 bits
// of each operand (the 13 low bits are ignored). Products are summed exactly and rounded once to f32.
func (m *emulator) warpMMATF32(warp []*emuThread) {
	var A [16][8]float64
	var B [8][8]float64
	var C [16][8]float64
	in := warp[0].coll
	tf := func(v uint64) float64 { return float64(math.Float32frombits(uint32(v) &^ 0x1FFF)) }
	av, bv, cv, dv := in.Args[1].(Vec), in.Args[2].(Vec), in.Args[3].(Vec), in.Args[0].(Vec)
	if len(av) != 4 || len(bv) != 2 || len(cv) != 4 || len(dv) != 4 {
		emuError("%s: operand vectors of %d, %d, %d, %d registers", in.Op, len(dv), len(av), len(bv), len(cv))
	}
	for lane, th := range warp {
		g, t := lane>>2, lane%4
		for i := 0; i < 4; i++ {
			A[g+8*(i&1)][t+4*(i>>1)] = tf(m.reg(th, av[i]))
			C[g+8*(i>>1)][2*t+i&1] = float64(f32(m.reg(th, cv[i])))
		}
		for i := 0; i < 2; i++ {
			B[t+4*i][g] = tf(m.reg(th, bv[i]))
		}
	}
	for lane, th := range warp {
		g, t := lane>>2, lane%4
		for i := 0; i < 4; i++ {
			r, c := g+8*(i>>1), 2*t+i&1
			s := C[r][c]
			for k := 0; k < 8; k++ {
				s += A[r][k] * B[k][c]
			}
			m.set(th, dv[i], b32(float32(s)))
		}
	}
}
