package arm64

import (
	"fmt"

	"github.com/kgen-dev/kgen/codegen"
)

// This file generates the NEON GEMM panel-packing routines that replace the generated package's
// portable packD/packPB (codegen/golang, support.go) in the neon variant, like
// codegen/amd64/pack.go does for AVX2:
//
//	packD:  dst[d*panel+q] = src[q*ld+d]                           (A-like: each panel row a run of the source)
//	packPB: dst[(q/panel)*panel*depth + d*panel + q%panel] = src[d*ld+q]   (all panels of a block)
//
// for q < w (packPB: q < n), d < depth, and zero for w <= q < panel (packPB: past n in the last panel).
// packD transposes 4×4 f32 / 2×2 f64 blocks in registers with VTRN1/VTRN2 (as transpose.go), the rows
// left over go one row at a time (a Q register of depth steps stored lane by lane, then single
// elements); packPB copies 32-byte, then 16-byte runs, then single elements, and zeroes the padding
// with 16-byte and single stores. The Go adapter (codegen.PackImpl) checks 1 <= w <= panel, depth >= 1,
// ld >= 0 and that every element named lies inside both slices before calling, so the routines touch
// nothing outside them. All instructions are native Go assembler.

// PackKernel is one NEON packing routine to generate.
type PackKernel struct {
	Name string
	Elem string // "f32" or "f64"
	D    bool   // packD (A-like); false: packPB, all the panels of a block of n columns, row by row
}

// NewPackKernel names the routine of an element type and layout: packDf32NEON, packPBf64NEON.
func NewPackKernel(elem string, d bool) PackKernel {
	return PackKernel{Name: fmt.Sprintf("%s%sNEON", codegen.PackStem(d), elem), Elem: elem, D: d}
}

// Signature is the Go signature of the routine (without the name).
func (k PackKernel) Signature() string {
	t := map[string]string{"f32": "float32", "f64": "float64"}[k.Elem]
	if !k.D {
		return fmt.Sprintf("(dst, src *%s, ld, n, panel, depth int)", t)
	}
	return fmt.Sprintf("(dst, src *%s, ld, w, panel, depth int)", t)
}

// MUL is rd = rn * rm (Go order: MUL rm, rn, rd).
func (b *Builder) MUL(rm, rn, rd GPR) { b.Op("MUL", rm, rn, rd) }

// UDIV is rd = rn / rm, unsigned (Go order: UDIV rm, rn, rd).
func (b *Builder) UDIV(rm, rn, rd GPR) { b.Op("UDIV", rm, rn, rd) }

// MSUB is rd = ra - rn*rm (Go order: MSUB rm, ra, rn, rd).
func (b *Builder) MSUB(rm, ra, rn, rd GPR) { b.Op("MSUB", rm, ra, rn, rd) }

// Registers of the packing routines.
const (
	pkDst   = R0
	pkSrc   = R1
	pkLd    = R2 // bytes
	pkW     = R3 // w (packPB: n)
	pkPanel = R4 // bytes
	pkDepth = R5
	pkTmp   = R17 // scalar copies
	pkZero  = 31  // V31: zero vector for the padding
	pkFrame = 48  // six 8-byte arguments
)

// packer carries what the emitting helpers share.
type packer struct {
	*Builder
	k   PackKernel
	esz int
	arr Arrangement
}

func (p *packer) l(s string) Label { return Label(p.k.Name + "_" + s) }

func (p *packer) vec(i int) Vec { return Vec{V(i), p.arr} }

// copyElem copies one element from (src) to (dst) through pkTmp.
func (p *packer) copyElem(src, dst GPR) {
	if p.esz == 8 {
		p.MOVD(Addr(src, 0), pkTmp)
		p.MOVD(pkTmp, Addr(dst, 0))
	} else {
		p.MOVWU(Addr(src, 0), pkTmp)
		p.MOVW(pkTmp, Addr(dst, 0))
	}
}

// zeroElem stores one zero element at (dst).
func (p *packer) zeroElem(dst GPR) {
	if p.esz == 8 {
		p.MOVD(ZR, Addr(dst, 0))
	} else {
		p.MOVW(ZR, Addr(dst, 0))
	}
}

// copyRun copies cnt bytes (a multiple of esz; consumed) from src to dst, advancing both: 32-byte
// VLD1.P/VST1.P pairs, one 16-byte step, then single elements.
func (p *packer) copyRun(tag string, src, dst, cnt GPR) {
	v2 := VecList{p.vec(0), p.vec(1)}
	p.Label(p.l(tag + "32"))
	p.CMP(Imm(32), cnt)
	p.BLT(p.l(tag + "16"))
	p.VLD1P(src, v2)
	p.VST1P(v2, dst)
	p.SUB(Imm(32), cnt, cnt)
	p.B(p.l(tag + "32"))
	p.Label(p.l(tag + "16"))
	p.CMP(Imm(16), cnt)
	p.BLT(p.l(tag + "1"))
	p.VLD1P(src, VecList{p.vec(0)})
	p.VST1P(VecList{p.vec(0)}, dst)
	p.SUB(Imm(16), cnt, cnt)
	p.Label(p.l(tag + "1"))
	p.CBZ(cnt, p.l(tag+"end"))
	p.Label(p.l(tag + "1l"))
	p.copyElem(src, dst)
	p.ADD(Imm(p.esz), src, src)
	p.ADD(Imm(p.esz), dst, dst)
	p.SUBS(Imm(p.esz), cnt, cnt)
	p.BNE(p.l(tag + "1l"))
	p.Label(p.l(tag + "end"))
}

// zeroRun zeroes cnt bytes (consumed) at dst, advancing it: 16-byte stores of V31, then single elements.
func (p *packer) zeroRun(tag string, dst, cnt GPR) {
	p.Label(p.l(tag + "16"))
	p.CMP(Imm(16), cnt)
	p.BLT(p.l(tag + "1"))
	p.VST1P(VecList{p.vec(pkZero)}, dst)
	p.SUB(Imm(16), cnt, cnt)
	p.B(p.l(tag + "16"))
	p.Label(p.l(tag + "1"))
	p.CBZ(cnt, p.l(tag+"end"))
	p.Label(p.l(tag + "1l"))
	p.zeroElem(dst)
	p.ADD(Imm(p.esz), dst, dst)
	p.SUBS(Imm(p.esz), cnt, cnt)
	p.BNE(p.l(tag + "1l"))
	p.Label(p.l(tag + "end"))
}

// buildPack emits k.
func buildPack(k PackKernel) (*Builder, error) {
	if !isIdent(k.Name) || (k.Elem != "f32" && k.Elem != "f64") {
		return nil, fmt.Errorf("arm64: bad pack kernel %q (%s)", k.Name, k.Elem)
	}
	p := &packer{Builder: &Builder{}, k: k, esz: 4, arr: S4}
	if k.Elem == "f64" {
		p.esz, p.arr = 8, D2
	}
	b := p.Builder
	b.Blank()
	b.Doc("func %s%s", k.Name, k.Signature())
	switch {
	case k.D:
		b.Doc("%s packs a GEMM panel: dst[d*panel+q] = src[q*ld+d] for q < w, d < depth; zero for w <= q < panel.", k.Name)
	default:
		b.Doc("%s packs the panels of a block row by row: dst[(q/panel)*panel*depth + d*panel + q%%panel] = src[d*ld+q]", k.Name)
		b.Doc("for q < n, d < depth; the last panel is zero-padded.")
	}
	b.Doc("The caller checks the bounds (codegen.PackImpl).")
	b.TEXT(k.Name, "NOSPLIT", 0, pkFrame)
	b.MOVD(Arg{"dst", 0}, pkDst)
	b.MOVD(Arg{"src", 8}, pkSrc)
	b.MOVD(Arg{"ld", 16}, pkLd)
	if !k.D {
		b.MOVD(Arg{"n", 24}, pkW)
	} else {
		b.MOVD(Arg{"w", 24}, pkW)
	}
	b.MOVD(Arg{"panel", 32}, pkPanel)
	b.MOVD(Arg{"depth", 40}, pkDepth)
	sh := Imm(log2(p.esz))
	b.LSL(sh, pkLd, pkLd)
	b.VEOR(V(pkZero).B16(), V(pkZero).B16(), V(pkZero).B16())
	if k.D {
		p.packD(sh)
	} else {
		p.packPB(sh)
	}
	b.RET()
	if err := b.Err(); err != nil {
		return nil, fmt.Errorf("arm64: pack %s: %w", k.Name, err)
	}
	return b, nil
}

// packD: groups of V source rows (V = 16/esz), each walked in V×V blocks transposed in registers (V
// depth steps of V rows: V panel rows of V elements, one Q store each), the depth left over gathered
// lane by lane; then the w%V rows left one at a time; then the zero columns.
func (p *packer) packD(sh Imm) {
	const (
		d     = R6  // dst column of the current rows (dst + q·esz)
		left  = R7  // rows left
		s     = R12 // store address
		cnt   = R13 // depth left
		ldV   = R14 // V·ld bytes
		zc    = R15 // zero bytes per panel row
		zcnt  = R16 // zero bytes left in the row
		rowp0 = R8  // group row pointers R8..R11
	)
	v := 16 / p.esz
	row := func(i int) GPR { return rowp0 + GPR(i) }
	lane := func(r, i int) Elem {
		if p.esz == 8 {
			return V(r).D(i)
		}
		return V(r).S(i)
	}
	p.LSL(sh, pkPanel, pkPanel) // bytes
	p.LSL(Imm(log2(v)), pkLd, ldV)
	p.MOVD(pkDst, d)
	p.MOVD(pkW, left)

	p.Comment("Groups of %d rows: %d×%d blocks transposed with VTRN1/VTRN2.", v, v, v)
	p.Label(p.l("group"))
	p.CMP(Imm(v), left)
	p.BLT(p.l("rows"))
	p.MOVD(pkSrc, row(0))
	for i := 1; i < v; i++ {
		p.ADD(pkLd, row(i-1), row(i))
	}
	p.MOVD(d, s)
	p.MOVD(pkDepth, cnt)
	p.Label(p.l("block"))
	p.CMP(Imm(v), cnt)
	p.BLT(p.l("gtail"))
	for i := 0; i < v; i++ {
		p.VLD1P(row(i), VecList{p.vec(i)})
	}
	var out []Vec
	if p.esz == 8 {
		p.VTRN1(p.vec(1), p.vec(0), p.vec(2)) // depth 0: [r0[0], r1[0]]
		p.VTRN2(p.vec(1), p.vec(0), p.vec(3)) // depth 1: [r0[1], r1[1]]
		out = []Vec{p.vec(2), p.vec(3)}
	} else {
		s4 := func(i int) Vec { return V(i).S4() }
		d2 := func(i int) Vec { return V(i).D2() }
		p.VTRN1(s4(1), s4(0), s4(4)) // [r0[0], r1[0], r0[2], r1[2]]
		p.VTRN2(s4(1), s4(0), s4(5)) // [r0[1], r1[1], r0[3], r1[3]]
		p.VTRN1(s4(3), s4(2), s4(6)) // [r2[0], r3[0], r2[2], r3[2]]
		p.VTRN2(s4(3), s4(2), s4(7)) // [r2[1], r3[1], r2[3], r3[3]]
		p.VTRN1(d2(6), d2(4), d2(0)) // depth 0
		p.VTRN1(d2(7), d2(5), d2(1)) // depth 1
		p.VTRN2(d2(6), d2(4), d2(2)) // depth 2
		p.VTRN2(d2(7), d2(5), d2(3)) // depth 3
		out = []Vec{s4(0), s4(1), s4(2), s4(3)}
	}
	for _, o := range out {
		p.VST1(VecList{o}, Addr(s, 0))
		p.ADD(pkPanel, s, s)
	}
	p.SUB(Imm(v), cnt, cnt)
	p.B(p.l("block"))
	p.Label(p.l("gtail"))
	p.CBZ(cnt, p.l("gnext"))
	for i := 0; i < v; i++ {
		p.VLD1Lane(Addr(row(i), 0), lane(4, i))
		p.ADD(Imm(p.esz), row(i), row(i))
	}
	p.VST1(VecList{p.vec(4)}, Addr(s, 0))
	p.ADD(pkPanel, s, s)
	p.SUBS(Imm(1), cnt, cnt)
	p.BNE(p.l("gtail"))
	p.Label(p.l("gnext"))
	p.ADD(ldV, pkSrc, pkSrc)
	p.ADD(Imm(v*p.esz), d, d)
	p.SUB(Imm(v), left, left)
	p.B(p.l("group"))

	p.Comment("The rows left, one at a time: %d depth steps per Q load, stored lane by lane down column q.", v)
	p.Label(p.l("rows"))
	p.CBZ(left, p.l("zeros"))
	p.Label(p.l("row"))
	p.MOVD(pkSrc, row(0))
	p.MOVD(d, s)
	p.MOVD(pkDepth, cnt)
	p.Label(p.l("rvec"))
	p.CMP(Imm(v), cnt)
	p.BLT(p.l("relem"))
	p.VLD1P(row(0), VecList{p.vec(0)})
	for i := 0; i < v; i++ {
		p.VST1Lane(lane(0, i), Addr(s, 0))
		p.ADD(pkPanel, s, s)
	}
	p.SUB(Imm(v), cnt, cnt)
	p.B(p.l("rvec"))
	p.Label(p.l("relem"))
	p.CBZ(cnt, p.l("rnext"))
	p.copyElem(row(0), s)
	p.ADD(Imm(p.esz), row(0), row(0))
	p.ADD(pkPanel, s, s)
	p.SUBS(Imm(1), cnt, cnt)
	p.BNE(p.l("relem"))
	p.Label(p.l("rnext"))
	p.ADD(pkLd, pkSrc, pkSrc)
	p.ADD(Imm(p.esz), d, d)
	p.SUBS(Imm(1), left, left)
	p.BNE(p.l("row"))

	p.Comment("Columns w..panel-1 are zero: d points at column w of depth row 0.")
	p.Label(p.l("zeros"))
	p.LSL(sh, pkW, pkW)
	p.SUB(pkW, pkPanel, zc)
	p.CBZ(zc, p.l("done"))
	p.Label(p.l("zrow"))
	p.MOVD(d, s)
	p.MOVD(zc, zcnt)
	p.zeroRun("z", s, zcnt)
	p.ADD(pkPanel, d, d)
	p.SUBS(Imm(1), pkDepth, pkDepth)
	p.BNE(p.l("zrow"))
	p.Label(p.l("done"))
}

// packPB: per source row, the full panels (each a copy of panel elements into its own panel), then the
// last partial one, zero-padded.
func (p *packer) packPB(sh Imm) {
	const (
		full    = R6  // full panels
		rem     = R7  // bytes in the last panel
		pstride = R8  // panel·depth bytes: one panel of dst
		s       = R9  // source
		t0      = R10 // this row in the current panel
		np      = R11 // full panels left
		u       = R12 // store address
		cnt     = R13
		zc      = R14 // padding bytes of the last panel
	)
	p.UDIV(pkPanel, pkW, full)
	p.MSUB(pkPanel, pkW, full, rem) // n - full·panel
	p.LSL(sh, rem, rem)
	p.LSL(sh, pkPanel, pkPanel)
	p.MUL(pkDepth, pkPanel, pstride)
	p.SUB(rem, pkPanel, zc)
	p.Label(p.l("row"))
	p.MOVD(pkSrc, s)
	p.MOVD(pkDst, t0)
	p.MOVD(full, np)
	p.CBZ(np, p.l("part"))
	p.Label(p.l("panel"))
	p.MOVD(t0, u)
	p.MOVD(pkPanel, cnt)
	p.copyRun("f", s, u, cnt)
	p.ADD(pstride, t0, t0)
	p.SUBS(Imm(1), np, np)
	p.BNE(p.l("panel"))
	p.Label(p.l("part"))
	p.CBZ(rem, p.l("next"))
	p.MOVD(t0, u)
	p.MOVD(rem, cnt)
	p.copyRun("p", s, u, cnt)
	p.MOVD(zc, cnt)
	p.zeroRun("z", u, cnt)
	p.Label(p.l("next"))
	p.ADD(pkLd, pkSrc, pkSrc)
	p.ADD(pkPanel, pkDst, pkDst)
	p.SUBS(Imm(1), pkDepth, pkDepth)
	p.BNE(p.l("row"))
}
