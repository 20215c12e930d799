package amd64

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// This file generates the transpose tile routines of the transpose slots (codegen.TransposeSlot,
// ir.Transpose):
//
//	func Name(rows, cols int, src *T, lds int, dst *T, ldd int)
//
// sets dst[c*ldd+r] = src[r*lds+c] for r < rows, c < cols (strides in elements). The tile is walked in
// bands of V source rows (V = 8 f32, 4 f64: one ymm register per row segment); each band in V×V blocks
// transposed in registers (f32: VUNPCKLPS/VUNPCKHPS, VSHUFPS, VPERM2F128; f64: VUNPCKLPD/VUNPCKHPD,
// VPERM2F128), then its last cols%V columns one at a time (the V elements of a column gathered into one
// register with VMOVSS/VINSERTPS or VMOVSD/VMOVHPD and VINSERTF128, stored as one V-element run of dst);
// the last rows%V rows are copied one element at a time. Only the elements of the tile are read or
// written (no vector access reaches past the last row or column). rows <= 0 or cols <= 0 copies
// nothing.
//
// The AVX-512 routines (transposeF32AVX512, transposeF64AVX512; AVX-512F only) use V×V blocks of zmm
// rows (V = 16 f32, 8 f64): VUNPCKLPS/VUNPCKHPS (VUNPCKLPD/VUNPCKHPD) and, for f32, VSHUFPS transpose
// inside each 128-bit lane, then two rounds of VSHUFF32X4 move the 128-bit pieces across lanes. Edges
// use opmasks instead of scalar code: a block with nr < V rows or nc < V columns (the band's last
// columns, the tile's last rows) loads its nr rows with a zero-masking load under K1 = (1<<nc)-1 and
// stores its nc destination rows under K2 = (1<<nr)-1, so no element outside the tile is read or
// written (masked loads are fault suppressing); the rows nr..V-1 of such a block are never loaded.

// TransposeKernel is one transpose tile routine to generate.
type TransposeKernel struct {
	Name string // Go identifier of the generated function
	Elem string // F32 or F64
	ISA  string // AVX2 ("" too) or AVX512
}

// NewTransposeKernel returns the AVX2 routine of elem, named transposeF32AVX2 or transposeF64AVX2.
func NewTransposeKernel(elem string) TransposeKernel { return NewTransposeKernelISA(elem, AVX2) }

// NewTransposeKernelISA returns the routine of elem for isa (AVX2 or AVX512), named
// transpose<F32|F64><AVX2|AVX512>.
func NewTransposeKernelISA(elem, isa string) TransposeKernel {
	n := "F32"
	if elem == F64 {
		n = "F64"
	}
	return TransposeKernel{Name: "transpose" + n + isaSuffix(isa), Elem: elem, ISA: isa}
}

// Block is the register block edge V: the tile is transposed in V×V blocks.
func (k TransposeKernel) Block() int {
	if k.ISA == AVX512 {
		return 64 / elemSize(k.Elem)
	}
	return 32 / elemSize(k.Elem)
}

// Validate checks the kernel description.
func (k TransposeKernel) Validate() error {
	if !isIdent(k.Name) {
		return fmt.Errorf("amd64: bad transpose kernel name %q", k.Name)
	}
	if k.Elem != F32 && k.Elem != F64 {
		return fmt.Errorf("amd64: transpose %s: bad element type %q", k.Name, k.Elem)
	}
	if k.ISA != "" && k.ISA != AVX2 && k.ISA != AVX512 {
		return fmt.Errorf("amd64: transpose %s: bad ISA %q", k.Name, k.ISA)
	}
	return nil
}

var (
	tpRows = reg.R8  // source rows left
	tpCols = reg.R9  // cols
	tpSrc  = reg.RSI // first source row of the band
	tpLds  = reg.R10 // lds in bytes
	tpLds3 = reg.R11 // 3·lds
	tpDst  = reg.RDI // dst + (first row of the band)·esz
	tpLdd  = reg.R12 // ldd in bytes
	tpLdd3 = reg.R13 // 3·ldd
	tpSp   = reg.RAX // source of the current block
	tpDp   = reg.RCX // destination of the current block
	tpTmp  = reg.RDX // rows/columns 4..7 of a block; scalar copies
	tpCnt  = reg.RBX // columns left in the band
)

func ix(base, index reg.Register, scale uint8) operand.Mem {
	return operand.Mem{Base: base, Index: index, Scale: scale}
}

// emitTranspose generates k into c.
func emitTranspose(c *build.Context, k TransposeKernel) {
	if k.ISA == AVX512 {
		emitTransposeZ(c, k)
		return
	}
	f64, esz, v := transposeHeader(c, k, "AVX2", "register blocks;")
	c.LEAQ(ix(tpLds, tpLds, 2), tpLds3)
	c.LEAQ(ix(tpLdd, tpLdd, 2), tpLdd3)
	c.CMPQ(tpCols, operand.Imm(0))
	c.JLE(lbl("done"))

	c.Comment(fmt.Sprintf("Bands of %d source rows.", v))
	c.Label("band")
	c.CMPQ(tpRows, operand.Imm(uint64(v)))
	c.JLT(lbl("rowedge"))
	c.MOVQ(tpSrc, tpSp)
	c.MOVQ(tpDst, tpDp)
	c.MOVQ(tpCols, tpCnt)
	c.Label("block")
	c.CMPQ(tpCnt, operand.Imm(uint64(v)))
	c.JLT(lbl("coledge"))
	if f64 {
		transposeBlock64(c)
	} else {
		transposeBlock32(c)
	}
	c.ADDQ(operand.U32(v*esz), tpSp)
	c.LEAQ(ix(tpDp, tpLdd, uint8(v)), tpDp)
	c.SUBQ(operand.U32(v), tpCnt)
	c.JMP(lbl("block"))

	c.Comment("The band's last cols%V columns: one column (V elements of dst) at a time.")
	c.Label("coledge")
	c.TESTQ(tpCnt, tpCnt)
	c.JZ(lbl("nextband"))
	c.Label("column")
	if f64 {
		transposeColumn64(c)
	} else {
		transposeColumn32(c)
	}
	c.ADDQ(operand.U32(esz), tpSp)
	c.ADDQ(tpLdd, tpDp)
	c.DECQ(tpCnt)
	c.JNZ(lbl("column"))
	c.Label("nextband")
	c.LEAQ(ix(tpSrc, tpLds, uint8(v)), tpSrc)
	c.ADDQ(operand.U32(v*esz), tpDst)
	c.SUBQ(operand.U32(v), tpRows)
	c.JMP(lbl("band"))

	c.Comment("The last rows%V rows, one element at a time.")
	c.Label("rowedge")
	c.CMPQ(tpRows, operand.Imm(0))
	c.JLE(lbl("done"))
	c.Label("row")
	c.MOVQ(tpSrc, tpSp)
	c.MOVQ(tpDst, tpDp)
	c.MOVQ(tpCols, tpCnt)
	c.Label("elem")
	if f64 {
		c.MOVQ(mem(tpSp, 0), tpTmp)
		c.MOVQ(tpTmp, mem(tpDp, 0))
	} else {
		c.MOVL(mem(tpSp, 0), tpTmp.As32())
		c.MOVL(tpTmp.As32(), mem(tpDp, 0))
	}
	c.ADDQ(operand.U32(esz), tpSp)
	c.ADDQ(tpLdd, tpDp)
	c.DECQ(tpCnt)
	c.JNZ(lbl("elem"))
	c.ADDQ(tpLds, tpSrc)
	c.ADDQ(operand.U32(esz), tpDst)
	c.DECQ(tpRows)
	c.JNZ(lbl("row"))
	c.Label("done")
	c.VZEROUPPER()
	c.RET()
}

// rowAddr is the address of row q (0..3) of a block from base, with the stride ld and 3·ld in registers.
func rowAddr(base, ld, ld3 reg.Register, q int) operand.Mem {
	switch q {
	case 0:
		return mem(base, 0)
	case 3:
		return ix(base, ld3, 1)
	}
	return ix(base, ld, uint8(q))
}

// transposeBlock32 transposes the 8×8 f32 block at tpSp (rows tpLds apart) into tpDp (rows tpLdd apart).
func transposeBlock32(c *build.Context) {
	y := func(i int) reg.VecPhysical { return vecReg(false, i) }
	for q := 0; q < 8; q++ {
		base := tpSp
		if q == 4 {
			c.LEAQ(ix(tpSp, tpLds, 4), tpTmp)
		}
		if q >= 4 {
			base = tpTmp
		}
		c.VMOVUPS(rowAddr(base, tpLds, tpLds3, q%4), y(q))
	}
	// t(2p) = unpacklo(r(2p), r(2p+1)), t(2p+1) = unpackhi: Y8..Y15
	for p := 0; p < 4; p++ {
		c.VUNPCKLPS(y(2*p+1), y(2*p), y(8+2*p))
		c.VUNPCKHPS(y(2*p+1), y(2*p), y(9+2*p))
	}
	// s = shuffles of t pairs into Y0..Y7: s0,s1 from t0,t2; s2,s3 from t1,t3; s4..s7 likewise from t4..t7.
	for h := 0; h < 2; h++ {
		t0, t1, t2, t3 := y(8+4*h), y(9+4*h), y(10+4*h), y(11+4*h)
		c.VSHUFPS(operand.U8(0x44), t2, t0, y(4*h))
		c.VSHUFPS(operand.U8(0xEE), t2, t0, y(4*h+1))
		c.VSHUFPS(operand.U8(0x44), t3, t1, y(4*h+2))
		c.VSHUFPS(operand.U8(0xEE), t3, t1, y(4*h+3))
	}
	// column q (q < 4) = low lanes of s(q), s(q+4); column q+4 = their high lanes: Y8..Y15
	for q := 0; q < 4; q++ {
		c.VPERM2F128(operand.U8(0x20), y(q+4), y(q), y(8+q))
		c.VPERM2F128(operand.U8(0x31), y(q+4), y(q), y(12+q))
	}
	for q := 0; q < 8; q++ {
		base := tpDp
		if q == 4 {
			c.LEAQ(ix(tpDp, tpLdd, 4), tpTmp)
		}
		if q >= 4 {
			base = tpTmp
		}
		c.VMOVUPS(y(8+q), rowAddr(base, tpLdd, tpLdd3, q%4))
	}
}

// transposeBlock64 transposes the 4×4 f64 block at tpSp into tpDp.
func transposeBlock64(c *build.Context) {
	y := func(i int) reg.VecPhysical { return vecReg(false, i) }
	for q := 0; q < 4; q++ {
		c.VMOVUPD(rowAddr(tpSp, tpLds, tpLds3, q), y(q))
	}
	c.VUNPCKLPD(y(1), y(0), y(4))
	c.VUNPCKHPD(y(1), y(0), y(5))
	c.VUNPCKLPD(y(3), y(2), y(6))
	c.VUNPCKHPD(y(3), y(2), y(7))
	c.VPERM2F128(operand.U8(0x20), y(6), y(4), y(0))
	c.VPERM2F128(operand.U8(0x20), y(7), y(5), y(1))
	c.VPERM2F128(operand.U8(0x31), y(6), y(4), y(2))
	c.VPERM2F128(operand.U8(0x31), y(7), y(5), y(3))
	for q := 0; q < 4; q++ {
		c.VMOVUPD(y(q), rowAddr(tpDp, tpLdd, tpLdd3, q))
	}
}

// transposeColumn32 copies one source column of the band (8 elements, rows tpLds apart from tpSp) to
// the 8 consecutive elements at tpDp.
func transposeColumn32(c *build.Context) {
	x0, x1 := xmmOf(vecReg(false, 0)), xmmOf(vecReg(false, 1))
	c.VMOVSS(mem(tpSp, 0), x0)
	c.VINSERTPS(operand.U8(0x10), rowAddr(tpSp, tpLds, tpLds3, 1), x0, x0)
	c.VINSERTPS(operand.U8(0x20), rowAddr(tpSp, tpLds, tpLds3, 2), x0, x0)
	c.VINSERTPS(operand.U8(0x30), rowAddr(tpSp, tpLds, tpLds3, 3), x0, x0)
	c.LEAQ(ix(tpSp, tpLds, 4), tpTmp)
	c.VMOVSS(mem(tpTmp, 0), x1)
	c.VINSERTPS(operand.U8(0x10), rowAddr(tpTmp, tpLds, tpLds3, 1), x1, x1)
	c.VINSERTPS(operand.U8(0x20), rowAddr(tpTmp, tpLds, tpLds3, 2), x1, x1)
	c.VINSERTPS(operand.U8(0x30), rowAddr(tpTmp, tpLds, tpLds3, 3), x1, x1)
	c.VINSERTF128(operand.U8(1), x1, vecReg(false, 0), vecReg(false, 0))
	c.VMOVUPS(vecReg(false, 0), mem(tpDp, 0))
}

// transposeColumn64 copies one source column of the band (4 elements) to the 4 elements at tpDp.
func transposeColumn64(c *build.Context) {
	x0, x1 := xmmOf(vecReg(false, 0)), xmmOf(vecReg(false, 1))
	c.VMOVSD(mem(tpSp, 0), x0)
	c.VMOVHPD(rowAddr(tpSp, tpLds, tpLds3, 1), x0, x0)
	c.VMOVSD(rowAddr(tpSp, tpLds, tpLds3, 2), x1)
	c.VMOVHPD(rowAddr(tpSp, tpLds, tpLds3, 3), x1, x1)
	c.VINSERTF128(operand.U8(1), x1, vecReg(false, 0), vecReg(false, 0))
	c.VMOVUPD(vecReg(false, 0), mem(tpDp, 0))
}

// Registers of the AVX-512 routines (the others as above): the destination of the current block, the
// band's rows and a block's columns (both ≤ V) for the edge masks.
var (
	tpzDp = reg.R11
	tpzNr = reg.R13
	tpzNc = reg.RCX // also the shift count of the masks
)

// emitTransposeZ generates the AVX-512 routine k into c (see the file comment).
func emitTransposeZ(c *build.Context, k TransposeKernel) {
	f64, esz, v := transposeHeader(c, k, "AVX-512", "zmm blocks, opmasks at the edges;")
	c.CMPQ(tpCols, operand.Imm(0))
	c.JLE(lbl("done"))
	// mask sets k to the low n bits (n in tpzNc, 1..V).
	mask := func(k reg.Register) {
		c.MOVL(operand.U32(1), tpTmp.As32())
		c.SHLL(reg.CL, tpTmp.As32())
		c.DECL(tpTmp.As32())
		c.KMOVW(tpTmp.As32(), k)
	}
	// advance moves p on by V rows of stride ld (bytes).
	advance := func(p, ld reg.Register) {
		c.MOVQ(ld, tpTmp)
		c.SHLQ(operand.U8(log2(v)), tpTmp)
		c.ADDQ(tpTmp, p)
	}

	c.Comment(fmt.Sprintf("Bands of %d source rows; a band of fewer (the last) runs as edge blocks.", v))
	c.Label("band")
	c.CMPQ(tpRows, operand.Imm(0))
	c.JLE(lbl("done"))
	c.MOVQ(tpSrc, tpSp)
	c.MOVQ(tpDst, tpzDp)
	c.MOVQ(tpCols, tpCnt)
	c.MOVQ(tpRows, tpzNr)
	c.CMPQ(tpRows, operand.Imm(uint64(v)))
	c.JLT(lbl("edge"))
	c.MOVQ(operand.U32(v), tpzNr)
	c.Label("block")
	c.CMPQ(tpCnt, operand.Imm(uint64(v)))
	c.JLT(lbl("lastcols"))
	transposeBlockZ(c, f64, v, false)
	c.ADDQ(operand.U32(v*esz), tpSp)
	advance(tpzDp, tpLdd)
	c.SUBQ(operand.U32(v), tpCnt)
	c.JMP(lbl("block"))
	c.Label("lastcols")
	c.TESTQ(tpCnt, tpCnt)
	c.JZ(lbl("nextband"))

	c.Comment("Edge blocks: nr rows (K2 masks the stores), nc = min(columns left, V) columns (K1 masks the loads).")
	c.Label("edge")
	c.MOVQ(tpzNr, tpzNc)
	mask(reg.K2)
	c.Label("edgeblock")
	c.MOVQ(tpCnt, tpzNc)
	c.CMPQ(tpzNc, operand.Imm(uint64(v)))
	c.JLE(lbl("ncok"))
	c.MOVQ(operand.U32(v), tpzNc)
	c.Label("ncok")
	mask(reg.K1)
	transposeBlockZ(c, f64, v, true)
	c.ADDQ(operand.U32(v*esz), tpSp)
	advance(tpzDp, tpLdd)
	c.SUBQ(operand.U32(v), tpCnt)
	c.JG(lbl("edgeblock"))

	c.Label("nextband")
	advance(tpSrc, tpLds)
	c.ADDQ(operand.U32(v*esz), tpDst)
	c.SUBQ(operand.U32(v), tpRows)
	c.JMP(lbl("band"))
	c.Label("done")
	c.VZEROUPPER()
	c.RET()
}

// transposeBlockZ transposes the V×V block at tpSp (rows tpLds apart) into tpzDp (rows tpLdd apart).
// An edge block loads only its tpzNr rows, each under K1, and stores only its tpzNc rows, each under K2.
func transposeBlockZ(c *build.Context, f64 bool, v int, edge bool) {
	z := func(i int) reg.VecPhysical { return vecReg(true, i) }
	load, store := c.VMOVUPS, c.VMOVUPS
	loadZ := c.VMOVUPS_Z
	if f64 {
		load, store, loadZ = c.VMOVUPD, c.VMOVUPD, c.VMOVUPD_Z
	}
	// Rows two at a time from tpTmp: (tpTmp) and (tpTmp)(ld*1).
	c.MOVQ(tpSp, tpTmp)
	for q := 0; q < v; q++ {
		if q > 0 && q%2 == 0 {
			c.LEAQ(ix(tpTmp, tpLds, 2), tpTmp)
		}
		m := mem(tpTmp, 0)
		if q%2 == 1 {
			m = ix(tpTmp, tpLds, 1)
		}
		if !edge {
			load(m, z(q))
			continue
		}
		if q > 0 {
			c.CMPQ(tpzNr, operand.Imm(uint64(q)))
			c.JLE(lbl("eloaded"))
		}
		loadZ(m, reg.K1, z(q))
	}
	if edge {
		c.Label("eloaded")
	}
	if f64 {
		transpose8x8Z(c)
	} else {
		transpose16x16Z(c)
	}
	c.MOVQ(tpzDp, tpTmp)
	for q := 0; q < v; q++ {
		if q > 0 && q%2 == 0 {
			c.LEAQ(ix(tpTmp, tpLdd, 2), tpTmp)
		}
		m := mem(tpTmp, 0)
		if q%2 == 1 {
			m = ix(tpTmp, tpLdd, 1)
		}
		if !edge {
			store(z(q), m)
			continue
		}
		if q > 0 {
			c.CMPQ(tpzNc, operand.Imm(uint64(q)))
			c.JLE(lbl("estored"))
		}
		store(z(q), reg.K2, m)
	}
	if edge {
		c.Label("estored")
	}
}

// transpose16x16Z transposes the f32 rows Z0..Z15 into the columns Z0..Z15 (Z16..Z31 scratch).
func transpose16x16Z(c *build.Context) {
	z := func(i int) reg.VecPhysical { return vecReg(true, i) }
	// Per 128-bit lane, as transposeBlock32: t(2p), t(2p+1) = unpack lo/hi of rows 2p, 2p+1 (Z16..Z31);
	// then s(4h+q) (Z0..Z15) is column q of the lane's 4×4 piece of rows 4h..4h+3.
	for p := 0; p < 8; p++ {
		c.VUNPCKLPS(z(2*p+1), z(2*p), z(16+2*p))
		c.VUNPCKHPS(z(2*p+1), z(2*p), z(17+2*p))
	}
	for h := 0; h < 4; h++ {
		t0, t1, t2, t3 := z(16+4*h), z(17+4*h), z(18+4*h), z(19+4*h)
		c.VSHUFPS(operand.U8(0x44), t2, t0, z(4*h))
		c.VSHUFPS(operand.U8(0xEE), t2, t0, z(4*h+1))
		c.VSHUFPS(operand.U8(0x44), t3, t1, z(4*h+2))
		c.VSHUFPS(operand.U8(0xEE), t3, t1, z(4*h+3))
	}
	// Lane j of s(4h+q) belongs to output row 4j+q, at lane h: gather with two rounds of VSHUFF32X4.
	for q := 0; q < 4; q++ {
		lanesZ(c, z(q), z(4+q), z(8+q), z(12+q), z(16+4*q))
	}
	for q := 0; q < 4; q++ {
		crossZ(c, z(16+4*q), [4]reg.VecPhysical{z(q), z(4 + q), z(8 + q), z(12 + q)})
	}
}

// transpose8x8Z transposes the f64 rows Z0..Z7 into the columns Z0..Z7 (Z8..Z23 scratch).
func transpose8x8Z(c *build.Context) {
	z := func(i int) reg.VecPhysical { return vecReg(true, i) }
	// t(2p) (Z8+2p): lane j holds column 2j of rows 2p, 2p+1; t(2p+1) column 2j+1.
	for p := 0; p < 4; p++ {
		c.VUNPCKLPD(z(2*p+1), z(2*p), z(8+2*p))
		c.VUNPCKHPD(z(2*p+1), z(2*p), z(9+2*p))
	}
	// Output row 2j+e is lane j of t(e), t(2+e), t(4+e), t(6+e).
	for e := 0; e < 2; e++ {
		lanesZ(c, z(8+e), z(10+e), z(12+e), z(14+e), z(16+4*e))
	}
	for e := 0; e < 2; e++ {
		crossZ(c, z(16+4*e), [4]reg.VecPhysical{z(e), z(2 + e), z(4 + e), z(6 + e)})
	}
}

// lanesZ writes, from a, b, c2, d, the four registers at u (u..u+3): lanes 0,1 of a and b; lanes 2,3
// of a and b; lanes 0,1 of c2 and d; lanes 2,3 of c2 and d (128-bit lanes).
func lanesZ(c *build.Context, a, b, c2, d, u reg.VecPhysical) {
	i := int(u.PhysicalIndex())
	z := func(k int) reg.VecPhysical { return vecReg(true, k) }
	c.VSHUFF32X4(operand.U8(0x44), b, a, z(i))
	c.VSHUFF32X4(operand.U8(0xEE), b, a, z(i+1))
	c.VSHUFF32X4(operand.U8(0x44), d, c2, z(i+2))
	c.VSHUFF32X4(operand.U8(0xEE), d, c2, z(i+3))
}

// crossZ finishes lanesZ: out[j] = lane j of a, b, c2, d (the registers lanesZ got), for j = 0..3.
func crossZ(c *build.Context, u reg.VecPhysical, out [4]reg.VecPhysical) {
	i := int(u.PhysicalIndex())
	z := func(k int) reg.VecPhysical { return vecReg(true, k) }
	c.VSHUFF32X4(operand.U8(0x88), z(i+2), z(i), out[0])
	c.VSHUFF32X4(operand.U8(0xDD), z(i+2), z(i), out[1])
	c.VSHUFF32X4(operand.U8(0x88), z(i+3), z(i+1), out[2])
	c.VSHUFF32X4(operand.U8(0xDD), z(i+3), z(i+1), out[3])
}

// transposeHeader starts the routine k (of the instruction set named isa, its blocks described by how):
// signature, documentation, the parameters loaded and the leading dimensions turned into bytes.
func transposeHeader(c *build.Context, k TransposeKernel, isa, how string) (f64 bool, esz, v int) {
	f64 = k.Elem == F64
	esz, v = elemSize(k.Elem), k.Block()
	t := goType(k.Elem)
	c.Function(k.Name)
	c.Attributes(attr.NOSPLIT)
	c.Pragma("noescape")
	c.Doc(
		fmt.Sprintf("%s is the %s %s transpose tile (codegen.TransposeSlot): dst[c*ldd+r] = src[r*lds+c]", k.Name, isa, k.Elem),
		fmt.Sprintf("for r < rows, c < cols, in %d×%d %s only the tile's elements are accessed.", v, v, how),
	)
	c.SignatureExpr(fmt.Sprintf("func(rows, cols int, src *%s, lds int, dst *%s, ldd int)", t, t))
	c.Load(c.Param("rows"), tpRows)
	c.Load(c.Param("cols"), tpCols)
	c.Load(c.Param("src"), tpSrc)
	c.Load(c.Param("lds"), tpLds)
	c.Load(c.Param("dst"), tpDst)
	c.Load(c.Param("ldd"), tpLdd)
	shift := operand.Imm(uint64(log2(esz)))
	c.SHLQ(shift, tpLds)
	c.SHLQ(shift, tpLdd)
	return f64, esz, v
}
