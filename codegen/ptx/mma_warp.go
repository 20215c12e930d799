package ptx

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
)

// Tensor-core MMA with mma.sync.aligned.m16n8k16.row.col, f16 or bf16 inputs and f32 accumulation
// (sm_80, and sm_90 without wgmma):
//   - warp scope: the accumulator is the C fragment (ir.FragSM80C: 4 f32 registers per lane), one
//     mma.sync per MMA;
//   - warpgroup scope (the sm_90a pipeline's m64nNk16 tiles, ir.FragWGMMAAcc): warp v of the group
//     holds rows 16v..16v+15 and, per 8-column slab j, the C fragment of an m16n8 tile in registers
//     4j..4j+3 — exactly N/8 mma.sync per warp, sharing the warp's A fragment. This runs the sm_90a
//     kernels on Hopper through HMMA until the wgmma path exists.
//
// Each MMA loads the lane's A and B fragment elements (ir.FragSM80A, FragSM80B: which (row, col)
// register i of lane l holds) from the operands' layouts, zero outside the valid extents, packs them
// two per .b32 (lower index in the low half, as the PTX ISA's fragment tables give); a full tile in
// 16-byte aligned shared tiles, row- or column-major (ldmatrixMajor), is read with ldmatrix instead,
// .trans where the stored 8×8 matrices are the transpose of the fragment's. Element positions come from
// the IR's fragment maps, so the code is derived from the same data the interpreter runs.

// laneVar binds a variable to the thread's index within an instance of scope (its lane in the warp,
// or its thread in the warpgroup: the block's linear thread index modulo 128) and returns it.
func (l *lowerer) laneVar(scope ir.Scope) *ir.Var {
	if scope == ir.ScopeWarpgroup {
		v := &ir.Var{Name: "wgthread"}
		x := l.e.Cvt(S64, U32, "", l.e.Mov(U32, Sym("%tid.x")))
		y := l.e.Cvt(S64, U32, "", l.e.Mov(U32, Sym("%tid.y")))
		z := l.e.Cvt(S64, U32, "", l.e.Mov(U32, Sym("%tid.z")))
		lin := l.e.Bin("mul.lo", S64, z, Imm(l.e.MaxTid[1]))
		lin = l.e.Bin("add", S64, lin, y)
		lin = l.e.Bin("mul.lo", S64, lin, Imm(l.e.MaxTid[0]))
		lin = l.e.Bin("add", S64, lin, x)
		l.vars[v] = l.e.Bin("and", B64, lin, Imm(127))
		return v
	}
	if l.lane == nil {
		l.lane = &ir.Var{Name: "laneid"}
	}
	id := l.e.Mov(U32, Sym("%laneid"))
	l.vars[l.lane] = l.e.Cvt(S64, U32, "", id)
	return l.lane
}

func (l *lowerer) warpAccDecl(a *ir.Accum, m, n int, t Type) {
	ok := a.Layout != nil && t == F32
	switch a.Scope {
	case ir.ScopeWarp:
		ok = ok && a.Layout.Name == ir.FragSM80C().Name && m == 16 && n == 8
	case ir.ScopeWarpgroup:
		f := ir.FragWGMMAAcc(n)
		ok = ok && f != nil && a.Layout.Name == f.Name && m == 64 && l.e.Threads()%128 == 0
	default:
		ok = false
	}
	if !ok {
		l.fail("a %s accumulator %dx%d %v with fragment %v (only the f32 m16n8 C fragment of mma.sync, or the m64nNk16 warpgroup fragment in blocks of whole warpgroups)", a.Scope, m, n, t, a.Layout)
	}
	acc := &accTile{m: m, n: n, t: t}
	for i := 0; i < a.Layout.Regs; i++ {
		acc.regs = append(acc.regs, l.e.Mov(F32, FImm{V: 0, T: F32}))
	}
	l.accs[a] = acc
}

func (l *lowerer) warpMMA(n *ir.MMA, acc *accTile) {
	if l.wgmmaOK(n) {
		l.wgmma(n, acc)
		return
	}
	if n.TF32 {
		l.tf32MMA(n, acc)
		return
	}
	if k, ok := l.prep(n.K).(ir.IConst); !ok || k.V != 16 {
		l.fail("a %s mma with K %s (mma.sync m16n8k16 needs 16)", n.Acc.Scope, n.K)
	}
	var it string
	switch n.In {
	case ir.F16:
		it = ".f16"
	case ir.BF16:
		it = ".bf16"
	default:
		l.fail("a %s mma on %s inputs (f16 and bf16; f32 only as tf32 under `precision tf32`)", n.Acc.Scope, n.In)
	}
	lane := l.laneVar(ir.ScopeWarp)
	lv := ir.IVar{V: lane}
	// The warp's rows of the tile: 0 for a warp MMA, 16·(warp in the group) for a warpgroup one.
	var row0 ir.IExpr = ir.IConst{V: 0}
	slabs := 1
	if n.Acc.Scope == ir.ScopeWarpgroup {
		row0 = ir.IMul(ir.IShr(ir.IVar{V: l.laneVar(ir.ScopeWarpgroup)}, ir.IConst{V: 5}), ir.IConst{V: 16})
		slabs = acc.n / 8
	}
	vm, vn, vk := l.validOr(n.ValidM, acc.m), l.validOr(n.ValidN, acc.n), l.validOr(n.ValidK, 16)
	// frag loads the lane's registers of fragment f of operand o, its (row, col) moved by (dr, dc),
	// zero where outside rows×cols valid, two 16-bit elements per .b32, into dst.
	frag := func(dst Vec, f *ir.Fragment, o ir.Operand, dr, dc ir.IExpr, rows, cols Operand) {
		var halves []Reg
		for i := 0; i < f.Regs; i++ {
			row, col := f.Coord(lv, ir.IConst{V: i})
			row, col = ir.IAdd(row, dr), ir.IAdd(col, dc)
			r, c := l.ireg(row), l.ireg(col)
			ok := l.e.Setp("lt", S64, r, rows)
			l.e.Emit(&Instr{Op: "setp.lt.and", Types: []Type{S64}, Args: []Operand{ok, c, cols, ok}})
			a, sp := l.elemAddr(o.T, ir.IAdd(o.Off, o.Layout.Offset(row, col)))
			h := l.e.Mov(B16, Imm(0))
			l.e.Emit(&Instr{Guard: &ok, Op: "ld", Mods: []string{sp.String()}, Types: []Type{B16}, Args: []Operand{h, a}})
			halves = append(halves, h)
		}
		for i := range dst {
			l.e.Op("mov", B32, dst[i], Vec{halves[2*i], halves[2*i+1]})
		}
	}
	// The a and b registers the mma.sync instructions read: filled by ldmatrix for a full tile whose
	// shared layouts allow it, else by the guarded element loads.
	newVec := func(n int) Vec {
		v := make(Vec, n)
		for i := range v {
			v[i] = l.e.Reg(B32)
		}
		return v
	}
	a := newVec(4)
	b := make([]Vec, slabs)
	for j := range b {
		b[j] = newVec(2)
	}
	generic := func() {
		frag(a, ir.FragSM80A(), n.A, row0, ir.IConst{V: 0}, vm, vk)
		for j := range b {
			frag(b[j], ir.FragSM80B(), n.B, ir.IConst{V: 0}, ir.IConst{V: 8 * j}, vk, vn)
		}
	}
	aRows, okA := l.ldmatrixMajor(n.A, 8)
	bRows, okB := l.ldmatrixMajor(n.B, 8)
	if okA && okB {
		// Full tile (the predicate is the same for every thread of the scope, so each warp stays
		// converged for ldmatrix and mma.sync). Lanes 8q..8q+7 give the 8 row addresses of matrix q,
		// a 16-byte run of the stage each; lane l receives (l/4, 2(l%4)+{0,1}) of each matrix, or of
		// its transpose with .trans.
		//   A (matrices 0..3 = a0a1, a2a3, a4a5, a6a7 at (m, k) = (0, 0), (8, 0), (0, 8), (8, 8)):
		//     stored along k (row-major): lane l points at row l%16, column 8·(l/16), no .trans;
		//     stored along m: at column 8·(l/16) + l%8, rows 8·((l/8)%2) on, .trans.
		//   B per 16×8 slab (matrices 0, 1 = b0b1, b2b3 at k = 0, 8):
		//     stored along n (k-major): lane l points at row k = l%16, .trans;
		//     stored along k: at column n = l%8, rows k = 8·((l/8)%2) on, no .trans.
		full := l.e.Setp("ge", S64, l.toReg(vm), Imm(acc.m))
		l.e.Emit(&Instr{Op: "setp.ge.and", Types: []Type{S64}, Args: []Operand{full, l.toReg(vn), Imm(acc.n), full}})
		l.e.Emit(&Instr{Op: "setp.ge.and", Types: []Type{S64}, Args: []Operand{full, l.toReg(vk), Imm(16), full}})
		edge, end := l.e.NewLabel(), l.e.NewLabel()
		l.e.Bra(edge, &full, true)
		r16 := ir.IMod(lv, ir.IConst{V: 16})
		r8 := ir.IMod(lv, ir.IConst{V: 8})
		half := ir.IMul(ir.IMod(ir.IShr(lv, ir.IConst{V: 3}), ir.IConst{V: 2}), ir.IConst{V: 8}) // 8·((l/8)%2)
		hi := ir.IMul(ir.IShr(lv, ir.IConst{V: 4}), ir.IConst{V: 8})                             // 8·(l/16)
		ldm := func(x int, trans bool) string {
			op := fmt.Sprintf("ldmatrix.sync.aligned.m8n8.x%d", x)
			if trans {
				op += ".trans"
			}
			return op + ".shared.b16"
		}
		ar, ac := ir.IAdd(row0, r16), hi
		if !aRows {
			ar, ac = ir.IAdd(row0, half), ir.IAdd(hi, r8)
		}
		aa, _ := l.elemAddr(n.A.T, ir.IAdd(n.A.Off, n.A.Layout.Offset(ar, ac)))
		l.e.Emit(&Instr{Op: ldm(4, !aRows), Args: []Operand{a, Addr{Base: l.addrReg(aa)}}})
		for j := range b {
			br, bc := r16, ir.IExpr(ir.IConst{V: 8 * j})
			if !bRows {
				br, bc = half, ir.IAdd(ir.IConst{V: 8 * j}, r8)
			}
			ba, _ := l.elemAddr(n.B.T, ir.IAdd(n.B.Off, n.B.Layout.Offset(br, bc)))
			l.e.Emit(&Instr{Op: ldm(2, bRows), Args: []Operand{b[j], Addr{Base: l.addrReg(ba)}}})
		}
		l.e.Bra(end, nil, false)
		l.e.Place(edge)
		generic()
		l.e.Place(end)
	} else {
		generic()
	}
	op := "mma.sync.aligned.m16n8k16.row.col.f32" + it + it + ".f32"
	for j := range b {
		d := Vec(acc.regs[4*j : 4*j+4])
		in := l.e.Emit(&Instr{Op: op, Args: []Operand{d, a, b[j], d}})
		if slabs > 1 {
			in.Comment = fmt.Sprintf("columns %d..%d", 8*j, 8*j+7)
		}
	}
}

// ldmatrixMajor reports whether operand o is a shared tile of 16-bit elements that ldmatrix can read —
// 16-byte runs contiguous along its rows (row-major: rows true) or down its columns (column-major:
// rows false), each starting on a 16-byte boundary (the leading dimension and the offset multiples of
// align elements) — and which. The layout is strided, or a swizzle of one (the sm_80 stages,
// passes.SM80ALayout and SM80TView) that XORs only bits at or above the 16-byte chunk (M ≥ log2
// align) and whose operand offset is a multiple of its period 2^(B+M+S), so Off + swizzle(o) =
// swizzle(Off + o): each lane's row address comes from o.Layout.Offset like every other access.
func (l *lowerer) ldmatrixMajor(o ir.Operand, align int) (rows, ok bool) {
	lay := o.Layout
	if z, ok := lay.(*ir.Swizzle); ok {
		if 1<<z.M < align || !divisible(l.prep(o.Off), 1<<(z.B+z.M+z.S)) {
			return false, false
		}
		lay = z.Of
	}
	s, ok := lay.(*ir.Strided)
	if !ok || o.T.Space != ir.Shared || o.T.Type.Size() != 2 || !divisible(l.prep(o.Off), align) {
		return false, false
	}
	cs, ok1 := l.prep(s.ColStride).(ir.IConst)
	rs, ok2 := l.prep(s.RowStride).(ir.IConst)
	switch {
	case !ok1 || !ok2:
		return false, false
	case cs.V == 1 && rs.V%align == 0:
		return true, true
	case rs.V == 1 && cs.V%align == 0:
		return false, true
	}
	return false, false
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
