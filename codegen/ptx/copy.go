package ptx

import "github.com/kgen-dev/kgen/ir"

// maxUnroll bounds the elements of a copy (or the multiply-adds of an MMA) that are unrolled into
// straight-line code; larger constant tiles and run-time sizes become loops.
const maxUnroll = 16

// copyTile lowers a Copy element by element (ir/copy.go gives its meaning): element (r, c) of the tile
// moves from Src.Off + Src.Layout(r, c) to Dst.Off + Dst.Layout(r, c), converted to Dst's type; outside
// the valid extents the destination gets zero and the source is not read.
//
// An async copy whose element is 4 or 8 bytes and whose types agree becomes cp.async.ca with src-size
// 0 for the invalid elements (the hardware zero-fills them, and the source address is then the tensor's
// base, never out of bounds). Other async copies (2-byte elements: cp.async moves at least 4 bytes, and
// an odd leading dimension leaves f16 rows unaligned) are done synchronously: a copy that lands at
// issue is a valid schedule of an async one, since nothing may touch its destination before the wait
// that retires it.
func (l *lowerer) copyTile(n *ir.Copy) {
	l.e.Comment(n.String())
	rows, cols := l.prep(n.Rows), l.prep(n.Cols)
	var vr, vc Operand
	vr, vc = l.ival(n.Rows), l.ival(n.Cols)
	if n.ValidRows != nil {
		vr = l.ival(n.ValidRows)
	}
	if n.ValidCols != nil {
		vc = l.ival(n.ValidCols)
	}
	src, dst := n.Src.T, n.Dst.T
	async := n.Async && src.Type == dst.Type && (src.Type.Size() == 4 || src.Type.Size() == 8)
	if n.Async {
		if _, ok := l.shared[dst]; !ok {
			l.fail("async copy into %s, which is not a shared buffer of this block", dst.Name)
		}
	}
	srcBase, srcSpace := l.base(src)
	r, c := &ir.Var{Name: "r"}, &ir.Var{Name: "c"}
	elem := func() {
		inR := l.e.Setp("lt", S64, l.ireg(ir.IVar{V: r}), vr)
		ok := l.e.Reg(Pred)
		l.e.Emit(&Instr{Op: "setp.lt.and", Types: []Type{S64}, Args: []Operand{ok, l.ireg(ir.IVar{V: c}), vc, inR}})
		da, dsp := l.elemAddr(dst, ir.IAdd(n.Dst.Off, n.Dst.Layout.Offset(ir.IVar{V: r}, ir.IVar{V: c})))
		sa, _ := l.elemAddr(src, ir.IAdd(n.Src.Off, n.Src.Layout.Offset(ir.IVar{V: r}, ir.IVar{V: c})))
		size := int64(src.Type.Size())
		if async {
			// Invalid elements: src-size 0 (zero fill) from the tensor's base address.
			from := l.e.Reg(U64)
			l.e.Emit(&Instr{Op: "selp", Types: []Type{B64}, Args: []Operand{from, l.addrReg(sa), srcBase, ok}})
			n := l.e.Reg(U32)
			l.e.Emit(&Instr{Op: "selp", Types: []Type{U32}, Args: []Operand{n, Imm(size), Imm(0), ok}})
			l.e.Emit(&Instr{Op: "cp.async.ca.shared.global", Args: []Operand{da, Addr{Base: from}, Imm(size), n}})
			return
		}
		st := storageType(dst.Type)
		v := l.e.Reg(computeType(dst.Type))
		l.e.Op("mov", v.T, v, l.constOf(0, dst.Type))
		skip := l.e.NewLabel()
		l.e.Bra(skip, &ok, true)
		x := l.widen(l.e.Ld(srcSpace, storageType(src.Type), sa), src.Type)
		l.e.Op("mov", v.T, v, l.conv(x, src.Type, dst.Type))
		l.e.Place(skip)
		l.e.St(dsp, st, da, l.narrow(v, dst.Type, dst.Type))
	}
	cr, okr := rows.(ir.IConst)
	cc, okc := cols.(ir.IConst)
	if okr && okc && cr.V*cc.V <= maxUnroll {
		for i := 0; i < cr.V; i++ {
			l.consts[r], l.consts[c] = i, 0
			l.addAnchor(dst, ir.IAdd(n.Dst.Off, n.Dst.Layout.Offset(ir.IVar{V: r}, ir.IVar{V: c})))
			l.addAnchor(src, ir.IAdd(n.Src.Off, n.Src.Layout.Offset(ir.IVar{V: r}, ir.IVar{V: c})))
		}
		defer l.clearAnchors()
		for i := 0; i < cr.V; i++ {
			for j := 0; j < cc.V; j++ {
				l.consts[r], l.consts[c] = i, j
				elem()
			}
		}
		delete(l.consts, r)
		delete(l.consts, c)
		return
	}
	one, zero := ir.IConst{V: 1}, ir.IConst{V: 0}
	l.serialFunc(r, zero, rows, one, func() { l.serialFunc(c, zero, cols, one, elem) })
}

// addrReg is an address as one register.
func (l *lowerer) addrReg(a Addr) Reg {
	if a.Off == 0 {
		if r, ok := a.Base.(Reg); ok {
			return r
		}
	}
	base := a.Base
	if s, ok := base.(Sym); ok {
		base = l.e.Mov(U64, s)
	}
	return l.e.Bin("add", S64, base, Imm(a.Off))
}
