package ptx

import "github.com/kgen-dev/kgen/ir"

// tf32MMA lowers a warp MMA marked TF32 (the schedule's `precision tf32`: f32 inputs rounded to tf32,
// f32 accumulation) to mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 (PTX ISA 7.0, sm_80): the
// lane's A and B fragment elements (ir.FragSM80TF32A: a0..a3; ir.FragSM80TF32B: b0, b1; positions from
// the IR's fragment maps) are loaded as f32, zero outside the valid extents, and rounded with
// cvt.rna.tf32.f32 — the rounding ir.RoundTF32Value gives the interpreter — into the .b32 operands;
// the accumulator is the m16n8 C fragment.
func (l *lowerer) tf32MMA(n *ir.MMA, acc *accTile) {
	if n.In != ir.F32 || n.Acc.Scope != ir.ScopeWarp {
		l.fail("a tf32 %s mma on %s inputs (only warp-scope m16n8k8 on f32)", n.Acc.Scope, n.In)
	}
	if k, ok := l.prep(n.K).(ir.IConst); !ok || k.V != 8 {
		l.fail("a tf32 mma with K %s (mma.sync m16n8k8 needs 8)", n.K)
	}
	lv := ir.IVar{V: l.laneVar(ir.ScopeWarp)}
	vm, vn, vk := l.validOr(n.ValidM, acc.m), l.validOr(n.ValidN, acc.n), l.validOr(n.ValidK, 8)
	frag := func(f *ir.Fragment, o ir.Operand, rows, cols Operand) Vec {
		out := make(Vec, f.Regs)
		for i := range out {
			row, col := f.Coord(lv, ir.IConst{V: i})
			r, c := l.ireg(row), l.ireg(col)
			ok := l.e.Setp("lt", S64, r, rows)
			l.e.Emit(&Instr{Op: "setp.lt.and", Types: []Type{S64}, Args: []Operand{ok, c, cols, ok}})
			a, sp := l.elemAddr(o.T, ir.IAdd(o.Off, o.Layout.Offset(row, col)))
			v := l.e.Mov(F32, FImm{V: 0, T: F32})
			l.e.Emit(&Instr{Guard: &ok, Op: "ld", Mods: []string{sp.String()}, Types: []Type{F32}, Args: []Operand{v, a}})
			out[i] = l.e.Reg(B32)
			l.e.Emit(&Instr{Op: "cvt.rna.tf32.f32", Args: []Operand{out[i], v}})
		}
		return out
	}
	a := frag(ir.FragSM80TF32A(), n.A, vm, vk)
	b := frag(ir.FragSM80TF32B(), n.B, vk, vn)
	d := Vec(acc.regs)
	l.e.Emit(&Instr{Op: "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", Args: []Operand{d, a, b, d}})
}
