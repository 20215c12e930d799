package arm64

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

// This file vectorizes the Vector loops of the loop IR (codegen.VLoop, the vector-loop slots) into NEON
// functions, from each loop's single-lane body; it mirrors codegen/amd64/vloop.go (same names, same
// contract). Unit-stride accesses become VLD1/VST1 with post-increment addressing (each group first loads
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
var errUnsupported = errors.New("unsupported")

var (
	vlN   = R0 // groups left
	vlCnt = R1 // unrolled-loop counter (and a scratch register before the loop)
	vlPtr = []GPR{R2, R3, R4, R5, R6, R7, R8, R9, R10, R11, R12, R13, R14, R15, R16, R17}
)

type vloopGen struct {
	b      *Builder
	k      VLoopKernel
	v      *codegen.VLoop
	f64    bool
	half   bool // the FP16 routine (fp16.go): g.arr is H8, or H4 for the odd last group
	esz    int
	arr    Arrangement
	u      int
	free   []VReg
	inv    []VReg
	ec     []VReg // the exp constants (expConsts), when the body has an exp
	locals map[*ir.LocalVar]VReg
	accs   []VReg
	quiet  VReg   // 0x00400000 in every lane (0x0200 in the FP16 routine), when the body narrows to f16 (canonNaN)
	reads  []int  // per access: number of loads the lane body evaluates (0: never read)
	ld     []VReg // per access: the current group's loaded vector
	given  []bool // per access: ld was handed to an expression that consumed it
	err    error
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
	g := &vloopGen{b: b, k: k, v: k.VLoop, f64: k.VLoop.Elem == ir.F64, half: k.Half, u: u, locals: map[*ir.LocalVar]VReg{}}
	g.esz = k.VLoop.Elem.Size()
	g.arr = S4
	if g.f64 {
		g.arr = D2
	}
	if g.half {
		g.arr = H8
	}
	for i := 31; i >= 0; i-- {
		g.free = append(g.free, V(i))
	}
	n := len(k.VLoop.Access)
	g.reads, g.ld, g.given = make([]int, n), make([]VReg, n), make([]bool, n)
	return g
}

func (g *vloopGen) alloc() VReg {
	if len(g.free) == 0 {
		g.fail(fmt.Errorf("out of vector registers"))
		return V(0)
	}
	r := g.free[len(g.free)-1]
	g.free = g.free[:len(g.free)-1]
	return r
}

func (g *vloopGen) release(r VReg) { g.free = append(g.free, r) }

func (g *vloopGen) fail(err error) {
	if g.err == nil {
		g.err = err
	}
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
				g.fail(errUnsupported)
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
				g.fail(errUnsupported)
				continue
			}
			stored[k] = true
		default:
			g.fail(errUnsupported)
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
	found := false
	visit := func(e ir.Expr) {
		ir.Walk(e, func(x ir.Expr) {
			if c, ok := x.(*ir.Cast); ok && c.T == ir.F16 {
				found = true
			}
		})
	}
	for _, n := range g.v.Loop.Body {
		switch x := n.(type) {
		case *ir.Decl:
			visit(x.Init)
		case *ir.Assign:
			visit(x.Value)
		case *ir.Store:
			visit(x.Value)
			if k, ok := g.v.AccessOf(x.T, x.Idx); ok && g.v.Access[k].F16() {
				found = true
			}
		}
	}
	return found
}

// hasExp reports whether the lane body computes an exp.
func (g *vloopGen) hasExp() bool {
	found := false
	visit := func(e ir.Expr) {
		ir.Walk(e, func(x ir.Expr) {
			if u, ok := x.(*ir.Unary); ok && u.Op == ir.Exp {
				found = true
			}
		})
	}
	for _, n := range g.v.Loop.Body {
		switch x := n.(type) {
		case *ir.Decl:
			visit(x.Init)
		case *ir.Assign:
			visit(x.Value)
		case *ir.Store:
			visit(x.Value)
		}
	}
	return found
}

func (g *vloopGen) emit() error {
	b, v := g.b, g.v
	g.check()
	if g.err != nil {
		return g.err
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
	for i := range v.Invariants {
		r := g.alloc()
		g.bcast(g.param(fmt.Sprintf("c%d", i)), r)
		g.inv = append(g.inv, r)
	}
	ln := v.Loop.Reduce
	if ln != nil {
		for range g.u {
			r := g.alloc()
			g.identity(ln.Op, r)
			g.accs = append(g.accs, r)
		}
	}
	if g.hasExp() {
		if g.f64 {
			return errUnsupported
		}
		for _, c := range expConsts {
			r := g.alloc()
			b.MOVD(Imm(c), vlCnt)
			b.VDUPR(vlCnt, r.S4())
			g.ec = append(g.ec, r)
		}
	}
	if g.narrowsF16() {
		g.quiet = g.alloc()
		b.MOVD(Imm(0x00400000), vlCnt)
		b.VDUPR(vlCnt, g.quiet.S4())
	}
	if g.u > 1 {
		b.LSR(Imm(log2(g.u)), vlN, vlCnt)
		b.CBZ(vlCnt, g.lbl("tail"))
		b.Label(g.lbl("loop"))
		for j := range g.u {
			g.group(j)
		}
		b.SUBS(Imm(1), vlCnt, vlCnt)
		b.BNE(g.lbl("loop"))
		b.Label(g.lbl("tail"))
		b.AND(Imm(g.u-1), vlN, vlN)
		b.CBZ(vlN, g.lbl("done"))
	}
	b.Label(g.lbl("loop1"))
	g.group(0)
	b.SUBS(Imm(1), vlN, vlN)
	b.BNE(g.lbl("loop1"))
	b.Label(g.lbl("done"))
	if ln != nil {
		g.reduce(ln.Op)
	}
	b.RET()
	if g.err == nil {
		g.err = b.Err()
	}
	return g.err
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
		g.fail(errUnsupported)
	}
}

// group emits one vector of iterations of the lane body: the loads of every access it reads (the
// pointers of accesses it only reads advance here), then the body, whose stores advance their pointers.
// j picks the accumulator.
func (g *vloopGen) group(j int) {
	b := g.b
	ln := g.v.Loop.Reduce
	for k, a := range g.v.Access {
		g.given[k] = false
		if g.reads[k] == 0 {
			continue
		}
		r := g.alloc()
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
	var own []VReg
	for _, n := range g.v.Loop.Body {
		switch x := n.(type) {
		case *ir.Decl:
			r := g.owned(x.Init)
			g.locals[x.L] = r
			own = append(own, r)
		case *ir.Assign:
			if ln != nil && x.L == ln.Acc {
				g.accumulate(ln.Op, x.Value.(*ir.Binary).Y, g.accs[j])
				continue
			}
			old, ok := g.locals[x.L]
			if !ok {
				g.fail(errUnsupported)
				return
			}
			r := g.owned(x.Value)
			g.locals[x.L] = r
			for i, o := range own {
				if o == old {
					own[i] = r
					g.release(old)
				}
			}
		case *ir.Store:
			k, ok := g.v.AccessOf(x.T, x.Idx)
			if !ok {
				g.fail(errUnsupported)
				return
			}
			if g.v.Access[k].F16() {
				g.storeF16(x.Value, vlPtr[k])
				continue
			}
			r, o := g.eval(x.Value)
			b.VST1P(VecList{g.vec(r)}, vlPtr[k])
			if o {
				g.release(r)
			}
		}
	}
	for _, r := range own {
		g.release(r)
	}
	for k := range g.v.Access {
		if g.reads[k] > 0 && !g.given[k] {
			g.release(g.ld[k])
		}
	}
	clear(g.locals)
}

// f16Narrowing returns x when e is a cast of the f32 value x to f16 (storing it into f16 rounds once:
// narrowing the widened f16 again changes nothing).
func f16Narrowing(e ir.Expr) (ir.Expr, bool) {
	if c, ok := e.(*ir.Cast); ok && c.T == ir.F16 && c.X.Type().Compute() == ir.F32 {
		return c.X, true
	}
	return nil, false
}

// storeF16 narrows the f32 value e to f16 (round to nearest even, NaN as f16.FromFloat32) and stores
// the 4 halves at p, advancing it.
func (g *vloopGen) storeF16(e ir.Expr, p GPR) {
	if x, ok := f16Narrowing(e); ok {
		e = x
	}
	r, o := g.eval(e)
	if g.half {
		g.storeHalf(r, o, p)
		return
	}
	t := g.canonNaN(r)
	g.b.FCVTN(t.H4(), t.S4())
	g.b.VST1P(VecList{t.H4()}, p)
	g.release(t)
	if o {
		g.release(r)
	}
}

// canonNaN returns a new register holding r with every NaN lane replaced by sign|0x7fc00000 (the f32
// whose f16 narrowing is f16.FromFloat32's NaN, sign|0x7e00); r is unchanged.
func (g *vloopGen) canonNaN(r VReg) VReg {
	if g.half {
		return g.canonNaNHalf(r)
	}
	b := g.b
	t, m := g.alloc(), g.alloc()
	b.FCMEQ(m.S4(), r.S4(), r.S4()) // all ones where r is not NaN
	b.VUSHR(Imm(22), r.S4(), t.S4())
	b.VSHL(Imm(22), t.S4(), t.S4()) // sign, exponent, quiet bit
	b.VORR(g.quiet.B16(), t.B16(), t.B16())
	b.VBIT(m.B16(), r.B16(), t.B16()) // r where not NaN
	g.release(m)
	return t
}

// owned evaluates e into a register the caller owns.
func (g *vloopGen) owned(e ir.Expr) VReg {
	r, o := g.eval(e)
	if o {
		return r
	}
	d := g.alloc()
	g.b.VMOV(r.B16(), d.B16())
	return d
}

// accumulate emits acc = acc op y.
func (g *vloopGen) accumulate(op ir.Op, y ir.Expr, acc VReg) {
	if op == ir.Add {
		if m, ok := y.(*ir.Binary); ok && m.Op == ir.Mul {
			g.fma(m, acc)
			return
		}
	}
	r, o := g.eval(y)
	g.binop(op, r, acc, acc)
	if o {
		g.release(r)
	}
}

// fma emits acc += m.X * m.Y (one rounding).
func (g *vloopGen) fma(m *ir.Binary, acc VReg) {
	a, ao := g.eval(m.X)
	b, bo := g.eval(m.Y)
	g.b.FMLA(g.vec(acc), g.vec(a), g.vec(b)) // native VFMLA for .4S/.2D, a WORD for .8H/.4H
	if ao {
		g.release(a)
	}
	if bo && b != a {
		g.release(b)
	}
}

// binop emits d = x op y (operand order as in codegen/amd64: y, x, d).
func (g *vloopGen) binop(op ir.Op, y, x, d VReg) {
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
		g.fail(errUnsupported)
	}
}

// eval evaluates e into a register; owned says whether the caller must release it.
func (g *vloopGen) eval(e ir.Expr) (VReg, bool) {
	if i, ok := g.v.InvariantOf(e); ok {
		return g.inv[i], false
	}
	switch x := e.(type) {
	case *ir.Local:
		if r, ok := g.locals[x.L]; ok {
			return r, false
		}
	case *ir.Load:
		if k, ok := g.v.AccessOf(x.T, x.Idx); ok && g.reads[k] > 0 {
			// The only use of a load consumes its register.
			if g.reads[k] == 1 && !g.given[k] {
				g.given[k] = true
				return g.ld[k], true
			}
			return g.ld[k], false
		}
	case *ir.Cast:
		if x.T.Compute() == x.X.Type().Compute() && x.T == x.T.Compute() {
			return g.eval(x.X)
		}
		if y, ok := f16Narrowing(x); ok && g.half {
			return g.eval(y) // already rounded to f16 (HalfRoute: y is a single rounding of f16 values)
		}
		if y, ok := f16Narrowing(x); ok {
			// Round through f16: narrow (NaN as f16.FromFloat32) and widen back.
			r, o := g.eval(y)
			t := g.canonNaN(r)
			if o {
				g.release(r)
			}
			g.b.FCVTN(t.H4(), t.S4())
			g.b.FCVTL(t.S4(), t.H4())
			return t, true
		}
	case *ir.Unary:
		return g.unary(x)
	case *ir.Binary:
		switch x.Op {
		case ir.Add, ir.Sub, ir.Mul, ir.Div, ir.Max, ir.Min:
		default:
			g.fail(errUnsupported)
			return V(0), false
		}
		if x.Op == ir.Add {
			for _, p := range [][2]ir.Expr{{x.X, x.Y}, {x.Y, x.X}} {
				if m, ok := p[0].(*ir.Binary); ok && m.Op == ir.Mul {
					acc := g.owned(p[1])
					g.fma(m, acc)
					return acc, true
				}
			}
		}
		a, ao := g.eval(x.X)
		b, bo := g.eval(x.Y)
		var d VReg
		switch {
		case ao:
			d = a
		case bo:
			d = b
		default:
			d = g.alloc()
		}
		g.binop(x.Op, b, a, d)
		if bo && b != d {
			g.release(b)
		}
		return d, true
	}
	g.fail(errUnsupported)
	return V(0), false
}

func (g *vloopGen) unary(x *ir.Unary) (VReg, bool) {
	b := g.b
	a, ao := g.eval(x.X)
	d := a
	if !ao {
		d = g.alloc()
	}
	vd, va := g.vec(d), g.vec(a)
	switch x.Op {
	case ir.Neg:
		b.FNEG(vd, va)
	case ir.Abs:
		b.FABS(vd, va)
	case ir.Sqrt:
		b.FSQRT(vd, va)
	case ir.Relu:
		// max(x, +0): NaN stays NaN (FMAX propagates it).
		z := g.alloc()
		b.VEOR(z.B16(), z.B16(), z.B16())
		b.FMAX(vd, va, g.vec(z))
		g.release(z)
	case ir.Exp:
		if g.f64 {
			g.fail(errUnsupported)
			break
		}
		if d != a {
			b.VMOV(a.B16(), d.B16())
		}
		g.exp(d)
	default:
		g.fail(errUnsupported)
	}
	return d, true
}

// expConsts are the constants of the f32 exp (those of codegen/amd64), each broadcast into a register
// once before the loop: clamp bounds, log2(e), ln2 split in two, the Cephes expf polynomial, 1 and the
// exponent bias.
var expConsts = []uint32{
	0x42b20000, // 89: exp overflows to +Inf above 88.72
	0xc2d00000, // -104: exp rounds to 0 below -103.97
	0x3fb8aa3b, // log2(e)
	0x3f318000, // ln2 hi = 0.693359375
	0xb95e8083, // ln2 lo = -2.12194440e-4
	0x39506967, // 1.9875691500e-4
	0x3ab743ce, // 1.3981999507e-3
	0x3c088908, // 8.3334519073e-3
	0x3d2aa9c1, // 4.1665795894e-2
	0x3e2aaaaa, // 1.6666665459e-1
	0x3f000000, // 5.0000001201e-1 (rounds to 0.5)
	0x3f800000, // 1
	127,        // exponent bias (int32)
}

// expConst is the register holding expConsts[i] in every lane.
func (g *vloopGen) expConst(i int) Vec { return g.ec[i].S4() }

// exp replaces d (f32 lanes) by exp(d), step for step like codegen/amd64: n = round(x·log2e) (FRINTN,
// ties to even), r = x - n·ln2 (two fused FMLS, ln2 split), exp(r) by the Cephes expf polynomial
// (fused steps), scaled by 2^(n/2)·2^(n-n/2) so that results down to the subnormals are right. NaN stays
// NaN (FMIN/FMAX propagate it), -Inf gives 0, +Inf gives +Inf. Error against
// float32(math.Exp(float64(x))): at most 1 ulp on [-87, 88] (TestVLoopExpULP, kernels/vloop_arm64_test.go).
func (g *vloopGen) exp(d VReg) {
	b := g.b
	n, t, u := g.alloc(), g.alloc(), g.alloc()
	vd, vn, vt, vu := d.S4(), n.S4(), t.S4(), u.S4()
	b.FMIN(vd, vd, g.expConst(0)) // min(x, 89), NaN x kept
	b.FMAX(vd, vd, g.expConst(1)) // max(x, -104), NaN x kept
	b.FMUL(vn, vd, g.expConst(2))
	b.FRINTN(vn, vn)
	b.VFMLS(g.expConst(3), vn, vd) // r = x - n·ln2hi
	b.VFMLS(g.expConst(4), vn, vd) // r -= n·ln2lo
	b.VMOV(g.expConst(5).Reg.B16(), vt.Reg.B16())
	for i := 6; i <= 10; i++ {
		// t = t·r + c[i], fused: the accumulator starts as c[i].
		b.VMOV(g.expConst(i).Reg.B16(), vu.Reg.B16())
		b.VFMLA(vd, vt, vu)
		vt, vu = vu, vt
	}
	b.FMUL(vt, vt, vd)
	b.VFMLA(vt, vd, vd) // r + r·(t·r), fused
	b.FADD(vd, vd, g.expConst(11))
	b.FCVTZS(vn, vn) // n is integral: exact
	b.SSHR(vu, vn, 1)
	b.VSUB(vu, vn, vn) // n - n/2
	b.VADD(g.expConst(12), vu, vu)
	b.VSHL(Imm(23), vu, vu) // 2^(n/2)
	b.VADD(g.expConst(12), vn, vn)
	b.VSHL(Imm(23), vn, vn) // 2^(n-n/2)
	b.FMUL(vd, vd, vu)
	b.FMUL(vd, vd, vn)
	g.release(n)
	g.release(t)
	g.release(u)
}

// reduce combines the accumulators and their lanes into the function's result.
func (g *vloopGen) reduce(op ir.Op) {
	b := g.b
	accs := g.accs
	for len(accs) > 1 {
		var next []VReg
		for i := 0; i+1 < len(accs); i += 2 {
			g.binop(op, accs[i+1], accs[i], accs[i])
			next = append(next, accs[i])
		}
		if len(accs)%2 == 1 {
			next = append(next, accs[len(accs)-1])
		}
		accs = next
	}
	a := g.vec(accs[0])
	pair := map[ir.Op]func(d, n, m Vec){ir.Add: b.FADDP, ir.Max: b.FMAXP, ir.Min: b.FMINP}[op]
	if pair == nil {
		g.fail(errUnsupported)
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
