package ptx

import (
	"strings"

	"github.com/kgen-dev/kgen/f16"
)

// Warp-collective instructions of the emulator (emu.go): mma.sync and ldmatrix.

// warpMMA runs mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 for a warp, with the
// fragment layouts of the PTX ISA ("Matrix Fragments for mma.m16n8k16 with floating point type"),
// written here independently of ir/layout.go: g = lane>>2, t = lane%4; A a0a1 (g, 2t+{0,1}), a2a3
// (g+8, 2t+{0,1}), a4a5 (g, 2t+8+{0,1}), a6a7 (g+8, 2t+8+{0,1}); B b0b1 (k = 2t+{0,1}, n = g), b2b3
// (k = 2t+8+{0,1}, n = g); C, D c0c1 (g, 2t+{0,1}), c2c3 (g+8, 2t+{0,1}); two 16-bit elements per
// .b32, the lower index in the low half. Products are summed exactly (f64) and rounded once to f32.
func (m *emulator) warpMMA(warp []*emuThread, in *Instr) {
	if in.Op == "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" {
		m.warpMMATF32(warp)
		return
	}
	if in.Op != "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" && in.Op != "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" {
		emuError("unknown instruction %s", in.Op)
	}
	bf := strings.Contains(in.Op, "bf16")
	half := func(v uint64, hi bool) float64 {
		h := uint16(v)
		if hi {
			h = uint16(v >> 16)
		}
		if bf {
			return float64(f16.BF16(h).Float32())
		}
		return float64(f16.F16(h).Float32())
	}
	var A [16][16]float64
	var B [16][8]float64
	var C [16][8]float64
	for lane, th := range warp {
		g, t := lane>>2, lane%4
		av, bv, cv := in.Args[1].(Vec), in.Args[2].(Vec), in.Args[3].(Vec)
		for i := 0; i < 8; i++ {
			row := g + 8*((i>>1)&1)
			col := 2*t + i&1 + 8*(i>>2)
			A[row][col] = half(m.reg(th, av[i/2]), i%2 == 1)
		}
		for i := 0; i < 4; i++ {
			B[2*t+i&1+8*(i>>1)][g] = half(m.reg(th, bv[i/2]), i%2 == 1)
		}
		for i := 0; i < 4; i++ {
			C[g+8*(i>>1)][2*t+i&1] = float64(f32(m.reg(th, cv[i])))
		}
	}
	for lane, th := range warp {
		g, t := lane>>2, lane%4
		dv := in.Args[0].(Vec)
		for i := 0; i < 4; i++ {
			r, c := g+8*(i>>1), 2*t+i&1
			s := C[r][c]
			for k := 0; k < 16; k++ {
				s += A[r][k] * B[k][c]
			}
			m.set(th, dv[i], b32(float32(s)))
		}
	}
}

// ldmatrix runs ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{,.trans}.shared.b16 for a warp (PTX ISA
// "ldmatrix"): the lanes 8i..8i+7 give the row addresses of matrix i; lane l receives in its register i
// the elements (row l/4, columns 2·(l%4) and +1) of matrix i, or with .trans those of its transpose
// (rows 2·(l%4) and +1 of column l/4), the lower column in the low half.
func (m *emulator) ldmatrix(warp []*emuThread, in *Instr) {
	tok := strings.Split(in.Op, ".")
	var count int
	switch {
	case len(tok) > 4 && tok[4] == "x1":
		count = 1
	case len(tok) > 4 && tok[4] == "x2":
		count = 2
	case len(tok) > 4 && tok[4] == "x4":
		count = 4
	default:
		emuError("unknown instruction %s", in.Op)
	}
	trans := strings.Contains(in.Op, ".trans.")
	if !strings.HasSuffix(in.Op, ".shared.b16") || !strings.HasPrefix(in.Op, "ldmatrix.sync.aligned.m8n8.") {
		emuError("unknown instruction %s", in.Op)
	}
	rowAddr := make([]uint64, 8*count)
	for i := range rowAddr {
		a := in.Args[1].(Addr)
		rowAddr[i] = m.value(warp[i], a.Base, B64) + uint64(a.Off)
		if rowAddr[i]%16 != 0 {
			emuError("ldmatrix: row address %#x of lane %d is not 16-byte aligned", rowAddr[i], i)
		}
	}
	if emuBanks != nil {
		for i := 0; i < count; i++ {
			emuBanks.ldmatrix = append(emuBanks.ldmatrix, rowAddr[8*i:8*i+8])
		}
	}
	elem := func(th *emuThread, mat, r, c int) uint64 {
		b, i, off := m.mem(th, "shared", Addr{Base: Imm(int64(rowAddr[8*mat+r] + uint64(2*c)))}, 2)
		m.sharedAccess(th, i, off, 2, false)
		return load(b.data[off:], 2)
	}
	for l, th := range warp {
		regs := in.Args[0].(Vec)
		if len(regs) != count {
			emuError("ldmatrix .x%d with %d registers", count, len(regs))
		}
		for i := 0; i < count; i++ {
			var lo, hi uint64
			if trans {
				lo, hi = elem(th, i, 2*(l%4), l/4), elem(th, i, 2*(l%4)+1, l/4)
			} else {
				lo, hi = elem(th, i, l/4, 2*(l%4)), elem(th, i, l/4, 2*(l%4)+1)
			}
			m.set(th, regs[i], lo|hi<<16)
		}
	}
}
