package passes

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/target"
)

// mmaStmt is a statement recognised as out[b..., i, j] = E(Σ_k X(b, i, k)·Y(b, k, j)): one sum of
// products of two tensor loads (each sum in E the same one), the output indices split into those only
// X uses (i, at most one: the M dimension), only Y uses (j: N) and both use (batch); X and Y read whole
// indices (one variable per dimension), so each is a strided operand.
type mmaStmt struct {
	s          *ir.Stmt
	red        *ir.Reduce
	k          *ir.Var
	i, j       *ir.Var // nil: the dimension is 1 (a GEMV has no j, a dot product neither)
	batch      []*ir.Var
	a, b       *ir.Load // a uses i (or is X when there is no i), b uses j
	in         ir.DType
	accT       ir.DType
	reduceText string
}

// matchMMA recognises a statement MMAForm can form, or returns nil.
func matchMMA(s *ir.Stmt) *mmaStmt {
	var reds []*ir.Reduce
	ir.Walk(s.Value, func(e ir.Expr) {
		if r, ok := e.(*ir.Reduce); ok {
			reds = append(reds, r)
		}
	})
	if len(reds) == 0 {
		return nil
	}
	m := &mmaStmt{s: s, red: reds[0], reduceText: ir.FormatExpr(reds[0])}
	for _, r := range reds[1:] {
		if ir.FormatExpr(r) != m.reduceText {
			return nil
		}
	}
	r := m.red
	if r.Op != ir.Add || len(r.Vars) != 1 || r.Vars[0].Range == nil || !r.T.IsFloat() || containsReduce(r.X) {
		return nil
	}
	m.k, m.accT = r.Vars[0], r.T
	mul, ok := r.X.(*ir.Binary)
	if !ok || mul.Op != ir.Mul || mul.T.Compute() != r.T {
		return nil
	}
	x, okx := mul.X.(*ir.Load)
	y, oky := mul.Y.(*ir.Load)
	if !okx || !oky || x.T == s.Out || y.T == s.Out || x.T.Type != y.T.Type || !ir.Widens(x.T.Type, r.T) {
		return nil
	}
	m.in = x.T.Type
	vx, okx := wholeVars(x)
	vy, oky := wholeVars(y)
	if !okx || !oky || !vx[m.k] || !vy[m.k] {
		return nil
	}
	m.a, m.b = x, y
	for _, v := range s.Vars {
		switch {
		case vx[v] && vy[v]:
			m.batch = append(m.batch, v)
		case vx[v] && m.i == nil:
			m.i = v
		case vy[v] && m.j == nil:
			m.j = v
		default:
			return nil // an output index neither operand uses, or a second M or N index
		}
	}
	for v := range vx {
		if v != m.k && !vy[v] && v != m.i {
			return nil // an operand index that is not an output index
		}
	}
	for v := range vy {
		if v != m.k && !vx[v] && v != m.j {
			return nil
		}
	}
	// The epilogue reads out only at the element it writes (the beta rule's scaled-output term).
	if !readsOutAtElement(s, s.Value) {
		return nil
	}
	return m
}

// wholeVars returns the variables of a load whose every index is one variable, each at most once.
func wholeVars(l *ir.Load) (map[*ir.Var]bool, bool) {
	vs := map[*ir.Var]bool{}
	for _, ix := range l.Idx {
		iv, ok := ix.(ir.IVar)
		if !ok || vs[iv.V] {
			return nil, false
		}
		vs[iv.V] = true
	}
	return vs, len(l.Idx) > 0
}

// operand is the MMA operand of load l for the tile at the given values of its variables: element
// (r, c) is l with rowVar = at[rowVar] + r and colVar = at[colVar] + c (a nil variable: a dimension of
// extent 1).
func operand(l *ir.Load, at map[*ir.Var]ir.IExpr, rowVar, colVar *ir.Var) (ir.Operand, error) {
	r, c := &ir.Var{Name: "r"}, &ir.Var{Name: "c"}
	sub := map[*ir.Var]ir.IExpr{}
	for v, e := range at {
		sub[v] = e
	}
	if rowVar != nil {
		sub[rowVar] = ir.IAdd(at[rowVar], ir.IVar{V: r})
	}
	if colVar != nil {
		sub[colVar] = ir.IAdd(at[colVar], ir.IVar{V: c})
	}
	ld := ir.SubstVars(l, sub).(*ir.Load)
	op, ok := ir.LoadOperand(ld, r, c)
	if !ok {
		return ir.Operand{}, fmt.Errorf("mmaform: %s is not a strided operand", ir.FormatExpr(l))
	}
	op.Off = ir.Simplify(op.Off)
	return op, nil
}

// mmaTile is the tile MMAForm uses for one statement: the target's shape for the operand and
// accumulator types, or a thread-scope register tile where the target has none.
type mmaTile struct {
	scope   ir.Scope
	m, n, k int
	acc     *ir.Fragment // nil: a register tile sized by plan symbols
	tf32    bool         // the shape rounds f32 inputs to tf32 (`precision tf32`)
}

func pickTile(c *Context, in, acc ir.DType, plan map[string]int) mmaTile {
	tf32 := false
	for _, d := range c.directive("precision") {
		for _, a := range d.Args {
			tf32 = tf32 || a.Name == "tf32"
		}
	}
	s, err := target.LookupMMA(c.Machine.MMAKey(), in, acc, tf32)
	if err != nil {
		return mmaTile{scope: ir.ScopeThread, m: 4, n: 4, k: 256}
	}
	if s.Scope == ir.ScopeThread {
		return mmaTile{scope: ir.ScopeThread, m: s.M, n: s.N, k: 256}
	}
	n := s.N
	if s.NStep > 0 {
		n = min(s.N, 64) // a wgmma N that keeps the test tiles small; gpumap will choose per problem
		if w := plan[PlanWGN]; w > 0 && w <= s.N && w%s.NStep == 0 {
			n = w // the production sm_90a version's wider tile (wgmma.go)
		}
	}
	return mmaTile{scope: s.Scope, m: s.M, n: n, k: s.K, acc: s.AccLayout(n), tf32: s.TF32}
}

// MMAForm replaces the nest of every GEMM-like statement (matchMMA: out[b..., i, j] = E(Σ_k X·Y),
// E any expression of the sum and of loads — alpha·Σ + beta·C, relu(Σ + bias[j]), f16(gelu(Σ)), a
// residual add) by loops over the M×N output tiles of each batch point around
//
//	acc %acc = 0
//	for p0 = 0 .. K step KC: mma %acc += A·B (operands strided, straight from the statement's tensors)
//	accstore %acc: out[b, i0+i, j0+j] = E with the sum replaced by the accumulator element
//
// The tile is the target's MMA shape for the operand and accumulator types (target.LookupMMA: a warp
// m16n8k16 on ptx for f16 inputs, a simdgroup 8×8 on msl, the microkernel register tile on amd64 and
// arm64), or a 4×4 register tile. Register tiles (thread scope) have plan symbols <slot>.mma.MR, .NR,
// .KC; instruction tiles are constants. Edge tiles are ragged (MMA valid extents), so any shape works.
//
// Guarantees: each output element is stored once, from a sum in the reduction's order, so the result
// interprets as the algorithm level does. In no target's pipeline (passes.Pipeline): the CPU pipeline keeps its Micro
// microkernels; the GPU pipelines and mmalower build on this.
func MMAForm(f *ir.Func, c *Context) (bool, error) {
	changed := false
	n := funcNamer(f)
	for bi, node := range f.Body {
		nest, ok := node.(*ir.Nest)
		if !ok || len(nest.Stmts) != 1 {
			continue
		}
		m := matchMMA(nest.Stmts[0])
		if m == nil {
			continue
		}
		slot := n.name(f.Kernel.Name + ".mma")
		t := pickTile(c, m.in, m.accT, f.Plan)
		if t.scope == ir.ScopeThread {
			// a register tile is not wider than the problem's missing dimension (GEMV, dot product)
			if m.i == nil {
				t.m = 1
			}
			if m.j == nil {
				t.n = 1
			}
		}
		body, err := mmaNest(f, m, t, slot, n)
		if err != nil {
			return changed, err
		}
		f.Body[bi] = &ir.Nest{Stmts: nest.Stmts, Body: body}
		changed = true
	}
	return changed, nil
}

func mmaNest(f *ir.Func, m *mmaStmt, t mmaTile, slot string, n namer) ([]ir.Node, error) {
	one := ir.IConst{V: 1}
	extent := func(v *ir.Var) ir.IExpr {
		if v == nil {
			return one
		}
		return ir.IDim{D: v.Range}
	}
	dimM, dimN, dimK := extent(m.i), extent(m.j), ir.IDim{D: m.k.Range}
	var mr, nr, kc ir.IExpr = ir.IConst{V: t.m}, ir.IConst{V: t.n}, ir.IConst{V: t.k}
	if t.scope == ir.ScopeThread {
		f.Plan[slot+".MR"], f.Plan[slot+".NR"], f.Plan[slot+".KC"] = t.m, t.n, t.k
		mr, nr, kc = ir.ISym{Name: slot + ".MR"}, ir.ISym{Name: slot + ".NR"}, ir.ISym{Name: slot + ".KC"}
	}
	i0, j0, p0 := &ir.Var{Name: n.name("i0")}, &ir.Var{Name: n.name("j0")}, &ir.Var{Name: n.name("p0")}
	acc := &ir.Accum{Name: n.name("acc"), T: m.accT, M: mr, N: nr, Scope: t.scope, Layout: t.acc}

	// operand offsets at (batch, i0, j0, p0)
	at := map[*ir.Var]ir.IExpr{m.k: ir.IVar{V: p0}}
	for _, v := range m.batch {
		at[v] = ir.IVar{V: v}
	}
	if m.i != nil {
		at[m.i] = ir.IVar{V: i0}
	}
	if m.j != nil {
		at[m.j] = ir.IVar{V: j0}
	}
	restM, restN := ir.ISub(dimM, ir.IVar{V: i0}), ir.ISub(dimN, ir.IVar{V: j0})
	a, err := operand(m.a, at, m.i, m.k)
	if err != nil {
		return nil, err
	}
	b, err := operand(m.b, at, m.k, m.j)
	if err != nil {
		return nil, err
	}
	mma := &ir.MMA{Acc: acc, In: m.in, TF32: t.tf32, K: kc, A: a, B: b, ValidM: restM, ValidN: restN, ValidK: ir.ISub(dimK, ir.IVar{V: p0})}

	// the epilogue: the statement's value with the sum replaced by the accumulator element and the
	// output indices by tile base + element index
	ei, ej := &ir.Var{Name: n.name("ei")}, &ir.Var{Name: n.name("ej")}
	sub := map[*ir.Var]ir.IExpr{}
	if m.i != nil {
		sub[m.i] = ir.IAdd(ir.IVar{V: i0}, ir.IVar{V: ei})
	}
	if m.j != nil {
		sub[m.j] = ir.IAdd(ir.IVar{V: j0}, ir.IVar{V: ej})
	}
	val := ir.Rewrite(m.s.Value, func(e ir.Expr) ir.Expr {
		if r, ok := e.(*ir.Reduce); ok && ir.FormatExpr(r) == m.reduceText {
			return &ir.AccVal{Acc: acc}
		}
		return e
	})
	val = ir.SubstVars(val, sub)
	idx := make([]ir.IExpr, len(m.s.Vars))
	for d, v := range m.s.Vars {
		idx[d] = ir.SubstIExpr(ir.IVar{V: v}, sub)
	}
	store := &ir.AccStore{Acc: acc, I: ei, J: ej, M: ir.IMin(mr, restM), N: ir.IMin(nr, restN), Out: m.s.Out, Idx: idx, Value: val}

	loop := func(v *ir.Var, hi, step ir.IExpr, body ...ir.Node) *ir.Loop {
		return &ir.Loop{Var: v, Lo: ir.IConst{V: 0}, Hi: hi, Step: step, Body: body}
	}
	tile := []ir.Node{&ir.AccDecl{Acc: acc}, loop(p0, dimK, kc, mma), store}
	body := []ir.Node{loop(i0, dimM, mr, loop(j0, dimN, nr, tile...))}
	for d := len(m.batch) - 1; d >= 0; d-- {
		body = []ir.Node{fullLoop(m.batch[d], body)}
	}
	return body, nil
}

// String describes a matched statement (for test messages).
func (m *mmaStmt) String() string {
	name := func(v *ir.Var) string {
		if v == nil {
			return "1"
		}
		return v.Name
	}
	return fmt.Sprintf("%s: M %s N %s K %s, %s x %s in %s, acc %s", m.s.Out.Name, name(m.i), name(m.j), m.k.Name, m.a.T.Name, m.b.T.Name, m.in, m.accT)
}
