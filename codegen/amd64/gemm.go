package amd64

import (
	"fmt"
	"math/bits"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// General-purpose register roles in a GEMM kernel. All are caller-saved in
// ABI0; BP, R14 (g in ABIInternal) and R15 (dynamic-linking scratch) are not
// used.
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

	// Element-type dependent instruction builders.
	vload, vstore func(ops ...operand.Op)
	bcst          func(ops ...operand.Op)
	fma           func(ops ...operand.Op)
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
		g.bcst = c.VBROADCASTSD
		g.fma = c.VFMADD231PD
		g.mul, g.add, g.max = c.VMULPD, c.VADDPD, c.VMAXPD
		g.maskmov = c.VMASKMOVPD
	} else {
		g.vload, g.vstore = c.VMOVUPS, c.VMOVUPS
		g.bcst = c.VBROADCASTSS
		g.fma = c.VFMADD231PS
		g.mul, g.add, g.max = c.VMULPS, c.VADDPS, c.VMAXPS
		g.maskmov = c.VMASKMOVPS
	}
	return g
}

func mem(base reg.Register, disp int) operand.Mem { return operand.Mem{Base: base, Disp: disp} }

func lbl(name string) operand.LabelRef { return operand.LabelRef(name) }

func (g *gemmGen) emit() {
	c, k := g.c, g.k
	t := goType(k.Elem)
	c.Function(k.Name)
	c.Attributes(attr.NOSPLIT)
	c.Pragma("noescape")
	c.Doc(
		fmt.Sprintf("%s is the %s %d×%d %s GEMM microkernel (docs/MICROKERNEL.md):", k.Name, k.Elem, k.MR, k.NR, k.ISA),
		fmt.Sprintf("C[i*ldc+j] = epilogue(alpha*Σ_p a[p*%d+i]*b[p*%d+j] + beta*C[i*ldc+j]) for i < m, j < n.", k.MR, k.NR),
	)
	c.SignatureExpr(fmt.Sprintf("func(kc int, a, b, c *%s, ldc int, m, n int, alpha, beta %s, bias *%s, ep int)", t, t, t))
	if !g.z {
		g.maskMem = c.AllocLocal(g.nv * 32)
	}

	c.Load(c.Param("kc"), rKC)
	c.Load(c.Param("a"), rA)
	c.Load(c.Param("b"), rB)
	c.Load(c.Param("c"), rC)
	c.Load(c.Param("ldc"), rLdc)
	c.SHLQ(operand.Imm(uint64(bits.TrailingZeros(uint(g.esz)))), rLdc)

	c.Comment("Prefetch the C tile (first and last byte of each row).")
	c.MOVQ(rC, rRow)
	for i := 0; i < k.MR; i++ {
		c.PREFETCHT0(mem(rRow, 0))
		c.PREFETCHT0(mem(rRow, k.NR*g.esz-1))
		if i < k.MR-1 {
			c.ADDQ(rLdc, rRow)
		}
	}

	c.Comment(fmt.Sprintf("Zero the %d accumulators.", k.MR*g.nv))
	for _, row := range g.acc {
		for _, r := range row {
			zero(c, g.z, r)
		}
	}

	g.kloop()
	g.epilogue()
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
			g.fma(g.bvec[j], r, g.acc[i][j])
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

// epilogue emits alpha scaling, the beta, bias and ReLU phases and the store.
func (g *gemmGen) epilogue() {
	c, k := g.c, g.k
	s0 := g.scratch[0]

	c.Comment("acc *= alpha")
	g.bcst(g.paramAddr("alpha"), s0)
	g.eachAcc(func(r reg.VecPhysical) { g.mul(s0, r, r) })

	c.Load(c.Param("m"), rM)
	c.Load(c.Param("n"), rN)
	c.Load(c.Param("ep"), rEp)
	g.masks()

	c.Comment("beta != 0 (any bit but the sign set): acc += beta*C")
	beta := g.paramAddr("beta")
	if g.esz == 8 {
		c.MOVQ(beta, rTmp)
		c.SHLQ(operand.Imm(1), rTmp)
	} else {
		c.MOVL(beta, rTmp.As32())
		c.SHLL(operand.Imm(1), rTmp.As32())
	}
	c.JZ(lbl("nobeta"))
	g.bcst(beta, s0)
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
			c.VMOVUPS_Z(mem(rBias, j*64), maskReg(j), vb) // fault-suppressed masked load
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
