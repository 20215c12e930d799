package arm64

import (
	"bytes"
	"fmt"
	"go/format"

	"github.com/kgen-dev/kgen/codegen"
)

// This file generates the NEON "rows" kernels (docs/MICROKERNEL.md, "Rows kernels"), the arm64 mirror
// of codegen/amd64/rows.go: the product of a few rows of A (m ≤ RowsMax) with all of B, streaming B row
// by row. A skinny GEMM reads every element of B once and does only m multiply-adds with it, so it is
// bound by memory bandwidth, and the register-tile microkernel reads B in NR-wide strips KC rows deep,
// which the hardware prefetchers do not follow. Here each group of G = 4 rows of B is read from left to
// right (four sequential streams), the m·G elements of A stay in registers (lanes of V0…V3 for f32,
// V0…V7 for f64: with 32 vector registers G = 4 fits every m ≤ 4), and the m rows of C are loaded,
// updated by by-element FMLAs and stored once per group: 32 bytes of each row per step, then one 16-byte
// step, then single elements (still by-element FMLA on lane 0, so no scalar FMADD anywhere).
//
//	C[i*ldc+j] = Σ_{p<kc} a[i*ars+p*acs] · b[p*ldb+j]     for i < m, j < n (C overwritten; kc == 0 zeroes it)
//
// The scaling by alpha and beta and the epilogue are the Go caller's (codegen/golang's rowsVia). m must
// be 1…RowsMax and n ≥ 1; the caller checks it.

// RowsMax is the most rows of A a rows kernel takes.
const RowsMax = 4

// rowsG is the number of rows of B per group.
const rowsG = 4

// RowsKernel is one NEON rows kernel to generate.
type RowsKernel struct {
	Name string
	Elem string // "f32" or "f64"
}

// NewRowsKernel names the rows kernel of an element type: sgemmRowsNEON or dgemmRowsNEON.
func NewRowsKernel(elem string) RowsKernel {
	return RowsKernel{Name: map[string]string{"f32": "s", "f64": "d"}[elem] + "gemmRowsNEON", Elem: elem}
}

// Signature is the Go signature of the kernel (without the name).
func (k RowsKernel) Signature() string {
	t := map[string]string{"f32": "float32", "f64": "float64"}[k.Elem]
	return fmt.Sprintf("(kc int, a *%s, ars, acs int, b *%s, ldb int, c *%s, ldc, m, n int)", t, t, t)
}

// Registers of the rows kernels.
const (
	rwLeft   = R0  // rows of B (steps of kc) left
	rwAcs    = R1  // acs bytes
	rwB0     = R2  // first row of B of the current group
	rwLdb    = R3  // ldb bytes
	rwC0     = R4  // C row pointers R4..R7
	rwA0     = R8  // A row pointers R8..R11, advanced by acs per element
	rwBg0    = R12 // B group row pointers R12..R15, advanced along the row
	rwCnt    = R16 // column bytes left
	rwN      = R17 // n bytes
	rwCw0    = R19 // C working pointers R19..R22
	rwLdb4   = R23 // 4·ldb bytes
	rwTmp    = R24
	rwFrame  = 80 // ten 8-byte arguments
	rwAccReg = 16 // accumulators V16…V23 (row i: V16+2i, V17+2i)
	rwBReg   = 8  // rows of B V8…V15 (group row g: V8+2g, V9+2g)
)

type rowsBuilder struct {
	*Builder
	k   RowsKernel
	esz int
	arr Arrangement
}

func (r *rowsBuilder) l(m int, s string) Label {
	return Label(fmt.Sprintf("%s_m%d_%s", r.k.Name, m, s))
}

func (r *rowsBuilder) vec(i int) Vec { return Vec{V(i), r.arr} }

// aElem is the lane holding a[i, p+g] of the current group.
func (r *rowsBuilder) aElem(i, g int) Elem {
	if r.esz == 8 {
		return V(2*i + g/2).D(g % 2)
	}
	return V(i).S(g)
}

func (r *rowsBuilder) acc(i, h int) Vec { return r.vec(rwAccReg + 2*i + h) }
func (r *rowsBuilder) bv(g, h int) Vec  { return r.vec(rwBReg + 2*g + h) }

func (r *rowsBuilder) fload(m Mem, f FReg) {
	if r.esz == 8 {
		r.FMOVD(m, f)
	} else {
		r.FMOVS(m, f)
	}
}

func (r *rowsBuilder) fstore(f FReg, m Mem) {
	if r.esz == 8 {
		r.FMOVD(f, m)
	} else {
		r.FMOVS(f, m)
	}
}

// buildRows emits k.
func buildRows(k RowsKernel) (*Builder, error) {
	if !isIdent(k.Name) || (k.Elem != "f32" && k.Elem != "f64") {
		return nil, fmt.Errorf("arm64: bad rows kernel %q (%s)", k.Name, k.Elem)
	}
	r := &rowsBuilder{Builder: &Builder{}, k: k, esz: 4, arr: S4}
	if k.Elem == "f64" {
		r.esz, r.arr = 8, D2
	}
	b := r.Builder
	b.Blank()
	b.Doc("func %s%s", k.Name, k.Signature())
	b.Doc("%s is the rows kernel (codegen/arm64/rows.go): C[i*ldc+j] = Σ_p a[i*ars+p*acs]·b[p*ldb+j]", k.Name)
	b.Doc("for i < m, j < n, streaming B row by row in groups of %d; 1 <= m <= %d.", rowsG, RowsMax)
	b.TEXT(k.Name, "NOSPLIT", 0, rwFrame)
	sh := Imm(log2(r.esz))
	b.MOVD(Arg{"acs", 24}, rwAcs)
	b.LSL(sh, rwAcs, rwAcs)
	b.MOVD(Arg{"b", 32}, rwB0)
	b.MOVD(Arg{"ldb", 40}, rwLdb)
	b.LSL(sh, rwLdb, rwLdb)
	b.LSL(Imm(2), rwLdb, rwLdb4)
	b.MOVD(Arg{"n", 72}, rwN)
	b.LSL(sh, rwN, rwN)
	// Row pointers of A and C; rows past m are computed but never used.
	b.MOVD(Arg{"a", 8}, rwA0)
	b.MOVD(Arg{"ars", 16}, rwTmp)
	b.LSL(sh, rwTmp, rwTmp)
	for i := 1; i < RowsMax; i++ {
		b.ADD(rwTmp, rwA0+GPR(i-1), rwA0+GPR(i))
	}
	b.MOVD(Arg{"c", 48}, rwC0)
	b.MOVD(Arg{"ldc", 56}, rwTmp)
	b.LSL(sh, rwTmp, rwTmp)
	for i := 1; i < RowsMax; i++ {
		b.ADD(rwTmp, rwC0+GPR(i-1), rwC0+GPR(i))
	}
	b.MOVD(Arg{"kc", 0}, rwLeft)
	b.MOVD(Arg{"m", 64}, rwTmp)
	for m := 1; m < RowsMax; m++ {
		b.CMP(Imm(m), rwTmp)
		b.BEQ(r.l(m, "start"))
	}
	b.B(r.l(RowsMax, "start"))
	for m := 1; m <= RowsMax; m++ {
		r.emitM(m)
	}
	if err := b.Err(); err != nil {
		return nil, fmt.Errorf("arm64: rows %s: %w", k.Name, err)
	}
	return b, nil
}

// emitM emits the code for m rows: zero the C rows, then groups of 4 rows of B, then single rows.
func (r *rowsBuilder) emitM(m int) {
	r.Label(r.l(m, "start"))
	r.Comment("m = %d: zero the C rows, then groups of %d rows of B, then single rows.", m, rowsG)
	z0, z1 := r.acc(0, 0), r.acc(0, 1)
	r.VEOR(V(z0.Reg.Num()).B16(), V(z0.Reg.Num()).B16(), V(z0.Reg.Num()).B16())
	r.VEOR(V(z1.Reg.Num()).B16(), V(z1.Reg.Num()).B16(), V(z1.Reg.Num()).B16())
	for i := 0; i < m; i++ {
		cw := rwCw0 + GPR(i)
		t := fmt.Sprintf("z%d", i)
		r.MOVD(rwC0+GPR(i), cw)
		r.MOVD(rwN, rwCnt)
		r.Label(r.l(m, t+"32"))
		r.CMP(Imm(32), rwCnt)
		r.BLT(r.l(m, t+"16"))
		r.VST1P(VecList{z0, z1}, cw)
		r.SUB(Imm(32), rwCnt, rwCnt)
		r.B(r.l(m, t+"32"))
		r.Label(r.l(m, t+"16"))
		r.CMP(Imm(16), rwCnt)
		r.BLT(r.l(m, t+"1"))
		r.VST1P(VecList{z0}, cw)
		r.SUB(Imm(16), rwCnt, rwCnt)
		r.Label(r.l(m, t+"1"))
		r.CBZ(rwCnt, r.l(m, t+"end"))
		r.Label(r.l(m, t+"1l"))
		if r.esz == 8 {
			r.MOVD(ZR, Addr(cw, 0))
		} else {
			r.MOVW(ZR, Addr(cw, 0))
		}
		r.ADD(Imm(r.esz), cw, cw)
		r.SUBS(Imm(r.esz), rwCnt, rwCnt)
		r.BNE(r.l(m, t+"1l"))
		r.Label(r.l(m, t+"end"))
	}
	r.group(m, rowsG)
	r.group(m, 1)
	r.RET()
}

// group emits the loop over groups of G rows of B (while at least G rows are left).
func (r *rowsBuilder) group(m, G int) {
	name := fmt.Sprintf("g%d", G)
	l := func(s string) Label { return r.l(m, name+s) }
	r.Label(l(""))
	r.CMP(Imm(G), rwLeft)
	r.BLT(l("end"))
	for i := 0; i < m; i++ {
		for g := 0; g < G; g++ {
			r.VLD1Lane(Addr(rwA0+GPR(i), 0), r.aElem(i, g))
			r.ADD(rwAcs, rwA0+GPR(i), rwA0+GPR(i))
		}
	}
	r.MOVD(rwB0, rwBg0)
	for g := 1; g < G; g++ {
		r.ADD(rwLdb, rwBg0+GPR(g-1), rwBg0+GPR(g))
	}
	for i := 0; i < m; i++ {
		r.MOVD(rwC0+GPR(i), rwCw0+GPR(i))
	}
	// step updates h vectors (1 or 2) of every C row from the G rows of B.
	step := func(h int) {
		for g := 0; g < G; g++ {
			var list VecList
			for x := 0; x < h; x++ {
				list = append(list, r.bv(g, x))
			}
			r.VLD1P(rwBg0+GPR(g), list)
		}
		for i := 0; i < m; i++ {
			var list VecList
			for x := 0; x < h; x++ {
				list = append(list, r.acc(i, x))
			}
			r.VLD1(Addr(rwCw0+GPR(i), 0), list)
		}
		for g := 0; g < G; g++ {
			for i := 0; i < m; i++ {
				for x := 0; x < h; x++ {
					r.FMLAElem(r.acc(i, x), r.bv(g, x), r.aElem(i, g))
				}
			}
		}
		for i := 0; i < m; i++ {
			var list VecList
			for x := 0; x < h; x++ {
				list = append(list, r.acc(i, x))
			}
			r.VST1P(list, rwCw0+GPR(i))
		}
	}
	r.MOVD(rwN, rwCnt)
	r.SUBS(Imm(32), rwCnt, rwCnt)
	r.BLT(l("v16"))
	r.Label(l("v32"))
	step(2)
	r.SUBS(Imm(32), rwCnt, rwCnt)
	r.BGE(l("v32"))
	r.Label(l("v16"))
	r.ADD(Imm(32), rwCnt, rwCnt)
	r.CMP(Imm(16), rwCnt)
	r.BLT(l("s"))
	step(1)
	r.SUB(Imm(16), rwCnt, rwCnt)
	r.Label(l("s"))
	r.CBZ(rwCnt, l("next"))
	r.Label(l("sl"))
	for g := 0; g < G; g++ {
		r.fload(Addr(rwBg0+GPR(g), 0), F(r.bv(g, 0).Reg.Num()))
		r.ADD(Imm(r.esz), rwBg0+GPR(g), rwBg0+GPR(g))
	}
	for i := 0; i < m; i++ {
		cw := rwCw0 + GPR(i)
		a := r.acc(i, 0)
		r.fload(Addr(cw, 0), F(a.Reg.Num()))
		for g := 0; g < G; g++ {
			r.FMLAElem(a, r.bv(g, 0), r.aElem(i, g))
		}
		r.fstore(F(a.Reg.Num()), Addr(cw, 0))
		r.ADD(Imm(r.esz), cw, cw)
	}
	r.SUBS(Imm(r.esz), rwCnt, rwCnt)
	r.BNE(l("sl"))
	r.Label(l("next"))
	if G == 4 {
		r.ADD(rwLdb4, rwB0, rwB0)
	} else {
		r.ADD(rwLdb, rwB0, rwB0)
	}
	r.SUB(Imm(G), rwLeft, rwLeft)
	r.B(l(""))
	r.Label(l("end"))
}

// GenerateAll is GenerateWithVLoops plus the transpose tile routines transposes, the rows kernels rows
// and the packing routines packs.
func GenerateAll(pkg string, kernels []GemmKernel, vloops []VLoopKernel, transposes []TransposeKernel, rows []RowsKernel, packs ...PackKernel) (asm, stubs []byte, err error) {
	asm, stubs, err = generateWithTransposes(pkg, kernels, vloops, transposes)
	if err != nil || len(rows)+len(packs) == 0 {
		return asm, stubs, err
	}
	a, s := bytes.NewBuffer(asm), bytes.NewBuffer(stubs)
	seen := map[string]bool{}
	for _, k := range kernels {
		seen[k.Name] = true
	}
	for _, k := range vloops {
		seen[k.Name] = true
	}
	for _, k := range transposes {
		seen[k.Name] = true
	}
	for _, k := range rows {
		if seen[k.Name] {
			return nil, nil, fmt.Errorf("arm64: duplicate kernel name %q", k.Name)
		}
		seen[k.Name] = true
		b, err := buildRows(k)
		if err != nil {
			return nil, nil, err
		}
		a.Write(b.Bytes())
		fmt.Fprintf(s, "\n// %s is the NEON %s rows kernel (docs/MICROKERNEL.md, \"Rows kernels\"):\n", k.Name, k.Elem)
		fmt.Fprintf(s, "// C[i*ldc+j] = Σ_p a[i*ars+p*acs]·b[p*ldb+j] for i < m <= %d, j < n.\n//\n//go:noescape\n", RowsMax)
		fmt.Fprintf(s, "func %s%s\n", k.Name, k.Signature())
	}
	for _, k := range packs {
		if seen[k.Name] {
			return nil, nil, fmt.Errorf("arm64: duplicate kernel name %q", k.Name)
		}
		seen[k.Name] = true
		b, err := buildPack(k)
		if err != nil {
			return nil, nil, err
		}
		a.Write(b.Bytes())
		what := codegen.PackStem(false) + " (all the panels of a block, row by row)"
		if k.D {
			what = codegen.PackStem(true) + " (dst[d*panel+q] = src[q*ld+d])"
		}
		fmt.Fprintf(s, "\n// %s is the NEON %s %s; the caller checks the bounds (codegen.PackImpl).\n//\n//go:noescape\n", k.Name, k.Elem, what)
		fmt.Fprintf(s, "func %s%s\n", k.Name, k.Signature())
	}
	stubs, err = format.Source(s.Bytes())
	if err != nil {
		return nil, nil, err
	}
	return a.Bytes(), stubs, nil
}
