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
	// The a and b registers the mma reads: filled by ldmatrix for a full tile whose shared layouts allow
	// it, else by the guarded element loads.
	a := make(Vec, 4)
	b := make(Vec, 2)
	for i := range a {
		a[i] = l.e.Reg(B32)
	}
	for i := range b {
		b[i] = l.e.Reg(B32)
	}
	generic := func() {
		for i, r := range frag(ir.FragSM80A(), n.A, vm, vk) {
			l.e.Op("mov", B32, a[i], r)
		}
		for i, r := range frag(ir.FragSM80B(), n.B, vk, vn) {
			l.e.Op("mov", B32, b[i], r)
		}
	}
	if l.rowMajor16(n.A, 8) && l.rowMajor16(n.B, 8) {
		// Full tile (the predicate is the same for every lane of the warp, so the warp stays converged
		// for ldmatrix and mma.sync): ldmatrix.x4 reads A (lane l gives row l%16, column 8·(l/16):
		// matrices 0..3 are a0a1, a2a3, a4a5, a6a7); ldmatrix.x2.trans reads B stored k-major (lane l
		// gives row k = l%16: the transposed 8×8 matrices are b0b1 and b2b3).
		full := l.e.Setp("ge", S64, l.toReg(vm), Imm(16))
		l.e.Emit(&Instr{Op: "setp.ge.and", Types: []Type{S64}, Args: []Operand{full, l.toReg(vn), Imm(8), full}})
		l.e.Emit(&Instr{Op: "setp.ge.and", Types: []Type{S64}, Args: []Operand{full, l.toReg(vk), Imm(16), full}})
		edge, end := l.e.NewLabel(), l.e.NewLabel()
		l.e.Bra(edge, &full, true)
		lv := ir.IVar{V: lane}
		aa, _ := l.elemAddr(n.A.T, ir.IAdd(n.A.Off, n.A.Layout.Offset(ir.IMod(lv, ir.IConst{V: 16}), ir.IMul(ir.IShr(lv, ir.IConst{V: 4}), ir.IConst{V: 8}))))
		l.e.Emit(&Instr{Op: "ldmatrix.sync.aligned.m8n8.x4.shared.b16", Args: []Operand{a, Addr{Base: l.addrReg(aa)}}})
		ba, _ := l.elemAddr(n.B.T, ir.IAdd(n.B.Off, n.B.Layout.Offset(ir.IMod(lv, ir.IConst{V: 16}), ir.IConst{V: 0})))
		l.e.Emit(&Instr{Op: "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16", Args: []Operand{b, Addr{Base: l.addrReg(ba)}}})
		l.e.Bra(end, nil, false)
		l.e.Place(edge)
		generic()
		l.e.Place(end)
	} else {
		generic()
	}
	l.e.Emit(&Instr{Op: "mma.sync.aligned.m16n8k16.row.col.f32" + it + it + ".f32",
		Args: []Operand{Vec(acc.regs), a, b, Vec(acc.regs)}})
}

// rowMajor16 reports whether operand o is a shared tile of 16-bit elements in a row-major layout whose
// rows start on 16-byte boundaries (ld and offset multiples of align elements): what ldmatrix reads.
func (l *lowerer) rowMajor16(o ir.Operand, align int) bool {
	s, ok := o.Layout.(*ir.Strided)
	if !ok || o.T.Space != ir.Shared || o.T.Type.Size() != 2 {
		return false
	}
	cs, ok1 := l.prep(s.ColStride).(ir.IConst)
	rs, ok2 := l.prep(s.RowStride).(ir.IConst)
	return ok1 && ok2 && cs.V == 1 && rs.V%align == 0 && divisible(l.prep(o.Off), align)
}

// divisible reports whether e is a multiple of d for every value of its variables (a sufficient
// syntactic check).
func divisible(e ir.IExpr, d int) bool {
	switch x := e.(type) {
	case ir.IConst:
		return x.V%d == 0
	case ir.IBin:
		switch x.Op {
		case '+', '-':
			return divisible(x.X, d) && divisible(x.Y, d)
		case '*':
			return divisible(x.X, d) || divisible(x.Y, d)
		case '<':
			if c, ok := x.Y.(ir.IConst); ok && c.V < 31 {
				return divisible(x.X, d) || (1<<c.V)%d == 0
			}
		}
	}
	return false
}
