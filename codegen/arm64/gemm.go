package arm64

import (
	"bytes"
	"fmt"
	"go/format"
	"math/bits"
	"strings"

	"github.com/kgen-dev/kgen/target"
)

// GemmKernel describes one GEMM microkernel implementing docs/MICROKERNEL.md:
//
//	func Name(kc int, a, b, c *T, ldc int, m, n int, alpha, beta T, bias *T, ep int)
//
// Elem is "f32" or "f64". MR must be a multiple of the vector lane count (4 for f32, 2 for f64),
// NR too; KUnroll is the k-loop unroll factor, a power of two in 1..8 (0 means 4).
type GemmKernel struct {
	Name    string
	Elem    string
	MR, NR  int
	KUnroll int
}

// TileFor returns the default register tile for an element type: the neon variant of the arm64 row of
// the target table (target/target.go): 8×12 for f32 and 6×8 for f64 (24 accumulators V8..V31 either
// way). It returns 0, 0 for unknown types.
func TileFor(elem string) (mr, nr int) {
	size := map[string]int{"f32": 4, "f64": 8}[elem]
	m, err := target.Lookup("arm64")
	if err != nil || size == 0 {
		return 0, 0
	}
	v, _ := m.Variant(variantName)
	return v.Tile(size)
}

// DefaultKernels returns the production kernels: sgemm8x12 (f32) and dgemm6x8 (f64), unrolled by 4.
func DefaultKernels() []GemmKernel {
	return []GemmKernel{
		{Name: "sgemm8x12", Elem: "f32", MR: 8, NR: 12, KUnroll: 4},
		{Name: "dgemm6x8", Elem: "f64", MR: 6, NR: 8, KUnroll: 4},
	}
}

// TilePlan is the register assignment of a kernel. In every k step the kernel loads the MR
// elements of an Ã column into A and the NR elements of a B̃ row into B, then for each row i and
// each B vector j issues FMLA Acc[i][j], B[j], A[i/L].lane(i%L): by-element FMLA, so no broadcasts.
// Acc[i] holds row i of the C tile, contiguous like row-major C.
type TilePlan struct {
	Kernel GemmKernel
	Size   int // element bytes
	Lanes  int // lanes per 128-bit vector
	A, B   []VReg
	Acc    [][]VReg // [MR][NR/Lanes]
}

// Arr is the full-width arrangement of the element type.
func (p TilePlan) Arr() Arrangement {
	if p.Size == 4 {
		return S4
	}
	return D2
}

func (p TilePlan) elem(r VReg, i int) Elem {
	if p.Size == 4 {
		return r.S(i)
	}
	return r.D(i)
}

// Plan validates k and assigns registers: A and B from V0 up, accumulators ending at V31.
func Plan(k GemmKernel) (TilePlan, error) {
	p := TilePlan{Kernel: k}
	switch k.Elem {
	case "f32":
		p.Size = 4
	case "f64":
		p.Size = 8
	default:
		return p, fmt.Errorf("arm64: kernel %q: element type %q (want f32 or f64)", k.Name, k.Elem)
	}
	p.Lanes = 16 / p.Size
	if p.Kernel.KUnroll == 0 {
		p.Kernel.KUnroll = 4
	}
	u := p.Kernel.KUnroll
	if u < 1 || u > 8 || u&(u-1) != 0 {
		return p, fmt.Errorf("arm64: kernel %q: KUnroll %d (want 1, 2, 4 or 8)", k.Name, u)
	}
	if k.MR <= 0 || k.NR <= 0 || k.MR%p.Lanes != 0 || k.NR%p.Lanes != 0 {
		return p, fmt.Errorf("arm64: kernel %q: %d×%d tile is not a multiple of %d lanes", k.Name, k.MR, k.NR, p.Lanes)
	}
	nA, nB := k.MR/p.Lanes, k.NR/p.Lanes
	nAcc := k.MR * nB
	free := 32 - nAcc
	if nA+nB > free || nB+2 > free {
		return p, fmt.Errorf("arm64: kernel %q: %d×%d needs %d accumulators + %d A + %d B vector registers (max 32, and %d for the epilogue)",
			k.Name, k.MR, k.NR, nAcc, nA, nB, nB+2)
	}
	if !isIdent(k.Name) {
		return p, fmt.Errorf("arm64: kernel name %q is not a Go identifier", k.Name)
	}
	for i := 0; i < nA; i++ {
		p.A = append(p.A, V(i))
	}
	for j := 0; j < nB; j++ {
		p.B = append(p.B, V(nA+j))
	}
	r := free
	for i := 0; i < k.MR; i++ {
		row := make([]VReg, nB)
		for j := range row {
			row[j] = V(r)
			r++
		}
		p.Acc = append(p.Acc, row)
	}
	return p, nil
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// lists splits registers into VLD1/VST1 lists of at most 4.
func lists(regs []VReg, arr Arrangement) []VecList {
	var out []VecList
	for i := 0; i < len(regs); i += 4 {
		var l VecList
		for _, r := range regs[i:min(i+4, len(regs))] {
			l = append(l, Vec{r, arr})
		}
		out = append(out, l)
	}
	return out
}

// argument layout (ABI0) of func(kc int, a, b, c *T, ldc int, m, n int, alpha, beta T, bias *T, ep int).
type argLayout struct{ alpha, beta, bias, ep, size int }

func layout(size int) argLayout {
	l := argLayout{alpha: 56, beta: 56 + size}
	l.bias = (l.beta + size + 7) &^ 7
	l.ep = l.bias + 8
	l.size = l.ep + 8
	return l
}

// General-purpose register roles.
const (
	rKC    = R0  // kc
	rA     = R1  // Ã pointer (post-incremented)
	rB     = R2  // B̃ pointer (post-incremented)
	rC     = R3  // C
	rLDC   = R4  // ldc in bytes
	rBias  = R5  // bias (or the stack copy on edge tiles)
	rM     = R6  // m
	rN     = R7  // n
	rEdge  = R8  // 0: full tile, 1: edge tile
	rCnt   = R9  // unrolled-loop count, then row pointer
	rTail  = R10 // remainder count
	rEp    = R11 // epilogue bits
	rTile  = R12 // stack tile
	rBBuf  = R13 // stack bias buffer
	rWork  = R14 // C pointer the epilogue uses (C or the stack tile)
	rWStr  = R15 // its row stride in bytes
	rSrc   = R19 // copy loops
	rDst   = R20
	rRows  = R21
	rCol   = R22
	rTmp   = R23
	spBase = 8 // first local byte above the saved LR at 0(RSP)
)

// kernelBuilder emits one kernel.
type kernelBuilder struct {
	*Builder
	p TilePlan
	l argLayout
}

func (kb *kernelBuilder) lbl(s string) Label { return Label(kb.p.Kernel.Name + "_" + s) }

// step emits one k step: load A and B, then MR·NR/L by-element FMLAs.
func (kb *kernelBuilder) step() {
	p := kb.p
	for _, l := range lists(p.A, p.Arr()) {
		kb.VLD1P(rA, l)
	}
	for _, l := range lists(p.B, p.Arr()) {
		kb.VLD1P(rB, l)
	}
	for i, row := range p.Acc {
		for j, acc := range row {
			kb.FMLAElem(Vec{acc, p.Arr()}, Vec{p.B[j], p.Arr()}, p.elem(p.A[i/p.Lanes], i%p.Lanes))
		}
	}
}

// copyTile copies a rows×cols block of elements (rows and cols in registers) from src (row
// stride srcStride bytes) to dst (row stride dstStride bytes), touching nothing else.
func (kb *kernelBuilder) copyTile(tag string, src GPR, srcStride Operand, dst GPR, dstStride Operand, rows GPR) {
	sh := uint8(bits.TrailingZeros(uint(kb.p.Size)))
	rowL, colL := kb.lbl(tag+"_row"), kb.lbl(tag+"_col")
	kb.MOVD(src, rSrc)
	kb.MOVD(dst, rDst)
	kb.MOVD(rows, rRows)
	kb.Label(rowL)
	kb.MOVD(ZR, rCol)
	kb.Label(colL)
	if kb.p.Size == 4 {
		kb.MOVWU(Indexed(rSrc, rCol, sh), rTmp)
		kb.MOVW(rTmp, Indexed(rDst, rCol, sh))
	} else {
		kb.MOVD(Indexed(rSrc, rCol, sh), rTmp)
		kb.MOVD(rTmp, Indexed(rDst, rCol, sh))
	}
	kb.ADD(Imm(1), rCol, rCol)
	kb.CMP(rN, rCol)
	kb.BLT(colL)
	kb.ADD(srcStride, rSrc, rSrc)
	kb.ADD(dstStride, rDst, rDst)
	kb.SUBS(Imm(1), rRows, rRows)
	kb.BNE(rowL)
}

func (kb *kernelBuilder) fmovArg(a Arg, f FReg) {
	if kb.p.Size == 4 {
		kb.FMOVS(a, f)
	} else {
		kb.FMOVD(a, f)
	}
}

func (kb *kernelBuilder) fcmpZero(f FReg) {
	if kb.p.Size == 4 {
		kb.FCMPS(FZero{}, f)
	} else {
		kb.FCMPD(FZero{}, f)
	}
}

func (p TilePlan) tileBytes() int { return p.Kernel.MR * p.Kernel.NR * p.Size }

// Frame is the kernel's stack frame: the MR×NR edge tile plus an NR-element bias buffer.
func (p TilePlan) Frame() int { return p.tileBytes() + p.Kernel.NR*p.Size }

func (kb *kernelBuilder) kernel() {
	p, k := kb.p, kb.p.Kernel
	arr := p.Arr()
	T := map[int]string{4: "float32", 8: "float64"}[p.Size]
	kb.Doc("func %s(kc int, a, b, c *%s, ldc int, m, n int, alpha, beta %s, bias *%s, ep int)", k.Name, T, T, T)
	kb.Doc("%s %d×%d, k unrolled by %d. A: %s, B: %s, accumulators %s..%s (row i of C in %d registers).",
		k.Elem, k.MR, k.NR, k.KUnroll, regRange(p.A), regRange(p.B), p.Acc[0][0].name(), p.Acc[len(p.Acc)-1][len(p.B)-1].name(), len(p.B))
	kb.TEXT(k.Name, "NOSPLIT", p.Frame(), kb.l.size)
	kb.MOVD(Arg{"m", 40}, rM)
	kb.MOVD(Arg{"n", 48}, rN)
	kb.CMP(Imm(0), rM)
	kb.BLE(kb.lbl("done"))
	kb.CMP(Imm(0), rN)
	kb.BLE(kb.lbl("done"))
	kb.MOVD(Arg{"kc", 0}, rKC)
	kb.MOVD(Arg{"a", 8}, rA)
	kb.MOVD(Arg{"b", 16}, rB)
	kb.MOVD(Arg{"c", 24}, rC)
	kb.MOVD(Arg{"ldc", 32}, rLDC)
	kb.LSL(Imm(bits.TrailingZeros(uint(p.Size))), rLDC, rLDC)

	kb.Comment("Edge tile unless m == MR and n == NR. A full tile prefetches its C rows for writing.")
	kb.MOVD(Imm(1), rEdge)
	kb.CMP(Imm(k.MR), rM)
	kb.BNE(kb.lbl("zero"))
	kb.CMP(Imm(k.NR), rN)
	kb.BNE(kb.lbl("zero"))
	kb.MOVD(ZR, rEdge)
	kb.MOVD(rC, rCnt)
	rowBytes := k.NR * p.Size
	for i := 0; i < k.MR; i++ {
		for off := 0; off < rowBytes; off += 64 {
			kb.PRFM(Addr(rCnt, int64(off)), PSTL1KEEP)
		}
		if i < k.MR-1 {
			kb.ADD(rLDC, rCnt, rCnt)
		}
	}
	kb.Label(kb.lbl("zero"))
	for _, row := range p.Acc {
		for _, r := range row {
			kb.VEOR(r.B16(), r.B16(), r.B16())
		}
	}
	kb.CMP(Imm(0), rKC)
	kb.BLE(kb.lbl("epilogue"))
	u := k.KUnroll
	kb.LSR(Imm(bits.TrailingZeros(uint(u))), rKC, rCnt)
	kb.AND(Imm(u-1), rKC, rTail)
	kb.CBZ(rCnt, kb.lbl("tail"))

	aStep, bStep := k.MR*p.Size, k.NR*p.Size
	dist := 2 * u // prefetch distance in k steps
	kb.Comment("k loop: %d steps per iteration; prefetch Ã and B̃ %d k steps ahead.", u, dist)
	kb.Label(kb.lbl("kloop"))
	for off := 0; off < u*aStep; off += 64 {
		kb.PRFM(Addr(rA, int64(dist*aStep+off)), PLDL1KEEP)
	}
	for off := 0; off < u*bStep; off += 64 {
		kb.PRFM(Addr(rB, int64(dist*bStep+off)), PLDL1KEEP)
	}
	for s := 0; s < u; s++ {
		kb.step()
	}
	kb.SUBS(Imm(1), rCnt, rCnt)
	kb.BNE(kb.lbl("kloop"))
	kb.Label(kb.lbl("tail"))
	kb.CBZ(rTail, kb.lbl("epilogue"))
	kb.Label(kb.lbl("tailloop"))
	kb.step()
	kb.SUBS(Imm(1), rTail, rTail)
	kb.BNE(kb.lbl("tailloop"))

	kb.Label(kb.lbl("epilogue"))
	kb.MOVD(Arg{"bias", kb.l.bias}, rBias)
	kb.MOVD(Arg{"ep", kb.l.ep}, rEp)
	kb.MOVD(rC, rWork)
	kb.MOVD(rLDC, rWStr)
	kb.CBZ(rEdge, kb.lbl("apply"))
	kb.Comment("Edge tile: run the epilogue on a stack tile holding only the valid m×n part of C,")
	kb.Comment("and on a stack copy of bias[:n]; copy the valid part back at the end.")
	kb.ADD(Imm(spBase), RSP, rTile)
	kb.MOVD(rTile, rWork)
	kb.MOVD(Imm(rowBytes), rWStr)
	kb.fmovArg(Arg{"beta", kb.l.beta}, F(1))
	kb.fcmpZero(F(1))
	kb.BEQ(kb.lbl("edgebias"))
	kb.copyTile("cin", rC, rLDC, rTile, Imm(rowBytes), rM)
	kb.Label(kb.lbl("edgebias"))
	kb.TBZ(Imm(0), rEp, kb.lbl("apply"))
	kb.ADD(Imm(spBase+p.tileBytes()), RSP, rBBuf)
	kb.MOVD(Imm(1), rTmp)
	kb.copyTile("bias", rBias, ZR, rBBuf, ZR, rTmp)
	kb.MOVD(rBBuf, rBias)

	kb.Label(kb.lbl("apply"))
	kb.Comment("v = alpha*acc")
	kb.fmovArg(Arg{"alpha", kb.l.alpha}, F(0))
	for _, row := range p.Acc {
		for _, r := range row {
			kb.FMULElem(Vec{r, arr}, Vec{r, arr}, p.elem(V(0), 0))
		}
	}
	kb.Comment("if beta != 0 { v += beta*C } (beta == 0: C is not read)")
	kb.fmovArg(Arg{"beta", kb.l.beta}, F(1))
	kb.fcmpZero(F(1))
	kb.BEQ(kb.lbl("nobeta"))
	kb.MOVD(rWork, rCnt)
	cregs := make([]VReg, len(p.B))
	for j := range cregs {
		cregs[j] = V(2 + j)
	}
	for i, row := range p.Acc {
		for _, l := range lists(cregs, arr) {
			if len(p.B) > 4 {
				kb.VLD1P(rCnt, l)
			} else {
				kb.VLD1(Addr(rCnt, 0), l)
			}
		}
		for j, r := range row {
			kb.FMLAElem(Vec{r, arr}, Vec{cregs[j], arr}, p.elem(V(1), 0))
		}
		if i < k.MR-1 {
			if len(p.B) > 4 {
				kb.SUB(Imm(rowBytes), rCnt, rCnt)
			}
			kb.ADD(rWStr, rCnt, rCnt)
		}
	}
	kb.Label(kb.lbl("nobeta"))
	kb.Comment("if ep&1 != 0 { v += bias[j] }")
	kb.TBZ(Imm(0), rEp, kb.lbl("nobias"))
	bregs := make([]VReg, len(p.B))
	for j := range bregs {
		bregs[j] = V(j)
	}
	kb.MOVD(rBias, rCnt)
	for _, l := range lists(bregs, arr) {
		kb.VLD1P(rCnt, l)
	}
	for _, row := range p.Acc {
		for j, r := range row {
			kb.FADD(Vec{r, arr}, Vec{r, arr}, Vec{bregs[j], arr})
		}
	}
	kb.Label(kb.lbl("nobias"))
	kb.Comment("if ep&2 != 0 { v = max(v, 0) } (FMAX keeps NaN)")
	kb.TBZ(Imm(1), rEp, kb.lbl("store"))
	kb.VEOR(V(0).B16(), V(0).B16(), V(0).B16())
	for _, row := range p.Acc {
		for _, r := range row {
			kb.FMAX(Vec{r, arr}, Vec{r, arr}, Vec{V(0), arr})
		}
	}
	kb.Label(kb.lbl("store"))
	kb.MOVD(rWork, rCnt)
	for i, row := range p.Acc {
		if len(row) > 4 {
			for _, l := range lists(row, arr) {
				kb.VST1P(l, rCnt)
			}
			kb.SUB(Imm(rowBytes), rCnt, rCnt)
		} else {
			kb.VST1(lists(row, arr)[0], Addr(rCnt, 0))
		}
		if i < k.MR-1 {
			kb.ADD(rWStr, rCnt, rCnt)
		}
	}
	kb.CBZ(rEdge, kb.lbl("done"))
	kb.copyTile("cout", rTile, Imm(rowBytes), rC, rLDC, rM)
	kb.Label(kb.lbl("done"))
	kb.RET()
}

func (v VReg) name() string { return fmt.Sprintf("V%d", v) }

func regRange(r []VReg) string {
	if len(r) == 1 {
		return r[0].name()
	}
	return r[0].name() + ".." + r[len(r)-1].name()
}

// Header is the first line of every generated file.
const Header = "// Code generated by kgen. DO NOT EDIT."

// Generate emits the assembly (for a _arm64.s file) and the Go declarations (for a _arm64.go file)
// of kernels in package pkg. Both carry `//go:build !purego`. Output is deterministic.
func Generate(pkg string, kernels []GemmKernel) (asm, stubs []byte, err error) {
	return GenerateWithVLoops(pkg, kernels, nil)
}

// GenerateWithVLoops is Generate plus the vector-loop functions vloops (see VLoopKernel); a loop the
// generator cannot vectorize is an error (filter with CanVectorize or VLoopKernels first).
func GenerateWithVLoops(pkg string, kernels []GemmKernel, vloops []VLoopKernel) (asm, stubs []byte, err error) {
	if !isIdent(pkg) {
		return nil, nil, fmt.Errorf("arm64: package name %q", pkg)
	}
	var a, s bytes.Buffer
	fmt.Fprintf(&a, "%s\n\n//go:build !purego\n\n#include \"textflag.h\"\n", Header)
	fmt.Fprintf(&s, "%s\n\n//go:build !purego\n\npackage %s\n", Header, pkg)
	seen := map[string]bool{}
	for _, k := range kernels {
		if seen[k.Name] {
			return nil, nil, fmt.Errorf("arm64: duplicate kernel name %q", k.Name)
		}
		seen[k.Name] = true
		b, p, err := build(k)
		if err != nil {
			return nil, nil, err
		}
		a.WriteByte('\n')
		a.Write(b.Bytes())
		T := map[int]string{4: "float32", 8: "float64"}[p.Size]
		fmt.Fprintf(&s, "\n// %s is the %s %d×%d GEMM microkernel (docs/MICROKERNEL.md).\n//\n//go:noescape\n", k.Name, k.Elem, k.MR, k.NR)
		fmt.Fprintf(&s, "func %s(kc int, a, b, c *%s, ldc int, m, n int, alpha, beta %s, bias *%s, ep int)\n", k.Name, T, T, T)
	}
	for _, k := range vloops {
		if seen[k.Name] {
			return nil, nil, fmt.Errorf("arm64: duplicate kernel name %q", k.Name)
		}
		seen[k.Name] = true
		g, ok := emitVLoop(&Builder{}, k)
		if !ok {
			return nil, nil, fmt.Errorf("arm64: cannot vectorize %s", k.Name)
		}
		a.Write(g.b.Bytes())
		fmt.Fprintf(&s, "\n// %s runs n groups of %d iterations of %s (codegen.VLoop contract), %s, unrolled %d.\n//\n//go:noescape\n",
			k.Name, k.Lanes(), k.VLoop.Var, k.ISA, g.u)
		fmt.Fprintf(&s, "func %s%s\n", k.Name, strings.TrimPrefix(g.signature(), "func"))
	}
	stubs, err = format.Source(s.Bytes())
	if err != nil {
		return nil, nil, err
	}
	return a.Bytes(), stubs, nil
}

func build(k GemmKernel) (*Builder, TilePlan, error) {
	p, err := Plan(k)
	if err != nil {
		return nil, p, err
	}
	kb := &kernelBuilder{Builder: &Builder{}, p: p, l: layout(p.Size)}
	kb.kernel()
	if err := kb.Err(); err != nil {
		return nil, p, fmt.Errorf("arm64: kernel %q: %w", k.Name, err)
	}
	return kb.Builder, p, nil
}

// Figures are static properties of a kernel's inner k loop (what to quote in docs/PERF.md, since
// emulated timings mean nothing).
type Figures struct {
	MR, NR, KUnroll   int
	FMLAPerKStep      int     // by-element FMLAs per k step
	LoadInstrPerKStep int     // VLD1 instructions per k step
	QLoadsPerKStep    int     // 128-bit registers loaded per k step
	FMLAPerLoadInstr  float64 // FMLAPerKStep / LoadInstrPerKStep
	FMLAPerQLoad      float64 // FMLAPerKStep / QLoadsPerKStep
	PrefetchPerIter   int     // PRFM instructions per unrolled iteration
	FlopsPerKStep     int     // 2·MR·NR
	AccRegs           int     // accumulator vector registers
	VRegs             []int   // every vector register the kernel names, ascending
}

// StaticFigures generates k and measures its unrolled k loop.
func StaticFigures(k GemmKernel) (Figures, error) {
	b, p, err := build(k)
	if err != nil {
		return Figures{}, err
	}
	f := Figures{MR: k.MR, NR: k.NR, KUnroll: p.Kernel.KUnroll, FlopsPerKStep: 2 * k.MR * k.NR, AccRegs: k.MR * len(p.B)}
	loop, in := Label(k.Name+"_kloop"), false
	used := map[VReg]bool{}
	var fmla, ld, q, prf int
	for _, x := range b.Insts() {
		for _, r := range x.VRegs() {
			used[r] = true
		}
		if x.Label == loop {
			in = true
			continue
		}
		if !in {
			continue
		}
		switch {
		case x.Op == "BNE" && len(x.Args) == 1 && x.Args[0] == loop:
			in = false
		case x.Op == "fmla" || x.Op == "VFMLA":
			fmla++
		case x.Op == "VLD1.P" || x.Op == "VLD1":
			ld++
			q += len(x.Args[1].(VecList))
		case x.Op == "PRFM":
			prf++
		}
	}
	u := f.KUnroll
	f.FMLAPerKStep, f.LoadInstrPerKStep, f.QLoadsPerKStep, f.PrefetchPerIter = fmla/u, ld/u, q/u, prf
	f.FMLAPerLoadInstr = float64(fmla) / float64(ld)
	f.FMLAPerQLoad = float64(fmla) / float64(q)
	for r := VReg(0); r < 32; r++ {
		if used[r] {
			f.VRegs = append(f.VRegs, int(r))
		}
	}
	return f, nil
}
