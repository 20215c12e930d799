package ir

import "fmt"

// VerifyKernel checks the algorithm-level invariants: every variable has a range, loads have one index
// per dimension, every statement's value is assignable to its output, reductions bind fresh variables.
func VerifyKernel(k *Kernel) error {
	for _, s := range k.Stmts {
		bound := map[*Var]bool{}
		for _, v := range s.Vars {
			if v.Range == nil {
				return fmt.Errorf("%s: statement at line %d: index %s has no range", k.Name, s.Pos.Line, v.Name)
			}
			bound[v] = true
		}
		if len(s.Vars) != len(s.Out.Shape) {
			return fmt.Errorf("%s: statement at line %d writes %s with %d indices, rank %d", k.Name, s.Pos.Line, s.Out.Name, len(s.Vars), len(s.Out.Shape))
		}
		if !Widens(s.Value.Type(), s.Out.Type) {
			return fmt.Errorf("%s: statement at line %d stores %s into %s %s", k.Name, s.Pos.Line, s.Value.Type(), s.Out.Type, s.Out.Name)
		}
		if err := verifyExpr(s.Value, bound, nil); err != nil {
			return fmt.Errorf("%s: statement at line %d: %v", k.Name, s.Pos.Line, err)
		}
	}
	return nil
}

func verifyExpr(e Expr, bound map[*Var]bool, locals map[*LocalVar]bool) error {
	switch e := e.(type) {
	case *Const:
		if e.T == Untyped || e.T == Invalid {
			return fmt.Errorf("constant %v has no type", e.Val)
		}
	case *Load:
		if e.T.Kind == Scratch {
			if len(e.Idx) != 1 {
				return fmt.Errorf("scratch %s needs one flat index", e.T.Name)
			}
		} else if len(e.Idx) != len(e.T.Shape) {
			return fmt.Errorf("%s loaded with %d indices, rank %d", e.T.Name, len(e.Idx), len(e.T.Shape))
		}
		for _, ix := range e.Idx {
			var err error
			IVars(ix, func(v *Var) {
				if !bound[v] && err == nil {
					err = fmt.Errorf("index %s of %s is not bound here", v.Name, e.T.Name)
				}
			})
			if err != nil {
				return err
			}
		}
	case *Local:
		if locals != nil && !locals[e.L] {
			return fmt.Errorf("local %%%s used before its declaration", e.L.Name)
		}
	case *VarVal:
		if !bound[e.V] {
			return fmt.Errorf("index %s used outside its loop", e.V.Name)
		}
	case *Unary:
		return verifyExpr(e.X, bound, locals)
	case *Binary:
		if err := verifyExpr(e.X, bound, locals); err != nil {
			return err
		}
		return verifyExpr(e.Y, bound, locals)
	case *Select:
		for _, x := range []Expr{e.C, e.A, e.B} {
			if err := verifyExpr(x, bound, locals); err != nil {
				return err
			}
		}
		if e.A.Type() != e.B.Type() {
			return fmt.Errorf("select arms have types %s and %s", e.A.Type(), e.B.Type())
		}
	case *Cast:
		return verifyExpr(e.X, bound, locals)
	case *Reduce:
		if locals != nil {
			return fmt.Errorf("reduction left in loop-level IR")
		}
		inner := map[*Var]bool{}
		for v := range bound {
			inner[v] = true
		}
		for _, v := range e.Vars {
			if v.Range == nil && v.Const <= 0 && locals == nil {
				return fmt.Errorf("reduction index %s has no range", v.Name)
			}
			if bound[v] {
				return fmt.Errorf("reduction rebinds %s", v.Name)
			}
			inner[v] = true
		}
		return verifyExpr(e.X, inner, locals)
	}
	return nil
}

// VerifyFunc checks the loop-level invariants: every index variable is bound by an enclosing loop (or
// is a Pack placeholder inside its Value), loop variables are not rebound, locals are declared before
// use, scratch buffers are used only inside their Alloc, plan symbols have defaults, vector and unrolled
// loops have a width, and no reduction is left; and for GPU code, the rules of verify_gpu.go.
func VerifyFunc(f *Func) error {
	v := &fverifier{f: f, bound: map[*Var]bool{}, locals: map[*LocalVar]bool{}, live: map[*Tensor]bool{}, accs: map[*Accum]int{}}
	if err := verifyVariants(f); err != nil {
		return err
	}
	return v.nodes(f.Body)
}

// verifyVariants checks that every variant's plan sets only symbols that have a default, to values of
// at least 1, and that its host-sized symbols are among them.
func verifyVariants(f *Func) error {
	seen := map[string]bool{}
	for _, pv := range f.Variants {
		if seen[pv.Name] {
			return fmt.Errorf("variant %s planned twice", pv.Name)
		}
		seen[pv.Name] = true
		for k, val := range pv.Plan {
			if _, ok := f.Plan[k]; !ok {
				return fmt.Errorf("variant %s: plan symbol %s has no default", pv.Name, k)
			}
			if val < 1 {
				return fmt.Errorf("variant %s: plan symbol %s = %d, want at least 1", pv.Name, k, val)
			}
		}
		for _, k := range pv.Host {
			if _, ok := pv.Plan[k]; !ok {
				return fmt.Errorf("variant %s: host-sized symbol %s has no value", pv.Name, k)
			}
		}
		for class, plan := range pv.Tuned {
			for k, val := range plan {
				// unroll and prefetch are the backend's microkernel fields, not symbols of the IR
				if _, ok := f.Plan[k]; !ok && !IsKernelField(k) {
					return fmt.Errorf("variant %s on %s: tuned plan symbol %s has no default", pv.Name, class, k)
				}
				if !TunedValueOK(k, val) {
					return fmt.Errorf("variant %s on %s: tuned plan symbol %s = %d, want at least 1 (-1: a prefetch distance off)", pv.Name, class, k, val)
				}
			}
		}
	}
	return nil
}

type fverifier struct {
	f      *Func
	bound  map[*Var]bool
	locals map[*LocalVar]bool
	live   map[*Tensor]bool
	// accs maps each live MMA accumulator to the block depth of its declaration; storing is the
	// accumulator whose AccStore value is being checked; depth counts nested blocks.
	accs    map[*Accum]int
	storing *Accum
	depth   int
	gpu     gpuLevel // where in a GPU launch the node being checked is (verify_gpu.go)
	launch  *Launch  // the enclosing launch, if any
	grids   int      // GPUGrid loops entered inside launch
	nest    *Loop    // the outermost loop of the enclosing thread nest
}

func (v *fverifier) iexpr(e IExpr) error {
	var err error
	var walk func(IExpr)
	walk = func(e IExpr) {
		switch e := e.(type) {
		case IVar:
			if !v.bound[e.V] && err == nil {
				err = fmt.Errorf("index %s is not bound here", e.V.Name)
			}
		case ISym:
			if _, ok := v.f.Plan[e.Name]; !ok && err == nil {
				err = fmt.Errorf("plan symbol %s has no default", e.Name)
			}
			if _, ok := RunTimeSyms[e.RunTimeField()]; e.RunTime && !ok && err == nil {
				err = fmt.Errorf("run-time symbol %s is not one backends can read (ir.RunTimeSyms)", e.Name)
			}
		case IBin:
			walk(e.X)
			walk(e.Y)
		}
	}
	walk(e)
	return err
}

func (v *fverifier) tensor(t *Tensor) error {
	if t.Kind == Scratch && !v.live[t] {
		return fmt.Errorf("scratch %s used outside its alloc", t.Name)
	}
	return nil
}

func (v *fverifier) expr(e Expr) error {
	var err error
	Walk(e, func(n Expr) {
		if l, ok := n.(*Load); ok && err == nil {
			err = v.tensor(l.T)
		}
		if p, ok := n.(*PlanVal); ok && err == nil {
			if _, ok := v.f.Plan[p.Name]; !ok {
				err = fmt.Errorf("plan symbol %s has no default", p.Name)
			}
		}
	})
	if err != nil {
		return err
	}
	if err := v.accVals(e); err != nil {
		return err
	}
	return verifyExpr(e, v.bound, v.locals)
}

func (v *fverifier) nodes(body []Node) error {
	v.depth++
	defer func() { v.depth-- }()
	for _, n := range body {
		if err := v.node(n); err != nil {
			return err
		}
	}
	return v.unstored()
}

func (v *fverifier) node(n Node) error {
	if done, err := v.gpuNode(n); done {
		return err
	}
	return v.plainNode(n)
}

// plainNode checks n's bindings, types and lifetimes; gpuNode has checked where it may appear.
func (v *fverifier) plainNode(n Node) error {
	switch n := n.(type) {
	case *Nest:
		return v.nodes(n.Body)
	case *Loop:
		for _, e := range []IExpr{n.Lo, n.Hi, n.Step} {
			if err := v.iexpr(e); err != nil {
				return fmt.Errorf("loop %s: %v", n.Var.Name, err)
			}
		}
		if v.bound[n.Var] {
			return fmt.Errorf("loop variable %s rebound", n.Var.Name)
		}
		if (n.Kind == Vector || n.Kind == Unrolled) && n.Width < 1 {
			return fmt.Errorf("%s loop %s has no width", n.Kind, n.Var.Name)
		}
		v.bound[n.Var] = true
		err := v.verifyLanes(n)
		if err == nil {
			err = v.nodes(n.Body)
		}
		delete(v.bound, n.Var)
		return err
	case *Decl:
		if err := v.expr(n.Init); err != nil {
			return err
		}
		v.locals[n.L] = true
	case *Assign:
		if !v.locals[n.L] {
			return fmt.Errorf("assignment to undeclared local %%%s", n.L.Name)
		}
		return v.expr(n.Value)
	case *Store:
		if err := v.tensor(n.T); err != nil {
			return err
		}
		if n.T.Kind == In || n.T.Kind == Scalar {
			return fmt.Errorf("store to input %s", n.T.Name)
		}
		for _, ix := range n.Idx {
			if err := v.iexpr(ix); err != nil {
				return fmt.Errorf("store %s: %v", n.T.Name, err)
			}
		}
		return v.expr(n.Value)
	case *Alloc:
		if n.T.Kind != Scratch {
			return fmt.Errorf("alloc of non-scratch %s", n.T.Name)
		}
		if err := v.iexpr(n.T.Size); err != nil {
			return fmt.Errorf("alloc %s: %v", n.T.Name, err)
		}
		v.live[n.T] = true
		err := v.nodes(n.Body)
		delete(v.live, n.T)
		return err
	case *If:
		if n.Cond.Type() != Bool {
			return fmt.Errorf("if condition has type %s", n.Cond.Type())
		}
		if err := v.expr(n.Cond); err != nil {
			return err
		}
		if err := v.nodes(n.Then); err != nil {
			return err
		}
		return v.nodes(n.Else)
	case *Pack:
		if err := v.tensor(n.Dst); err != nil {
			return err
		}
		for _, e := range []IExpr{n.DstOff, n.N, n.Depth, n.Panel} {
			if err := v.iexpr(e); err != nil {
				return fmt.Errorf("pack %s: %v", n.Dst.Name, err)
			}
		}
		v.bound[n.P], v.bound[n.D] = true, true
		err := v.expr(n.Value)
		delete(v.bound, n.P)
		delete(v.bound, n.D)
		return err
	case *Micro:
		if err := v.tensor(n.C); err != nil {
			return err
		}
		for _, op := range []MicroOperand{n.A, n.B} {
			if (op.T == nil) == (op.View == nil) {
				return fmt.Errorf("micro %s: an operand must be either in memory or a view", n.Slot)
			}
			if op.T != nil {
				if err := v.tensor(op.T); err != nil {
					return err
				}
				if op.Off == nil || op.Layout == nil {
					return fmt.Errorf("micro %s: operand %s needs an offset and a layout", n.Slot, op.T.Name)
				}
				if op.T.Type != n.Elem {
					return fmt.Errorf("micro %s: operand %s is %s, the microkernel reads %s", n.Slot, op.T.Name, op.T.Type, n.Elem)
				}
				if err := v.iexpr(op.Off); err != nil {
					return err
				}
				if err := v.iexpr(op.Layout.Offset(IConst{0}, IConst{0})); err != nil {
					return err
				}
				continue
			}
			if err := v.view(op.View); err != nil {
				return err
			}
		}
		for _, e := range []IExpr{n.MR, n.NR, n.KC, n.COff, n.LDC, n.M, n.N} {
			if err := v.iexpr(e); err != nil {
				return fmt.Errorf("micro %s: %v", n.Slot, err)
			}
		}
		if b := n.Batch; b != nil {
			if b.Count == nil || b.AStride == nil || b.BStride == nil || b.CStride == nil {
				return fmt.Errorf("micro %s: a batch needs a count and three strides", n.Slot)
			}
			for _, e := range []IExpr{b.Count, b.AStride, b.BStride, b.CStride} {
				if err := v.iexpr(e); err != nil {
					return fmt.Errorf("micro %s: batch: %v", n.Slot, err)
				}
			}
		}
		if n.Bias != nil {
			if err := v.iexpr(n.BiasOff); err != nil {
				return err
			}
		}
		for _, e := range []Expr{n.Alpha, n.Beta, n.EP} {
			if err := v.expr(e); err != nil {
				return err
			}
		}
	case *Transpose:
		if n.Elem != F32 && n.Elem != F64 {
			return fmt.Errorf("transpose %s: element type %s (want f32 or f64)", n.Slot, n.Elem)
		}
		if n.Src == nil || n.Dst == nil || n.Src == n.Dst {
			return fmt.Errorf("transpose %s: needs distinct source and destination", n.Slot)
		}
		if n.Src.Type != n.Elem || n.Dst.Type != n.Elem {
			return fmt.Errorf("transpose %s: %s %s and %s %s do not have the element type %s", n.Slot, n.Src.Name, n.Src.Type, n.Dst.Name, n.Dst.Type, n.Elem)
		}
		if n.Dst.Kind == In || n.Dst.Kind == Scalar || n.Src.Kind == Scalar {
			return fmt.Errorf("transpose %s: bad operand kinds", n.Slot)
		}
		if err := v.tensor(n.Src); err != nil {
			return err
		}
		if err := v.tensor(n.Dst); err != nil {
			return err
		}
		for _, e := range []IExpr{n.SrcOff, n.LDS, n.DstOff, n.LDD, n.Rows, n.Cols} {
			if err := v.iexpr(e); err != nil {
				return fmt.Errorf("transpose %s: %v", n.Slot, err)
			}
		}
	default:
		if ok, err := v.verifyMMA(n); ok {
			return err
		}
		return fmt.Errorf("unknown node %T", n)
	}
	return nil
}

// view checks an operand view: its origin, and its value with the placeholders bound.
func (v *fverifier) view(view *View) error {
	if err := v.iexpr(view.Base0); err != nil {
		return err
	}
	if err := v.iexpr(view.K0); err != nil {
		return err
	}
	v.bound[view.P], v.bound[view.D] = true, true
	err := v.expr(view.Value)
	delete(v.bound, view.P)
	delete(v.bound, view.D)
	return err
}
