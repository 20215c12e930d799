package ir

import (
	"fmt"
	"math"
)

// Mode selects the interpreter's arithmetic.
type Mode uint8

const (
	// Storage rounds every operation to its compute type (f32 for f32/f16/bf16 values) and every store
	// to the tensor's type: the precision the source declares, summing in source order.
	Storage Mode = iota
	// Exact computes everything in f64 (stores to float tensors are not rounded): the ideal result that
	// error bounds are measured against.
	Exact
)

// Args binds a kernel's parameters: tensors as float64 slices (row-major, one value per element,
// already representable in the tensor's type), scalars, and dims by name.
type Args struct {
	Tensors map[string][]float64
	Scalars map[string]float64
	Dims    map[string]int
}

// Clone deep-copies the tensor data so one Args can feed two runs.
func (a Args) Clone() Args {
	c := Args{Tensors: map[string][]float64{}, Scalars: a.Scalars, Dims: a.Dims}
	for k, v := range a.Tensors {
		c.Tensors[k] = append([]float64(nil), v...)
	}
	return c
}

// RuntimeError is an error found while interpreting (an index out of range, a missing argument).
type RuntimeError struct{ Msg string }

func (e *RuntimeError) Error() string { return e.Msg }

type interp struct {
	mode  Mode
	k     *Kernel
	bufs  map[*Tensor][]float64
	dims  map[*Dim]int
	vars  map[*Var]int
	loc   map[*LocalVar]float64
	plan  map[string]int
	steps int
	// MMA accumulators (live between AccDecl and AccStore), the element an AccStore is at, and the
	// compiled offset expressions of the layouts read so far.
	accs   map[*Accum][]float64
	accCur float64
	lays   map[Layout]*layoutEval
	// GPU code (interp_gpu.go): the launch being run, and the thread this interpreter runs (nil
	// outside thread bodies).
	launch *launchState
	th     *gpuThread
}

func fail(format string, a ...any) { panic(&RuntimeError{fmt.Sprintf(format, a...)}) }

func newInterp(k *Kernel, mode Mode, args Args) (*interp, error) {
	in := &interp{mode: mode, k: k, bufs: map[*Tensor][]float64{}, dims: map[*Dim]int{}, vars: map[*Var]int{}, loc: map[*LocalVar]float64{},
		accs: map[*Accum][]float64{}, lays: map[Layout]*layoutEval{}}
	for _, d := range k.Dims {
		v, ok := args.Dims[d.Name]
		if !ok {
			return nil, &RuntimeError{fmt.Sprintf("%s: dim %s not given", k.Name, d.Name)}
		}
		if v < 0 {
			return nil, &RuntimeError{fmt.Sprintf("%s: dim %s = %d is negative", k.Name, d.Name, v)}
		}
		in.dims[d] = v
	}
	for _, p := range k.Params {
		if p.Kind == Scalar {
			v, ok := args.Scalars[p.Name]
			if !ok {
				return nil, &RuntimeError{fmt.Sprintf("%s: scalar %s not given", k.Name, p.Name)}
			}
			in.bufs[p] = []float64{v}
			continue
		}
		data, ok := args.Tensors[p.Name]
		if !ok {
			return nil, &RuntimeError{fmt.Sprintf("%s: tensor %s not given", k.Name, p.Name)}
		}
		if want := in.numel(p); len(data) != want {
			return nil, &RuntimeError{fmt.Sprintf("%s: tensor %s has %d elements, want %d", k.Name, p.Name, len(data), want)}
		}
		in.bufs[p] = data
	}
	for _, t := range k.Temps {
		in.bufs[t] = make([]float64, in.numel(t))
	}
	return in, nil
}

func (in *interp) numel(t *Tensor) int {
	n := 1
	for _, d := range t.Shape {
		n *= in.dims[d]
	}
	return n
}

func catch(err *error) {
	if r := recover(); r != nil {
		if re, ok := r.(*RuntimeError); ok {
			*err = re
			return
		}
		panic(r)
	}
}

// RunKernel interprets the algorithm-level IR, updating the output tensors in args in place.
func RunKernel(k *Kernel, mode Mode, args Args) (err error) {
	in, err := newInterp(k, mode, args)
	if err != nil {
		return err
	}
	defer catch(&err)
	for _, s := range k.Stmts {
		in.stmt(s)
	}
	return nil
}

// RunFunc interprets the loop-level IR with the given plan values (nil: f.Plan).
func RunFunc(f *Func, mode Mode, args Args, plan map[string]int) (err error) {
	in, err := newInterp(f.Kernel, mode, args)
	if err != nil {
		return err
	}
	in.plan = f.Plan
	if plan != nil {
		in.plan = plan
	}
	defer catch(&err)
	in.nodes(f.Body)
	return nil
}

func (in *interp) stmt(s *Stmt) {
	// The beta rule: a scaled-output term whose factor is zero is dropped. The factors use no index, so
	// they are evaluated once, at the first point of the domain (none is read when it is empty).
	val := s.Value
	first := true
	in.domain(s.Vars, 0, func() {
		if first {
			first = false
			for _, f := range BetaFactors(s.Value, s.Out) {
				if in.eval(f) == 0 {
					val = DropBeta(val, s.Out, f)
				}
			}
		}
		v := in.eval(val)
		in.store(s.Out, in.offset(s.Out, idxOfVars(s.Vars)), v)
	})
}

func idxOfVars(vs []*Var) []IExpr {
	out := make([]IExpr, len(vs))
	for i, v := range vs {
		out[i] = IVar{v}
	}
	return out
}

// domain runs f for every point of the vars' ranges, in order.
func (in *interp) domain(vs []*Var, i int, f func()) {
	if i == len(vs) {
		f()
		return
	}
	v := vs[i]
	n := v.Const // an explicit constant range (a window)
	if v.Range != nil {
		n = in.dims[v.Range]
	}
	for x := 0; x < n; x++ {
		in.vars[v] = x
		in.domain(vs, i+1, f)
	}
	delete(in.vars, v)
}

func (in *interp) ival(e IExpr) int {
	v, err := EvalIndex(e, IEnv{Vars: in.vars, Dims: in.dims, Plan: in.plan})
	if err != nil {
		fail("%v", err)
	}
	return v
}

// offset turns an index list into a flat element offset, checking every index against its dim.
func (in *interp) offset(t *Tensor, idx []IExpr) int {
	if t.Kind == Scratch {
		o := in.ival(idx[0])
		if o < 0 || o >= len(in.bufs[t]) {
			fail("%s: offset %d out of range [0, %d)", t.Name, o, len(in.bufs[t]))
		}
		return o
	}
	if len(idx) != len(t.Shape) {
		fail("%s: %d indices for rank %d", t.Name, len(idx), len(t.Shape))
	}
	off := 0
	for i, e := range idx {
		x := in.ival(e)
		n := in.dims[t.Shape[i]]
		if x < 0 || x >= n {
			fail("%s: index %d of dimension %d (%s = %d) out of range", t.Name, x, i, t.Shape[i].Name, n)
		}
		off = off*n + x
	}
	return off
}

func (in *interp) store(t *Tensor, off int, v float64) {
	if in.th != nil {
		in.th.access(t, off, true)
	}
	if in.mode == Storage || !t.Type.IsFloat() {
		v = t.Type.Round(v)
	}
	in.bufs[t][off] = v
}

// round models arithmetic in type t.
func (in *interp) round(t DType, v float64) float64 {
	if in.mode == Exact && t.IsFloat() {
		return v
	}
	if t == F16 || t == BF16 {
		t = F32
	}
	return t.Round(v)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (in *interp) eval(e Expr) float64 {
	switch e := e.(type) {
	case *Const:
		return e.Val
	case *Load:
		off := in.offset(e.T, e.Idx)
		if in.th != nil {
			in.th.access(e.T, off, false)
		}
		return in.bufs[e.T][off]
	case *DimVal:
		return float64(in.dims[e.D])
	case *VarVal:
		return float64(in.vars[e.V])
	case *Local:
		return in.loc[e.L]
	case *AccVal:
		return in.accCur
	case *PlanVal:
		v, ok := in.plan[e.Name]
		if !ok {
			fail("plan symbol %s has no value", e.Name)
		}
		return float64(v)
	case *Cast:
		x := in.eval(e.X)
		if in.mode == Exact && e.T.IsFloat() {
			return x
		}
		return e.T.Round(x)
	case *Select:
		if in.eval(e.C) != 0 {
			return in.eval(e.A)
		}
		return in.eval(e.B)
	case *Unary:
		if e.Op == RoundTF32 && in.mode == Exact {
			return in.eval(e.X) // Exact: the ideal result, no deliberate rounding either
		}
		return in.round(e.T, unary(e.Op, e.T, in.eval(e.X)))
	case *Binary:
		x, y := in.eval(e.X), in.eval(e.Y)
		if e.Op.IsCompare() {
			return compare(e.Op, x, y)
		}
		return in.round(e.T, binary(e.Op, e.T, x, y))
	case *Reduce:
		acc := identity(e.Op)
		in.domain(e.Vars, 0, func() {
			acc = in.round(e.T, binary(e.Op, e.T, acc, in.eval(e.X)))
		})
		return acc
	}
	fail("cannot evaluate %T", e)
	return 0
}

func identity(op Op) float64 {
	switch op {
	case Max:
		return math.Inf(-1)
	case Min:
		return math.Inf(1)
	}
	return 0
}

func compare(op Op, x, y float64) float64 {
	switch op {
	case Lt:
		return b2f(x < y)
	case Le:
		return b2f(x <= y)
	case Gt:
		return b2f(x > y)
	case Ge:
		return b2f(x >= y)
	case Eq:
		return b2f(x == y)
	}
	return b2f(x != y)
}

// Binary evaluates an arithmetic operator on values of type t (exported for backends' constant folding
// and for tests). Max and Min propagate NaN. Integer division truncates; division by zero gives 0.
func binary(op Op, t DType, x, y float64) float64 {
	if t.IsInt() {
		a, b := toInt(x), toInt(y)
		switch op {
		case Add:
			return float64(a + b)
		case Sub:
			return float64(a - b)
		case Mul:
			return float64(a * b)
		case Div:
			if b == 0 {
				return 0
			}
			return float64(a / b)
		case Max:
			return float64(max(a, b))
		case Min:
			return float64(min(a, b))
		}
	}
	switch op {
	case Add:
		return x + y
	case Sub:
		return x - y
	case Mul:
		return x * y
	case Div:
		return x / y
	case Max:
		if x != x || y != y {
			return math.NaN()
		}
		return math.Max(x, y)
	case Min:
		if x != x || y != y {
			return math.NaN()
		}
		return math.Min(x, y)
	}
	fail("unknown operator %s", op)
	return 0
}

func unary(op Op, t DType, x float64) float64 {
	switch op {
	case Neg:
		return -x
	case Abs:
		return math.Abs(x)
	case Sqrt:
		return math.Sqrt(x)
	case Exp:
		return math.Exp(x)
	case Log:
		return math.Log(x)
	case Tanh:
		return math.Tanh(x)
	case Relu:
		if x != x {
			return x
		}
		return math.Max(x, 0)
	case Sigmoid:
		return 1 / (1 + math.Exp(-x))
	case RoundTF32:
		return RoundTF32Value(x)
	}
	fail("unknown function %s", op)
	return 0
}

// loop level

func (in *interp) nodes(body []Node) {
	for _, n := range body {
		in.node(n)
	}
}

func (in *interp) node(n Node) {
	if in.gpuNode(n) {
		return
	}
	switch n := n.(type) {
	case *Nest:
		in.nodes(n.Body)
	case *Loop:
		lo, hi, step := in.ival(n.Lo), in.ival(n.Hi), in.ival(n.Step)
		if step <= 0 {
			fail("loop %s has step %d", n.Var.Name, step)
		}
		for x := lo; x < hi; x += step {
			if n.Kind == Vector {
				in.lanes(n, x, hi)
				continue
			}
			in.vars[n.Var] = x
			in.nodes(n.Body)
		}
		delete(in.vars, n.Var)
	case *Decl:
		in.loc[n.L] = in.round(n.L.T, in.eval(n.Init))
	case *Assign:
		in.loc[n.L] = in.round(n.L.T, in.eval(n.Value))
	case *Store:
		in.store(n.T, in.offset(n.T, n.Idx), in.eval(n.Value))
	case *Alloc:
		size := in.ival(n.T.Size)
		if size < 0 {
			fail("%s: negative size %d", n.T.Name, size)
		}
		old, had := in.bufs[n.T]
		buf := make([]float64, size)
		for i := range buf {
			buf[i] = math.NaN() // contents are undefined until written: make stray reads visible
		}
		in.bufs[n.T] = buf
		in.nodes(n.Body)
		if had {
			in.bufs[n.T] = old
		} else {
			delete(in.bufs, n.T)
		}
	case *If:
		if in.eval(n.Cond) != 0 {
			in.nodes(n.Then)
		} else {
			in.nodes(n.Else)
		}
	case *Pack:
		in.pack(n)
	case *Micro:
		in.micro(n)
	case *Transpose:
		in.transpose(n)
	default:
		if !in.runMMA(n) {
			fail("cannot run %T", n)
		}
	}
}

func (in *interp) pack(p *Pack) {
	buf := in.bufs[p.Dst]
	off, n, depth, panel := in.ival(p.DstOff), in.ival(p.N), in.ival(p.Depth), in.ival(p.Panel)
	padded := (n + panel - 1) / panel * panel
	for i := 0; i < padded; i++ {
		for d := 0; d < depth; d++ {
			v := 0.0
			if i < n {
				in.vars[p.P], in.vars[p.D] = i, d
				v = in.eval(p.Value)
			}
			at := off + (i/panel)*panel*depth + d*panel + i%panel
			if at < 0 || at >= len(buf) {
				fail("pack into %s: offset %d out of range [0, %d)", p.Dst.Name, at, len(buf))
			}
			if in.mode == Storage {
				v = p.Dst.Type.Round(v)
			}
			buf[at] = v
		}
	}
	delete(in.vars, p.P)
	delete(in.vars, p.D)
}

func (in *interp) micro(u *Micro) {
	if u.Batch != nil {
		loops := u.Unbatched(func(base string) string { return base })
		if loops == nil {
			fail("micro %s: a batch needs strided operands", u.Slot)
		}
		in.nodes([]Node{loops})
		return
	}
	mr, nr, kc := in.ival(u.MR), in.ival(u.NR), in.ival(u.KC)
	m, n := in.ival(u.M), in.ival(u.N)
	if m > mr || n > nr || m < 0 || n < 0 {
		fail("micro %s: tile %dx%d exceeds %dx%d", u.Slot, m, n, mr, nr)
	}
	c := in.bufs[u.C]
	co, ldc := in.ival(u.COff), in.ival(u.LDC)
	alpha, beta := in.eval(u.Alpha), in.eval(u.Beta)
	ep := int(in.eval(u.EP))
	a := in.microOperand(u, u.A, mr, m, kc, false)
	b := in.microOperand(u, u.B, nr, n, kc, true)
	t := u.Elem
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			acc := 0.0
			for p := 0; p < kc; p++ {
				acc = in.round(t, acc+in.round(t, a[p*mr+i]*b[p*nr+j]))
			}
			at := co + i*ldc + j
			if at < 0 || at >= len(c) {
				fail("micro %s: C offset %d out of range [0, %d)", u.Slot, at, len(c))
			}
			v := in.round(t, alpha*acc)
			if beta != 0 {
				v = in.round(t, v+in.round(t, beta*c[at]))
			}
			if ep&1 != 0 {
				v = in.round(t, v+in.bufs[u.Bias][in.ival(u.BiasOff)+j])
			}
			if ep&2 != 0 {
				v = unary(Relu, t, v)
			}
			in.store(u.C, at, v)
		}
	}
}

// transpose copies one tile, checking every element against both buffers. The values are copied
// unchanged: both tensors have the element type, so Storage and Exact agree.
func (in *interp) transpose(t *Transpose) {
	src, dst := in.bufs[t.Src], in.bufs[t.Dst]
	so, lds, do, ldd := in.ival(t.SrcOff), in.ival(t.LDS), in.ival(t.DstOff), in.ival(t.LDD)
	rows, cols := in.ival(t.Rows), in.ival(t.Cols)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			s, d := so+r*lds+c, do+c*ldd+r
			if s < 0 || s >= len(src) {
				fail("transpose %s: %s offset %d out of range [0, %d)", t.Slot, t.Src.Name, s, len(src))
			}
			if d < 0 || d >= len(dst) {
				fail("transpose %s: %s offset %d out of range [0, %d)", t.Slot, t.Dst.Name, d, len(dst))
			}
			in.store(t.Dst, d, src[s])
		}
	}
}

// microOperand returns the valid part of a Micro operand as a micro-panel (element (x, p) at p·width + x,
// x the row of A or the column of B): read through its layout, or evaluated from its View.
func (in *interp) microOperand(u *Micro, o MicroOperand, width, valid, kc int, isB bool) []float64 {
	buf := make([]float64, width*kc)
	if v := o.View; v != nil {
		base, k0 := in.ival(v.Base0), in.ival(v.K0)
		for x := 0; x < valid; x++ {
			for p := 0; p < kc; p++ {
				in.vars[v.P], in.vars[v.D] = base+x, k0+p
				buf[p*width+x] = in.eval(v.Value)
			}
		}
		delete(in.vars, v.P)
		delete(in.vars, v.D)
		return buf
	}
	if o.T == nil || o.Layout == nil || o.Off == nil {
		fail("micro %s: an operand has no tensor, offset or layout", u.Slot)
	}
	src := in.bufs[o.T]
	off := in.ival(o.Off)
	// the layouts microkernels read, with their parameters evaluated once; any other through layoutAt
	elem := func(x, p int) int {
		if isB {
			return in.layoutAt(o.Layout, p, x)
		}
		return in.layoutAt(o.Layout, x, p)
	}
	switch l := o.Layout.(type) {
	case *Panel:
		w, d := in.ival(l.Width), in.ival(l.Depth)
		if w <= 0 || l.ByCol != isB {
			fail("micro %s: operand %s has the layout %s", u.Slot, o.T.Name, l)
		}
		elem = func(x, p int) int { return (x/w)*w*d + p*w + x%w }
	case *Strided:
		rs, cs := in.ival(l.RowStride), in.ival(l.ColStride)
		if isB {
			rs, cs = cs, rs
		}
		elem = func(x, p int) int { return x*rs + p*cs }
	}
	for x := 0; x < valid; x++ {
		for p := 0; p < kc; p++ {
			at := off + elem(x, p)
			if at < 0 || at >= len(src) {
				fail("micro %s: %s offset %d out of range [0, %d)", u.Slot, o.T.Name, at, len(src))
			}
			buf[p*width+x] = src[at]
		}
	}
	return buf
}
