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
// nothing. The avx512 variant installs the same AVX2 routines (a 16×16 zmm transpose is not generated).

// TransposeKernel is one transpose tile routine to generate (AVX2).
type TransposeKernel struct {
	Name string // Go identifier of the generated function
	Elem string // F32 or F64
}

// NewTransposeKernel returns the AVX2 routine of elem, named transposeF32AVX2 or transposeF64AVX2.
func NewTransposeKernel(elem string) TransposeKernel {
	n := "F32"
	if elem == F64 {
		n = "F64"
	}
	return TransposeKernel{Name: "transpose" + n + "AVX2", Elem: elem}
}

// Block is the register block edge V: the tile is transposed in V×V blocks.
func (k TransposeKernel) Block() int { return 32 / elemSize(k.Elem) }

// Validate checks the kernel description.
func (k TransposeKernel) Validate() error {
	if !isIdent(k.Name) {
		return fmt.Errorf("amd64: bad transpose kernel name %q", k.Name)
	}
	if k.Elem != F32 && k.Elem != F64 {
		return fmt.Errorf("amd64: transpose %s: bad element type %q", k.Name, k.Elem)
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
	f64 := k.Elem == F64
	esz, v := elemSize(k.Elem), k.Block()
	t := goType(k.Elem)
	c.Function(k.Name)
	c.Attributes(attr.NOSPLIT)
	c.Pragma("noescape")
	c.Doc(
		fmt.Sprintf("%s is the AVX2 %s transpose tile (codegen.TransposeSlot): dst[c*ldd+r] = src[r*lds+c]", k.Name, k.Elem),
		fmt.Sprintf("for r < rows, c < cols, in %d×%d register blocks; only the tile's elements are accessed.", v, v),
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
