package amd64

import (
	"fmt"
	"strings"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/codegen/lanesel"
	"github.com/kgen-dev/kgen/ir"
)

// This file vectorizes the Vector loops of the loop IR (codegen.VLoop, the vector-loop slots) into AVX2
// and AVX-512 functions, from each loop's single-lane body: the walk over the body is the shared lane
// instruction selection (codegen/lanesel), for which vloopGen is the x86 ISA. Unit-stride accesses become VMOVUPS, loop-invariant
// values (computed by the Go caller) are broadcast once before the loop, reductions keep U vector
// accumulators reduced horizontally at the end. A loop with an operation not handled here keeps its
// portable Go code (the slot stays nil).
//
// Semantics follow the portable code: max/min propagate NaN (VMAXPS plus an unordered-compare mask
// ORed in), relu keeps NaN and -0, sqrt is VSQRTPS (correctly rounded, as float32(math.Sqrt(float64))).
// f16 accesses (storage of an f32 loop, F16C): a load is VCVTPH2PS from memory (8 halves, exact), a
// store VCVTPS2PH with rounding immediate 0 (round to nearest even, whatever MXCSR says) to memory, a
// cast to f16 both; NaN lanes are first made sign|0x7fc00000 so that they narrow to sign|0x7e00 like
// f16.FromFloat32 (the hardware would keep the top payload bits). The group index register then counts
// 2-byte units, scaled by 2 for the f32 accesses.
// Differences within the generated tests' tolerance: a*b+c in an addition contracts to one FMA, and
// reductions are reassociated across 8 (f32) or 4 (f64) lanes times U accumulators.
//
// AVX-512 (ISA AVX512, the avx512 variant) generates the same lane bodies on zmm registers (16 f32 or 8
// f64 lanes, 32 registers) with opmasks: the function's n counts iterations (codegen.VLoopImpl.Counted),
// whole groups run unmasked and the last n%lanes iterations run once under the opmask K1 = (1<<r)-1:
// zero-masking loads (VMOVUPS.Z, VCVTPH2PS.Z; fault suppressing, so masked lanes are never read), merge-
// masking stores, and a reduction merges the masked group into its accumulator with a masked move, so
// masked lanes are neither read nor written nor reduced. Compares write the opmask K2: max/min set NaN
// lanes to all ones (masked VPTERNLOG $0xff, the bits VORPS gives on AVX2), relu keeps the lanes that are
// not less than 0 (VMOVUPS.Z), the f16 NaN canonicalization blends with VBLENDMPS. A max/min
// reduction compares only the new values with themselves (accumulateMaxZ), keeping the compare off the
// accumulator's dependency chain; a zero maximum's sign may then differ from AVX2's, as it does between
// any two orders of a reduction. exp is the same
// polynomial with VRNDSCALEPS for the rounding and VSCALEFPS for the final t·2^n (one rounding, like the
// AVX2 two-step scaling whose first step is exact, so both give the same bits: TestVLoopExpULP), its 12
// constants held in registers when they fit (a zmm group otherwise reads 12 × 64 bytes of constants,
// and those loads, not the arithmetic, bounded the loop: 1.02 µs → 0.60 µs per 4096 values). The horizontal reduction
// stays at zmm width (VSHUFF32X4 and VPERMILPS/VPERMILPD swaps). Bitwise operations use the AVX-512F
// integer forms (VPXORD, VPANDD, VPORD), so no AVX512DQ is needed by these routines.

// VLoopKernel is one vector-loop function to generate.
type VLoopKernel struct {
	Name  string
	VLoop *codegen.VLoop
	ISA   string // AVX2 or AVX512
}

// Lanes is the number of loop iterations one vector register holds.
func (k VLoopKernel) Lanes() int {
	if k.VLoop.Elem == ir.F64 {
		return vecLen(F64, k.ISA)
	}
	return vecLen(F32, k.ISA)
}

// errUnsupported marks a lane body the generator cannot vectorize.
var errUnsupported = lanesel.ErrUnsupported

var (
	kTail = reg.K1  // AVX-512: lanes of the masked last group
	kTmp  = reg.K2  // AVX-512: compare results
	vlN   = reg.RCX // groups left (AVX-512: iterations)
	vlCnt = reg.RDX // unrolled-loop counter
	vlI   = reg.RAX // byte offset of the current group
	vlPtr = []reg.GPPhysical{reg.RSI, reg.RDI, reg.R8, reg.R9, reg.R10, reg.R11, reg.R12, reg.R13, reg.RBX}
)

// vloopGen generates one vector loop: the x86 ISA of the lane instruction selection (lanesel.ISA), whose
// Driver walks the lane body and allocates the registers.
type vloopGen struct {
	*lanesel.Driver[reg.VecPhysical, operand.Op]
	c      *build.Context
	z      bool // AVX-512: zmm registers, opmasks, n counts iterations
	tail   bool // emitting the masked last group (AVX-512): loads and stores under kTail
	hoist  bool // AVX-512: hold the exp constants in registers (expRegs) instead of reading them each group
	expReg []reg.VecPhysical
	k      VLoopKernel
	v      *codegen.VLoop
	f64    bool
	esz    int
	u      int
	grp    int // the group being emitted (its accesses are at displacement grp·lanes·size)
	unit   int // bytes vlI advances per iteration: the smallest access element size
}

// CanVectorize reports whether the loop can be generated, trying it on a scratch context.
func CanVectorize(k VLoopKernel) bool {
	_, err := tryVLoop(build.NewContext(), k)
	return err == nil
}

// emitVLoop generates k into c (after a dry run picks the unroll factor); false if unsupported.
func emitVLoop(c *build.Context, k VLoopKernel) bool {
	g, err := tryVLoop(build.NewContext(), k)
	if err != nil {
		return false
	}
	g = newVLoopGen(c, k, g.u, g.hoist)
	return g.emit() == nil
}

// tryVLoop finds the largest unroll factor u (4, 2, 1) whose code fits the registers, on AVX-512 first
// with the exp constants held in registers, then without; it returns that (dry-run) generator.
func tryVLoop(c *build.Context, k VLoopKernel) (*vloopGen, error) {
	if (k.ISA != AVX2 && k.ISA != AVX512) || len(k.VLoop.Access) > len(vlPtr) {
		return nil, errUnsupported
	}
	hoists := []bool{false}
	if k.ISA == AVX512 && lanesel.HasExp(k.VLoop.Loop.Body) {
		hoists = []bool{true, false}
	}
	var err error
	for _, u := range []int{4, 2, 1} {
		for _, h := range hoists {
			g := newVLoopGen(c, k, u, h)
			if err = g.emit(); err == nil {
				return g, nil
			}
		}
	}
	return nil, err
}

func newVLoopGen(c *build.Context, k VLoopKernel, u int, hoist bool) *vloopGen {
	g := &vloopGen{c: c, k: k, v: k.VLoop, z: k.ISA == AVX512, f64: k.VLoop.Elem == ir.F64, u: u, hoist: hoist}
	g.esz = k.VLoop.Elem.Size()
	g.unit = g.esz
	for _, a := range k.VLoop.Access {
		g.unit = min(g.unit, a.T.Type.Size())
	}
	nreg := 16
	if g.z {
		nreg = 32
	}
	var free []reg.VecPhysical
	for i := nreg - 1; i >= 0; i-- {
		free = append(free, vecReg(g.z, i))
	}
	g.Driver = lanesel.New[reg.VecPhysical, operand.Op](g, k.VLoop, free, vecReg(g.z, 0))
	return g
}

func (g *vloopGen) signature() string {
	t := goType(F32)
	if g.f64 {
		t = goType(F64)
	}
	ps := []string{"n int"}
	for k, a := range g.v.Access {
		if a.F16() {
			ps = append(ps, fmt.Sprintf("p%d *uint16", k))
		} else {
			ps = append(ps, fmt.Sprintf("p%d *%s", k, t))
		}
	}
	for i := range g.v.Invariants {
		ps = append(ps, fmt.Sprintf("c%d %s", i, t))
	}
	res := ""
	if g.v.Reduction() {
		res = " " + t
	}
	return "func(" + strings.Join(ps, ", ") + ")" + res
}

func (g *vloopGen) param(name string) operand.Mem {
	b, err := g.c.Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

func (g *vloopGen) emit() error {
	c, v := g.c, g.v
	c.Function(g.k.Name)
	c.Attributes(attr.NOSPLIT)
	c.Pragma("noescape")
	if g.z {
		c.Doc(fmt.Sprintf("%s runs n iterations of %s (codegen.VLoop contract), %s, %d lanes unrolled %d, the last n%%%d under a mask.",
			g.k.Name, v.Var, g.k.ISA, g.k.Lanes(), g.u, g.k.Lanes()))
	} else {
		c.Doc(fmt.Sprintf("%s runs n groups of %d iterations of %s (codegen.VLoop contract), %s, unrolled %d.",
			g.k.Name, g.k.Lanes(), v.Var, g.k.ISA, g.u))
	}
	c.SignatureExpr(g.signature())
	c.Load(c.Param("n"), vlN)
	for k := range v.Access {
		c.Load(c.Param(fmt.Sprintf("p%d", k)), vlPtr[k])
	}
	c.XORQ(vlI, vlI)
	g.Invariants(func(i int, r reg.VecPhysical) { g.bcast(g.param(fmt.Sprintf("c%d", i)), r) })
	if g.hoist {
		// 32 registers leave room for the exp constants: a zmm group otherwise reads 12 of them from
		// memory, and at 64 bytes each those loads, not the arithmetic, bound the loop.
		for i := range expConstsZ {
			r := g.Alloc()
			c.VMOVUPS(g.expConst(i), r)
			g.expReg = append(g.expReg, r)
		}
	}
	ln := v.Loop.Reduce
	g.Accumulators(g.u, g.identity)
	if g.z {
		g.loopsZ()
	} else {
		g.loops()
	}
	if ln != nil {
		g.reduce(ln.Op)
	}
	c.VZEROUPPER()
	c.RET()
	return g.Err
}

// loops emits the AVX2 loops over n groups: unrolled by u, then one group at a time.
func (g *vloopGen) loops() {
	c := g.c
	if g.u > 1 {
		c.MOVQ(vlN, vlCnt)
		c.SHRQ(operand.U8(log2(g.u)), vlCnt)
		c.JZ(lbl("tail"))
		c.Label("loop")
		for j := range g.u {
			g.Group(j)
		}
		c.ADDQ(operand.U32(g.u*g.k.Lanes()*g.unit), vlI)
		c.DECQ(vlCnt)
		c.JNZ(lbl("loop"))
		c.Label("tail")
		c.ANDQ(operand.U32(g.u-1), vlN)
		c.JZ(lbl("done"))
	}
	c.Label("loop1")
	g.Group(0)
	c.ADDQ(operand.U32(g.k.Lanes()*g.unit), vlI)
	c.DECQ(vlN)
	c.JNZ(lbl("loop1"))
	c.Label("done")
}

// loopsZ emits the AVX-512 loops over n iterations: whole groups unrolled by u, then one at a time,
// then the last n%lanes iterations under the opmask kTail.
func (g *vloopGen) loopsZ() {
	c := g.c
	lanes := g.k.Lanes()
	if g.u > 1 {
		c.MOVQ(vlN, vlCnt)
		c.SHRQ(operand.U8(log2(g.u*lanes)), vlCnt)
		c.JZ(lbl("rest"))
		c.Label("loop")
		for j := range g.u {
			g.Group(j)
		}
		c.ADDQ(operand.U32(g.u*lanes*g.unit), vlI)
		c.DECQ(vlCnt)
		c.JNZ(lbl("loop"))
		c.Label("rest")
	}
	c.MOVQ(vlN, vlCnt)
	c.SHRQ(operand.U8(log2(lanes)), vlCnt)
	if g.u > 1 {
		c.ANDQ(operand.U32(g.u-1), vlCnt)
	}
	c.JZ(lbl("tail"))
	c.Label("loop1")
	g.Group(0)
	c.ADDQ(operand.U32(lanes*g.unit), vlI)
	c.DECQ(vlCnt)
	c.JNZ(lbl("loop1"))
	c.Label("tail")
	c.ANDQ(operand.U32(lanes-1), vlN)
	c.JZ(lbl("done"))
	c.MOVL(operand.U32(1), vlCnt.As32())
	c.SHLL(reg.CL, vlCnt.As32())
	c.DECL(vlCnt.As32())
	c.KMOVW(vlCnt.As32(), kTail)
	g.tail = true
	g.Group(0)
	g.tail = false
	c.Label("done")
}

func log2(n int) uint8 {
	s := uint8(0)
	for 1<<s < n {
		s++
	}
	return s
}

func (g *vloopGen) bcast(src operand.Op, dst reg.VecPhysical) {
	if g.f64 {
		g.c.VBROADCASTSD(src, dst)
	} else {
		g.c.VBROADCASTSS(src, dst)
	}
}

// identity sets r to the identity of a reduction operator in every lane.
func (g *vloopGen) identity(op ir.Op, r reg.VecPhysical) {
	c := g.c
	switch op {
	case ir.Add:
		zero(c, g.z, r)
	case ir.Max, ir.Min:
		x := xmmOf(r)
		bitsF32, bitsF64 := uint64(0xff800000), uint64(0xfff0000000000000) // -Inf
		if op == ir.Min {
			bitsF32, bitsF64 = 0x7f800000, 0x7ff0000000000000
		}
		if g.f64 {
			c.MOVQ(operand.U64(bitsF64), vlCnt)
			c.VMOVQ(vlCnt, x)
		} else {
			c.MOVL(operand.U32(bitsF32), vlCnt.As32())
			c.VMOVD(vlCnt.As32(), x)
		}
		g.bcast(x, r)
	default:
		g.Fail(errUnsupported)
	}
}

// mem is access k in the current group: vlI counts g.unit bytes per iteration.
func (g *vloopGen) mem(k int) operand.Mem {
	size := g.v.Access[k].T.Type.Size()
	return operand.Mem{Base: vlPtr[k], Index: vlI, Scale: uint8(size / g.unit), Disp: g.grp * g.k.Lanes() * size}
}

// StoreF16 narrows the f32 vector r to f16 (round to nearest even, NaN as f16.FromFloat32) into access k
// (lanesel.ISA).
func (g *vloopGen) StoreF16(k int, r reg.VecPhysical, owned bool) {
	t := g.CanonNaN(r)
	if g.tail {
		g.c.VCVTPS2PH(operand.U8(0), t, kTail, g.mem(k))
	} else {
		g.c.VCVTPS2PH(operand.U8(0), t, g.mem(k))
	}
	g.Release(t)
	if owned {
		g.Release(r)
	}
}

// Store writes r to access k (lanesel.ISA); in the masked group only the lanes under kTail.
func (g *vloopGen) Store(k int, r reg.VecPhysical) {
	if g.tail {
		g.vmov(r, kTail, g.mem(k))
	} else {
		g.vmov(r, g.mem(k))
	}
}

// RoundF16 rounds the f32 lanes of t through f16 (lanesel.ISA; NaN lanes already canonical).
func (g *vloopGen) RoundF16(t reg.VecPhysical) {
	h := xmmOf(t)
	if g.z {
		h = ymmOf(t)
	}
	g.c.VCVTPS2PH(operand.U8(0), t, h)
	g.c.VCVTPH2PS(h, t)
}

// HalfLanes, Masked, MergeMasked, BeginGroup and EndGroup are the x86 answers to lanesel.ISA: lanes
// are f32 or f64, the AVX-512 tail is the masked group.
func (g *vloopGen) HalfLanes() bool                      { return false }
func (g *vloopGen) Masked() bool                         { return g.tail }
func (g *vloopGen) MergeMasked(src, dst reg.VecPhysical) { g.vmov(src, kTail, dst) }
func (g *vloopGen) BeginGroup(j int)                     { g.grp = j }
func (g *vloopGen) EndGroup()                            {}

// canonNaN returns a new register holding r with every NaN lane replaced by sign|0x7fc00000 (the f32
// whose f16 narrowing is f16.FromFloat32's NaN, sign|0x7e00); r is unchanged.
func (g *vloopGen) CanonNaN(r reg.VecPhysical) reg.VecPhysical {
	c := g.c
	if g.z {
		t := g.Alloc()
		c.VCMPPS(operand.U8(3), r, r, kTmp) // unordered: the NaN lanes
		c.VPSRLD(operand.U8(22), r, t)
		c.VPSLLD(operand.U8(22), t, t)
		c.VPORD(g.f16Quiet(), t, t)
		c.VBLENDMPS(t, r, kTmp, t) // NaN lanes from t, the others from r
		return t
	}
	t, m := g.Alloc(), g.Alloc()
	c.VCMPPS(operand.U8(3), r, r, m) // unordered: all ones in NaN lanes
	c.VPSRLD(operand.U8(22), r, t)
	c.VPSLLD(operand.U8(22), t, t) // sign, exponent, quiet bit
	c.VORPS(g.f16Quiet(), t, t)
	c.VBLENDVPS(m, t, r, t)
	g.Release(m)
	return t
}

// tableKey names one RODATA table of a build context: ymm tables have 8 lanes, zmm ones 16.
type tableKey struct {
	c *build.Context
	z bool
}

var f16Tables = map[tableKey]operand.Mem{}

// f16Quiet is a RODATA vector of 0x00400000 (the f32 quiet-NaN bit) in every lane.
func (g *vloopGen) f16Quiet() operand.Mem {
	key := tableKey{g.c, g.z}
	m, ok := f16Tables[key]
	if !ok {
		name, lanes := "vloopF16Quiet", 8
		if g.z {
			name, lanes = "vloopF16QuietZ", 16
		}
		m = g.c.StaticGlobal(name)
		g.c.DataAttributes(attr.RODATA | attr.NOPTR)
		for range lanes {
			g.c.AppendDatum(operand.U32(0x00400000))
		}
		f16Tables[key] = m
	}
	return m
}

// vmov is VMOVUPS/VMOVUPD with ops (src, dst) or, AVX-512, (src, k, dst): a merge-masking move.
func (g *vloopGen) vmov(ops ...operand.Op) {
	if g.f64 {
		g.c.VMOVUPD(ops...)
	} else {
		g.c.VMOVUPS(ops...)
	}
}

// vloadZ is the zero-masking move: lanes outside k become 0 (AVX-512; fault suppressing from memory).
func (g *vloopGen) vloadZ(src operand.Op, k reg.Register, dst operand.Op) {
	if g.f64 {
		g.c.VMOVUPD_Z(src, k, dst)
	} else {
		g.c.VMOVUPS_Z(src, k, dst)
	}
}

// Copy emits dst = src (lanesel.ISA).
func (g *vloopGen) Copy(src, dst reg.VecPhysical) { g.c.VMOVAPS(src, dst) }

// Accumulate takes AVX-512 max and min reductions (accumulateMaxZ; lanesel.ISA).
func (g *vloopGen) Accumulate(op ir.Op, y ir.Expr, acc reg.VecPhysical) bool {
	if g.z && (op == ir.Max || op == ir.Min) {
		g.accumulateMaxZ(op, y, acc)
		return true
	}
	return false
}

// accumulateMaxZ emits acc = max(acc, y) (or min) on zmm with the AVX2 NaN result, keeping the
// accumulator's dependency chain short: VMAXPS with acc as the second source returns acc when either
// is NaN, so a NaN accumulator lane (always all ones) stays, and the lanes where y is NaN, found by a
// compare of y with itself (off the chain), are then set to all ones. binop's form would compare acc
// with y first, putting the compare's latency into every step of the chain.
func (g *vloopGen) accumulateMaxZ(op ir.Op, y ir.Expr, acc reg.VecPhysical) {
	c := g.c
	r, o := g.Eval(y)
	if g.f64 {
		c.VCMPPD(operand.U8(3), r, r, kTmp)
		if op == ir.Max {
			c.VMAXPD(acc, r, acc)
		} else {
			c.VMINPD(acc, r, acc)
		}
		c.VPTERNLOGQ(operand.U8(0xff), acc, acc, kTmp, acc)
	} else {
		c.VCMPPS(operand.U8(3), r, r, kTmp)
		if op == ir.Max {
			c.VMAXPS(acc, r, acc)
		} else {
			c.VMINPS(acc, r, acc)
		}
		c.VPTERNLOGD(operand.U8(0xff), acc, acc, kTmp, acc)
	}
	if o {
		g.Release(r)
	}
}

// FMA emits acc += a*b (lanesel.ISA).
func (g *vloopGen) FMA(acc, a reg.VecPhysical, b operand.Op) {
	if g.f64 {
		g.c.VFMADD231PD(b, a, acc)
	} else {
		g.c.VFMADD231PS(b, a, acc)
	}
}

// Operand evaluates e as an instruction's memory-capable source: a unit-stride load stays in memory
// (not an f16 one, which must be widened first, nor one of the masked group). lanesel.ISA.
func (g *vloopGen) Operand(e ir.Expr) (operand.Op, bool) {
	if _, inv := g.v.InvariantOf(e); !inv && !g.tail {
		if l, ok := e.(*ir.Load); ok {
			if k, ok := g.v.AccessOf(l.T, l.Idx); ok && !g.v.Access[k].F16() {
				return g.mem(k), false
			}
		}
	}
	return g.Eval(e)
}

// Reg and Src convert between registers and operands (lanesel.ISA).
func (g *vloopGen) Reg(o operand.Op) (reg.VecPhysical, bool) {
	r, ok := o.(reg.VecPhysical)
	return r, ok
}

func (g *vloopGen) Src(r reg.VecPhysical) operand.Op { return r }

// BinOp emits d = x op y for y a register or memory operand (Go operand order: y, x, d). lanesel.ISA.
func (g *vloopGen) BinOp(op ir.Op, y operand.Op, x, d reg.VecPhysical) {
	c := g.c
	pick := func(s, dd func(...operand.Op)) func(...operand.Op) {
		if g.f64 {
			return dd
		}
		return s
	}
	switch op {
	case ir.Add:
		pick(c.VADDPS, c.VADDPD)(y, x, d)
	case ir.Sub:
		pick(c.VSUBPS, c.VSUBPD)(y, x, d)
	case ir.Mul:
		pick(c.VMULPS, c.VMULPD)(y, x, d)
	case ir.Div:
		pick(c.VDIVPS, c.VDIVPD)(y, x, d)
	case ir.Max, ir.Min:
		// NaN in either operand gives NaN: an unordered-compare mask (all ones, a NaN) ORed into the result.
		if x.Size() == 64 {
			// AVX-512: the compare writes an opmask; its lanes are set to all ones.
			pick(c.VCMPPS, c.VCMPPD)(operand.U8(3), y, x, kTmp)
			if op == ir.Max {
				pick(c.VMAXPS, c.VMAXPD)(y, x, d)
			} else {
				pick(c.VMINPS, c.VMINPD)(y, x, d)
			}
			pick(c.VPTERNLOGD, c.VPTERNLOGQ)(operand.U8(0xff), d, d, kTmp, d)
			return
		}
		u := g.Alloc()
		if x.Size() == 16 {
			u = xmmOf(u)
		}
		pick(c.VCMPPS, c.VCMPPD)(operand.U8(3), y, x, u)
		if op == ir.Max {
			pick(c.VMAXPS, c.VMAXPD)(y, x, d)
		} else {
			pick(c.VMINPS, c.VMINPD)(y, x, d)
		}
		c.VORPS(u, d, d)
		g.Release(vecReg(false, int(u.PhysicalIndex())))
	default:
		g.Fail(errUnsupported)
	}
}

// Load loads access k of the current group (lanesel.ISA): f16 widened, the masked group zero-masked.
func (g *vloopGen) Load(k int) (reg.VecPhysical, bool, bool) {
	c := g.c
	r := g.Alloc()
	switch {
	case g.tail && g.v.Access[k].F16():
		c.VCVTPH2PS_Z(g.mem(k), kTail, r) // masked halves, fault suppressing
	case g.tail:
		g.vloadZ(g.mem(k), kTail, r)
	case g.v.Access[k].F16():
		c.VCVTPH2PS(g.mem(k), r) // 8 (zmm: 16) halves, exact
	default:
		g.vmov(g.mem(k), r)
	}
	return r, true, true
}

// Unary emits d = op a for neg, abs, sqrt and relu (lanesel.ISA).
func (g *vloopGen) Unary(op ir.Op, a, d reg.VecPhysical) {
	c := g.c
	switch op {
	case ir.Neg, ir.Abs:
		m := g.Alloc()
		if g.z {
			c.VPTERNLOGD(operand.U8(0xff), m, m, m) // all ones
			switch {
			case op == ir.Neg && g.f64:
				c.VPSLLQ(operand.U8(63), m, m)
			case op == ir.Neg:
				c.VPSLLD(operand.U8(31), m, m)
			case g.f64:
				c.VPSRLQ(operand.U8(1), m, m)
			default:
				c.VPSRLD(operand.U8(1), m, m)
			}
			if op == ir.Neg {
				c.VPXORD(m, a, d)
			} else {
				c.VPANDD(m, a, d)
			}
			g.Release(m)
			break
		}
		c.VPCMPEQD(m, m, m)
		if op == ir.Neg {
			if g.f64 {
				c.VPSLLQ(operand.U8(63), m, m)
			} else {
				c.VPSLLD(operand.U8(31), m, m)
			}
			c.VXORPS(m, a, d)
		} else {
			if g.f64 {
				c.VPSRLQ(operand.U8(1), m, m)
			} else {
				c.VPSRLD(operand.U8(1), m, m)
			}
			c.VANDPS(m, a, d)
		}
		g.Release(m)
	case ir.Sqrt:
		if g.f64 {
			c.VSQRTPD(a, d)
		} else {
			c.VSQRTPS(a, d)
		}
	case ir.Relu:
		// x < 0 (ordered: false for NaN and -0) gives 0, else x.
		if g.z {
			z := g.Alloc()
			c.VPXORD(z, z, z)
			if g.f64 {
				c.VCMPPD(operand.U8(5), z, a, kTmp) // not less than 0: x >= 0, -0 or NaN
				c.VMOVUPD_Z(a, kTmp, d)
			} else {
				c.VCMPPS(operand.U8(5), z, a, kTmp)
				c.VMOVUPS_Z(a, kTmp, d)
			}
			g.Release(z)
			break
		}
		z := g.Alloc()
		c.VXORPS(z, z, z)
		if g.f64 {
			c.VCMPPD(operand.U8(1), z, a, z)
		} else {
			c.VCMPPS(operand.U8(1), z, a, z)
		}
		c.VANDNPS(a, z, d)
		g.Release(z)
	default:
		g.Fail(errUnsupported)
	}
}

// expConstsZ are the constants the AVX-512 exp uses (VSCALEFPS needs no exponent bias).
var expConstsZ = lanesel.ExpF32[:lanesel.ExpBias]

var expTables = map[tableKey]operand.Mem{}

// expConst is constant i of lanesel.ExpF32 as a vector (8 lanes, AVX-512 16) in RODATA.
func (g *vloopGen) expConst(i int) operand.Mem {
	key := tableKey{g.c, g.z}
	name, lanes, consts := "vloopExpF32", 8, lanesel.ExpF32
	if g.z {
		name, lanes, consts = "vloopExpF32Z", 16, expConstsZ
	}
	m, ok := expTables[key]
	if !ok {
		m = g.c.StaticGlobal(name)
		g.c.DataAttributes(attr.RODATA | attr.NOPTR)
		for _, v := range consts {
			for range lanes {
				g.c.AppendDatum(operand.U32(v))
			}
		}
		expTables[key] = m
	}
	return m.Offset(4 * lanes * i)
}

// cst is exp constant i: its register when the constants are held in registers, else its RODATA row.
func (g *vloopGen) cst(i int) operand.Op {
	if g.expReg != nil {
		return g.expReg[i]
	}
	return g.expConst(i)
}

// The steps of the exp schedule (lanesel.ExpISA), f32 lanes. AVX-512 rounds with VRNDSCALEPS and
// scales with VSCALEFPS (t·2^n rounded once, the same bits as the AVX2 two-step scaling whose first step
// is exact: TestVLoopExpULP).

func (g *vloopGen) ClampExp(x, t reg.VecPhysical) {
	c := g.c
	if g.expReg != nil {
		c.VMINPS(x, g.expReg[lanesel.ExpHi], x) // min(89, x), NaN x kept
		c.VMAXPS(x, g.expReg[lanesel.ExpLo], x) // max(-104, x), NaN x kept
		return
	}
	c.VMOVUPS(g.expConst(lanesel.ExpHi), t)
	c.VMINPS(x, t, x) // min(89, x), NaN x kept
	c.VMOVUPS(g.expConst(lanesel.ExpLo), t)
	c.VMAXPS(x, t, x) // max(-104, x), NaN x kept
}

func (g *vloopGen) MulConst(d, x reg.VecPhysical, i int) { g.c.VMULPS(g.cst(i), x, d) }

func (g *vloopGen) RoundEven(x reg.VecPhysical) {
	if g.z {
		g.c.VRNDSCALEPS(operand.U8(0), x, x) // round to nearest even
	} else {
		g.c.VROUNDPS(operand.U8(0), x, x)
	}
}

func (g *vloopGen) SubMulConst(x, n reg.VecPhysical, i int) { g.c.VFNMADD231PS(g.cst(i), n, x) }
func (g *vloopGen) SetConst(d reg.VecPhysical, i int)       { g.c.VMOVUPS(g.cst(i), d) }

func (g *vloopGen) MulAddConst(t, u, x reg.VecPhysical, i int) (reg.VecPhysical, reg.VecPhysical) {
	g.c.VFMADD213PS(g.cst(i), x, t)
	return t, u
}

func (g *vloopGen) Mul(t, x reg.VecPhysical) { g.c.VMULPS(x, t, t) }

func (g *vloopGen) MulAddX(t, x reg.VecPhysical) reg.VecPhysical {
	g.c.VFMADD213PS(x, x, t)
	return t
}

func (g *vloopGen) AddConst(d reg.VecPhysical, i int) { g.c.VADDPS(g.cst(i), d, d) }

func (g *vloopGen) Scale2N(d, t, n, u reg.VecPhysical) {
	c := g.c
	if g.z {
		c.VSCALEFPS(n, t, d) // t·2^n, rounded once
		return
	}
	c.VCVTPS2DQ(n, n)
	c.VPSRAD(operand.U8(1), n, u)
	c.VPSUBD(u, n, n)
	c.VPADDD(g.expConst(lanesel.ExpBias), u, u)
	c.VPSLLD(operand.U8(23), u, u)
	c.VPADDD(g.expConst(lanesel.ExpBias), n, n)
	c.VPSLLD(operand.U8(23), n, n)
	c.VMULPS(u, t, t)
	c.VMULPS(n, t, d)
}

// reduce combines the accumulators (lanesel.Driver.Fold) and their lanes into the function's result.
func (g *vloopGen) reduce(op ir.Op) {
	c := g.c
	a := g.Fold(op)
	x := xmmOf(a)
	t := g.Alloc()
	if g.z {
		// Halve the live lanes at zmm width: swap 256-bit halves, 128-bit lanes, then within lanes.
		c.VSHUFF32X4(operand.U8(0x4e), a, a, t)
		g.BinOp(op, t, a, a)
		c.VSHUFF32X4(operand.U8(0xb1), a, a, t)
		g.BinOp(op, t, a, a)
		if g.f64 {
			c.VPERMILPD(operand.U8(0x55), a, t)
			g.BinOp(op, t, a, a)
		} else {
			c.VPERMILPS(operand.U8(0x4e), a, t)
			g.BinOp(op, t, a, a)
			c.VPERMILPS(operand.U8(0xb1), a, t)
			g.BinOp(op, t, a, a)
		}
		g.Release(t)
	} else {
		g.reduceYmm(op, a, t)
	}
	ret, err := c.ReturnIndex(0).Resolve()
	if err != nil {
		panic(err)
	}
	if g.f64 {
		c.VMOVSD(x, ret.Addr)
	} else {
		c.VMOVSS(x, ret.Addr)
	}
}

// reduceYmm reduces the lanes of the ymm a into its first, with the scratch register t.
func (g *vloopGen) reduceYmm(op ir.Op, a, t reg.VecPhysical) {
	c := g.c
	x := xmmOf(a)
	tx := xmmOf(t)
	c.VEXTRACTF128(operand.U8(1), a, tx)
	g.BinOp(op, tx, x, x)
	if g.f64 {
		c.VPERMILPD(operand.U8(1), x, tx)
		g.BinOp(op, tx, x, x)
	} else {
		c.VPERMILPS(operand.U8(0x0e), x, tx)
		g.BinOp(op, tx, x, x)
		c.VPERMILPS(operand.U8(0x01), x, tx)
		g.BinOp(op, tx, x, x)
	}
}

// VLoopKernels returns the vector-loop functions of p that the generator supports on isa, with the
// implementations a variant registers.
func VLoopKernels(p *codegen.Package, isa string) ([]VLoopKernel, []codegen.VLoopImpl) {
	var ks []VLoopKernel
	var impls []codegen.VLoopImpl
	for _, v := range codegen.PackageVLoops(p) {
		k := VLoopKernel{Name: v.Var + isaSuffix(isa), VLoop: v, ISA: isa}
		if !CanVectorize(k) {
			continue
		}
		ks = append(ks, k)
		impls = append(impls, codegen.VLoopImpl{VLoop: v, Func: k.Name, Lanes: k.Lanes(), Counted: isa == AVX512})
	}
	return ks, impls
}
