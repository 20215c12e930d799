package amd64

import (
	"fmt"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// The B-side packing routines of GEMMs with bf16 operands (codegen/bf16.go): the portable ones convert
// one element at a time with a bounds check each, and on a skinny product (M = 4 or 16, K = N = 1024)
// they took two thirds of the time, four times the microkernel's. Both formats are a zero extension
// of 16-bit words to 32 bits, eight at a time (VPMOVZXWD):
//
//	widen (f32 panels):  dst[(q/panel)*panel*depth + d*panel + q%panel] = float32(src[d*ld+q])
//	                     (the bf16 bits shifted to the top half of the word)
//	pair (bf16 pairs):   word d2*panel + q%panel of panel q/panel = src[2*d2*ld+q] | src[(2*d2+1)*ld+q]<<16
//	                     for d2 < ⌈depth/2⌉; the high half of the last row of an odd depth is 0
//
// for q < n; columns n..np*panel-1 of the last panel are zero, and a pair panel writes only its first
// ⌈depth/2⌉ rows. The Go adapter (codegen.PackImpl) checks the bounds first, as for the f32 routines.

// NewBF16PackKernel names the B-side bf16 routine of one format (pair: bf16 pair panels; otherwise f32
// panels).
func NewBF16PackKernel(pair bool) PackKernel {
	name := codegen.PackStem(false) + BF16 + "AVX2"
	if pair {
		name = codegen.PackStem(false) + BF16 + "PairAVX2"
	}
	return PackKernel{Name: name, Elem: BF16, Pair: pair}
}

// emitPackPBBF16 generates one of the routines above.
func emitPackPBBF16(c *build.Context, k PackKernel) {
	c.Function(k.Name)
	c.Attributes(attr.NOSPLIT)
	c.Pragma("noescape")
	what := "as f32 panels: dst[(q/panel)*panel*depth + d*panel + q%panel] = src[d*ld+q] widened"
	if k.Pair {
		what = "as bf16 pair panels: word d2*panel + q%panel of panel q/panel = src[2*d2*ld+q] | src[(2*d2+1)*ld+q]<<16"
	}
	c.Doc(k.Name+" packs the panels of a block of bf16 rows "+what+",",
		"for q < n; the last panel is zero-padded. The caller checks the bounds (codegen.PackImpl).")
	c.SignatureExpr("func(dst *float32, src *uint16, ld, n, panel, depth int)")
	var (
		dst, src, ldB, depth = reg.RDI, reg.RSI, reg.R13, reg.R9
		panel, full, rem     = reg.R8, reg.R10, reg.R11
		pstride              = reg.R12
		s, d, q, cnt, hi     = reg.R14, reg.R15, reg.RCX, reg.RBX, reg.RAX
		// RDX: the next column of a vector step, the word of a single one
	)
	L := func(s string) string { return k.Name + "_" + s }
	c.Load(c.Param("panel"), panel)
	c.Load(c.Param("n"), reg.RAX)
	c.XORQ(reg.RDX, reg.RDX)
	c.DIVQ(panel) // RAX = full panels, RDX = columns of the last one
	c.MOVQ(reg.RAX, full)
	c.MOVQ(reg.RDX, rem)
	c.Load(c.Param("depth"), depth)
	c.MOVQ(panel, pstride)
	c.SHLQ(operand.Imm(2), pstride)
	c.IMULQ(depth, pstride) // bytes from one panel to the next
	c.Load(c.Param("dst"), dst)
	c.Load(c.Param("src"), src)
	c.Load(c.Param("ld"), ldB)
	c.SHLQ(operand.Imm(1), ldB) // bytes of one source row

	// row emits the packing of one destination row (all the panels of the block) from the source row at
	// src and, withHi, the one after it; shift moves a single row's value to the top half (widen).
	row := func(tag string, withHi, shift bool) {
		lab := func(s string) string { return L(tag + "_" + s) }
		if withHi {
			c.LEAQ(operand.Mem{Base: src, Index: ldB, Scale: 1}, hi)
		}
		c.MOVQ(src, s)
		c.MOVQ(dst, d)
		c.MOVQ(full, cnt)
		// vec copies columns q..lim-1 of the current panel: eight per VPMOVZXWD while eight are left,
		// then one by one.
		vec := func(sub string, lim reg.Register) {
			c.XORQ(q, q)
			c.Label(lab(sub + "v"))
			c.LEAQ(operand.Mem{Base: q, Disp: 8}, reg.RDX)
			c.CMPQ(reg.RDX, lim)
			c.JG(lbl(lab(sub + "s")))
			c.VPMOVZXWD(operand.Mem{Base: s, Index: q, Scale: 2}, reg.Y0)
			if withHi {
				c.VPMOVZXWD(operand.Mem{Base: hi, Index: q, Scale: 2}, reg.Y1)
				c.VPSLLD(operand.Imm(16), reg.Y1, reg.Y1)
				c.VPOR(reg.Y1, reg.Y0, reg.Y0)
			} else if shift {
				c.VPSLLD(operand.Imm(16), reg.Y0, reg.Y0)
			}
			c.VMOVDQU(reg.Y0, operand.Mem{Base: d, Index: q, Scale: 4})
			c.MOVQ(reg.RDX, q)
			c.JMP(lbl(lab(sub + "v")))
			c.Label(lab(sub + "s"))
			c.CMPQ(q, lim)
			c.JGE(lbl(lab(sub + "e")))
			switch {
			case withHi: // the high row's word in the top half, then the low row's in the bottom one
				c.MOVWLZX(operand.Mem{Base: hi, Index: q, Scale: 2}, reg.EDX)
				c.SHLL(operand.Imm(16), reg.EDX)
				c.MOVW(operand.Mem{Base: s, Index: q, Scale: 2}, reg.DX)
			case shift:
				c.MOVWLZX(operand.Mem{Base: s, Index: q, Scale: 2}, reg.EDX)
				c.SHLL(operand.Imm(16), reg.EDX)
			default:
				c.MOVWLZX(operand.Mem{Base: s, Index: q, Scale: 2}, reg.EDX)
			}
			c.MOVL(reg.EDX, operand.Mem{Base: d, Index: q, Scale: 4})
			c.INCQ(q)
			c.JMP(lbl(lab(sub + "s")))
			c.Label(lab(sub + "e"))
		}
		c.TESTQ(cnt, cnt)
		c.JZ(lbl(lab("part")))
		c.Label(lab("panel"))
		vec("f", panel)
		c.LEAQ(operand.Mem{Base: s, Index: panel, Scale: 2}, s)
		if withHi {
			c.LEAQ(operand.Mem{Base: hi, Index: panel, Scale: 2}, hi)
		}
		c.ADDQ(pstride, d)
		c.DECQ(cnt)
		c.JNZ(lbl(lab("panel")))
		c.Label(lab("part"))
		c.TESTQ(rem, rem)
		c.JZ(lbl(lab("done")))
		vec("p", rem)
		// Columns rem..panel-1 of the last panel are zero.
		c.XORL(reg.EDX, reg.EDX)
		c.Label(lab("z"))
		c.CMPQ(q, panel)
		c.JGE(lbl(lab("done")))
		c.MOVL(reg.EDX, operand.Mem{Base: d, Index: q, Scale: 4})
		c.INCQ(q)
		c.JMP(lbl(lab("z")))
		c.Label(lab("done"))
	}

	if !k.Pair {
		c.Label(L("row"))
		row("w", false, true)
		c.ADDQ(ldB, src)
		c.LEAQ(operand.Mem{Base: dst, Index: panel, Scale: 4}, dst)
		c.DECQ(depth)
		c.JNZ(lbl(L("row")))
		c.VZEROUPPER()
		c.RET()
		return
	}
	// Pairs: depth/2 rows from two source rows each, then the lone last row of an odd depth.
	c.SHRQ(operand.Imm(1), depth)
	c.JZ(lbl(L("odd")))
	c.Label(L("pair"))
	row("p", true, false)
	c.LEAQ(operand.Mem{Base: src, Index: ldB, Scale: 2}, src)
	c.LEAQ(operand.Mem{Base: dst, Index: panel, Scale: 4}, dst)
	c.DECQ(depth)
	c.JNZ(lbl(L("pair")))
	c.Label(L("odd"))
	c.Load(c.Param("depth"), depth)
	c.MOVQ(depth, reg.RDX)
	c.ANDQ(operand.Imm(1), reg.RDX)
	c.JZ(lbl(L("end")))
	row("o", false, false)
	c.Label(L("end"))
	c.VZEROUPPER()
	c.RET()
}

// bf16PackImpl is the variable assignment that installs one of the routines above: the f32-panel one in
// the avx2 and avx512 variants, the pair one in avx512bf16 (backend.go).
func bf16PackImpl(k PackKernel) codegen.PackImpl {
	if k.Elem != BF16 {
		panic(fmt.Sprintf("amd64: %s is not a bf16 packing routine", k.Name))
	}
	return codegen.PackImpl{Elem: ir.BF16, Func: k.Name, Pair: k.Pair}
}
