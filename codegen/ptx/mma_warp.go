package ptx

import (
	"github.com/kgen-dev/kgen/ir"
)

// Warp-scope MMA: mma.sync.aligned.m16n8k16.row.col with f16 or bf16 inputs and f32 accumulation
// (sm_80). The accumulator is the C fragment (ir.FragSM80C: 4 f32 registers per lane); each MMA loads
// the lane's A and B fragment elements (ir.FragSM80A, FragSM80B: which (row, col) register i of lane l
// holds) from the operands' layouts, zero outside the valid extents, packs them two per .b32 (lower
// index in the low half, as the PTX ISA's fragment tables give), and issues one mma.sync. Element
// positions come from the IR's fragment maps, so the code is derived from the same data the
// interpreter runs.

// laneVar is a variable bound to the thread's lane in its warp (%laneid), as a .s64.
func (l *lowerer) laneVar() *ir.Var {
	if l.lane == nil {
		l.lane = &ir.Var{Name: "laneid"}
	}
	id := l.e.Mov(U32, Sym("%laneid"))
	l.vars[l.lane] = l.e.Cvt(S64, U32, "", id)
	return l.lane
}

func (l *lowerer) warpAccDecl(a *ir.Accum, m, n int, t Type) {
	c := ir.FragSM80C()
	if a.Layout == nil || a.Layout.Name != c.Name || m != 16 || n != 8 || t != F32 {
		l.fail("a warp accumulator %dx%d %v with fragment %v (only the f32 m16n8 C fragment of mma.sync)", m, n, t, a.Layout)
	}
	acc := &accTile{m: m, n: n, t: t}
	for i := 0; i < c.Regs; i++ {
		acc.regs = append(acc.regs, l.e.Mov(F32, FImm{V: 0, T: F32}))
	}
	l.accs[a] = acc
}

func (l *lowerer) warpMMA(n *ir.MMA, acc *accTile) {
	if k, ok := l.prep(n.K).(ir.IConst); !ok || k.V != 16 {
		l.fail("a warp mma with K %s (mma.sync m16n8k16 needs 16)", n.K)
	}
	var it string
	switch n.In {
	case ir.F16:
		it = ".f16"
	case ir.BF16:
		it = ".bf16"
	default:
		l.fail("a warp mma on %s inputs (f16 and bf16 only; tf32 not yet)", n.In)
	}
	lane := l.laneVar()
	vm, vn, vk := l.validOr(n.ValidM, 16), l.validOr(n.ValidN, 8), l.validOr(n.ValidK, 16)
	// frag loads the lane's registers of fragment f of operand o, zero where (row, col) is outside
	// rows×cols valid, two 16-bit elements per .b32.
	frag := func(f *ir.Fragment, o ir.Operand, rows, cols Operand) []Reg {
		var halves []Reg
		for i := 0; i < f.Regs; i++ {
			row, col := f.Coord(ir.IVar{V: lane}, ir.IConst{V: i})
			r, c := l.ireg(row), l.ireg(col)
			ok := l.e.Setp("lt", S64, r, rows)
			l.e.Emit(&Instr{Op: "setp.lt.and", Types: []Type{S64}, Args: []Operand{ok, c, cols, ok}})
			a, sp := l.elemAddr(o.T, ir.IAdd(o.Off, o.Layout.Offset(row, col)))
			h := l.e.Mov(B16, Imm(0))
			l.e.Emit(&Instr{Guard: &ok, Op: "ld", Mods: []string{sp.String()}, Types: []Type{B16}, Args: []Operand{h, a}})
			halves = append(halves, h)
		}
		var regs []Reg
		for i := 0; i+1 < len(halves); i += 2 {
			r := l.e.Reg(B32)
			l.e.Op("mov", B32, r, Vec{halves[i], halves[i+1]})
			regs = append(regs, r)
		}
		return regs
	}
	a := frag(ir.FragSM80A(), n.A, vm, vk)
	b := frag(ir.FragSM80B(), n.B, vk, vn)
	l.e.Emit(&Instr{Op: "mma.sync.aligned.m16n8k16.row.col.f32" + it + it + ".f32",
		Args: []Operand{Vec(acc.regs), Vec(a), Vec(b), Vec(acc.regs)}})
}
