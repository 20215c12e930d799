package amd64

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	avoir "github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// General-purpose register roles in a GEMM kernel. All are caller-saved in
// ABI0; BP and R15 (dynamic-linking scratch) are not used. R14 (g in
// ABIInternal, free in ABI0 code) holds only the unpacked kernels' prefetch
// distance (uPfd).
var (
	rKC   = reg.RCX // kc; remainder counter; shift count in the epilogue
	rA    = reg.RSI // Ã panel pointer
	rB    = reg.RDI // B̃ panel pointer
	rLoop = reg.RDX // unrolled-loop counter
	rC    = reg.R8  // C tile
	rLdc  = reg.R9  // ldc in bytes
	rM    = reg.R10 // m
	rN    = reg.R11 // n
	rEp   = reg.RBX // ep
	rBias = reg.R12 // bias
	rRow  = reg.R13 // current row of C
	rTmp  = reg.RAX // scratch
)

// iotaTable is a RODATA table 0, 1, ..., NR-1 of int32 (f32) or int64 (f64)
// used to build AVX2 column masks (lane j is on iff j < n).
type iotaTable struct{ mem operand.Mem }

func iotaName(k GemmKernel) string {
	return fmt.Sprintf("iota%dx%d", 8*elemSize(k.Elem), k.NR)
}

func newIota(c *build.Context, name string, esz, nr int) iotaTable {
	m := c.StaticGlobal(name)
	c.DataAttributes(attr.RODATA | attr.NOPTR)
	for j := 0; j < nr; j++ {
		if esz == 8 {
			c.AppendDatum(operand.U64(j))
		} else {
			c.AppendDatum(operand.U32(j))
		}
	}
	return iotaTable{mem: m}
}

// gemmGen emits one GEMM microkernel.
type gemmGen struct {
	c   *build.Context
	k   GemmKernel
	z   bool // AVX-512
	vl  int  // lanes per vector
	nv  int  // vectors per tile row (NR/vl)
	esz int  // element size in bytes
	u   int  // k unroll

	acc     [][]reg.VecPhysical // [MR][nv] accumulators
	scratch []reg.VecPhysical   // registers not holding accumulators
	bvec    []reg.VecPhysical   // B̃ row vectors (k loop)
	bcast   []reg.VecPhysical   // Ã broadcasts (k loop)

	iota    operand.Mem // AVX2 only
	maskMem operand.Mem // AVX2 only: nv column masks spilled to the frame

	masksReady bool // column masks already built (unpacked kernels build them before the k loop)

	// Unpacked edge loops in index mode: the k loop computes rows i < uRows only (0: all MR), in
	// uSets accumulator sets (set s holds rows s*uRows..: step p of an unrolled iteration updates set
	// p%uSets), summed into set 0 after the loop, so that a few rows still keep enough independent
	// FMAs in flight to hide their latency.
	uRows, uSets int

	// Element-type dependent instruction builders.
	vload, vstore func(ops ...operand.Op)
	vloadZ        func(m, k, v operand.Op) // zeroing masked load (AVX-512): the mask is per element of the kernel's width
	bcst          func(ops ...operand.Op)
	fma           func(ops ...operand.Op)
	dot           func(b, a, acc reg.VecPhysical) // k loop: acc += a·b (fma, or VDPBF16PS on pairs)
	mul, add, max func(ops ...operand.Op)
	maskmov       func(mxy, xy, mxy1 operand.Op)
}

func newGemmGen(c *build.Context, k GemmKernel) *gemmGen {
	g := &gemmGen{
		c:   c,
		k:   k,
		z:   k.ISA == AVX512,
		vl:  vecLen(k.Elem, k.ISA),
		esz: elemSize(k.Elem),
		u:   k.unroll(),
	}
	g.nv = k.NR / g.vl
	free := numVecRegs(k.ISA) - k.MR*g.nv
	for i := 0; i < free; i++ {
		g.scratch = append(g.scratch, vecReg(g.z, i))
	}
	next := free
	for i := 0; i < k.MR; i++ {
		row := make([]reg.VecPhysical, g.nv)
		for j := range row {
			row[j] = vecReg(g.z, next)
			next++
		}
		g.acc = append(g.acc, row)
	}
	g.bvec = g.scratch[:g.nv]
	g.bcast = g.scratch[g.nv:]
	if len(g.bcast) > 2 {
		g.bcast = g.bcast[:2]
	}
	if k.Elem == F64 {
		g.vload, g.vstore = c.VMOVUPD, c.VMOVUPD
		g.vloadZ = c.VMOVUPD_Z
		g.bcst = c.VBROADCASTSD
		g.fma = c.VFMADD231PD
		g.mul, g.add, g.max = c.VMULPD, c.VADDPD, c.VMAXPD
		g.maskmov = c.VMASKMOVPD
	} else {
		g.vload, g.vstore = c.VMOVUPS, c.VMOVUPS
		g.vloadZ = c.VMOVUPS_Z
		g.bcst = c.VBROADCASTSS
		g.fma = c.VFMADD231PS
		g.mul, g.add, g.max = c.VMULPS, c.VADDPS, c.VMAXPS
		g.maskmov = c.VMASKMOVPS
	}
	g.dot = func(b, a, acc reg.VecPhysical) { g.fma(b, a, acc) }
	if k.Elem == BF16 {
		// The broadcast of a pair is VBROADCASTSS of its word (a move: the bits are kept).
		g.dot = func(b, a, acc reg.VecPhysical) { vdpbf16ps(c, b, a, acc) }
	}
	return g
}

// vdpbf16ps emits VDPBF16PS src2, src1, dst on zmm registers (acc += Σ pairs; docs/LANGUAGE.md has the
// arithmetic), which neither avo nor the Go assembler knows: as its EVEX bytes (EVEX.512.F3.0F38.W0 52 /r,
// register form), the mnemonic in a comment, checked against llvm-mc by TestVDPBF16PSEncoding.
func vdpbf16ps(c *build.Context, src2, src1, dst reg.VecPhysical) {
	enc := encVDPBF16PS(int(src2.PhysicalIndex()), int(src1.PhysicalIndex()), int(dst.PhysicalIndex()))
	text := ""
	for i, b := range enc {
		if i > 0 {
			text += "; "
		}
		text += fmt.Sprintf("BYTE $0x%02x", b)
	}
	text += fmt.Sprintf(" // VDPBF16PS Z%d, Z%d, Z%d", src2.PhysicalIndex(), src1.PhysicalIndex(), dst.PhysicalIndex())
	// One raw line: the opcode field carries the whole text (no operands), so the registers are invisible
	// to avo; the kernels use physical registers only, so nothing is allocated around it.
	c.Instruction(&avoir.Instruction{Opcode: text})
}

// encVDPBF16PS encodes VDPBF16PS zmm(dst), zmm(src1), zmm(src2) (Intel operand order; Go's is reversed):
// EVEX P0 = R X B R' 0 0 m m (inverted R, X, B, R'; mm = 10: 0F38), P1 = W vvvv 1 pp (W = 0, vvvv =
// ~src1, pp = 10: F3), P2 = z L'L b V' aaa (L'L = 10: 512 bits, V' = ~src1 bit 4, no mask), opcode 0x52,
// ModRM = 11 dst[2:0] src2[2:0]. In the register form EVEX.X extends ModRM.rm to 32 registers.
func encVDPBF16PS(src2, src1, dst int) [6]byte {
	inv := func(x, bit int) byte { return byte((x>>bit)&1) ^ 1 }
	p0 := inv(dst, 3)<<7 | inv(src2, 4)<<6 | inv(src2, 3)<<5 | inv(dst, 4)<<4 | 0b10
	p1 := byte((^src1)&15)<<3 | 1<<2 | 0b10
	p2 := byte(0b10)<<5 | inv(src1, 4)<<3
	modrm := byte(0xc0) | byte(dst&7)<<3 | byte(src2&7)
	return [6]byte{0x62, p0, p1, p2, 0x52, modrm}
}

func mem(base reg.Register, disp int) operand.Mem { return operand.Mem{Base: base, Disp: disp} }

func lbl(name string) operand.LabelRef { return operand.LabelRef(name) }

func (g *gemmGen) emit() {
	if g.k.Unpacked {
		g.emitU()
		if g.tall() {
			g.emitUT()
		}
		g.emitUB()
		return
	}
	c, k := g.c, g.k
	t := goType(k.Elem)
	c.Function(k.Name)
	c.Attributes(attr.NOSPLIT)
	c.Pragma("noescape")
	if k.Elem == BF16 {
		c.Doc(
			fmt.Sprintf("%s is the bf16 %d×%d %s GEMM microkernel on pair panels (docs/MICROKERNEL.md, codegen/bf16.go):", k.Name, k.MR, k.NR, k.ISA),
			fmt.Sprintf("word p2*%d+i of a holds A(i, 2p2), A(i, 2p2+1), word p2*%d+j of b B(2p2, j), B(2p2+1, j), p2 < ⌈kc/2⌉;", k.MR, k.NR),
			"C[i*ldc+j] = epilogue(alpha*acc + beta*C[i*ldc+j]), acc accumulated in f32 by VDPBF16PS.",
		)
	} else {
		c.Doc(
			fmt.Sprintf("%s is the %s %d×%d %s GEMM microkernel (docs/MICROKERNEL.md):", k.Name, k.Elem, k.MR, k.NR, k.ISA),
			fmt.Sprintf("C[i*ldc+j] = epilogue(alpha*Σ_p a[p*%d+i]*b[p*%d+j] + beta*C[i*ldc+j]) for i < m, j < n.", k.MR, k.NR),
		)
	}
	c.SignatureExpr(fmt.Sprintf("func(kc int, a, b, c *%s, ldc int, m, n int, alpha, beta %s, bias *%s, ep int)", t, t, t))
	if !g.z {
		g.maskMem = c.AllocLocal(g.nv * 32)
	}

	c.Load(c.Param("kc"), rKC)
	if k.Elem == BF16 {
		c.Comment("Pair panels: the k loop runs over ⌈kc/2⌉ words (kc ≥ 0).")
		c.INCQ(rKC)
		c.SHRQ(operand.Imm(1), rKC)
	}
	c.Load(c.Param("a"), rA)
	c.Load(c.Param("b"), rB)
	c.Load(c.Param("c"), rC)
	c.Load(c.Param("ldc"), rLdc)
	c.SHLQ(operand.Imm(uint64(bits.TrailingZeros(uint(g.esz)))), rLdc)
	g.prefetchC()

	c.Comment(fmt.Sprintf("Zero the %d accumulators.", k.MR*g.nv))
	for _, row := range g.acc {
		for _, r := range row {
			zero(c, g.z, r)
		}
	}

	g.kloop()
	g.epilogue()
}

// prefetchC prefetches the first and last byte of each row of the C tile at rC (row stride rLdc).
func (g *gemmGen) prefetchC() {
	c := g.c
	c.Comment("Prefetch the C tile (first and last byte of each row).")
	c.MOVQ(rC, rRow)
	for i := 0; i < g.k.MR; i++ {
		c.PREFETCHT0(mem(rRow, 0))
		c.PREFETCHT0(mem(rRow, g.k.NR*g.esz-1))
		if i < g.k.MR-1 {
			c.ADDQ(rLdc, rRow)
		}
	}
}

// kloop emits the unrolled k loop and its remainder loop.
func (g *gemmGen) kloop() {
	c, k := g.c, g.k
	if g.u > 1 {
		c.Comment(fmt.Sprintf("k loop, unrolled %d times.", g.u))
		c.MOVQ(rKC, rLoop)
		c.SHRQ(operand.Imm(uint64(bits.TrailingZeros(uint(g.u)))), rLoop)
		c.JZ(lbl("kremainder"))
		c.Label("kloop")
		if t := g.k.prefetchCTail(); t > 0 {
			c.Comment(fmt.Sprintf("%d k steps before the end, prefetch the C tile again: the entry prefetch has brought it", t*g.u),
				"near, but the panels streamed since have pushed it out of L1.")
			c.CMPQ(rLoop, operand.Imm(uint64(t)))
			c.JNE(lbl("kloopbody"))
			g.prefetchC()
			c.Label("kloopbody")
		}
		pf := g.prefetches()
		per := (len(pf) + g.u - 1) / g.u
		for p := 0; p < g.u; p++ {
			g.step(p, pf[min(p*per, len(pf)):min((p+1)*per, len(pf))])
		}
		c.ADDQ(operand.U32(g.u*k.MR*g.esz), rA)
		c.ADDQ(operand.U32(g.u*k.NR*g.esz), rB)
		c.DECQ(rLoop)
		c.JNZ(lbl("kloop"))
		c.Label("kremainder")
		c.ANDQ(operand.U32(g.u-1), rKC)
	} else {
		c.TESTQ(rKC, rKC)
	}
	c.JZ(lbl("epilogue"))
	c.Label("kloop1")
	g.step(0, nil)
	c.ADDQ(operand.U32(k.MR*g.esz), rA)
	c.ADDQ(operand.U32(k.NR*g.esz), rB)
	c.DECQ(rKC)
	c.JNZ(lbl("kloop1"))
	c.Label("epilogue")
}

// prefetches returns the PREFETCHT0 operands of one unrolled iteration: every
// cache line of the Ã and B̃ data consumed PrefetchA/PrefetchB steps later.
func (g *gemmGen) prefetches() []operand.Mem {
	var out []operand.Mem
	add := func(base reg.Register, dist, stepBytes int) {
		if dist < 0 {
			return
		}
		for off := 0; off < g.u*stepBytes; off += 64 {
			out = append(out, mem(base, dist*stepBytes+off))
		}
	}
	da, db := g.k.PrefetchA, g.k.PrefetchB
	if da == 0 {
		da = defaultPrefetchA
	}
	if db == 0 {
		db = defaultPrefetchB
	}
	add(rA, da, g.k.MR*g.esz)
	add(rB, db, g.k.NR*g.esz)
	return out
}

// step emits k step p of the current iteration: nv vector loads of the B̃
// row, MR broadcasts of the Ã column, MR·nv FMAs.
func (g *gemmGen) step(p int, pf []operand.Mem) {
	c, k := g.c, g.k
	for j, r := range g.bvec {
		g.vload(mem(rB, (p*k.NR+j*g.vl)*g.esz), r)
	}
	for _, m := range pf {
		c.PREFETCHT0(m)
	}
	for i := 0; i < k.MR; i++ {
		r := g.bcast[i%len(g.bcast)]
		g.bcst(mem(rA, (p*k.MR+i)*g.esz), r)
		for j := 0; j < g.nv; j++ {
			g.dot(g.bvec[j], r, g.acc[i][j])
		}
	}
}

// paramAddr returns the stack address of the named argument. Scalars are
// broadcast straight from memory: a legacy-SSE MOVSS/MOVQ into an xmm register
// while the ymm/zmm upper halves are dirty costs hundreds of cycles per call
// on the CPUs measured (SSE/AVX transition), so the kernels use only VEX/EVEX
// vector instructions between entry and VZEROUPPER.
func (g *gemmGen) paramAddr(name string) operand.Mem {
	b, err := g.c.Param(name).Resolve()
	if err != nil {
		panic(err) // the signature is built by emit; a bad name is a generator bug
	}
	return b.Addr
}

// jumpIfAlphaOne jumps to label when the alpha argument is 1 (x·1 is x, bit for bit: the accumulated
// NaNs are quiet already, so the scaling is skipped).
func (g *gemmGen) jumpIfAlphaOne(label string) {
	c := g.c
	alpha := g.paramAddr("alpha")
	if g.esz == 8 {
		c.MOVQ(operand.U64(math.Float64bits(1)), rTmp)
		c.CMPQ(alpha, rTmp)
	} else {
		c.CMPL(alpha, operand.U32(math.Float32bits(1)))
	}
	c.JEQ(lbl(label))
}

// jumpIfBetaZero jumps to label when the beta argument is ±0 (no bit but the sign set): C is not read.
func (g *gemmGen) jumpIfBetaZero(label string) {
	c := g.c
	beta := g.paramAddr("beta")
	if g.esz == 8 {
		c.MOVQ(beta, rTmp)
		c.SHLQ(operand.Imm(1), rTmp)
	} else {
		c.MOVL(beta, rTmp.As32())
		c.SHLL(operand.Imm(1), rTmp.As32())
	}
	c.JZ(lbl(label))
}

// epilogue emits alpha scaling, the beta, bias and ReLU phases and the store.
func (g *gemmGen) epilogue() {
	c, k := g.c, g.k
	s0 := g.scratch[0]

	c.Comment("acc *= alpha, skipped for alpha == 1 (x*1 is x, bit for bit: accumulated NaNs are quiet already)")
	g.jumpIfAlphaOne("noalpha")
	g.bcst(g.paramAddr("alpha"), s0)
	g.eachAcc(func(r reg.VecPhysical) { g.mul(s0, r, r) })
	c.Label("noalpha")

	c.Load(c.Param("m"), rM)
	c.Load(c.Param("n"), rN)
	c.Load(c.Param("ep"), rEp)
	if !g.masksReady {
		g.masks()
	}

	c.Comment("beta != 0 (any bit but the sign set): acc += beta*C")
	g.jumpIfBetaZero("nobeta")
	g.bcst(g.paramAddr("beta"), s0)
	g.tileLoop("beta", "nobeta",
		func(r reg.VecPhysical, m operand.Mem) { g.fma(m, s0, r) },
		func(r reg.VecPhysical, m operand.Mem, j int) {
			if g.z {
				g.fma(m, s0, maskReg(j), r)
				return
			}
			ym, yt := g.scratch[1], g.scratch[2]
			g.vload(g.maskMem.Offset(32*j), ym)
			g.maskmov(m, ym, yt)
			g.fma(yt, s0, r)
		})
	c.Label("nobeta")

	c.Comment("ep&1: acc += bias (columns j < n only are read)")
	c.TESTQ(operand.U32(1), rEp)
	c.JZ(lbl("nobias"))
	c.Load(c.Param("bias"), rBias)
	for j := 0; j < g.nv; j++ {
		vb := g.scratch[j]
		if g.z {
			g.vloadZ(mem(rBias, j*64), maskReg(j), vb) // fault-suppressed masked load, lanes of the element width
			continue
		}
		ym := g.scratch[g.nv]
		skip := fmt.Sprintf("bias%d", j)
		zero(c, false, vb)
		c.CMPQ(rN, operand.Imm(uint64(j*g.vl)))
		c.JLE(lbl(skip))
		g.vload(g.maskMem.Offset(32*j), ym)
		g.maskmov(mem(rBias, j*32), ym, vb)
		c.Label(skip)
	}
	for i := range g.acc {
		for j, r := range g.acc[i] {
			g.add(g.scratch[j], r, r)
		}
	}
	c.Label("nobias")

	c.Comment("ep&2: acc = max(acc, 0); NaN stays NaN (VMAXP returns its second source on NaN)")
	c.TESTQ(operand.U32(2), rEp)
	c.JZ(lbl("norelu"))
	zero(c, g.z, s0)
	g.eachAcc(func(r reg.VecPhysical) { g.max(r, s0, r) })
	c.Label("norelu")

	c.Comment("Store the tile.")
	g.tileLoop("store", "done",
		func(r reg.VecPhysical, m operand.Mem) { g.vstore(r, m) },
		func(r reg.VecPhysical, m operand.Mem, j int) {
			if g.z {
				g.vstore(r, maskReg(j), m)
				return
			}
			ym := g.scratch[0]
			g.vload(g.maskMem.Offset(32*j), ym)
			g.maskmov(r, ym, m)
		})
	c.Label("done")
	c.VZEROUPPER()
	c.RET()
	_ = k
}

// masks builds the column masks for n: opmasks K1..K(nv) on AVX-512, nv mask
// vectors spilled to the frame on AVX2 (lane j set iff j < n).
func (g *gemmGen) masks() {
	c := g.c
	if g.z {
		c.Comment("Column opmasks: bits (1<<n)-1, vl bits per K register.")
		c.MOVQ(rN, rKC)
		c.MOVQ(operand.U32(1), rTmp)
		c.SHLQ(reg.CL, rTmp)
		c.DECQ(rTmp)
		for j := 0; j < g.nv; j++ {
			c.KMOVW(rTmp.As32(), maskReg(j))
			if j < g.nv-1 {
				c.SHRQ(operand.Imm(uint64(g.vl)), rTmp)
			}
		}
		return
	}
	c.Comment("Column masks: iota < n, spilled to the frame.")
	yn, ym := g.scratch[0], g.scratch[1]
	c.VMOVQ(rN, xmmOf(yn))
	if g.esz == 8 {
		c.VPBROADCASTQ(xmmOf(yn), yn)
	} else {
		c.VPBROADCASTD(xmmOf(yn), yn)
	}
	for j := 0; j < g.nv; j++ {
		if g.esz == 8 {
			c.VPCMPGTQ(g.iota.Offset(32*j), yn, ym)
		} else {
			c.VPCMPGTD(g.iota.Offset(32*j), yn, ym)
		}
		c.VMOVDQU(ym, g.maskMem.Offset(32*j))
	}
}

// maskReg returns the opmask of column vector j (K1...).
func maskReg(j int) reg.OpmaskPhysical {
	return reg.Opmask.Lookup(reg.Index(j+1), reg.S64).(reg.OpmaskPhysical)
}

func (g *gemmGen) eachAcc(f func(r reg.VecPhysical)) {
	for _, row := range g.acc {
		for _, r := range row {
			f(r)
		}
	}
}

// tileLoop emits a pass over the C tile with two paths: when m == MR and
// n == NR, full(acc, mem) for every vector; otherwise edge(acc, mem, j) for
// rows i < m and the vectors j with j*vl < n only (edge masks lanes >= n).
// Both paths end by jumping to (or falling into) the label out.
func (g *gemmGen) tileLoop(prefix, out string, full func(r reg.VecPhysical, m operand.Mem), edge func(r reg.VecPhysical, m operand.Mem, j int)) {
	c, k := g.c, g.k
	edgeLbl := prefix + "_edge"
	c.CMPQ(rM, operand.Imm(uint64(k.MR)))
	c.JNE(lbl(edgeLbl))
	c.CMPQ(rN, operand.Imm(uint64(k.NR)))
	c.JNE(lbl(edgeLbl))
	c.MOVQ(rC, rRow)
	for i := 0; i < k.MR; i++ {
		for j := 0; j < g.nv; j++ {
			full(g.acc[i][j], mem(rRow, j*g.vl*g.esz))
		}
		if i < k.MR-1 {
			c.ADDQ(rLdc, rRow)
		}
	}
	c.JMP(lbl(out))

	c.Label(edgeLbl)
	c.MOVQ(rC, rRow)
	for i := 0; i < k.MR; i++ {
		c.CMPQ(rM, operand.Imm(uint64(i)))
		c.JLE(lbl(out))
		rowEnd := fmt.Sprintf("%s_row%d", prefix, i)
		for j := 0; j < g.nv; j++ {
			c.CMPQ(rN, operand.Imm(uint64(j*g.vl)))
			c.JLE(lbl(rowEnd))
			edge(g.acc[i][j], mem(rRow, j*g.vl*g.esz), j)
		}
		c.Label(rowEnd)
		if i < k.MR-1 {
			c.ADDQ(rLdc, rRow)
		}
	}
}

// Unpacked (strided) kernels, docs/MICROKERNEL.md "Unpacked operands":
// A is read in place at a[i*ars+p*acs], B at b[p*ldb+j]. The accumulator
// tile, its register assignment and the epilogue are those of the packed
// kernel; only the prologue and the k loops differ.

// General-purpose registers of the unpacked k loops. The epilogue reloads
// its own (rC, rLdc, ...) after them.
var (
	uB    = reg.RDI // B row p: b + p*ldb
	uLdb  = reg.RSI // ldb in bytes
	uKoff = reg.RAX // p*acs in bytes (register-row and table modes)
	uAcs  = reg.RBX // acs in bytes
	uLoop = reg.RDX // unrolled-loop counter
	uKC   = reg.RCX // kc; remainder counter
	uPfd  = reg.R14 // prefetch distance in bytes (ABI0 code may use R14)

	// Register-row mode (MR <= 6): one pointer per row of A, fixed for the
	// call; row i at step p is (P_i)(uKoff*1).
	uRowRegs = []reg.GPPhysical{reg.R8, reg.R9, reg.R10, reg.R11, reg.R12, reg.R13}

	// Index mode (MR > 6): rows 0-6 at uA0 + {0,1,2,3,4,5,6}·ars
	// and rows 7-13 at uA7 = uA0 + 7·ars + the same, from the index registers
	// ars, 3·ars and 5·ars scaled by 1, 2 or 4; uA0 and uA7 advance with k.
	uA0, uA7      = reg.R8, reg.R9
	uI1, uI3, uI5 = reg.R10, reg.R11, reg.R12
)

// rowMode is how an unpacked k loop addresses the rows of A.
type rowMode int

const (
	rowRegs  rowMode = iota // MR pointer registers + shared k offset
	rowIndex                // two bases + scaled index registers
)

// Index register and scale of row offset o·ars, o in 0..6, in index mode.
func rowIndexOf(o int) (reg.Register, uint8) {
	switch o {
	case 1:
		return uI1, 1
	case 2:
		return uI1, 2
	case 3:
		return uI3, 1
	case 4:
		return uI1, 4
	case 5:
		return uI5, 1
	case 6:
		return uI3, 2
	}
	return nil, 0
}

// emitU emits an unpacked kernel.
//
// Structure: early exit for m <= 0 or n <= 0; column masks built once (AVX2
// frame / AVX-512 opmasks); accumulators zeroed; then
//   - full path: (register-row mode: n == NR; index mode: m == MR and
//     n == NR) unmasked B loads, a k loop specialised for acs == 1 (A offsets
//     as displacements) and a generic one;
//   - edge path: one k loop per q = (n-1)/vl: B vectors < q loaded whole,
//     vector q masked (VMASKMOVP / opmask zeroing load, so lanes >= n are
//     not read), vectors > q neither loaded nor multiplied.
//
// Rows i >= m of A are never read. Register-row mode (AVX2) points them at
// row 0 and drops their accumulators in the masked store; index mode
// (AVX-512) has one edge k loop per m, which computes rows i < m only (a
// small product, 8×8 on a 14-row tile, would otherwise spend 14/8 of the
// FMAs and broadcasts).
func (g *gemmGen) emitU() {
	c, k := g.c, g.k
	t := goType(k.Elem)
	c.Function(k.Name)
	c.Attributes(attr.NOSPLIT)
	c.Pragma("noescape")
	c.Doc(
		fmt.Sprintf("%s is the %s %d×%d %s unpacked GEMM microkernel (docs/MICROKERNEL.md):", k.Name, k.Elem, k.MR, k.NR, k.ISA),
		"C[i*ldc+j] = epilogue(alpha*Σ_p a[i*ars+p*acs]*b[p*ldb+j] + beta*C[i*ldc+j]) for i < m, j < n;",
		"rows i >= m of A and columns j >= n of B are never read.",
	)
	c.SignatureExpr(fmt.Sprintf("func(kc int, a *%s, ars, acs int, b *%s, ldb int, c *%s, ldc int, m, n int, alpha, beta %s, bias *%s, ep int)", t, t, t, t, t))
	mode := rowRegs
	if k.MR > len(uRowRegs) {
		mode = rowIndex
	}
	if !g.z {
		g.maskMem = c.AllocLocal(g.nv * 32)
	}
	shift := operand.Imm(uint64(bits.TrailingZeros(uint(g.esz))))

	c.Comment("m <= 0 or n <= 0: nothing to read or write.")
	c.Load(c.Param("m"), rM)
	c.Load(c.Param("n"), rN)
	c.TESTQ(rM, rM)
	c.JLE(lbl("done"))
	c.TESTQ(rN, rN)
	c.JLE(lbl("done"))

	c.Load(c.Param("c"), rC)
	c.Load(c.Param("ldc"), rLdc)
	c.SHLQ(shift, rLdc)
	zeroAll := func() {
		c.Comment(fmt.Sprintf("Zero the %d accumulators.", k.MR*g.nv))
		g.eachAcc(func(r reg.VecPhysical) { zero(c, g.z, r) })
	}
	if mode == rowRegs {
		g.prefetchC()
	}

	g.masks()
	g.masksReady = true
	if mode == rowRegs {
		zeroAll()
	}

	c.Load(c.Param("b"), uB)
	c.Load(c.Param("ldb"), uLdb)
	c.SHLQ(shift, uLdb)
	if d, _ := g.uPrefetch(); d > 0 {
		c.Comment(fmt.Sprintf("Prefetch distance: %d rows of B.", d))
		c.IMUL3Q(operand.Imm(uint64(d)), uLdb, uPfd)
	}
	c.Load(c.Param("acs"), uAcs)
	c.SHLQ(shift, uAcs)
	c.Load(c.Param("kc"), uKC)
	m := g.paramAddr("m")
	n := g.paramAddr("n")

	switch mode {
	case rowRegs:
		c.Comment("Row pointers of A: a + i*ars for i < m; rows i >= m point at row 0 (their accumulators are never stored).")
		p0 := uRowRegs[0]
		c.Load(c.Param("a"), p0)
		c.Load(c.Param("ars"), uLoop)
		c.SHLQ(shift, uLoop)
		c.MOVQ(p0, uKoff)
		for i := 1; i < k.MR; i++ {
			c.ADDQ(uLoop, uKoff)
			c.MOVQ(uKoff, uRowRegs[i])
			c.CMPQ(m, operand.Imm(uint64(i)))
			c.CMOVQLE(p0, uRowRegs[i])
		}
		c.XORQ(uKoff, uKoff)
		if k.MR >= 4 {
			c.Comment("m == 1, n == NR: one row of A (a skinny product); four accumulator sets instead of MR rows.")
			c.CMPQ(m, operand.Imm(1))
			c.JNE(lbl("um1skip"))
			c.CMPQ(n, operand.Imm(uint64(k.NR)))
			c.JNE(lbl("um1skip"))
			g.uM1()
			c.Label("um1skip")
		}
		c.Comment("n == NR: whole B rows (any m: the row pointers are valid).")
		c.CMPQ(n, operand.Imm(uint64(k.NR)))
		c.JNE(lbl("uedge"))
		g.uLoops("full", rowRegs, g.nv, false, true)
		c.Label("uedge")
		g.uEdgeLoops(rowRegs, "")

	case rowIndex:
		rowIndexRegs := func() {
			c.Comment("Rows at uA0/uA7 + {0..6}*ars from the index registers ars, 3ars, 5ars.")
			c.Load(c.Param("a"), uA0)
			c.Load(c.Param("ars"), uI1)
			c.SHLQ(shift, uI1)
			c.LEAQ(operand.Mem{Base: uI1, Index: uI1, Scale: 2}, uI3)
			c.LEAQ(operand.Mem{Base: uI1, Index: uI1, Scale: 4}, uI5)
			if k.MR > 7 {
				c.LEAQ(operand.Mem{Base: uI1, Index: uI3, Scale: 2}, uA7)
				c.ADDQ(uA0, uA7)
			}
		}
		c.CMPQ(m, operand.Imm(uint64(k.MR)))
		c.JNE(lbl("uedge"))
		c.CMPQ(n, operand.Imm(uint64(k.NR)))
		c.JNE(lbl("uedge"))
		c.Comment("Full tile.")
		g.prefetchC()
		zeroAll()
		rowIndexRegs()
		g.uLoops("full", rowIndex, g.nv, false, true)

		c.Label("uedge")
		c.Comment("Edge tile: one k loop per row count m and column vector count, each reading rows i < m only")
		c.Comment("and zeroing only the accumulators it uses (the others are never stored); C is not prefetched.")
		rowIndexRegs()
		g.uDispatchM("m", 1, k.MR)
		for mm := 1; mm <= k.MR; mm++ {
			c.Label(fmt.Sprintf("m%d", mm))
			g.uRows, g.uSets = mm, uSetsFor(mm, k.MR, g.u)
			g.uEdgeLoops(rowIndex, fmt.Sprintf("m%d_", mm))
		}
		g.uRows, g.uSets = 0, 1
	}

	c.Label("ustore")
	c.Load(c.Param("c"), rC)
	c.Load(c.Param("ldc"), rLdc)
	c.SHLQ(shift, rLdc)
	g.epilogue()
}

// BatchName is the name of the batched twin of the unpacked kernel named u (codegen.BatchSuffix, the
// name the dispatch file's adapters call).
func BatchName(u string) string { return u + codegen.BatchSuffix }

// emitUB emits the batched twin of the unpacked kernel (BatchName; docs/MICROKERNEL.md, "Batched
// products"): the unpacked signature plus cnt, sa, sb, sc, computing cnt whole m×n products (n <= NR,
// m any) at a, b, c + q·(sa, sb, sc) elements, each as row tiles in order, by calling the unpacked
// kernel once per tile of MR rows, or its tall companion (emitUT) once per tile of up to 2·MR rows where
// it has one, n fits one vector, acs == 1 and more than MR rows are left. The arguments of the call live
// in this frame's outgoing area: the invariant ones are copied once, a, c and m are written per tile and
// b per product (the unpacked kernels never write their argument slots). Locals after them: the
// product's rows, A and C, and the rows left. A pointer moves only to a tile or product that exists.
func (g *gemmGen) emitUB() {
	c, k := g.c, g.k
	t := goType(k.Elem)
	name := BatchName(k.Name)
	c.Function(name)
	c.Attributes(attr.NOSPLIT)
	c.Pragma("noescape")
	c.Doc(
		fmt.Sprintf("%s is the batched twin of %s (docs/MICROKERNEL.md, \"Batched products\"): for each", name, k.Name),
		"product q < cnt, the m×n product at a + q*sa, b + q*sb, c + q*sc (elements), m any and n <= NR,",
		fmt.Sprintf("as %s computes it: its row tiles of %d rows in order, one call each.", k.Name, k.MR),
	)
	c.SignatureExpr(fmt.Sprintf("func(kc int, a *%s, ars, acs int, b *%s, ldb int, c *%s, ldc int, m, n int, alpha, beta %s, bias *%s, ep int, cnt, sa, sb, sc int)", t, t, t, t, t))
	// The outgoing arguments: the unpacked kernel's, laid out as this function's first 14 (the same
	// signature up to ep), which end where cnt begins.
	names := []string{"kc", "a", "ars", "acs", "b", "ldb", "c", "ldc", "m", "n", "alpha", "beta", "bias", "ep"}
	out := c.AllocLocal(g.paramAddr("cnt").Disp)
	arg := func(name string) operand.Mem { return out.Offset(g.paramAddr(name).Disp) }
	rows, pa, pc, left := c.AllocLocal(8), c.AllocLocal(8), c.AllocLocal(8), c.AllocLocal(8)
	shift := operand.Imm(uint64(bits.TrailingZeros(uint(g.esz))))

	c.Comment("Nothing to do for cnt, n or m <= 0.")
	for _, p := range []string{"cnt", "n", "m"} {
		c.MOVQ(g.paramAddr(p), rTmp)
		c.TESTQ(rTmp, rTmp)
		c.JLE(lbl("bret"))
	}
	c.MOVQ(rTmp, rows)
	c.Comment("The arguments every call shares.")
	for _, n := range names {
		switch {
		case n == "m" || n == "a" || n == "c":
		case (n == "alpha" || n == "beta") && g.esz == 4:
			c.MOVL(g.paramAddr(n), rLoop.As32())
			c.MOVL(rLoop.As32(), arg(n))
		default:
			c.MOVQ(g.paramAddr(n), rLoop)
			c.MOVQ(rLoop, arg(n))
		}
	}
	c.MOVQ(g.paramAddr("a"), rTmp)
	c.MOVQ(rTmp, pa)
	c.MOVQ(g.paramAddr("c"), rTmp)
	c.MOVQ(rTmp, pc)

	c.Label("bprod")
	c.MOVQ(rows, rTmp)
	c.MOVQ(rTmp, left)
	c.MOVQ(pa, rTmp)
	c.MOVQ(rTmp, arg("a"))
	c.MOVQ(pc, rTmp)
	c.MOVQ(rTmp, arg("c"))

	// tile calls kernel on min(rows, rows left) rows, then moves to the next tile of rows rows or, when
	// none is left, to bnext.
	tile := func(kernel string, rows int, next string) {
		c.Comment(fmt.Sprintf("m = min(%d, rows left)", rows))
		c.MOVQ(left, rTmp)
		c.MOVQ(operand.U32(rows), rLoop)
		c.CMPQ(rTmp, rLoop)
		c.CMOVQGT(rLoop, rTmp)
		c.MOVQ(rTmp, arg("m"))
		c.CALL(operand.LabelRef("·" + kernel + "(SB)")) // avo takes a call target as a label (rel32)
		c.Comment(fmt.Sprintf("Rows left: the next tile, A and C %d rows on.", rows))
		c.MOVQ(left, rTmp)
		c.SUBQ(operand.U32(rows), rTmp)
		c.JLE(lbl("bnext"))
		c.MOVQ(rTmp, left)
		for _, p := range [][2]string{{"ars", "a"}, {"ldc", "c"}} {
			c.MOVQ(g.paramAddr(p[0]), rTmp)
			c.IMUL3Q(operand.U32(rows*g.esz), rTmp, rTmp)
			c.ADDQ(rTmp, arg(p[1]))
		}
		c.JMP(lbl(next))
	}
	c.Label("btile")
	if g.tall() {
		c.Comment(fmt.Sprintf("One vector of columns (n <= %d), acs == 1 and more than %d rows left: a tall tile.", g.vl, k.MR))
		c.CMPQ(g.paramAddr("n"), operand.U32(g.vl))
		c.JGT(lbl("bshort"))
		c.CMPQ(g.paramAddr("acs"), operand.U32(1))
		c.JNE(lbl("bshort"))
		c.CMPQ(left, operand.U32(k.MR))
		c.JLE(lbl("bshort"))
		tile(TallName(k.Name), 2*k.MR, "btile")
		c.Label("bshort")
	}
	tile(k.Name, k.MR, "btile")

	c.Label("bnext")
	c.Comment("Products left: the next one, A, B and C a product on.")
	c.DECQ(g.paramAddr("cnt"))
	c.JZ(lbl("bret"))
	for _, p := range []struct {
		stride string
		at     operand.Mem
	}{{"sa", pa}, {"sb", arg("b")}, {"sc", pc}} {
		c.MOVQ(g.paramAddr(p.stride), rTmp)
		c.SHLQ(shift, rTmp)
		c.ADDQ(rTmp, p.at)
	}
	c.JMP(lbl("bprod"))

	c.Label("bret")
	c.RET()
}

// TallName is the name of the tall-tile companion of the unpacked kernel named u (emitUT).
func TallName(u string) string { return u + "T" }

// tall reports whether the kernel has a tall-tile companion (emitUT): AVX-512 unpacked tiles of two or
// more column vectors, whose second vector's accumulators hold the rows past MR when n fits one.
func (g *gemmGen) tall() bool { return g.z && g.nv >= 2 && g.k.Unpacked }

// Tall tiles' extra row bases: rows 14–20 and 21–27 at uA14 = uA0 + 14·ars and uA21 (the k offset
// register of register-row mode and the epilogue's row pointer, both unused in the tall k loop).
var uA14, uA21 = reg.RAX, reg.R13

// emitUT emits the tall-tile companion of an AVX-512 unpacked kernel (TallName; docs/MICROKERNEL.md,
// "Batched products"), which the batched twin calls: the unpacked signature and contract for n <= VL
// (one vector of columns), acs == 1 and MR < m <= 2·MR rows, row r in accumulator acc[r mod MR][r / MR]
// (the second vector's registers, idle when n fits one). A 16×16×16 product is then one tile of 16 rows
// at 16 FMAs a k step, instead of a 14-row tile and a 2-row one, each with a call's fixed cost. One k
// loop per m (rows i >= m of A are not read), one accumulator per row (each sum in k order).
func (g *gemmGen) emitUT() {
	c, k := g.c, g.k
	t := goType(k.Elem)
	name := TallName(k.Name)
	c.Function(name)
	c.Attributes(attr.NOSPLIT)
	c.Pragma("noescape")
	c.Doc(
		fmt.Sprintf("%s is the tall-tile companion of %s (docs/MICROKERNEL.md, \"Batched products\"): its", name, k.Name),
		fmt.Sprintf("contract for n <= %d, acs == 1 and %d < m <= %d, row r in accumulator [r mod %d][r / %d].", g.vl, k.MR, 2*k.MR, k.MR, k.MR),
	)
	c.SignatureExpr(fmt.Sprintf("func(kc int, a *%s, ars, acs int, b *%s, ldb int, c *%s, ldc int, m, n int, alpha, beta %s, bias *%s, ep int)", t, t, t, t, t))
	shift := operand.Imm(uint64(bits.TrailingZeros(uint(g.esz))))
	acc := func(r int) reg.VecPhysical { return g.acc[r%k.MR][r/k.MR] }

	c.Load(c.Param("n"), rN)
	g.masks()
	c.Load(c.Param("b"), uB)
	c.Load(c.Param("ldb"), uLdb)
	c.SHLQ(shift, uLdb)
	d, offs := g.uPrefetchN(1)
	if d > 0 {
		c.IMUL3Q(operand.Imm(uint64(d)), uLdb, uPfd)
	}
	c.Load(c.Param("kc"), uKC)
	c.Comment("Rows at uA0/uA7/uA14/uA21 + {0..6}*ars from the index registers ars, 3ars, 5ars.")
	c.Load(c.Param("a"), uA0)
	c.Load(c.Param("ars"), uI1)
	c.SHLQ(shift, uI1)
	c.LEAQ(operand.Mem{Base: uI1, Index: uI1, Scale: 2}, uI3)
	c.LEAQ(operand.Mem{Base: uI1, Index: uI1, Scale: 4}, uI5)
	c.LEAQ(operand.Mem{Base: uI1, Index: uI3, Scale: 2}, uA7) // 7·ars
	c.LEAQ(operand.Mem{Base: uA0, Index: uA7, Scale: 2}, uA14)
	c.LEAQ(operand.Mem{Base: uA14, Index: uA7, Scale: 1}, uA21)
	c.ADDQ(uA0, uA7)
	bases := []reg.GPPhysical{uA0, uA7, uA14, uA21}
	row := func(r, p int) operand.Mem {
		idx, sc := rowIndexOf(r % 7)
		return operand.Mem{Base: bases[r/7], Index: idx, Scale: sc, Disp: p * g.esz}
	}

	g.uDispatchM("t", k.MR+1, 2*k.MR) // labels t<m>
	for mm := k.MR + 1; mm <= 2*k.MR; mm++ {
		pre := fmt.Sprintf("t%d", mm)
		c.Label(pre)
		for r := 0; r < mm; r++ {
			zero(c, true, acc(r))
		}
		step := func(p int) {
			g.vloadZ(mem(uB, 0), maskReg(0), g.bvec[0])
			if d > 0 {
				for _, off := range offs {
					c.PREFETCHT0(operand.Mem{Base: uB, Index: uPfd, Scale: 1, Disp: off})
				}
			}
			for r := 0; r < mm; r++ {
				b := g.bcast[r%len(g.bcast)]
				g.bcst(row(r, p), b)
				g.fma(g.bvec[0], b, acc(r))
			}
			c.ADDQ(uLdb, uB)
		}
		advance := func(by int) {
			for _, b := range bases[:(mm+6)/7] {
				c.ADDQ(operand.U32(by*g.esz), b)
			}
		}
		c.MOVQ(uKC, uLoop)
		c.SHRQ(operand.Imm(uint64(bits.TrailingZeros(uint(g.u)))), uLoop)
		c.JZ(lbl(pre + "_rem"))
		c.Label(pre + "_loop")
		for p := 0; p < g.u; p++ {
			step(p)
		}
		advance(g.u)
		c.DECQ(uLoop)
		c.JNZ(lbl(pre + "_loop"))
		c.Label(pre + "_rem")
		c.ANDQ(operand.U32(g.u-1), uKC)
		c.JZ(lbl("tstore"))
		c.Label(pre + "_rem1")
		step(0)
		advance(1)
		c.DECQ(uKC)
		c.JNZ(lbl(pre + "_rem1"))
		c.JMP(lbl("tstore"))
	}

	c.Label("tstore")
	c.Load(c.Param("c"), rC)
	c.Load(c.Param("ldc"), rLdc)
	c.SHLQ(shift, rLdc)
	c.Load(c.Param("m"), rM)
	c.Load(c.Param("ep"), rEp)
	s0 := g.scratch[0]
	all := func(f func(r reg.VecPhysical)) {
		for r := 0; r < 2*k.MR; r++ {
			f(acc(r))
		}
	}
	// rows visits the rows r < m of C (rows up to MR always exist), f given the accumulator and C's row.
	rows := func(prefix string, f func(r reg.VecPhysical, m operand.Mem)) {
		c.MOVQ(rC, rRow)
		for r := 0; r < 2*k.MR; r++ {
			if r > k.MR {
				c.CMPQ(rM, operand.Imm(uint64(r)))
				c.JLE(lbl(prefix + "_end"))
			}
			f(acc(r), mem(rRow, 0))
			if r < 2*k.MR-1 {
				c.ADDQ(rLdc, rRow)
			}
		}
		c.Label(prefix + "_end")
	}
	c.Comment("acc *= alpha, skipped for alpha == 1")
	g.jumpIfAlphaOne("tnoalpha")
	g.bcst(g.paramAddr("alpha"), s0)
	all(func(r reg.VecPhysical) { g.mul(s0, r, r) })
	c.Label("tnoalpha")
	c.Comment("beta != 0 (any bit but the sign set): acc += beta*C")
	g.jumpIfBetaZero("tnobeta")
	g.bcst(g.paramAddr("beta"), s0)
	rows("tbeta", func(r reg.VecPhysical, cm operand.Mem) { g.fma(cm, s0, maskReg(0), r) })
	c.Label("tnobeta")
	c.Comment("ep&1: acc += bias (columns j < n only are read)")
	c.TESTQ(operand.U32(1), rEp)
	c.JZ(lbl("tnobias"))
	c.Load(c.Param("bias"), rBias)
	g.vloadZ(mem(rBias, 0), maskReg(0), s0)
	all(func(r reg.VecPhysical) { g.add(s0, r, r) })
	c.Label("tnobias")
	c.Comment("ep&2: acc = max(acc, 0)")
	c.TESTQ(operand.U32(2), rEp)
	c.JZ(lbl("tnorelu"))
	zero(c, true, s0)
	all(func(r reg.VecPhysical) { g.max(r, s0, r) })
	c.Label("tnorelu")
	c.Comment("Store rows r < m.")
	rows("tst", func(r reg.VecPhysical, cm operand.Mem) { g.vstore(r, maskReg(0), cm) })
	c.VZEROUPPER()
	c.RET()
}

// uSetsFor returns the number of accumulator sets of an m-row edge loop:
// 4 or 2 when that many copies of the m rows fit in the MR-row tile (and
// divide the unroll factor u), else 1.
func uSetsFor(m, mr, u int) int {
	for _, s := range []int{4, 2} {
		if s*m <= mr && u%s == 0 {
			return s
		}
	}
	return 1
}

// uDispatchM jumps to label <prefix><m> for the row count m in [lo, hi] (a binary
// search through labels <prefix>sel<mid>_<hi>; m > hi goes to hi's label).
func (g *gemmGen) uDispatchM(prefix string, lo, hi int) {
	c := g.c
	if lo == hi {
		c.JMP(lbl(fmt.Sprintf("%s%d", prefix, lo)))
		return
	}
	mid := (lo + hi + 1) / 2
	upper := fmt.Sprintf("%ssel%d_%d", prefix, mid, hi)
	c.CMPQ(g.paramAddr("m"), operand.Imm(uint64(mid)))
	c.JGE(lbl(upper))
	g.uDispatchM(prefix, lo, mid-1)
	c.Label(upper)
	g.uDispatchM(prefix, mid, hi)
}

// uEdgeLoops dispatches on q = (n-1)/vl and emits one k loop per q, its
// labels prefixed by prefix.
func (g *gemmGen) uEdgeLoops(mode rowMode, prefix string) {
	c := g.c
	c.Comment("Edge columns: q = (n-1)/vl; B vectors < q whole, q masked, > q skipped.")
	n := g.paramAddr("n")
	for q := 0; q < g.nv-1; q++ {
		c.CMPQ(n, operand.Imm(uint64((q+1)*g.vl)))
		c.JLE(lbl(fmt.Sprintf("%sedge%d", prefix, q)))
	}
	for q := g.nv - 1; q >= 0; q-- {
		name := fmt.Sprintf("%sedge%d", prefix, q)
		if q < g.nv-1 {
			c.Label(name)
		}
		if !g.z {
			c.VMOVDQU(g.maskMem.Offset(32*q), g.uMask())
		}
		if g.uRows > 0 {
			for i := 0; i < g.uSets*g.uRows; i++ {
				for j := 0; j <= q; j++ {
					zero(c, g.z, g.acc[i][j])
				}
			}
		}
		g.uLoops(name, mode, q+1, true, false)
	}
}

// uM1 emits the k loop of a one-row tile (m == 1, n == NR): a row of B per step, one broadcast of A, and
// the FMAs into accumulator set p%4 (the rows 0..3 of the tile, unused otherwise), summed into row 0
// at the end. Computing all MR rows, as the general loop does, would spend MR times the FMAs on a
// product that is bound by reading B.
func (g *gemmGen) uM1() {
	c := g.c
	step := func(s int) {
		for j := 0; j < g.nv; j++ {
			g.vload(mem(uB, j*g.vl*g.esz), g.bvec[j])
		}
		if d, offs := g.uPrefetch(); d > 0 {
			for _, off := range offs {
				c.PREFETCHT0(operand.Mem{Base: uB, Index: uPfd, Scale: 1, Disp: off})
			}
		}
		g.bcst(operand.Mem{Base: uRowRegs[0], Index: uKoff, Scale: 1}, g.bcast[0])
		for j := 0; j < g.nv; j++ {
			g.fma(g.bvec[j], g.bcast[0], g.acc[s][j])
		}
		c.ADDQ(uLdb, uB)
		c.ADDQ(uAcs, uKoff)
	}
	c.MOVQ(uKC, uLoop)
	c.SHRQ(operand.Imm(2), uLoop)
	c.JZ(lbl("um1_rem"))
	c.Label("um1_loop")
	for s := 0; s < 4; s++ {
		step(s)
	}
	c.DECQ(uLoop)
	c.JNZ(lbl("um1_loop"))
	c.Label("um1_rem")
	c.ANDQ(operand.U32(3), uKC)
	c.JZ(lbl("um1_sum"))
	c.Label("um1_rem1")
	step(0)
	c.DECQ(uKC)
	c.JNZ(lbl("um1_rem1"))
	c.Label("um1_sum")
	for j := 0; j < g.nv; j++ {
		for s := 1; s < 4; s++ {
			g.add(g.acc[s][j], g.acc[0][j], g.acc[0][j])
		}
	}
	c.JMP(lbl("ustore"))
}

// uMask is the AVX2 column-mask register of the edge k loops (the second
// broadcast register of the full loops).
func (g *gemmGen) uMask() reg.VecPhysical { return g.scratch[g.nv+1] }

// uLoops emits the k loops of one path: an unrolled loop specialised for
// acs == 1 (if acs1), a generic unrolled loop and the one-step remainder
// loop; all end by jumping to ustore. Labels: name_acs1 and name_gen (loop
// bodies), name_rem1 (remainder).
func (g *gemmGen) uLoops(name string, mode rowMode, nvec int, masked, acs1 bool) {
	c := g.c
	out := "ustore"
	if g.uSets > 1 {
		out = name + "_sum"
	}
	if g.u > 1 {
		if acs1 {
			c.Comment(fmt.Sprintf("%s: acs == 1, k loop unrolled %d times, A offsets as displacements.", name, g.u))
			c.CMPQ(uAcs, operand.Imm(uint64(g.esz)))
			c.JNE(lbl(name + "_gen0"))
			g.uUnrolled(name, name+"_acs1", mode, true, nvec, masked)
			c.JMP(lbl(name + "_rem"))
			c.Label(name + "_gen0")
		}
		c.Comment(fmt.Sprintf("%s: any acs, k loop unrolled %d times.", name, g.u))
		g.uUnrolled(name, name+"_gen", mode, false, nvec, masked)
		c.Label(name + "_rem")
		c.ANDQ(operand.U32(g.u-1), uKC)
	} else {
		c.TESTQ(uKC, uKC)
	}
	c.JZ(lbl(out))
	c.Label(name + "_rem1")
	g.uStep(0, mode, false, nvec, masked)
	c.DECQ(uKC)
	c.JNZ(lbl(name + "_rem1"))
	if g.uSets > 1 {
		c.Label(out)
		c.Comment(fmt.Sprintf("Sum the %d accumulator sets into the first.", g.uSets))
		for s := 1; s < g.uSets; s++ {
			for i := 0; i < g.uRows; i++ {
				for j := 0; j < nvec; j++ {
					g.add(g.acc[s*g.uRows+i][j], g.acc[i][j], g.acc[i][j])
				}
			}
		}
	}
	c.JMP(lbl("ustore"))
}

// uUnrolled emits one unrolled k loop with body label body; it falls
// through (or jumps, if kc < u) to name_rem.
func (g *gemmGen) uUnrolled(name, body string, mode rowMode, acs1 bool, nvec int, masked bool) {
	c := g.c
	c.MOVQ(uKC, uLoop)
	c.SHRQ(operand.Imm(uint64(bits.TrailingZeros(uint(g.u)))), uLoop)
	c.JZ(lbl(name + "_rem"))
	c.Label(body)
	for p := 0; p < g.u; p++ {
		g.uStep(p, mode, acs1, nvec, masked)
	}
	if acs1 {
		g.uAdvanceA(mode, operand.U32(g.u*g.esz))
	}
	c.DECQ(uLoop)
	c.JNZ(lbl(body))
}

// uAdvanceA moves A one (or, with an immediate, several) k steps on.
func (g *gemmGen) uAdvanceA(mode rowMode, by operand.Op) {
	if mode == rowIndex {
		g.c.ADDQ(by, uA0)
		if g.k.MR > 7 && (g.uRows == 0 || g.uRows > 7) {
			g.c.ADDQ(by, uA7)
		}
		return
	}
	g.c.ADDQ(by, uKoff)
}

// uRow returns the address of Ã(i, p) for step p of an unrolled iteration
// (acs1: A offsets p*esz as displacements; otherwise the loop advances A
// every step and p is ignored).
func (g *gemmGen) uRow(i, p int, mode rowMode, acs1 bool) operand.Mem {
	disp := 0
	if acs1 {
		disp = p * g.esz
	}
	switch mode {
	case rowRegs:
		return operand.Mem{Base: uRowRegs[i], Index: uKoff, Scale: 1, Disp: disp}
	case rowIndex:
		base := uA0
		if i >= 7 {
			base = uA7
		}
		idx, sc := rowIndexOf(i % 7)
		return operand.Mem{Base: base, Index: idx, Scale: sc, Disp: disp}
	}
	panic(fmt.Sprintf("unpacked row mode %d", mode)) // the modes are this file's constants
}

// uPrefetch returns the distance in rows at which B is prefetched (0: off)
// and the byte offsets within a row that touch every cache line of it.
func (g *gemmGen) uPrefetch() (int, []int) {
	return g.uPrefetchN(g.nv)
}

// uPrefetchN is uPrefetch for the first nvec vectors of a row.
func (g *gemmGen) uPrefetchN(nvec int) (int, []int) {
	d := g.k.PrefetchB
	if d == 0 {
		d = defaultPrefetchU
	}
	if d < 0 {
		return 0, nil
	}
	rowBytes := nvec * g.vl * g.esz
	var offs []int
	for off := 0; off < rowBytes; off += 64 {
		offs = append(offs, off)
	}
	if last := rowBytes - 1; last != offs[len(offs)-1] {
		offs = append(offs, last)
	}
	return d, offs
}

// uStep emits one k step: nvec B vectors (the last one masked if masked),
// the prefetch of the B row PrefetchB rows ahead, MR broadcasts of A and
// MR·nvec FMAs, then advances B (and A, unless acs1).
func (g *gemmGen) uStep(p int, mode rowMode, acs1 bool, nvec int, masked bool) {
	c, k := g.c, g.k
	bc := g.bcast
	if masked && !g.z {
		bc = g.bcast[:1] // the other one holds the column mask
	}
	for j := 0; j < nvec; j++ {
		m := mem(uB, j*g.vl*g.esz)
		switch {
		case !masked || j < nvec-1:
			g.vload(m, g.bvec[j])
		case g.z:
			g.vloadZ(m, maskReg(j), g.bvec[j]) // fault-suppressed masked load
		default:
			g.maskmov(m, g.uMask(), g.bvec[j])
		}
	}
	pfv := g.nv
	if g.uRows > 0 {
		pfv = nvec // index-mode edge loops: only the lines of B this loop reads
	}
	if d, offs := g.uPrefetchN(pfv); d > 0 {
		for _, off := range offs {
			c.PREFETCHT0(operand.Mem{Base: uB, Index: uPfd, Scale: 1, Disp: off})
		}
	}
	rows, set := k.MR, 0
	if g.uRows > 0 {
		rows, set = g.uRows, p%g.uSets
	}
	for i := 0; i < rows; i++ {
		r := bc[i%len(bc)]
		g.bcst(g.uRow(i, p, mode, acs1), r)
		for j := 0; j < nvec; j++ {
			g.fma(g.bvec[j], r, g.acc[set*rows+i][j])
		}
	}
	c.ADDQ(uLdb, uB)
	if !acs1 {
		g.uAdvanceA(mode, uAcs)
	}
}
