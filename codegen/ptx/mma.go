package ptx

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
)

// accTile is an accumulator in registers: a thread-scope M×N tile (row-major regs), or a warp
// fragment (mma_warp.go).
type accTile struct {
	m, n int
	t    Type
	regs []Reg
}

func (l *lowerer) accDecl(a *ir.Accum) {
	// A GEMM entry asks for one block per SM at least, no more: with only .maxntid, ptxas trades
	// registers for occupancy and spills a register tile (seen on sm_90 with the warpgroup tiles).
	l.e.MinCTAs = 1
	m, okm := l.prep(a.M).(ir.IConst)
	n, okn := l.prep(a.N).(ir.IConst)
	if !okm || !okn {
		l.fail("accumulator %%%s of run-time size %sx%s", a.Name, a.M, a.N)
	}
	t := computeType(a.T)
	if t != F32 && t != F64 {
		l.fail("a %s accumulator", a.T)
	}
	switch a.Scope {
	case ir.ScopeThread:
		if m.V*n.V > 256 {
			l.fail("a %dx%d register tile (at most 256 registers)", m.V, n.V)
		}
		acc := &accTile{m: m.V, n: n.V, t: t}
		for i := 0; i < m.V*n.V; i++ {
			acc.regs = append(acc.regs, l.e.Mov(t, FImm{V: 0, T: t}))
		}
		l.accs[a] = acc
	case ir.ScopeWarp, ir.ScopeWarpgroup:
		l.warpAccDecl(a, m.V, n.V, t)
	default:
		l.fail("a %s-scope accumulator", a.Scope)
	}
	l.e.Comment(fmt.Sprintf("acc %%%s = 0 (%dx%d, %s)", a.Name, m.V, n.V, a.Scope))
}

// mma lowers acc += A·B.
func (l *lowerer) mma(n *ir.MMA) {
	l.needThread("an mma")
	acc, ok := l.accs[n.Acc]
	if !ok {
		l.fail("mma on undeclared accumulator %%%s", n.Acc.Name)
	}
	l.e.Comment(fmt.Sprintf("mma %%%s += A·B k=%s", n.Acc.Name, n.K))
	if n.Acc.Scope == ir.ScopeWarp || n.Acc.Scope == ir.ScopeWarpgroup {
		l.warpMMA(n, acc)
		return
	}
	l.threadMMA(n, acc)
}

// threadMMA is one thread's FFMA register tile: for p < K, a[i] = A(i, p), b[j] = B(p, j),
// acc[i][j] = fma(a[i], b[j], acc[i][j]) — the products summed in K order as the IR does (fma rounds
// each step once where the interpreter rounds the product too: the difference is within the
// contract's tolerance). A full tile (every extent valid) runs unguarded; an edge tile loads each
// element under its validity predicate (zero otherwise), never reading outside the valid extents.
func (l *lowerer) threadMMA(n *ir.MMA, acc *accTile) {
	k, ok := l.prep(n.K).(ir.IConst)
	if !ok {
		l.fail("a register-tile mma with run-time K %s", n.K)
	}
	in := n.In
	vm, vn, vk := l.validOr(n.ValidM, acc.m), l.validOr(n.ValidN, acc.n), l.validOr(n.ValidK, k.V)
	full := l.e.Setp("ge", S64, l.toReg(vm), Imm(acc.m))
	l.e.Emit(&Instr{Op: "setp.ge.and", Types: []Type{S64}, Args: []Operand{full, l.toReg(vn), Imm(acc.n), full}})
	l.e.Emit(&Instr{Op: "setp.ge.and", Types: []Type{S64}, Args: []Operand{full, l.toReg(vk), Imm(k.V), full}})
	edge, end := l.e.NewLabel(), l.e.NewLabel()
	l.e.Bra(edge, &full, true)
	l.e.Comment("full tile")
	l.fullSteps(n, acc, k.V, in)
	l.e.Bra(end, nil, false)
	l.e.Place(edge)
	l.e.Comment("edge tile: elements outside the valid extents are zero and not read")
	l.ffmaSteps(n, acc, k.V, in, &[3]Operand{vm, vn, vk})
	l.e.Place(end)
}

// validOr is a valid extent, or the whole size when e is nil.
func (l *lowerer) validOr(e ir.IExpr, whole int) Operand {
	if e == nil {
		return Imm(whole)
	}
	return l.ival(e)
}

func (l *lowerer) toReg(o Operand) Reg {
	if r, ok := o.(Reg); ok {
		return r
	}
	return l.e.Mov(S64, o)
}

// ffmaSteps emits the K loop of a register-tile update (a run-time loop over p: an unrolled K of
// 16 makes ptxas take seconds per kernel for no gain), guarded by the valid extents when valid is not
// nil. Within a step the addresses of A's column p and B's row p are one base register each plus
// constant offsets whenever the layout's strides are constants.
func (l *lowerer) ffmaSteps(n *ir.MMA, acc *accTile, k int, in ir.DType, valid *[3]Operand) {
	t := acc.t
	p := &ir.Var{Name: "p"}
	pv := ir.IVar{V: p}
	var rowOK, colOK []Reg
	if valid != nil {
		for i := 0; i < acc.m; i++ {
			rowOK = append(rowOK, l.e.Setp("gt", S64, l.toReg(valid[0]), Imm(i)))
		}
		for j := 0; j < acc.n; j++ {
			colOK = append(colOK, l.e.Setp("gt", S64, l.toReg(valid[1]), Imm(j)))
		}
	}
	// vector loads the count elements of o at (at(0), ...), (at(count-1)) as compute values.
	vector := func(o ir.Operand, count int, at func(x int) (ir.IExpr, ir.IExpr), guard func(x int) *Reg) []Reg {
		r0, c0 := at(0)
		anchor := ir.IAdd(o.Off, o.Layout.Offset(r0, c0))
		base, sp := l.elemAddr(o.T, anchor)
		size := int64(in.Size())
		out := make([]Reg, count)
		for x := range out {
			rx, cx := at(x)
			a := base
			delta := l.prep(ir.ISub(o.Layout.Offset(rx, cx), o.Layout.Offset(r0, c0)))
			if d, ok := delta.(ir.IConst); ok {
				a.Off += int64(d.V) * size
			} else {
				a, sp = l.elemAddr(o.T, ir.IAdd(o.Off, o.Layout.Offset(rx, cx)))
			}
			st := storageType(in)
			var v Reg
			if g := guard(x); g != nil {
				v = l.e.Mov(st, zeroBits(in))
				l.e.Emit(&Instr{Guard: g, Op: "ld", Mods: []string{sp.String()}, Types: []Type{st}, Args: []Operand{v, a}})
			} else {
				v = l.e.Ld(sp, st, a)
			}
			out[x] = l.conv(l.widen(v, in), in, ct2d(t))
		}
		return out
	}
	one := ir.IConst{V: 1}
	l.serialFunc(p, ir.IConst{V: 0}, ir.IConst{V: k}, one, func() {
		var kOK Reg
		if valid != nil {
			kOK = l.e.Setp("gt", S64, l.toReg(valid[2]), l.vars[p])
		}
		both := func(x Reg) *Reg {
			if valid == nil {
				return nil
			}
			g := l.e.Reg(Pred)
			l.e.Op("and", Pred, g, x, kOK)
			return &g
		}
		a := vector(n.A, acc.m, func(i int) (ir.IExpr, ir.IExpr) { return ir.IConst{V: i}, pv }, func(i int) *Reg {
			if valid == nil {
				return nil
			}
			return both(rowOK[i])
		})
		b := vector(n.B, acc.n, func(j int) (ir.IExpr, ir.IExpr) { return pv, ir.IConst{V: j} }, func(j int) *Reg {
			if valid == nil {
				return nil
			}
			return both(colOK[j])
		})
		for i := range a {
			for j := range b {
				r := acc.regs[i*acc.n+j]
				l.e.Op("fma.rn", t, r, a[i], b[j], r)
			}
		}
	})
}

// fullSteps emits the K loop of a full register tile (no element outside the valid extents). The loop
// runs U = 16 bytes / element K steps per trip when K allows, so that the elements of A's rows and B's
// rows that are consecutive in a shared tile load as one 16-byte ld.shared.v4.f32 (v2.f64); the
// multiply-adds keep the K order.
func (l *lowerer) fullSteps(n *ir.MMA, acc *accTile, k int, in ir.DType) {
	t := acc.t
	u := 1
	if storageType(in) == t && k%(16/in.Size()) == 0 {
		u = 16 / in.Size()
	}
	q := &ir.Var{Name: "q"}
	pAt := func(x int) ir.IExpr { return ir.IAdd(ir.IMul(ir.IVar{V: q}, ir.IConst{V: u}), ir.IConst{V: x}) }
	l.serialFunc(q, ir.IConst{V: 0}, ir.IConst{V: k / u}, ir.IConst{V: 1}, func() {
		var aPos, bPos [][2]ir.IExpr
		for x := 0; x < u; x++ {
			for i := 0; i < acc.m; i++ {
				aPos = append(aPos, [2]ir.IExpr{ir.IConst{V: i}, pAt(x)})
			}
			for j := 0; j < acc.n; j++ {
				bPos = append(bPos, [2]ir.IExpr{pAt(x), ir.IConst{V: j}})
			}
		}
		a := l.loadElems(n.A, in, t, aPos)
		b := l.loadElems(n.B, in, t, bPos)
		for x := 0; x < u; x++ {
			for i := 0; i < acc.m; i++ {
				for j := 0; j < acc.n; j++ {
					r := acc.regs[i*acc.n+j]
					l.e.Op("fma.rn", t, r, a[x*acc.m+i], b[x*acc.n+j], r)
				}
			}
		}
	})
}

// loadElems loads the elements of operand o at the given (row, col) positions as values of type t.
// Positions at constant distances from the first are addressed from one register; in shared memory,
// runs of 16 consecutive bytes that start 16-byte aligned (provably: the first position's offset is
// a multiple of the vector length for every value of the variables) load as one vector.
func (l *lowerer) loadElems(o ir.Operand, in ir.DType, t Type, pos [][2]ir.IExpr) []Reg {
	st := storageType(in)
	size := in.Size()
	first := l.prep(ir.IAdd(o.Off, o.Layout.Offset(pos[0][0], pos[0][1])))
	base, sp := l.elemAddr(o.T, first)
	deltas := make([]int, len(pos))
	known := make([]bool, len(pos))
	at := map[int]int{}
	for x, p := range pos {
		if d, ok := l.prep(ir.ISub(o.Layout.Offset(p[0], p[1]), o.Layout.Offset(pos[0][0], pos[0][1]))).(ir.IConst); ok {
			deltas[x], known[x] = d.V, true
			if _, dup := at[d.V]; !dup {
				at[d.V] = x
			}
		}
	}
	out := make([]Reg, len(pos))
	done := make([]bool, len(pos))
	vl := 16 / size
	if sp == Shared && storageType(in) == t && 16%size == 0 && divisible(first, vl) {
		for x := range pos {
			if done[x] || !known[x] || deltas[x]%vl != 0 {
				continue
			}
			run := make([]int, vl)
			ok := true
			for y := range run {
				z, has := at[deltas[x]+y]
				run[y], ok = z, ok && has && !done[z]
			}
			if !ok {
				continue
			}
			regs := make(Vec, vl)
			for y, z := range run {
				regs[y] = l.e.Reg(t)
				out[z], done[z] = regs[y], true
			}
			a := base
			a.Off += int64(deltas[x] * size)
			l.e.Emit(&Instr{Op: "ld", Mods: []string{sp.String(), ".v" + string(rune('0'+vl))}, Types: []Type{st}, Args: []Operand{regs, a}})
		}
	}
	for x, p := range pos {
		if done[x] {
			continue
		}
		a := base
		if known[x] {
			a.Off += int64(deltas[x] * size)
		} else {
			a, sp = l.elemAddr(o.T, ir.IAdd(o.Off, o.Layout.Offset(p[0], p[1])))
		}
		out[x] = l.conv(l.widen(l.e.Ld(sp, st, a), in), in, ct2d(t))
	}
	// The same element named twice (a duplicate position) shares its register.
	for x := range pos {
		if known[x] {
			out[x] = out[at[deltas[x]]]
		}
	}
	return out
}

// zeroBits is a zero of d's storage type as an immediate.
func zeroBits(d ir.DType) Operand {
	switch storageType(d) {
	case F32:
		return FImm{V: 0, T: F32}
	case F64:
		return FImm{V: 0, T: F64}
	}
	return Imm(0)
}

// accStore lowers the epilogue: every element (I, J) of the tile below (M, N) held by this thread is
// computed from its accumulator register and stored. The beta rule: when the value has a scaled-output
// term f·Out whose factor is zero at run time, the term is dropped and Out is not read.
func (l *lowerer) accStore(n *ir.AccStore) {
	l.needThread("an accumulator store")
	acc, ok := l.accs[n.Acc]
	if !ok {
		l.fail("store of undeclared accumulator %%%s", n.Acc.Name)
	}
	l.e.Comment(fmt.Sprintf("accstore %%%s: %s[%s] = %s", n.Acc.Name, n.Out.Name, joinIExprs(n.Idx), ir.FormatExpr(n.Value)))
	l.wgmmaDrain()
	fs := ir.BetaFactors(n.Value, n.Out)
	if len(fs) > 1 {
		l.fail("an epilogue with %d scaled-output factors", len(fs))
	}
	mlim, nlim := l.toReg(l.ival(n.M)), l.toReg(l.ival(n.N))
	elems := l.accElems(n.Acc, acc)
	warp := n.Acc.Scope != ir.ScopeThread
	// Anchors (register tiles): the addresses of the output and of every tensor the epilogue reads, at
	// each row's first element; the other elements are constant offsets from them when the strides
	// allow.
	for _, el := range elems {
		if warp || el.j != 0 {
			continue
		}
		l.consts[n.I], l.consts[n.J] = el.i, 0
		l.addAnchor(n.Out, l.flatOffset(n.Out, n.Idx))
		ir.Walk(n.Value, func(x ir.Expr) {
			if ld, ok := x.(*ir.Load); ok && ld.T.Kind != ir.Scalar {
				l.addAnchor(ld.T, l.flatOffset(ld.T, ld.Idx))
			}
		})
	}
	defer l.clearAnchors()
	body := func(v ir.Expr) {
		for _, el := range elems {
			var ok Reg
			if warp {
				// A fragment element: its row and column depend on the lane.
				ri, rj := l.ireg(el.ri), l.ireg(el.rj)
				l.vars[n.I], l.vars[n.J] = ri, rj
				ok = l.e.Setp("lt", S64, ri, mlim)
				l.e.Emit(&Instr{Op: "setp.lt.and", Types: []Type{S64}, Args: []Operand{ok, rj, nlim, ok}})
			} else {
				l.consts[n.I], l.consts[n.J] = el.i, el.j
				ok = l.e.Setp("gt", S64, mlim, Imm(el.i))
				l.e.Emit(&Instr{Op: "setp.gt.and", Types: []Type{S64}, Args: []Operand{ok, nlim, Imm(el.j), ok}})
			}
			skip := l.e.NewLabel()
			l.e.Bra(skip, &ok, true)
			r := el.r
			l.accCur = &r
			l.store(n.Out, n.Idx, v)
			l.accCur = nil
			l.e.Place(skip)
		}
		delete(l.consts, n.I)
		delete(l.consts, n.J)
		delete(l.vars, n.I)
		delete(l.vars, n.J)
	}
	if len(fs) == 0 {
		body(n.Value)
	} else {
		zero := l.pred(ir.BetaIsZero(fs[0]))
		drop, end := l.e.NewLabel(), l.e.NewLabel()
		l.e.Bra(drop, &zero, false)
		body(n.Value)
		l.e.Bra(end, nil, false)
		l.e.Place(drop)
		l.e.Comment(fmt.Sprintf("%s == 0: %s is not read", ir.FormatExpr(fs[0]), n.Out.Name))
		body(ir.DropBeta(n.Value, n.Out, fs[0]))
		l.e.Place(end)
	}
	delete(l.accs, n.Acc)
}

// accElem is one accumulator element this thread holds: its tile coordinates (constants i, j for a
// register tile; index expressions ri, rj of the lane for a fragment) and its register.
type accElem struct {
	i, j   int
	ri, rj ir.IExpr
	r      Reg
}

func (l *lowerer) accElems(a *ir.Accum, acc *accTile) []accElem {
	var out []accElem
	if a.Scope == ir.ScopeWarp || a.Scope == ir.ScopeWarpgroup {
		lane := l.laneVar(a.Scope)
		for i, r := range acc.regs {
			row, col := a.Layout.Coord(ir.IVar{V: lane}, ir.IConst{V: i})
			out = append(out, accElem{ri: row, rj: col, r: r})
		}
		return out
	}
	for i := 0; i < acc.m; i++ {
		for j := 0; j < acc.n; j++ {
			out = append(out, accElem{i: i, j: j, r: acc.regs[i*acc.n+j]})
		}
	}
	return out
}
