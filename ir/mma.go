package ir

import (
	"fmt"
	"strings"
)

// MMA is the matrix multiply-accumulate of every target: acc += A·B over an M×N×K tile, done by the
// threads of a Scope (one thread's register tile on a CPU or in scalar GPU code; a warp's mma.sync, a
// warpgroup's wgmma, a simdgroup's simdgroup_multiply_accumulate). Its three parts are separate nodes:
//
//	AccDecl  acc = 0               once, before the K loop
//	MMA      acc += A·B            once per K step, the accumulator living in registers across them
//	AccStore out[...] = f(acc)     once, after the K loop: the epilogue, an ordinary expression
//
// The operands are tensors at an offset, read through a Layout (strided, panel, swizzle, fragment), so
// unpacked operands, packed panels, a few-row problem and tensor-core fragments differ only in data.
// Inputs have their own type (In) and the accumulator its own (Acc.T): f16·f16 into f32, say.
//
// Semantics (what the interpreter runs): for i < M, j < N and p = 0, 1, ..., K−1 in order,
//
//	acc[i, j] = round_T(acc[i, j] + round_T(A(i, p)·B(p, j)))
//
// with T the accumulator type (round_T is the identity in Exact mode), A(i, p) = 0 when i ≥ ValidM or
// p ≥ ValidK and B(p, j) = 0 when p ≥ ValidK or j ≥ ValidN — those elements are not read, so a ragged
// edge tile never reaches outside its operands. A K loop of MMAs on one accumulator therefore sums in
// the order of the algorithm-level reduction. A backend's instruction may sum a K step in another order
// (tensor cores do); the contract allows that reordering within one MMA, and tests compare with
// tolerances derived from the precision.
type MMA struct {
	Acc *Accum
	In  DType // element type of A and B as the unit reads them
	// TF32: the unit rounds each f32 element of A and B to tf32 (RoundTF32Value) before multiplying, as
	// sm_80's mma.sync …tf32 does on operands converted with cvt.rna; only for f32 inputs and an f32
	// accumulator, and only where the schedule asks `precision tf32`.
	TF32 bool
	K    IExpr
	A, B Operand
	// Valid extents of the data (nil: the whole tile): rows of A, columns of B, depth of both.
	ValidM, ValidN, ValidK IExpr
	// Slot names the CPU microkernel family (ir.Micro.Slot) an MMA of the CPU pipelines may be bound to
	// (BindMicro); empty for an MMA no microkernel implements.
	Slot string
}

// Operand is a tile of T starting at flat element offset Off (T addressed as a row-major buffer), its
// element (r, c) at Off + Layout.Offset(r, c): A is M×K (r = i, c = p), B is K×N (r = p, c = j). Before
// the CPU pipelines' pack pass an operand may instead be a View (T, Off and Layout nil): the element as
// an expression of the source tensors (a conversion, a transpose, a computed value), of the MMA's input
// type; for A, (i, p) is the view at (Base0 + i, K0 + p), for B (p, j) at (Base0 + j, K0 + p).
type Operand struct {
	T      *Tensor
	Off    IExpr
	Layout Layout
	View   *View
}

// Accum is an accumulator tile: M×N values of type T held by the threads of Scope. Layout is the
// accumulator fragment (which thread holds which element); nil means a register tile of one thread,
// whose sizes may then be plan symbols.
type Accum struct {
	Name   string
	T      DType
	M, N   IExpr
	Scope  Scope
	Layout *Fragment
}

// AccDecl sets every element of Acc to zero. The accumulator is live from here to its AccStore, which
// must follow in the same block; MMAs in between (in loops nested there) update it.
type AccDecl struct{ Acc *Accum }

// AccStore is the epilogue: for I < M, J < N (at most the tile), Out[Idx...] = Value, where Value is any
// expression of the element AccVal{Acc} at (I, J) and of loads (bias[J], a residual, Out itself for
// beta·C), rounded to Out's type by the store. Each element is stored once. The beta rule of the
// language (docs/LANGUAGE.md, "Scaled outputs") holds as in a statement: a scaled-output term f·Out[...]
// whose factor is zero is dropped and Out is not read. The store ends the accumulator's life.
type AccStore struct {
	Acc   *Accum
	I, J  *Var
	M, N  IExpr
	Out   *Tensor
	Idx   []IExpr
	Value Expr
}

// AccVal is the accumulator element (I, J) of the enclosing AccStore; it appears nowhere else.
type AccVal struct{ Acc *Accum }

func (a *AccVal) Type() DType { return a.Acc.T }
func (*AccVal) expr()         {}

func (*MMA) node()      {}
func (*AccDecl) node()  {}
func (*AccStore) node() {}

func (o Operand) String() string {
	if v := o.View; v != nil {
		return fmt.Sprintf("view(%s=%s.., %s=%s..: %s)", v.P.Name, v.Base0, v.D.Name, v.K0, FormatExpr(v.Value))
	}
	if o.T == nil || o.Off == nil || o.Layout == nil {
		return "?"
	}
	return o.T.Name + "+" + o.Off.String() + " " + o.Layout.String()
}

func (a *Accum) String() string {
	s := fmt.Sprintf("%%%s %s[%s x %s] %s", a.Name, a.T, a.M, a.N, a.Scope)
	if a.Layout != nil {
		s += " " + a.Layout.Name
	}
	return s
}

func validString(vs ...IExpr) string {
	var parts []string
	for i, v := range vs {
		if v != nil {
			parts = append(parts, "mnk"[i:i+1]+"<"+v.String())
		}
	}
	if parts == nil {
		return ""
	}
	return " valid " + strings.Join(parts, ", ")
}

// printMMA prints the MMA nodes; false for other nodes.
func printMMA(b *strings.Builder, ind string, n Node) bool {
	switch n := n.(type) {
	case *AccDecl:
		fmt.Fprintf(b, "%sacc %s = 0\n", ind, n.Acc)
	case *MMA:
		in := n.In.String()
		if n.TF32 {
			in += " (tf32)"
		}
		slot := ""
		if n.Slot != "" {
			slot = " slot " + n.Slot
		}
		fmt.Fprintf(b, "%smma %%%s += A·B %s k=%s A=%s B=%s%s%s\n", ind, n.Acc.Name, in, n.K, n.A, n.B, validString(n.ValidM, n.ValidN, n.ValidK), slot)
	case *AccStore:
		fmt.Fprintf(b, "%saccstore %%%s for %s < %s, %s < %s: %s[%s] = %s\n", ind, n.Acc.Name, n.I.Name, n.M, n.J.Name, n.N, n.Out.Name, joinI(n.Idx), FormatExpr(n.Value))
	default:
		return false
	}
	return true
}

// verifyMMA checks the MMA nodes; ok is false for other nodes.
func (v *fverifier) verifyMMA(n Node) (ok bool, err error) {
	switch n := n.(type) {
	case *AccDecl:
		return true, v.accDecl(n.Acc)
	case *MMA:
		return true, v.mma(n)
	case *AccStore:
		return true, v.accStore(n)
	}
	return false, nil
}

func (v *fverifier) accDecl(a *Accum) error {
	if _, live := v.accs[a]; live {
		return fmt.Errorf("accumulator %%%s declared twice", a.Name)
	}
	if !a.T.IsFloat() && a.T != I32 {
		return fmt.Errorf("accumulator %%%s has type %s", a.Name, a.T)
	}
	for _, e := range []IExpr{a.M, a.N} {
		if err := v.iexpr(e); err != nil {
			return fmt.Errorf("accumulator %%%s: %v", a.Name, err)
		}
	}
	if a.Layout == nil {
		if a.Scope != ScopeThread {
			return fmt.Errorf("accumulator %%%s: a %s-scope accumulator needs a fragment layout", a.Name, a.Scope)
		}
	} else if err := fits(a.Layout, a.Scope, a.M, a.N); err != nil {
		return fmt.Errorf("accumulator %%%s: %v", a.Name, err)
	}
	v.accs[a] = v.depth
	return nil
}

// fits checks that a fragment belongs to scope and covers rows×cols.
func fits(f *Fragment, scope Scope, rows, cols IExpr) error {
	if f.Scope != scope {
		return fmt.Errorf("fragment %s belongs to a %s, not a %s", f.Name, f.Scope, scope)
	}
	r, okr := rows.(IConst)
	c, okc := cols.(IConst)
	if !okr || !okc || r.V != f.Rows || c.V != f.Cols {
		return fmt.Errorf("fragment %s is %dx%d, the tile %sx%s", f.Name, f.Rows, f.Cols, rows, cols)
	}
	return nil
}

func (v *fverifier) mma(n *MMA) error {
	a := n.Acc
	if _, live := v.accs[a]; !live {
		return fmt.Errorf("mma on %%%s outside its declaration and store", a.Name)
	}
	if !Widens(n.In, a.T) || n.In == Untyped {
		return fmt.Errorf("mma %%%s: inputs %s do not widen to the accumulator type %s", a.Name, n.In, a.T)
	}
	if n.TF32 && (n.In != F32 || a.T != F32) {
		return fmt.Errorf("mma %%%s: a tf32 mma takes f32 inputs into an f32 accumulator, not %s into %s", a.Name, n.In, a.T)
	}
	if err := v.iexpr(n.K); err != nil {
		return fmt.Errorf("mma %%%s: %v", a.Name, err)
	}
	if _, ok := n.K.(IConst); !ok && a.Scope != ScopeThread {
		return fmt.Errorf("mma %%%s: a %s-scope mma needs a constant K, not %s", a.Name, a.Scope, n.K)
	}
	for _, e := range []IExpr{n.ValidM, n.ValidN, n.ValidK} {
		if e != nil {
			if err := v.iexpr(e); err != nil {
				return fmt.Errorf("mma %%%s: %v", a.Name, err)
			}
		}
	}
	for _, op := range []struct {
		name       string
		o          Operand
		rows, cols IExpr
	}{{"A", n.A, a.M, n.K}, {"B", n.B, n.K, a.N}} {
		if vw := op.o.View; vw != nil {
			if op.o.T != nil || op.o.Off != nil || op.o.Layout != nil {
				return fmt.Errorf("mma %%%s: operand %s is both a view and in memory", a.Name, op.name)
			}
			if a.Scope != ScopeThread {
				return fmt.Errorf("mma %%%s: a %s-scope operand cannot be a view", a.Name, a.Scope)
			}
			if vw.Value.Type() != n.In {
				return fmt.Errorf("mma %%%s: operand %s is a view of %s, the mma reads %s", a.Name, op.name, vw.Value.Type(), n.In)
			}
			if err := v.view(vw); err != nil {
				return fmt.Errorf("mma %%%s operand %s: %v", a.Name, op.name, err)
			}
			continue
		}
		if op.o.T == nil || op.o.Layout == nil || op.o.Off == nil {
			return fmt.Errorf("mma %%%s: operand %s needs a tensor, an offset and a layout", a.Name, op.name)
		}
		if err := v.tensor(op.o.T); err != nil {
			return err
		}
		if op.o.T.Kind == Scalar {
			return fmt.Errorf("mma %%%s: operand %s is the scalar %s", a.Name, op.name, op.o.T.Name)
		}
		if op.o.T.Type != n.In {
			return fmt.Errorf("mma %%%s: operand %s is %s %s, the mma reads %s", a.Name, op.name, op.o.T.Type, op.o.T.Name, n.In)
		}
		if err := v.iexpr(op.o.Off); err != nil {
			return fmt.Errorf("mma %%%s operand %s: %v", a.Name, op.name, err)
		}
		if err := v.iexpr(op.o.Layout.Offset(IConst{0}, IConst{0})); err != nil {
			return fmt.Errorf("mma %%%s operand %s layout: %v", a.Name, op.name, err)
		}
		if f, ok := op.o.Layout.(*Fragment); ok {
			if err := fits(f, a.Scope, op.rows, op.cols); err != nil {
				return fmt.Errorf("mma %%%s operand %s: %v", a.Name, op.name, err)
			}
		}
	}
	return nil
}

func (v *fverifier) accStore(n *AccStore) error {
	a := n.Acc
	d, live := v.accs[a]
	if !live {
		return fmt.Errorf("accstore of %%%s outside its declaration and store", a.Name)
	}
	if d != v.depth {
		return fmt.Errorf("accstore of %%%s is not in the block that declares it", a.Name)
	}
	if err := v.tensor(n.Out); err != nil {
		return err
	}
	if n.Out.Kind == In || n.Out.Kind == Scalar {
		return fmt.Errorf("accstore to input %s", n.Out.Name)
	}
	if !Widens(n.Value.Type(), n.Out.Type) {
		return fmt.Errorf("accstore of %%%s stores %s into %s %s", a.Name, n.Value.Type(), n.Out.Type, n.Out.Name)
	}
	for _, e := range []IExpr{n.M, n.N} {
		if err := v.iexpr(e); err != nil {
			return fmt.Errorf("accstore %%%s: %v", a.Name, err)
		}
	}
	for _, d := range [][2]IExpr{{n.M, a.M}, {n.N, a.N}} {
		if s, ok := d[0].(IConst); ok {
			if t, ok := d[1].(IConst); ok && s.V > t.V {
				return fmt.Errorf("accstore of %%%s stores %sx%s of a %sx%s tile", a.Name, n.M, n.N, a.M, a.N)
			}
		}
	}
	if v.bound[n.I] || v.bound[n.J] || n.I == n.J {
		return fmt.Errorf("accstore %%%s rebinds its indices", a.Name)
	}
	v.bound[n.I], v.bound[n.J] = true, true
	defer delete(v.bound, n.I)
	defer delete(v.bound, n.J)
	for _, ix := range n.Idx {
		if err := v.iexpr(ix); err != nil {
			return fmt.Errorf("accstore %s: %v", n.Out.Name, err)
		}
	}
	v.storing = a
	err := v.expr(n.Value)
	v.storing = nil
	if err != nil {
		return err
	}
	delete(v.accs, a)
	return nil
}

// accVals checks that e reads accumulators only inside their own AccStore.
func (v *fverifier) accVals(e Expr) error {
	var err error
	Walk(e, func(x Expr) {
		if av, ok := x.(*AccVal); ok && err == nil && av.Acc != v.storing {
			err = fmt.Errorf("accumulator %%%s read outside its accstore", av.Acc.Name)
		}
	})
	return err
}

// unstored reports an accumulator declared in the block just verified that was never stored.
func (v *fverifier) unstored() error {
	for a, d := range v.accs {
		if d == v.depth {
			return fmt.Errorf("accumulator %%%s is never stored", a.Name)
		}
	}
	return nil
}

// interpreter

// runMMA runs the MMA nodes; false for other nodes.
func (in *interp) runMMA(n Node) bool {
	switch n := n.(type) {
	case *AccDecl:
		in.accs[n.Acc] = make([]float64, in.ival(n.Acc.M)*in.ival(n.Acc.N))
	case *MMA:
		in.mma(n)
	case *AccStore:
		in.accStore(n)
	default:
		return false
	}
	return true
}

// layoutAt evaluates l's offset of (r, c), building the offset expression once per layout.
func (in *interp) layoutAt(l Layout, r, c int) int {
	le, ok := in.lays[l]
	if !ok {
		le = &layoutEval{r: &Var{Name: "r"}, c: &Var{Name: "c"}}
		le.off = l.Offset(IVar{le.r}, IVar{le.c})
		in.lays[l] = le
	}
	in.vars[le.r], in.vars[le.c] = r, c
	o := in.ival(le.off)
	delete(in.vars, le.r)
	delete(in.vars, le.c)
	return o
}

type layoutEval struct {
	r, c *Var
	off  IExpr
}

// accAt is the position of accumulator element (i, j) in its buffer: the fragment's offset, or row-major.
func (in *interp) accAt(a *Accum, i, j, n int) int {
	if a.Layout != nil {
		return in.layoutAt(a.Layout, i, j)
	}
	return i*n + j
}

func (in *interp) validOr(e IExpr, whole int) int {
	if e == nil {
		return whole
	}
	return max(0, min(in.ival(e), whole))
}

func (in *interp) mma(n *MMA) {
	a := n.Acc
	acc, ok := in.accs[a]
	if !ok {
		fail("mma on %%%s outside its declaration and store", a.Name)
	}
	m, nn, k := in.ival(a.M), in.ival(a.N), in.ival(n.K)
	vm, vn, vk := in.validOr(n.ValidM, m), in.validOr(n.ValidN, nn), in.validOr(n.ValidK, k)
	elem := func(o Operand, isB bool, r, c int) float64 {
		var x float64
		if v := o.View; v != nil {
			// A (r, c) = (i, p) is the view at (Base0 + i, K0 + p), B (r, c) = (p, j) at (Base0 + j, K0 + p)
			at, p := r, c
			if isB {
				at, p = c, r
			}
			in.vars[v.P], in.vars[v.D] = in.ival(v.Base0)+at, in.ival(v.K0)+p
			x = in.eval(v.Value)
			delete(in.vars, v.P)
			delete(in.vars, v.D)
		} else {
			buf := in.bufs[o.T]
			at := in.ival(o.Off) + in.layoutAt(o.Layout, r, c)
			if at < 0 || at >= len(buf) {
				fail("mma %%%s: %s offset %d out of range [0, %d)", a.Name, o.T.Name, at, len(buf))
			}
			x = buf[at]
		}
		if n.TF32 && in.mode != Exact {
			return RoundTF32Value(x)
		}
		return x
	}
	// Elements beyond the valid extents are zero: their products add +0, which changes no sum that
	// starts at +0, so they are skipped.
	av := make([]float64, vk)
	for i := 0; i < vm; i++ {
		for p := range av {
			av[p] = elem(n.A, false, i, p)
		}
		for j := 0; j < vn; j++ {
			at := in.accAt(a, i, j, nn)
			s := acc[at]
			for p, x := range av {
				s = in.round(a.T, s+in.round(a.T, x*elem(n.B, true, p, j)))
			}
			acc[at] = s
		}
	}
}

func (in *interp) accStore(n *AccStore) {
	a := n.Acc
	acc, ok := in.accs[a]
	if !ok {
		fail("accstore of %%%s outside its declaration and store", a.Name)
	}
	am, an := in.ival(a.M), in.ival(a.N)
	m, nn := in.ival(n.M), in.ival(n.N)
	if m > am || nn > an {
		fail("accstore of %%%s: %dx%d exceeds the %dx%d tile", a.Name, m, nn, am, an)
	}
	val := n.Value
	for _, f := range BetaFactors(n.Value, n.Out) {
		if m > 0 && nn > 0 && in.eval(f) == 0 {
			val = DropBeta(val, n.Out, f)
		}
	}
	for i := 0; i < m; i++ {
		for j := 0; j < nn; j++ {
			in.vars[n.I], in.vars[n.J] = i, j
			in.accCur = acc[in.accAt(a, i, j, an)]
			in.store(n.Out, in.offset(n.Out, n.Idx), in.eval(val))
		}
	}
	delete(in.vars, n.I)
	delete(in.vars, n.J)
	delete(in.accs, a)
}
