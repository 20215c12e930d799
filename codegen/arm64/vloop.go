package arm64

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/codegen/lanesel"
	"github.com/kgen-dev/kgen/ir"
)

// This file vectorizes the Vector loops of the loop IR (codegen.VLoop, the vector-loop slots) into NEON
// functions, from each loop's single-lane body: the walk over the body is the shared lane instruction
// selection (codegen/lanesel), for which vloopGen is the NEON ISA, as codegen/amd64/vloop.go is the x86
// one. Unit-stride accesses become VLD1/VST1 with post-increment addressing (each group first loads
// every access the body reads, once; an access the body also stores is loaded without writeback and its
// pointer advances at the store), loop-invariant values (computed by the Go caller) are broadcast once
// before the loop, reductions keep U vector accumulators reduced pairwise (FADDP, FMAXP, FMINP) at the
// end. A loop with an operation not handled here keeps its portable Go code (the slot stays nil).
//
// Semantics follow the interpreter (ir/interp.go): max/min propagate NaN (FMAX/FMIN do so natively,
// unlike FMAXNM), relu is FMAX(x, 0) (NaN stays NaN; relu(-0) is +0 like the interpreter's
// math.Max(-0, 0), where the portable Go code keeps -0), sqrt and division are correctly rounded
// (FSQRT, FDIV), neg and abs flip or clear the sign bit (FNEG, FABS). Differences within the generated
// tests' tolerance: a*b+c in an addition contracts to one FMLA, and reductions are reassociated across 4
// (f32) or 2 (f64) lanes times U accumulators. Instructions Go's assembler lacks are WORD-encoded through
// encode.go.
//
// f16 accesses (storage of an f32 loop): a group loads 4 halves (VLD1 .H4) and widens them with FCVTL
// (exact; a signalling NaN is quieted, payload kept, like f16.F16.Float32), a store narrows with FCVTN
// (FPCR rounding: round to nearest even, Go's default) and stores 4 halves; a cast to f16 is both. NaN
// lanes are first made sign|0x7fc00000 (FCMEQ, USHR/SHL, ORR, BIT) so that they narrow to sign|0x7e00
// like f16.FromFloat32 (FCVTN would keep the top payload bits). A loop whose accesses are all f16 may
// also get an FP16 routine computing on .8H lanes (fp16.go), installed when FEAT_FP16 is present.

// NEON is the ISA of the arm64 vector loops (ASIMD, mandatory on arm64).
const NEON = "neon"

// VLoopKernel is one vector-loop function to generate.
type VLoopKernel struct {
	Name  string
	VLoop *codegen.VLoop
	ISA   string // NEON only
	// Half computes on f16 lanes (.8H/.4H, FEAT_FP16) instead of widening to f32: the FP16 routine of
	// a loop HalfRoute accepts (fp16.go).
	Half bool
}

// Lanes is the number of loop iterations one vector register holds.
func (k VLoopKernel) Lanes() int { return 16 / k.VLoop.Elem.Size() }

// errUnsupported marks a lane body the generator cannot vectorize.
var errUnsupported = lanesel.ErrUnsupported

var (
	vlN   = R0 // groups left
	vlCnt = R1 // unrolled-loop counter (and a scratch register before the loop)
	vlPtr = []GPR{R2, R3, R4, R5, R6, R7, R8, R9, R10, R11, R12, R13, R14, R15, R16, R17}
)

// vloopGen generates one vector loop: the NEON ISA of the lane instruction selection (lanesel.ISA),
// whose Driver walks the lane body and allocates the registers.
type vloopGen struct {
	*lanesel.Driver[VReg, VReg]
	b     *Builder
	k     VLoopKernel
	v     *codegen.VLoop
	f64   bool
	half  bool // the FP16 routine (fp16.go): g.arr is H8, or H4 for the odd last group
	esz   int
	arr   Arrangement
	u     int
	ec    []VReg // the exp constants (lanesel.ExpF32), when the body has an exp
	quiet VReg   // 0x00400000 in every lane (0x0200 in the FP16 routine), when the body narrows to f16 (canonNaN)
	reads []int  // per access: number of loads the lane body evaluates (0: never read)
	ld    []VReg // per access: the current group's loaded vector
	given []bool // per access: ld was handed to an expression that consumed it
}

// CanVectorize reports whether the loop can be generated, trying it on a scratch builder.
func CanVectorize(k VLoopKernel) bool {
	_, err := tryVLoop(k)
	return err == nil
}

// emitVLoop generates k into b (after a dry run picks the unroll factor); false if unsupported. The
// generator it returns tells the unroll factor and the Go signature.
func emitVLoop(b *Builder, k VLoopKernel) (*vloopGen, bool) {
	u, err := tryVLoop(k)
	if err != nil {
		return nil, false
	}
	g := newVLoopGen(b, k, u)
	return g, g.emit() == nil
}

func tryVLoop(k VLoopKernel) (int, error) {
	if k.ISA != NEON || len(k.VLoop.Access) > len(vlPtr) || !isIdent(k.Name) {
		return 0, errUnsupported
	}
	if k.Half {
		if ok, _ := HalfRoute(k.VLoop); !ok {
			return 0, errUnsupported
		}
	}
	var err error
	for _, u := range []int{4, 2, 1} {
		g := newVLoopGen(&Builder{}, k, u)
		if err = g.emit(); err == nil {
			return u, nil
		}
	}
	return 0, err
}

func newVLoopGen(b *Builder, k VLoopKernel, u int) *vloopGen {
	g := &vloopGen{b: b, k: k, v: k.VLoop, f64: k.VLoop.Elem == ir.F64, half: k.Half, u: u}
	g.esz = k.VLoop.Elem.Size()
	g.arr = S4
	if g.f64 {
		g.arr = D2
	}
	if g.half {
		g.arr = H8
	}
	var free []VReg
	for i := 31; i >= 0; i-- {
		free = append(free, V(i))
	}
	g.Driver = lanesel.New[VReg, VReg](g, k.VLoop, free, V(0))
	n := len(k.VLoop.Access)
	g.reads, g.ld, g.given = make([]int, n), make([]VReg, n), make([]bool, n)
	return g
}

// vec is r with the loop's full-width arrangement (.S4 or .D2).
func (g *vloopGen) vec(r VReg) Vec { return Vec{r, g.arr} }

func (g *vloopGen) goType() string {
	if g.f64 {
		return "float64"
	}
	return "float32"
}

func (g *vloopGen) signature() string {
	t := g.goType()
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

// frame is the ABI0 argument layout of the signature: the offset of each invariant, of the result,
// and the size of the argument area.
func (g *vloopGen) frame() (inv []int, ret, size int) {
	off := 8 + 8*len(g.v.Access)
	for range g.v.Invariants {
		inv = append(inv, off)
		off += g.esz
	}
	size = off
	ret = (off + 7) &^ 7
	if g.v.Reduction() {
		size = ret + g.esz
	}
	return inv, ret, size
}

// param is the stack argument name+off(FP).
func (g *vloopGen) param(name string) Arg {
	inv, ret, _ := g.frame()
	switch {
	case name == "n":
		return Arg{name, 0}
	case name == "ret":
		return Arg{name, ret}
	case name[0] == 'p':
		var k int
		fmt.Sscanf(name[1:], "%d", &k)
		return Arg{name, 8 + 8*k}
	}
	var i int
	fmt.Sscanf(name[1:], "%d", &i)
	return Arg{name, inv[i]}
}

func (g *vloopGen) lbl(s string) Label { return Label(g.k.Name + "_" + s) }

// check rejects lane bodies the preloading scheme of group cannot run: an access read after the body
// stored it, or stored twice. It also counts the loads of each access.
func (g *vloopGen) check() {
	stored := make([]bool, len(g.v.Access))
	read := func(e ir.Expr) {
		g.loads(e, func(k int) {
			if stored[k] {
				g.Fail(errUnsupported)
			}
			g.reads[k]++
		})
	}
	for _, n := range g.v.Loop.Body {
		switch x := n.(type) {
		case *ir.Decl:
			read(x.Init)
		case *ir.Assign:
			read(x.Value)
		case *ir.Store:
			read(x.Value)
			k, ok := g.v.AccessOf(x.T, x.Idx)
			if !ok || stored[k] {
				g.Fail(errUnsupported)
				continue
			}
			stored[k] = true
		default:
			g.Fail(errUnsupported)
		}
	}
}

// loads calls f with the access index of every load eval evaluates in e (not those inside invariants).
func (g *vloopGen) loads(e ir.Expr, f func(k int)) {
	if _, inv := g.v.InvariantOf(e); inv {
		return
	}
	switch x := e.(type) {
	case *ir.Load:
		if k, ok := g.v.AccessOf(x.T, x.Idx); ok {
			f(k)
		}
	case *ir.Unary:
		g.loads(x.X, f)
	case *ir.Binary:
		g.loads(x.X, f)
		g.loads(x.Y, f)
	case *ir.Cast:
		g.loads(x.X, f)
	case *ir.Select:
		g.loads(x.C, f)
		g.loads(x.A, f)
		g.loads(x.B, f)
	}
}

// narrowsF16 reports whether the lane body stores to f16 or casts to f16.
func (g *vloopGen) narrowsF16() bool {
	for _, a := range g.v.Access {
		if a.Store && a.F16() {
			return true
		}
	}
	return lanesel.CastsToF16(g.v.Loop.Body)
}

func (g *vloopGen) emit() error {
	b, v := g.b, g.v
	g.check()
	if g.Err != nil {
		return g.Err
	}
	if g.half {
		return g.emitHalf()
	}
	_, _, size := g.frame()
	b.Blank()
	b.Doc("func %s%s", g.k.Name, strings.TrimPrefix(g.signature(), "func"))
	b.Doc("%s runs n groups of %d iterations of %s (codegen.VLoop contract), %s, unrolled %d.",
		g.k.Name, g.k.Lanes(), v.Var, g.k.ISA, g.u)
	b.TEXT(g.k.Name, "NOSPLIT", 0, size)
	b.MOVD(g.param("n"), vlN)
	for k := range v.Access {
		b.MOVD(g.param(fmt.Sprintf("p%d", k)), vlPtr[k])
	}
	g.Invariants(func(i int, r VReg) { g.bcast(g.param(fmt.Sprintf("c%d", i)), r) })
	ln := v.Loop.Reduce
	g.Accumulators(g.u, g.identity)
	if lanesel.HasExp(v.Loop.Body) {
		if g.f64 {
			return errUnsupported
		}
		for _, c := range lanesel.ExpF32 {
			r := g.Alloc()
			b.MOVD(Imm(c), vlCnt)
			b.VDUPR(vlCnt, r.S4())
			g.ec = append(g.ec, r)
		}
	}
	if g.narrowsF16() {
		g.quiet = g.Alloc()
		b.MOVD(Imm(0x00400000), vlCnt)
		b.VDUPR(vlCnt, g.quiet.S4())
	}
	if g.u > 1 {
		b.LSR(Imm(log2(g.u)), vlN, vlCnt)
		b.CBZ(vlCnt, g.lbl("tail"))
		b.Label(g.lbl("loop"))
		for j := range g.u {
			g.Group(j)
		}
		b.SUBS(Imm(1), vlCnt, vlCnt)
		b.BNE(g.lbl("loop"))
		b.Label(g.lbl("tail"))
		b.AND(Imm(g.u-1), vlN, vlN)
		b.CBZ(vlN, g.lbl("done"))
	}
	b.Label(g.lbl("loop1"))
	g.Group(0)
	b.SUBS(Imm(1), vlN, vlN)
	b.BNE(g.lbl("loop1"))
	b.Label(g.lbl("done"))
	if ln != nil {
		g.reduce(ln.Op)
	}
	b.RET()
	if g.Err == nil {
		g.Err = b.Err()
	}
	return g.Err
}

func log2(n int) int {
	s := 0
	for 1<<s < n {
		s++
	}
	return s
}

// bcast loads a stack argument into lane 0 of dst and broadcasts it.
func (g *vloopGen) bcast(src Arg, dst VReg) {
	if g.f64 {
		g.b.FMOVD(src, FReg(dst))
		g.b.VDUP(dst.D(0), dst.D2())
	} else {
		g.b.FMOVS(src, FReg(dst))
		g.b.VDUP(dst.S(0), dst.S4())
	}
}

// identity sets r to the identity of a reduction operator in every lane.
func (g *vloopGen) identity(op ir.Op, r VReg) {
	b := g.b
	switch op {
	case ir.Add:
		b.VEOR(r.B16(), r.B16(), r.B16())
	case ir.Max, ir.Min:
		bitsF32, bitsF64 := uint64(0xff800000), uint64(0xfff0000000000000) // -Inf
		if op == ir.Min {
			bitsF32, bitsF64 = 0x7f800000, 0x7ff0000000000000
		}
		if g.f64 {
			b.MOVD(Imm(int64(bitsF64)), vlCnt)
		} else {
			b.MOVD(Imm(int64(bitsF32)), vlCnt)
		}
		b.VDUPR(vlCnt, g.vec(r))
	default:
		g.Fail(errUnsupported)
	}
}

// BeginGroup loads, for the j-th group, every access the lane body reads (the pointers of accesses it
// only reads advance here; those it stores advance at the store). lanesel.ISA.
func (g *vloopGen) BeginGroup(j int) {
	b := g.b
	for k, a := range g.v.Access {
		g.given[k] = false
		if g.reads[k] == 0 {
			continue
		}
		r := g.Alloc()
		v := g.vec(r)
		if a.F16() && !g.half {
			v = r.H4()
		}
		if a.Store {
			b.VLD1(Addr(vlPtr[k], 0), VecList{v})
		} else {
			b.VLD1P(vlPtr[k], VecList{v})
		}
		if a.F16() && !g.half {
			b.FCVTL(r.S4(), r.H4()) // exact
		}
		g.ld[k] = r
	}
}

// EndGroup releases the loaded vectors no expression consumed (lanesel.ISA).
func (g *vloopGen) EndGroup() {
	for k := range g.v.Access {
		if g.reads[k] > 0 && !g.given[k] {
			g.Release(g.ld[k])
		}
	}
}

// Store writes r to access k, advancing its pointer (lanesel.ISA).
func (g *vloopGen) Store(k int, r VReg) { g.b.VST1P(VecList{g.vec(r)}, vlPtr[k]) }

// StoreF16 narrows the f32 lanes r to f16 (round to nearest even, NaN as f16.FromFloat32) and stores the
// 4 halves of access k, advancing its pointer; the FP16 routine stores its f16 lanes (lanesel.ISA).
func (g *vloopGen) StoreF16(k int, r VReg, owned bool) {
	p := vlPtr[k]
	if g.half {
		g.storeHalf(r, owned, p)
		return
	}
	t := g.CanonNaN(r)
	g.b.FCVTN(t.H4(), t.S4())
	g.b.VST1P(VecList{t.H4()}, p)
	g.Release(t)
	if owned {
		g.Release(r)
	}
}

// RoundF16 rounds the f32 lanes of t through f16 (lanesel.ISA; NaN lanes already canonical).
func (g *vloopGen) RoundF16(t VReg) {
	g.b.FCVTN(t.H4(), t.S4())
	g.b.FCVTL(t.S4(), t.H4())
}

// HalfLanes, Masked and MergeMasked are the NEON answers to lanesel.ISA: no opmasks, so no masked group.
func (g *vloopGen) HalfLanes() bool           { return g.half }
func (g *vloopGen) Masked() bool              { return false }
func (g *vloopGen) MergeMasked(src, dst VReg) { g.Fail(errUnsupported) }

// canonNaN returns a new register holding r with every NaN lane replaced by sign|0x7fc00000 (the f32
// whose f16 narrowing is f16.FromFloat32's NaN, sign|0x7e00); r is unchanged.
func (g *vloopGen) CanonNaN(r VReg) VReg {
	if g.half {
		return g.canonNaNHalf(r)
	}
	b := g.b
	t, m := g.Alloc(), g.Alloc()
	b.FCMEQ(m.S4(), r.S4(), r.S4()) // all ones where r is not NaN
	b.VUSHR(Imm(22), r.S4(), t.S4())
	b.VSHL(Imm(22), t.S4(), t.S4()) // sign, exponent, quiet bit
	b.VORR(g.quiet.B16(), t.B16(), t.B16())
	b.VBIT(m.B16(), r.B16(), t.B16()) // r where not NaN
	g.Release(m)
	return t
}

// Copy emits dst = src (lanesel.ISA).
func (g *vloopGen) Copy(src, dst VReg) { g.b.VMOV(src.B16(), dst.B16()) }

// Accumulate has no NEON-specific form (lanesel.ISA).
func (g *vloopGen) Accumulate(op ir.Op, y ir.Expr, acc VReg) bool { return false }

// FMA emits acc += a*b, one rounding (lanesel.ISA).
func (g *vloopGen) FMA(acc, a, b VReg) {
	g.b.FMLA(g.vec(acc), g.vec(a), g.vec(b)) // native VFMLA for .4S/.2D, a WORD for .8H/.4H
}

// Operand is Driver.Eval: NEON arithmetic takes registers only (lanesel.ISA).
func (g *vloopGen) Operand(e ir.Expr) (VReg, bool) { return g.Eval(e) }
func (g *vloopGen) Reg(o VReg) (VReg, bool)        { return o, true }
func (g *vloopGen) Src(r VReg) VReg                { return r }

// BinOp emits d = x op y (operand order as in codegen/amd64: y, x, d). lanesel.ISA.
func (g *vloopGen) BinOp(op ir.Op, y, x, d VReg) {
	b := g.b
	vd, vx, vy := g.vec(d), g.vec(x), g.vec(y)
	switch op {
	case ir.Add:
		b.FADD(vd, vx, vy)
	case ir.Sub:
		b.FSUB(vd, vx, vy)
	case ir.Mul:
		b.FMUL(vd, vx, vy)
	case ir.Div:
		b.FDIV(vd, vx, vy)
	case ir.Max:
		b.FMAX(vd, vx, vy) // NaN in either operand gives NaN
	case ir.Min:
		b.FMIN(vd, vx, vy)
	default:
		g.Fail(errUnsupported)
	}
}

// Load returns the current group's vector of access k, loaded by BeginGroup; the only use of a load
// consumes its register (lanesel.ISA).
func (g *vloopGen) Load(k int) (VReg, bool, bool) {
	if g.reads[k] == 0 {
		return V(0), false, false
	}
	if g.reads[k] == 1 && !g.given[k] {
		g.given[k] = true
		return g.ld[k], true, true
	}
	return g.ld[k], false, true
}

// Unary emits d = op a for neg, abs, sqrt and relu (lanesel.ISA).
func (g *vloopGen) Unary(op ir.Op, a, d VReg) {
	b := g.b
	vd, va := g.vec(d), g.vec(a)
	switch op {
	case ir.Neg:
		b.FNEG(vd, va)
	case ir.Abs:
		b.FABS(vd, va)
	case ir.Sqrt:
		b.FSQRT(vd, va)
	case ir.Relu:
		// max(x, +0): NaN stays NaN (FMAX propagates it).
		z := g.Alloc()
		b.VEOR(z.B16(), z.B16(), z.B16())
		b.FMAX(vd, va, g.vec(z))
		g.Release(z)
	default:
		g.Fail(errUnsupported)
	}
}

// expConst is the register holding lanesel.ExpF32[i] in every lane.
func (g *vloopGen) expConst(i int) Vec { return g.ec[i].S4() }

// The steps of the exp schedule (lanesel.ExpISA) on .4S lanes, the constants in registers: FRINTN
// rounds ties to even, FMLS/FMLA are fused, FMIN/FMAX keep NaN, and the polynomial's accumulator
// alternates between two registers (FMLA adds into its destination, which starts as the constant).

func (g *vloopGen) ClampExp(x, t VReg) {
	g.b.FMIN(x.S4(), x.S4(), g.expConst(lanesel.ExpHi)) // min(x, 89), NaN x kept
	g.b.FMAX(x.S4(), x.S4(), g.expConst(lanesel.ExpLo)) // max(x, -104), NaN x kept
}

func (g *vloopGen) MulConst(d, x VReg, i int) { g.b.FMUL(d.S4(), x.S4(), g.expConst(i)) }
func (g *vloopGen) RoundEven(x VReg)          { g.b.FRINTN(x.S4(), x.S4()) }
func (g *vloopGen) SubMulConst(x, n VReg, i int) {
	g.b.VFMLS(g.expConst(i), n.S4(), x.S4())
}
func (g *vloopGen) SetConst(d VReg, i int) { g.b.VMOV(g.expConst(i).Reg.B16(), d.B16()) }

func (g *vloopGen) MulAddConst(t, u, x VReg, i int) (VReg, VReg) {
	g.b.VMOV(g.expConst(i).Reg.B16(), u.B16())
	g.b.VFMLA(x.S4(), t.S4(), u.S4())
	return u, t
}

func (g *vloopGen) Mul(t, x VReg) { g.b.FMUL(t.S4(), t.S4(), x.S4()) }

func (g *vloopGen) MulAddX(t, x VReg) VReg {
	g.b.VFMLA(t.S4(), x.S4(), x.S4()) // x + t·x
	return x
}

func (g *vloopGen) AddConst(d VReg, i int) { g.b.FADD(d.S4(), d.S4(), g.expConst(i)) }

func (g *vloopGen) Scale2N(d, t, n, u VReg) {
	b := g.b
	vn, vu := n.S4(), u.S4()
	b.FCVTZS(vn, vn) // n is integral: exact
	b.SSHR(vu, vn, 1)
	b.VSUB(vu, vn, vn) // n - n/2
	b.VADD(g.expConst(lanesel.ExpBias), vu, vu)
	b.VSHL(Imm(23), vu, vu) // 2^(n/2)
	b.VADD(g.expConst(lanesel.ExpBias), vn, vn)
	b.VSHL(Imm(23), vn, vn) // 2^(n-n/2)
	b.FMUL(d.S4(), t.S4(), vu)
	b.FMUL(d.S4(), d.S4(), vn)
}

// reduce combines the accumulators and their lanes into the function's result.
func (g *vloopGen) reduce(op ir.Op) {
	b := g.b
	a := g.vec(g.Fold(op))
	pair := map[ir.Op]func(d, n, m Vec){ir.Add: b.FADDP, ir.Max: b.FMAXP, ir.Min: b.FMINP}[op]
	if pair == nil {
		g.Fail(errUnsupported)
		return
	}
	for range log2(g.arr.Lanes()) {
		pair(a, a, a)
	}
	if g.f64 {
		b.FMOVD(FReg(a.Reg), g.param("ret"))
	} else {
		b.FMOVS(FReg(a.Reg), g.param("ret"))
	}
}

// VLoopKernels returns the vector-loop functions of p that the generator supports on isa, with the
// implementations a variant registers: for a loop HalfRoute accepts, both the FCVTL/FCVTN routine
// (<var>NEON) and the FP16 one (<var>FP16, the implementation's Alt, installed when FP16Cond holds).
func VLoopKernels(p *codegen.Package, isa string) ([]VLoopKernel, []codegen.VLoopImpl) {
	var ks []VLoopKernel
	var impls []codegen.VLoopImpl
	for _, v := range codegen.PackageVLoops(p) {
		k := VLoopKernel{Name: v.Var + "NEON", VLoop: v, ISA: isa}
		if !CanVectorize(k) {
			continue
		}
		ks = append(ks, k)
		impl := codegen.VLoopImpl{VLoop: v, Func: k.Name, Lanes: k.Lanes()}
		if h := (VLoopKernel{Name: v.Var + "FP16", VLoop: v, ISA: isa, Half: true}); CanVectorize(h) {
			ks = append(ks, h)
			impl.Alt = codegen.VLoopAlt{Func: h.Name, Cond: FP16Cond}
		}
		impls = append(impls, impl)
	}
	return ks, impls
}
