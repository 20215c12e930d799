package amd64

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// This file generates the "rows" kernels: the product of a few rows of A (m ≤ RowsMax) with all of B,
// streaming B row by row. A skinny GEMM (M = 1…4 rows, large N and K) reads every element of B once
// and does only m multiply-adds with it, so it is bound by memory bandwidth, and the register-tile
// microkernels read B in NR-wide strips KC rows deep: one cache line per row, a page apart, which the
// hardware prefetchers do not follow. Here each group of G rows of B is read from left to right (G
// sequential streams: 8 for one row, 4 for two, 2 for three and four), the broadcasts of the m·G
// elements of A stay in registers, and the m rows of C (an L1-resident block, the caller chunks n:
// passes.rowsWidth) are loaded, updated and stored once per group.
//
//	C[i*ldc+j] = Σ_{p<kc} a[i*ars+p*acs] · b[p*ldb+j]     for i < m, j < n (C overwritten; kc == 0 zeroes it)
//
// The scaling by alpha and beta and the epilogue are the Go caller's (codegen/golang's rowsVia):
// folding alpha into A would change results near overflow. m must be 1…RowsMax; the caller checks it.
//
// The AVX-512 kernels (the avx512 variant's) are the same loops on zmm registers; the last n%lanes
// columns of C and B run once under the opmask K1 (zero-masking loads, masked stores) instead of a
// scalar loop.

// RowsMax is the most rows of A a rows kernel takes.
const RowsMax = 4

// RowsKernel is one rows kernel to generate.
type RowsKernel struct {
	Name string
	Elem string // F32 or F64
	ISA  string // AVX2 ("" too) or AVX512
}

// NewRowsKernel names the AVX2 rows kernel of an element type.
func NewRowsKernel(elem string) RowsKernel { return NewRowsKernelISA(elem, AVX2) }

// NewRowsKernelISA names the rows kernel of an element type for isa: sgemmRowsAVX2, dgemmRowsAVX512, ….
// The AVX-512 one is the same loop on zmm registers with the last n%lanes columns under an opmask
// instead of scalar code.
func NewRowsKernelISA(elem, isa string) RowsKernel {
	return RowsKernel{Name: fmt.Sprintf("%sgemmRows%s", map[string]string{F32: "s", F64: "d"}[elem], isaSuffix(isa)), Elem: elem, ISA: isa}
}

func emitRows(c *build.Context, k RowsKernel) {
	t, esz, lanes := "float32", 4, 8
	shift := operand.Imm(2)
	vbcast, vfma, sfma := c.VBROADCASTSS, c.VFMADD231PS, c.VFMADD231SS
	sload := func(m operand.Mem, x reg.VecPhysical) { c.VMOVSS(m, x) }
	sstore := func(x reg.VecPhysical, m operand.Mem) { c.VMOVSS(x, m) }
	if k.Elem == F64 {
		t, esz, lanes = "float64", 8, 4
		shift = operand.Imm(3)
		vbcast, vfma, sfma = c.VBROADCASTSD, c.VFMADD231PD, c.VFMADD231SD
		sload = func(m operand.Mem, x reg.VecPhysical) { c.VMOVSD(m, x) }
		sstore = func(x reg.VecPhysical, m operand.Mem) { c.VMOVSD(x, m) }
	}
	z := k.ISA == AVX512
	vload, vloadZ := c.VMOVUPS, c.VMOVUPS_Z
	if k.Elem == F64 {
		vloadZ = c.VMOVUPD_Z
	}
	if z {
		lanes *= 2
		if k.Elem == F64 {
			vload = c.VMOVUPD // 8-lane opmasks
		}
	}
	vec := lanes * esz // bytes per vector
	c.Function(k.Name)
	c.Attributes(attr.NOSPLIT)
	c.Pragma("noescape")
	c.Doc(k.Name+" is the rows kernel (codegen/amd64/rows.go): C[i*ldc+j] = Σ_p a[i*ars+p*acs]·b[p*ldb+j]",
		fmt.Sprintf("for i < m, j < n, streaming B row by row; 1 <= m <= %d.", RowsMax))
	c.SignatureExpr(fmt.Sprintf("func(kc int, a *%s, ars, acs int, b *%s, ldb int, c *%s, ldc, m, n int)", t, t, t))
	aRows := c.AllocLocal(8 * RowsMax)
	nBytes := c.AllocLocal(8)

	var (
		j, acs, left, n8, b0, ldb = reg.RAX, reg.RBX, reg.RCX, reg.RDX, reg.RSI, reg.RDI
		cr                        = []reg.GPPhysical{reg.R8, reg.R9, reg.R10, reg.R11}
		bg                        = []reg.GPPhysical{reg.RSI, reg.R12, reg.R13, reg.R14}
		tmp                       = reg.R15
	)
	// Vector registers: broadcasts of A in Y0…Y7 (m·G ≤ 8), B rows in Y8…Y11 (groups of at most four),
	// the C accumulator in Y12.
	// AVX-512: the same in Z0…Z12, and the mask of the last n%lanes columns in K1.
	bc := func(i, g, G int) reg.VecPhysical { return vecReg(z, i*G+g) }
	bv := []reg.VecPhysical{vecReg(z, 8), vecReg(z, 9), vecReg(z, 10), vecReg(z, 11)}
	acc := vecReg(z, 12)
	x := func(y reg.VecPhysical) reg.VecPhysical { return y.AsX().(reg.VecPhysical) }

	c.Load(c.Param("b"), b0)
	c.Load(c.Param("ldb"), ldb)
	c.SHLQ(shift, ldb)
	c.Load(c.Param("acs"), acs)
	c.SHLQ(shift, acs)
	c.Load(c.Param("n"), n8)
	c.SHLQ(shift, n8)
	c.MOVQ(n8, nBytes)
	c.ANDQ(operand.I32(-int32(vec)), n8) // n8 = nbytes &^ (vec-1)
	// Row pointers of A (frame) and C (registers); rows past m repeat row 0 and are never used.
	c.Load(c.Param("a"), tmp)
	c.Load(c.Param("ars"), j)
	c.SHLQ(shift, j)
	for i := 0; i < RowsMax; i++ {
		c.MOVQ(tmp, aRows.Offset(8*i))
		c.ADDQ(j, tmp)
	}
	if z {
		c.Load(c.Param("n"), left)
		c.ANDQ(operand.U32(lanes-1), left)
		c.MOVL(operand.U32(1), tmp.As32())
		c.SHLL(reg.CL, tmp.As32())
		c.DECL(tmp.As32())
		c.KMOVW(tmp.As32(), reg.K1)
	}
	c.Load(c.Param("c"), cr[0])
	c.Load(c.Param("ldc"), j)
	c.SHLQ(shift, j)
	for i := 1; i < RowsMax; i++ {
		c.LEAQ(operand.Mem{Base: cr[i-1], Index: j, Scale: 1}, cr[i])
	}
	L := func(s string, m int) string { return fmt.Sprintf("%s_m%d_%s", k.Name, m, s) }

	// Dispatch on m.
	c.Load(c.Param("m"), left)
	for m := 1; m < RowsMax; m++ {
		c.CMPQ(left, operand.Imm(uint64(m)))
		c.JEQ(lbl(L("start", m)))
	}
	c.JMP(lbl(L("start", RowsMax)))

	for m := 1; m <= RowsMax; m++ {
		// Rows of B per group: m·G broadcasts in Y0…Y7. One row takes eight, read by the FMAs from
		// memory (there is one row of C to update: nothing to reuse a loaded row of B for), through the
		// registers of C's other rows and tmp: eight streams keep more lines in flight than four, and C's
		// row is loaded and stored half as often.
		G := 4
		switch {
		case m == 1:
			G = 8
		case m > 2:
			G = 2
		}
		c.Label(L("start", m))
		c.Comment(fmt.Sprintf("m = %d: zero the C rows, then groups of %d rows of B.", m, G))
		zero(c, z, acc)
		c.XORQ(j, j)
		c.Label(L("zv", m))
		c.CMPQ(j, n8)
		c.JGE(lbl(L("zs", m)))
		for i := 0; i < m; i++ {
			c.VMOVUPS(acc, operand.Mem{Base: cr[i], Index: j, Scale: 1})
		}
		c.ADDQ(operand.Imm(uint64(vec)), j)
		c.JMP(lbl(L("zv", m)))
		c.Label(L("zs", m))
		c.CMPQ(j, nBytes)
		c.JGE(lbl(L("zd", m)))
		if z {
			// The last n%lanes columns, once, under K1.
			for i := 0; i < m; i++ {
				vload(acc, reg.K1, operand.Mem{Base: cr[i], Index: j, Scale: 1})
			}
		} else {
			for i := 0; i < m; i++ {
				sstore(x(acc), operand.Mem{Base: cr[i], Index: j, Scale: 1})
			}
			c.ADDQ(operand.Imm(uint64(esz)), j)
			c.JMP(lbl(L("zs", m)))
		}
		c.Label(L("zd", m))

		c.Load(c.Param("kc"), left)
		group := func(name string, G int) {
			c.Label(L(name, m))
			c.CMPQ(left, operand.Imm(uint64(G)))
			c.JL(lbl(L(name+"_end", m)))
			for i := 0; i < m; i++ {
				c.MOVQ(aRows.Offset(8*i), tmp)
				for g := 0; g < G; g++ {
					vbcast(operand.Mem{Base: tmp}, bc(i, g, G))
					c.ADDQ(acs, tmp)
				}
				c.MOVQ(tmp, aRows.Offset(8*i))
			}
			rb := bg            // the group's row pointers
			memB := G > len(bv) // more rows than B registers: only for one row (m·G ≤ 8)
			if memB {
				rb = []reg.GPPhysical{bg[0], bg[1], bg[2], bg[3], cr[1], cr[2], cr[3], tmp}
			}
			for g := 1; g < G; g++ {
				c.LEAQ(operand.Mem{Base: rb[g-1], Index: ldb, Scale: 1}, rb[g])
			}
			// Groups of two rows leave bg[2], bg[3] free: they point at the next group's rows, which
			// the vector loop prefetches at the column it reads. Two sequential streams alone keep too
			// few lines in flight for the memory's latency (m = 3, 4).
			pf := G == 2
			if pf {
				c.LEAQ(operand.Mem{Base: bg[0], Index: ldb, Scale: 2}, bg[2])
				c.LEAQ(operand.Mem{Base: bg[1], Index: ldb, Scale: 2}, bg[3])
			}
			c.XORQ(j, j)
			c.Label(L(name+"_v", m))
			c.CMPQ(j, n8)
			c.JGE(lbl(L(name+"_s", m)))
			if memB { // one row: the FMAs read B from memory
				at := operand.Mem{Base: cr[0], Index: j, Scale: 1}
				c.VMOVUPS(at, acc)
				for g := 0; g < G; g++ {
					vfma(operand.Mem{Base: rb[g], Index: j, Scale: 1}, bc(0, g, G), acc)
				}
				c.VMOVUPS(acc, at)
			} else {
				for g := 0; g < G; g++ {
					c.VMOVUPS(operand.Mem{Base: rb[g], Index: j, Scale: 1}, bv[g])
				}
				if pf {
					c.PREFETCHT0(operand.Mem{Base: bg[2], Index: j, Scale: 1})
					c.PREFETCHT0(operand.Mem{Base: bg[3], Index: j, Scale: 1})
				}
				for i := 0; i < m; i++ {
					at := operand.Mem{Base: cr[i], Index: j, Scale: 1}
					c.VMOVUPS(at, acc)
					for g := 0; g < G; g++ {
						vfma(bv[g], bc(i, g, G), acc)
					}
					c.VMOVUPS(acc, at)
				}
			}
			c.ADDQ(operand.Imm(uint64(vec)), j)
			c.JMP(lbl(L(name+"_v", m)))
			c.Label(L(name+"_s", m))
			c.CMPQ(j, nBytes)
			c.JGE(lbl(L(name+"_next", m)))
			if z {
				if memB { // one row: each row of B loaded (masked) just before its FMA
					at := operand.Mem{Base: cr[0], Index: j, Scale: 1}
					vloadZ(at, reg.K1, acc)
					for g := 0; g < G; g++ {
						vloadZ(operand.Mem{Base: rb[g], Index: j, Scale: 1}, reg.K1, bv[g%len(bv)])
						vfma(bv[g%len(bv)], bc(0, g, G), acc)
					}
					vload(acc, reg.K1, at)
				} else {
					for g := 0; g < G; g++ {
						vloadZ(operand.Mem{Base: rb[g], Index: j, Scale: 1}, reg.K1, bv[g])
					}
					for i := 0; i < m; i++ {
						at := operand.Mem{Base: cr[i], Index: j, Scale: 1}
						vloadZ(at, reg.K1, acc)
						for g := 0; g < G; g++ {
							vfma(bv[g], bc(i, g, G), acc)
						}
						vload(acc, reg.K1, at)
					}
				}
			} else {
				if memB { // one row: each element of B loaded just before its FMA
					at := operand.Mem{Base: cr[0], Index: j, Scale: 1}
					sload(at, x(acc))
					for g := 0; g < G; g++ {
						sload(operand.Mem{Base: rb[g], Index: j, Scale: 1}, x(bv[g%len(bv)]))
						sfma(x(bv[g%len(bv)]), x(bc(0, g, G)), x(acc))
					}
					sstore(x(acc), at)
				} else {
					for g := 0; g < G; g++ {
						sload(operand.Mem{Base: rb[g], Index: j, Scale: 1}, x(bv[g]))
					}
					for i := 0; i < m; i++ {
						at := operand.Mem{Base: cr[i], Index: j, Scale: 1}
						sload(at, x(acc))
						for g := 0; g < G; g++ {
							sfma(x(bv[g]), x(bc(i, g, G)), x(acc))
						}
						sstore(x(acc), at)
					}
				}
				c.ADDQ(operand.Imm(uint64(esz)), j)
				c.JMP(lbl(L(name+"_s", m)))
			}
			c.Label(L(name+"_next", m))
			for g := 0; g < G; g++ {
				c.ADDQ(ldb, b0)
			}
			c.SUBQ(operand.Imm(uint64(G)), left)
			c.JMP(lbl(L(name, m)))
			c.Label(L(name+"_end", m))
		}
		group("g", G)
		group("one", 1)
		c.VZEROUPPER()
		c.RET()
	}
}
