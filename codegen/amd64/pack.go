package amd64

import (
	"fmt"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// This file generates the GEMM panel-packing routines that replace the generated package's portable
// packD/packPB (codegen/golang, support.go) in the AVX2 and AVX-512 variants. Packing is O(n²) against the
// microkernel's O(n³), but in Go it took 15–20% of a 512³ sgemm: the A panels are a transposing scatter
// with a bounds check per element. Here each element is one load and one store.
//
//	packD: dst[d*panel+q] = src[q*ld+d]   (A-like: each panel row is a contiguous run of the source)
//	packPB: dst[(q/panel)*panel*depth + d*panel + q%panel] = src[d*ld+q]   (B-like: all the panels of a
//	        block in one call, source row by source row; emitPackPB)
//
// for q < w, d < depth, and zero for w <= q < panel. Every vector instruction is VEX-encoded (VMOVSS, not
// MOVSS): a legacy SSE instruction after VMOVUPS Y left the upper state dirty costs Intel cores a state
// transition each time — on a Sapphire Rapids Xeon the 14-float A panels of sgemm_tt (a 32-byte copy and
// six scalar ones a row) packed 77× slower than 16-float ones (kernels BenchmarkPackPB); the kernels
// package's TestNoLegacySSE keeps it so. The Go adapter (codegen.PackImpl) checks 1 <= w <= panel,
// depth >= 1, ld >= 0 and that every element named lies inside both slices before calling, so the
// assembly never touches memory outside them.

// PackKernel is one packing routine to generate.
type PackKernel struct {
	Name string
	Elem string
	// D: packD (A-like); otherwise packPB, all the panels of a block of n columns, row by row (one call
	// per block or per worker's chunk): dst panel p starts at p*panel*depth; the last one is zero-padded.
	D bool
	// Pair: the bf16 pair-panel format (Elem BF16 only; packbf16.go).
	Pair bool
}

// NewPackKernel names the routine of an element type and layout.
func NewPackKernel(elem string, d bool) PackKernel {
	return PackKernel{Name: fmt.Sprintf("%s%sAVX2", codegen.PackStem(d), elem), Elem: elem, D: d}
}

func emitPack(c *build.Context, k PackKernel) {
	if k.Elem == BF16 {
		emitPackPBBF16(c, k)
		return
	}
	if !k.D {
		emitPackPB(c, k)
		return
	}
	t, esz := "float32", 4
	if k.Elem == F64 {
		t, esz = "float64", 8
	}
	c.Function(k.Name)
	c.Attributes(attr.NOSPLIT)
	c.Pragma("noescape")
	c.Doc(k.Name+" packs a GEMM panel: dst[d*panel+q] = src[q*ld+d] for q < w, d < depth; zero for w <= q < panel.",
		"The caller checks the bounds (codegen.PackImpl).")
	c.SignatureExpr(fmt.Sprintf("func(dst, src *%s, ld, w, panel, depth int)", t))
	var (
		dst, src, ld, w, panel, depth = reg.RDI, reg.RSI, reg.RDX, reg.RCX, reg.R8, reg.R9
		s, d, cnt, off                = reg.R10, reg.R11, reg.R12, reg.R13
	)
	c.Load(c.Param("dst"), dst)
	c.Load(c.Param("src"), src)
	c.Load(c.Param("ld"), ld)
	c.Load(c.Param("w"), w)
	c.Load(c.Param("panel"), panel)
	c.Load(c.Param("depth"), depth)
	shift := operand.Imm(2)
	mov := func(m operand.Mem, x reg.Register) { c.VMOVSS(m, x) }
	store := func(x reg.Register, m operand.Mem) { c.VMOVSS(x, m) }
	if esz == 8 {
		shift = operand.Imm(3)
		mov = func(m operand.Mem, x reg.Register) { c.VMOVSD(m, x) }
		store = func(x reg.Register, m operand.Mem) { c.VMOVSD(x, m) }
	}
	c.SHLQ(shift, ld)
	c.SHLQ(shift, panel) // bytes
	x := []reg.VecPhysical{reg.X0, reg.X1, reg.X2, reg.X3}
	L := func(s string) string { return k.Name + "_" + s }
	// Rows in groups of G = 16/esz: G depth steps of each of the G rows are one 16-byte load each, a
	// G×G transpose in registers turns them into G panel rows of G elements (one 16-byte store each).
	// The rows left over, and the depth left over in a group, go element by element below.
	g := 16 / esz
	sp := []reg.GPPhysical{reg.R14, reg.R15, reg.RBX, reg.RAX}[:g]
	xs := []reg.VecPhysical{reg.X0, reg.X1, reg.X2, reg.X3}[:g]
	ts := []reg.VecPhysical{reg.X4, reg.X5, reg.X6, reg.X7}
	c.MOVQ(dst, d)
	c.MOVQ(w, off) // rows left
	c.Label(L("group"))
	c.CMPQ(off, operand.Imm(uint64(g)))
	c.JL(lbl(L("rows")))
	c.MOVQ(src, sp[0])
	for i := 1; i < g; i++ {
		c.LEAQ(operand.Mem{Base: sp[i-1], Index: ld, Scale: 1}, sp[i])
	}
	c.MOVQ(d, s)
	c.MOVQ(depth, cnt)
	c.Label(L("gblock"))
	c.CMPQ(cnt, operand.Imm(uint64(g)))
	c.JL(lbl(L("gtail")))
	for i := 0; i < g; i++ {
		c.VMOVUPS(mem(sp[i], 0), xs[i])
	}
	if g == 4 {
		c.VUNPCKLPS(xs[1], xs[0], ts[0]) // a0 b0 a1 b1
		c.VUNPCKHPS(xs[1], xs[0], ts[1]) // a2 b2 a3 b3
		c.VUNPCKLPS(xs[3], xs[2], ts[2]) // c0 d0 c1 d1
		c.VUNPCKHPS(xs[3], xs[2], ts[3]) // c2 d2 c3 d3
		c.VMOVLHPS(ts[2], ts[0], xs[0])  // a0 b0 c0 d0
		c.VMOVHLPS(ts[0], ts[2], xs[1])  // a1 b1 c1 d1
		c.VMOVLHPS(ts[3], ts[1], xs[2])  // a2 b2 c2 d2
		c.VMOVHLPS(ts[1], ts[3], xs[3])  // a3 b3 c3 d3
	} else {
		c.VUNPCKLPD(xs[1], xs[0], ts[0]) // a0 b0
		c.VUNPCKHPD(xs[1], xs[0], ts[1]) // a1 b1
		c.VMOVUPS(ts[0], xs[0])
		c.VMOVUPS(ts[1], xs[1])
	}
	for i := 0; i < g; i++ {
		c.VMOVUPS(xs[i], mem(s, 0))
		c.ADDQ(panel, s)
		c.ADDQ(operand.Imm(16), sp[i])
	}
	c.SUBQ(operand.Imm(uint64(g)), cnt)
	c.JMP(lbl(L("gblock")))
	c.Label(L("gtail"))
	c.TESTQ(cnt, cnt)
	c.JZ(lbl(L("gnext")))
	for i := 0; i < g; i++ {
		mov(mem(sp[i], 0), x[0])
		store(x[0], mem(s, i*esz))
		c.ADDQ(operand.Imm(uint64(esz)), sp[i])
	}
	c.ADDQ(panel, s)
	c.DECQ(cnt)
	c.JMP(lbl(L("gtail")))
	c.Label(L("gnext"))
	for i := 0; i < g; i++ {
		c.ADDQ(ld, src)
	}
	c.ADDQ(operand.Imm(uint64(g*esz)), d)
	c.SUBQ(operand.Imm(uint64(g)), off)
	c.JMP(lbl(L("group")))
	// The remaining rows one at a time: the run of row q goes down column q of the panel, the depth
	// loop unrolled by 4 (four loads, then four stores).
	c.Label(L("rows"))
	c.TESTQ(off, off)
	c.JZ(lbl(L("zeros")))
	c.Label(L("row"))
	c.MOVQ(src, s)
	c.MOVQ(d, reg.RAX)
	c.MOVQ(depth, cnt)
	c.CMPQ(cnt, operand.Imm(4))
	c.JL(lbl(L("tail")))
	c.Label(L("four"))
	for i := 0; i < 4; i++ {
		mov(mem(s, i*esz), x[i])
	}
	for i := 0; i < 4; i++ {
		store(x[i], mem(reg.RAX, 0))
		c.ADDQ(panel, reg.RAX)
	}
	c.ADDQ(operand.Imm(uint64(4*esz)), s)
	c.SUBQ(operand.Imm(4), cnt)
	c.CMPQ(cnt, operand.Imm(4))
	c.JGE(lbl(L("four")))
	c.Label(L("tail"))
	c.TESTQ(cnt, cnt)
	c.JZ(lbl(L("next")))
	mov(mem(s, 0), x[0])
	store(x[0], mem(reg.RAX, 0))
	c.ADDQ(panel, reg.RAX)
	c.ADDQ(operand.Imm(uint64(esz)), s)
	c.DECQ(cnt)
	c.JMP(lbl(L("tail")))
	c.Label(L("next"))
	c.ADDQ(ld, src)
	c.ADDQ(operand.Imm(uint64(esz)), d)
	c.DECQ(off)
	c.JNZ(lbl(L("row")))
	// Columns w..panel-1 are zero: d points at column w of row 0.
	c.Label(L("zeros"))
	c.XORQ(reg.RBX, reg.RBX)
	c.MOVQ(panel, off)
	c.SHRQ(shift, off)
	c.SUBQ(w, off) // zero columns
	c.JZ(lbl(L("done")))
	c.Label(L("zcol"))
	c.MOVQ(d, reg.RAX)
	c.MOVQ(depth, cnt)
	c.Label(L("zrow"))
	if esz == 8 {
		c.MOVQ(reg.RBX, mem(reg.RAX, 0))
	} else {
		c.MOVL(reg.EBX, mem(reg.RAX, 0))
	}
	c.ADDQ(panel, reg.RAX)
	c.DECQ(cnt)
	c.JNZ(lbl(L("zrow")))
	c.ADDQ(operand.Imm(uint64(esz)), d)
	c.DECQ(off)
	c.JNZ(lbl(L("zcol")))
	c.Label(L("done"))
	c.RET()
}

// packPBRows is how many source rows emitPackPB copies into one panel before it moves to the next panel.
// Row by row (each source row scattered over all the panels, panel*depth elements apart) the 1024-column
// f64 block of a dgemm packed at 14–15 GB/s on the Zen 5, a third of a plain copy of the same bytes
// (38–43 GB/s); each row's stores go to addresses a multiple of 4 KiB apart (64 KiB for dgemm's panels),
// which share their L1 set. Eight rows at a time write 8·panel contiguous elements per panel and read a
// band of eight source rows: 30–44 GB/s (docs/PERF.md, session 16; 16 and 32 rows ran 33–42, the whole
// depth per panel 28–43, the larger figures for the 2 MiB block of depth 256, the smaller for 4 MiB).
const packPBRows = 8

// emitPackPB generates packPB: the source rows in chunks of packPBRows; in each chunk, panel by panel,
// the chunk's rows of that panel (a full panel of 64 or 128 bytes as 32-byte vectors, all loads before
// the stores; other widths as 32-byte vectors and single elements), then the last, partial panel element
// by element, zero-padded.
func emitPackPB(c *build.Context, k PackKernel) {
	t, esz := "float32", 4
	shift := operand.Imm(2)
	mov := func(m operand.Mem, x reg.Register) { c.VMOVSS(m, x) }
	store := func(x reg.Register, m operand.Mem) { c.VMOVSS(x, m) }
	if k.Elem == F64 {
		t, esz = "float64", 8
		shift = operand.Imm(3)
		mov = func(m operand.Mem, x reg.Register) { c.VMOVSD(m, x) }
		store = func(x reg.Register, m operand.Mem) { c.VMOVSD(x, m) }
	}
	c.Function(k.Name)
	c.Attributes(attr.NOSPLIT)
	c.Pragma("noescape")
	c.Doc(k.Name+" packs the panels of a block: dst[(q/panel)*panel*depth + d*panel + q%panel] = src[d*ld+q]",
		"for q < n, d < depth; the last panel is zero-padded. The caller checks the bounds (codegen.PackImpl).")
	c.SignatureExpr(fmt.Sprintf("func(dst, src *%s, ld, n, panel, depth int)", t))
	var (
		dst, src, ld, panelB, depth, pstride = reg.RDI, reg.RSI, reg.RDX, reg.R8, reg.R9, reg.R10
		s, d, ss, dd                         = reg.R11, reg.R12, reg.R13, reg.R14
		pcnt, rcnt, off, tmp                 = reg.RBX, reg.RCX, reg.RAX, reg.R15
	)
	full, remB, rows := c.AllocLocal(8), c.AllocLocal(8), c.AllocLocal(8)
	L := func(s string) string { return k.Name + "_" + s }
	c.Load(c.Param("panel"), panelB)
	c.Load(c.Param("n"), reg.RAX)
	c.XORQ(reg.RDX, reg.RDX)
	c.DIVQ(panelB) // RAX = full panels, RDX = columns in the last one
	c.MOVQ(reg.RAX, full)
	c.SHLQ(shift, reg.RDX)
	c.MOVQ(reg.RDX, remB)
	c.SHLQ(shift, panelB)
	c.Load(c.Param("depth"), depth)
	c.MOVQ(panelB, pstride)
	c.IMULQ(depth, pstride)
	c.Load(c.Param("dst"), dst)
	c.Load(c.Param("src"), src)
	c.Load(c.Param("ld"), ld)
	c.SHLQ(shift, ld)
	x := reg.X0
	// A run of the chunk's rows in one panel starts at the panel's first column (s) and row (d); each
	// row steps the source by ld and the panel by its width.
	startRun := func() {
		c.MOVQ(s, ss)
		c.MOVQ(d, dd)
		c.MOVQ(rows, rcnt)
	}
	nextRow := func(label string) {
		c.ADDQ(ld, ss)
		c.ADDQ(panelB, dd)
		c.DECQ(rcnt)
		c.JNZ(lbl(L(label)))
	}
	c.Label(L("chunk"))
	c.MOVQ(operand.U32(packPBRows), tmp)
	c.CMPQ(depth, tmp)
	c.CMOVQLT(depth, tmp)
	c.MOVQ(tmp, rows)
	c.MOVQ(src, s)
	c.MOVQ(dst, d)
	c.MOVQ(full, pcnt)
	c.TESTQ(pcnt, pcnt)
	c.JZ(lbl(L("part")))
	c.Label(L("panel"))
	startRun()
	c.CMPQ(panelB, operand.Imm(128))
	c.JE(lbl(L("r128")))
	c.CMPQ(panelB, operand.Imm(64))
	c.JE(lbl(L("r64")))
	// Any other width: 32-byte vectors while a whole one fits, then single elements.
	c.Label(L("rowg"))
	c.XORQ(off, off)
	c.Label(L("vec"))
	c.LEAQ(operand.Mem{Base: off, Disp: 32}, tmp)
	c.CMPQ(tmp, panelB)
	c.JG(lbl(L("one")))
	c.VMOVUPS(operand.Mem{Base: ss, Index: off, Scale: 1}, reg.Y1)
	c.VMOVUPS(reg.Y1, operand.Mem{Base: dd, Index: off, Scale: 1})
	c.MOVQ(tmp, off)
	c.JMP(lbl(L("vec")))
	c.Label(L("one"))
	c.CMPQ(off, panelB)
	c.JGE(lbl(L("gnext")))
	mov(operand.Mem{Base: ss, Index: off, Scale: 1}, x)
	store(x, operand.Mem{Base: dd, Index: off, Scale: 1})
	c.ADDQ(operand.Imm(uint64(esz)), off)
	c.JMP(lbl(L("one")))
	c.Label(L("gnext"))
	nextRow("rowg")
	c.JMP(lbl(L("pnext")))
	for _, w := range []int{128, 64} {
		ys := []reg.VecPhysical{reg.Y1, reg.Y2, reg.Y3, reg.Y4}[:w/32]
		c.Label(L(fmt.Sprintf("r%d", w)))
		for i, y := range ys {
			c.VMOVUPS(mem(ss, 32*i), y)
		}
		for i, y := range ys {
			c.VMOVUPS(y, mem(dd, 32*i))
		}
		c.ADDQ(ld, ss)
		c.ADDQ(operand.Imm(uint64(w)), dd)
		c.DECQ(rcnt)
		c.JNZ(lbl(L(fmt.Sprintf("r%d", w))))
		if w != 64 {
			c.JMP(lbl(L("pnext")))
		}
	}
	c.Label(L("pnext"))
	c.ADDQ(panelB, s)
	c.ADDQ(pstride, d)
	c.DECQ(pcnt)
	c.JNZ(lbl(L("panel")))
	// The last, partial panel: its columns element by element, then zeros to the panel's width.
	c.Label(L("part"))
	c.CMPQ(remB, operand.Imm(0))
	c.JE(lbl(L("next")))
	startRun()
	c.Label(L("prow"))
	c.XORQ(off, off)
	c.Label(L("pcopy"))
	c.CMPQ(off, remB)
	c.JGE(lbl(L("pzero")))
	mov(operand.Mem{Base: ss, Index: off, Scale: 1}, x)
	store(x, operand.Mem{Base: dd, Index: off, Scale: 1})
	c.ADDQ(operand.Imm(uint64(esz)), off)
	c.JMP(lbl(L("pcopy")))
	c.Label(L("pzero"))
	c.CMPQ(off, panelB)
	c.JGE(lbl(L("pnrow")))
	if esz == 8 {
		c.MOVQ(operand.U32(0), operand.Mem{Base: dd, Index: off, Scale: 1})
	} else {
		c.MOVL(operand.U32(0), operand.Mem{Base: dd, Index: off, Scale: 1})
	}
	c.ADDQ(operand.Imm(uint64(esz)), off)
	c.JMP(lbl(L("pzero")))
	c.Label(L("pnrow"))
	nextRow("prow")
	// The next chunk: rows·ld further in the source, rows·panel in every panel.
	c.Label(L("next"))
	c.MOVQ(rows, tmp)
	c.IMULQ(ld, tmp)
	c.ADDQ(tmp, src)
	c.MOVQ(rows, tmp)
	c.IMULQ(panelB, tmp)
	c.ADDQ(tmp, dst)
	c.SUBQ(rows, depth)
	c.JNZ(lbl(L("chunk")))
	c.VZEROUPPER()
	c.RET()
}
