package ptx

import "github.com/kgen-dev/kgen/ir"

// maxUnroll bounds the elements of a copy (or the multiply-adds of an MMA) that are unrolled into
// straight-line code; larger constant tiles and run-time sizes become loops.
const maxUnroll = 16

// copyTile lowers a Copy element by element (ir/copy.go gives its meaning): element (r, c) of the tile
// moves from Src.Off + Src.Layout(r, c) to Dst.Off + Dst.Layout(r, c), converted to Dst's type; outside
// the valid extents the destination gets zero and the source is not read.
//
// An async copy of contiguous rows goes in 16-byte chunks (copyChunks). Otherwise, an async copy whose
// element is 4 or 8 bytes and whose types agree becomes cp.async.ca with src-size
// 0 for the invalid elements (the hardware zero-fills them, and the source address is then the tensor's
// base, never out of bounds). Other async copies (2-byte elements: cp.async moves at least 4 bytes, and
// an odd leading dimension leaves f16 rows unaligned) are done synchronously: a copy that lands at
// issue is a valid schedule of an async one, since nothing may touch its destination before the wait
// that retires it. (The staging pass copies the tiles of 16-bit GEMM operands along the source's
// contiguous direction, transposed ones too — passes.SM80TLayout —, so that they take copyChunks.)
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
	if l.copyChunks(n, r, c, rows, cols, vr, vc, srcBase, elem) {
		return
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

// copyChunks lowers an async copy between contiguous rows (both layouts strided with unit column
// stride, no conversion, a constant number of columns) in 16-byte chunks: a row whose source and
// destination start 16-byte aligned at run time moves as cp.async.cg of 16 bytes per chunk, src-size
// counting only the chunk's valid elements (the hardware zero-fills the rest; a chunk with none reads
// from the tensor's base); any other row goes element by element (elem). It reports false, emitting
// nothing, when the copy does not qualify.
func (l *lowerer) copyChunks(n *ir.Copy, r, c *ir.Var, rows, cols ir.IExpr, vr, vc Operand, srcBase Reg, elem func()) bool {
	src, dst := n.Src.T, n.Dst.T
	size := src.Type.Size()
	cc, ok := cols.(ir.IConst)
	if !n.Async || src.Type != dst.Type || size == 0 || 16%size != 0 || !ok || cc.V < 16/size || cc.V/(16/size) > maxUnroll {
		return false
	}
	for _, lay := range []ir.Layout{n.Src.Layout, n.Dst.Layout} {
		s, ok := lay.(*ir.Strided)
		if !ok {
			return false
		}
		if one, ok := l.prep(s.ColStride).(ir.IConst); !ok || one.V != 1 {
			return false
		}
	}
	ce := 16 / size
	nch := cc.V / ce
	rowBody := func() {
		inR := l.e.Setp("lt", S64, l.ireg(ir.IVar{V: r}), vr)
		// The chunks of a row are 16 bytes apart: one alignment test for the row's start.
		l.consts[c] = 0
		da, _ := l.elemAddr(dst, ir.IAdd(n.Dst.Off, n.Dst.Layout.Offset(ir.IVar{V: r}, ir.IVar{V: c})))
		sa, _ := l.elemAddr(src, ir.IAdd(n.Src.Off, n.Src.Layout.Offset(ir.IVar{V: r}, ir.IVar{V: c})))
		delete(l.consts, c)
		dreg, sreg := l.addrReg(da), l.addrReg(sa)
		both := l.e.Bin("or", B64, dreg, sreg)
		low := l.e.Bin("and", B64, both, Imm(15))
		aligned := l.e.Setp("eq", S64, low, Imm(0))
		slow, done := l.e.NewLabel(), l.e.NewLabel()
		l.e.Bra(slow, &aligned, true)
		for ch := 0; ch < nch; ch++ {
			c0 := ch * ce
			// valid elements of the chunk: clamp(vc − c0, 0, ce), none outside the valid rows
			nv := l.e.Reg(S64)
			l.e.Op("sub", S64, nv, l.toReg(vc), Imm(c0)).Comment = "valid columns from the chunk on"
			nv = l.e.Bin("max", S64, nv, Imm(0))
			nv = l.e.Bin("min", S64, nv, Imm(ce))
			valid := l.e.Reg(S64)
			l.e.Emit(&Instr{Op: "selp", Types: []Type{S64}, Args: []Operand{valid, nv, Imm(0), inR}})
			bytes := l.e.Cvt(U32, S64, "", l.e.Bin("mul.lo", S64, valid, Imm(size)))
			any := l.e.Setp("gt", S64, valid, Imm(0))
			chunk := l.e.Bin("add", S64, sreg, Imm(int64(c0*size)))
			from := l.e.Reg(U64)
			l.e.Emit(&Instr{Op: "selp", Types: []Type{B64}, Args: []Operand{from, chunk, srcBase, any}})
			l.e.Emit(&Instr{Op: "cp.async.cg.shared.global", Args: []Operand{Addr{Base: dreg, Off: int64(c0 * size)}, Addr{Base: from}, Imm(16), bytes}})
		}
		if nch*ce < cc.V {
			l.serialFunc(c, ir.IConst{V: nch * ce}, cc, ir.IConst{V: 1}, elem)
		}
		l.e.Bra(done, nil, false)
		l.e.Place(slow)
		l.serialFunc(c, ir.IConst{V: 0}, cc, ir.IConst{V: 1}, elem)
		l.e.Place(done)
	}
	if cr, ok := rows.(ir.IConst); ok && cr.V <= maxUnroll {
		for i := 0; i < cr.V; i++ {
			l.consts[r] = i
			rowBody()
		}
		delete(l.consts, r)
		return true
	}
	l.serialFunc(r, ir.IConst{V: 0}, rows, ir.IConst{V: 1}, rowBody)
	return true
}
