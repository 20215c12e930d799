package arm64

import (
	"bytes"
	"fmt"
	"go/format"
)

// This file generates the NEON transpose tile routines of the transpose slots (codegen.TransposeSlot,
// ir.Transpose):
//
//	func Name(rows, cols int, src *T, lds int, dst *T, ldd int)
//
// sets dst[c*ldd+r] = src[r*lds+c] for r < rows, c < cols (strides in elements). The tile is walked in
// bands of V source rows (V = 4 f32, 2 f64: one Q register per row segment), one row pointer per band
// row advanced by VLD1.P; each band in V×V blocks transposed in registers (f32: VTRN1/VTRN2 on .S4, then
// on .D2; f64: VTRN1/VTRN2 on .D2), then its last cols%V columns one at a time (the V elements of a
// column gathered by single-lane VLD1 and stored as one V-element run of dst); the last rows%V rows are
// copied one element at a time. Only the tile's elements are read or written. rows <= 0 or cols <= 0
// copies nothing. Go's assembler has VTRN1/VTRN2, so no WORD encodings are needed.

// TransposeKernel is one NEON transpose tile routine to generate.
type TransposeKernel struct {
	Name string // Go identifier of the generated function
	Elem string // "f32" or "f64"
}

// NewTransposeKernel returns the routine of elem ("f32" or "f64"), named transposeF32NEON or
// transposeF64NEON.
func NewTransposeKernel(elem string) TransposeKernel {
	n := "F32"
	if elem == "f64" {
		n = "F64"
	}
	return TransposeKernel{Name: "transpose" + n + "NEON", Elem: elem}
}

// Block is the register block edge V.
func (k TransposeKernel) Block() int {
	if k.Elem == "f64" {
		return 2
	}
	return 4
}

// VTRN1 is d = trn1(n, m): the even-numbered lanes of n and m interleaved (Go order: VTRN1 m, n, d).
func (b *Builder) VTRN1(m, n, d Vec) { b.trn("VTRN1", m, n, d) }

// VTRN2 is d = trn2(n, m): the odd-numbered lanes of n and m interleaved (Go order: VTRN2 m, n, d).
func (b *Builder) VTRN2(m, n, d Vec) { b.trn("VTRN2", m, n, d) }

func (b *Builder) trn(op string, m, n, d Vec) {
	if m.Arr != d.Arr || n.Arr != d.Arr || d.Arr == D1 {
		b.fail(errorf("%s: bad arrangements %s, %s, %s", op, m.Asm(), n.Asm(), d.Asm()))
	}
	b.Op(op, m, n, d)
}

// Registers of the transpose routines.
const (
	tpRows  = R0  // source rows left
	tpCols  = R1  // cols
	tpSrc   = R2  // first source row of the band
	tpLds   = R3  // lds in bytes
	tpDst   = R4  // dst + (first row of the band)·esz
	tpLdd   = R5  // ldd in bytes
	tpDp    = R10 // destination of the current block or column
	tpCnt   = R11 // columns left in the band
	tpSt    = R12 // store address within a block
	tpLddV  = R13 // V·ldd bytes: the next block's destination
	tpLdsV  = R14 // V·lds bytes: the next band
	tpScal  = R15 // scalar copies
	tpFrame = 48  // six 8-byte arguments
)

// tpRow is the pointer register of band row q (R6..R9).
func tpRow(q int) GPR { return R6 + GPR(q) }

// buildTranspose emits k.
func buildTranspose(k TransposeKernel) (*Builder, error) {
	if !isIdent(k.Name) || (k.Elem != "f32" && k.Elem != "f64") {
		return nil, fmt.Errorf("arm64: bad transpose kernel %q (%s)", k.Name, k.Elem)
	}
	b := &Builder{}
	f64 := k.Elem == "f64"
	v, esz := k.Block(), 4
	arr, dbl := S4, D2
	lane := func(r VReg, i int) Elem { return r.S(i) }
	if f64 {
		esz, arr = 8, D2
		lane = func(r VReg, i int) Elem { return r.D(i) }
	}
	vec := func(i int) Vec { return Vec{V(i), arr} }
	l := func(s string) Label { return Label(k.Name + "_" + s) }
	t := map[bool]string{false: "float32", true: "float64"}[f64]

	b.Blank()
	b.Doc("func %s(rows, cols int, src *%s, lds int, dst *%s, ldd int)", k.Name, t, t)
	b.Doc("%s is the NEON %s transpose tile (codegen.TransposeSlot): dst[c*ldd+r] = src[r*lds+c]", k.Name, k.Elem)
	b.Doc("for r < rows, c < cols, in %d×%d register blocks; only the tile's elements are accessed.", v, v)
	b.TEXT(k.Name, "NOSPLIT", 0, tpFrame)
	b.MOVD(Arg{"rows", 0}, tpRows)
	b.MOVD(Arg{"cols", 8}, tpCols)
	b.MOVD(Arg{"src", 16}, tpSrc)
	b.MOVD(Arg{"lds", 24}, tpLds)
	b.MOVD(Arg{"dst", 32}, tpDst)
	b.MOVD(Arg{"ldd", 40}, tpLdd)
	sh := Imm(log2(esz))
	b.LSL(sh, tpLds, tpLds)
	b.LSL(sh, tpLdd, tpLdd)
	b.LSL(Imm(log2(v)), tpLdd, tpLddV)
	b.LSL(Imm(log2(v)), tpLds, tpLdsV)
	b.CMP(Imm(0), tpCols)
	b.BLE(l("done"))

	b.Comment("Bands of %d source rows.", v)
	b.Label(l("band"))
	b.CMP(Imm(v), tpRows)
	b.BLT(l("rowedge"))
	b.MOVD(tpSrc, tpRow(0))
	for q := 1; q < v; q++ {
		b.ADD(tpLds, tpRow(q-1), tpRow(q))
	}
	b.MOVD(tpDst, tpDp)
	b.MOVD(tpCols, tpCnt)
	b.Label(l("block"))
	b.CMP(Imm(v), tpCnt)
	b.BLT(l("coledge"))
	for q := 0; q < v; q++ {
		b.VLD1P(tpRow(q), VecList{vec(q)})
	}
	if f64 {
		b.VTRN1(vec(1), vec(0), vec(2)) // column 0: [r0[0], r1[0]]
		b.VTRN2(vec(1), vec(0), vec(3)) // column 1: [r0[1], r1[1]]
		b.MOVD(tpDp, tpSt)
		b.VST1(VecList{vec(2)}, Addr(tpSt, 0))
		b.ADD(tpLdd, tpSt, tpSt)
		b.VST1(VecList{vec(3)}, Addr(tpSt, 0))
	} else {
		s4 := func(i int) Vec { return V(i).S4() }
		d2 := func(i int) Vec { return Vec{V(i), dbl} }
		b.VTRN1(s4(1), s4(0), s4(4)) // [r0[0], r1[0], r0[2], r1[2]]
		b.VTRN2(s4(1), s4(0), s4(5)) // [r0[1], r1[1], r0[3], r1[3]]
		b.VTRN1(s4(3), s4(2), s4(6)) // [r2[0], r3[0], r2[2], r3[2]]
		b.VTRN2(s4(3), s4(2), s4(7)) // [r2[1], r3[1], r2[3], r3[3]]
		b.VTRN1(d2(6), d2(4), d2(0)) // column 0
		b.VTRN1(d2(7), d2(5), d2(1)) // column 1
		b.VTRN2(d2(6), d2(4), d2(2)) // column 2
		b.VTRN2(d2(7), d2(5), d2(3)) // column 3
		b.MOVD(tpDp, tpSt)
		for q := 0; q < 4; q++ {
			if q > 0 {
				b.ADD(tpLdd, tpSt, tpSt)
			}
			b.VST1(VecList{s4(q)}, Addr(tpSt, 0))
		}
	}
	b.ADD(tpLddV, tpDp, tpDp)
	b.SUB(Imm(v), tpCnt, tpCnt)
	b.B(l("block"))

	b.Comment("The band's last cols%%V columns: one column (V elements of dst) at a time.")
	b.Label(l("coledge"))
	b.CBZ(tpCnt, l("nextband"))
	b.Label(l("column"))
	for q := 0; q < v; q++ {
		b.VLD1Lane(Addr(tpRow(q), 0), lane(V(4), q))
		b.ADD(Imm(esz), tpRow(q), tpRow(q))
	}
	b.VST1(VecList{vec(4)}, Addr(tpDp, 0))
	b.ADD(tpLdd, tpDp, tpDp)
	b.SUBS(Imm(1), tpCnt, tpCnt)
	b.BNE(l("column"))
	b.Label(l("nextband"))
	b.ADD(tpLdsV, tpSrc, tpSrc)
	b.ADD(Imm(v*esz), tpDst, tpDst)
	b.SUB(Imm(v), tpRows, tpRows)
	b.B(l("band"))

	b.Comment("The last rows%%V rows, one element at a time.")
	b.Label(l("rowedge"))
	b.CMP(Imm(0), tpRows)
	b.BLE(l("done"))
	b.Label(l("row"))
	b.MOVD(tpSrc, tpRow(0))
	b.MOVD(tpDst, tpDp)
	b.MOVD(tpCols, tpCnt)
	b.Label(l("elem"))
	if f64 {
		b.MOVD(Addr(tpRow(0), 0), tpScal)
		b.MOVD(tpScal, Addr(tpDp, 0))
	} else {
		b.MOVWU(Addr(tpRow(0), 0), tpScal)
		b.MOVW(tpScal, Addr(tpDp, 0))
	}
	b.ADD(Imm(esz), tpRow(0), tpRow(0))
	b.ADD(tpLdd, tpDp, tpDp)
	b.SUBS(Imm(1), tpCnt, tpCnt)
	b.BNE(l("elem"))
	b.ADD(tpLds, tpSrc, tpSrc)
	b.ADD(Imm(esz), tpDst, tpDst)
	b.SUBS(Imm(1), tpRows, tpRows)
	b.BNE(l("row"))
	b.Label(l("done"))
	b.RET()
	if err := b.Err(); err != nil {
		return nil, fmt.Errorf("arm64: transpose %s: %w", k.Name, err)
	}
	return b, nil
}

// generateWithTransposes is GenerateWithVLoops plus the transpose tile routines transposes.
func generateWithTransposes(pkg string, kernels []GemmKernel, vloops []VLoopKernel, transposes []TransposeKernel) (asm, stubs []byte, err error) {
	asm, stubs, err = GenerateWithVLoops(pkg, kernels, vloops)
	if err != nil || len(transposes) == 0 {
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
		if seen[k.Name] {
			return nil, nil, fmt.Errorf("arm64: duplicate kernel name %q", k.Name)
		}
		seen[k.Name] = true
		b, err := buildTranspose(k)
		if err != nil {
			return nil, nil, err
		}
		a.Write(b.Bytes())
		t := map[string]string{"f32": "float32", "f64": "float64"}[k.Elem]
		fmt.Fprintf(s, "\n// %s is the NEON %s transpose tile (codegen.TransposeSlot): dst[c*ldd+r] = src[r*lds+c]\n", k.Name, k.Elem)
		fmt.Fprintf(s, "// for r < rows, c < cols.\n//\n//go:noescape\n")
		fmt.Fprintf(s, "func %s(rows, cols int, src *%s, lds int, dst *%s, ldd int)\n", k.Name, t, t)
	}
	stubs, err = format.Source(s.Bytes())
	if err != nil {
		return nil, nil, err
	}
	return a.Bytes(), stubs, nil
}
