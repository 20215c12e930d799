package msl

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
)

// nodes lowers a thread body: what one MSL thread runs, in order.
func (lw *lowerer) nodes(body []ir.Node) ([]Stmt, error) {
	var out []Stmt
	for _, n := range body {
		s, err := lw.node(n)
		if err != nil {
			return nil, err
		}
		out = append(out, s...)
	}
	return out, nil
}

func (lw *lowerer) node(n ir.Node) ([]Stmt, error) {
	switch n := n.(type) {
	case *ir.Nest:
		s, err := lw.nodes(n.Body)
		if err != nil {
			return nil, err
		}
		return append([]Stmt{Comment{lw.sourceLines(n.Stmts)}}, s...), nil
	case *ir.Loop:
		switch n.Kind {
		case ir.Serial, ir.Parallel, ir.Unrolled:
			// An unrolled loop's body holds its copies and steps by their number: a plain loop.
		default:
			return nil, unsupported("%s loop %s inside a GPU thread", n.Kind, n.Var.Name)
		}
		v := lw.names.name(n.Var, n.Var.Name)
		body, err := lw.nodes(n.Body)
		if err != nil {
			return nil, err
		}
		return []Stmt{For{Var: v, Lo: lw.iexpr(n.Lo), Hi: lw.iexpr(n.Hi), Step: lw.iexpr(n.Step), Body: body}}, nil
	case *ir.Decl:
		if err := checkType(n.L.T, "local %"+n.L.Name); err != nil {
			return nil, err
		}
		x, err := lw.expr(n.Init)
		if err != nil {
			return nil, err
		}
		return []Stmt{Decl{T: computeType(n.L.T), Name: lw.names.name(n.L, n.L.Name), Init: x}}, nil
	case *ir.Assign:
		x, err := lw.expr(n.Value)
		if err != nil {
			return nil, err
		}
		return []Stmt{Assign{Ident{lw.names.name(n.L, n.L.Name)}, "=", x}}, nil
	case *ir.Store:
		x, err := lw.expr(n.Value)
		if err != nil {
			return nil, err
		}
		return []Stmt{Assign{lw.elem(n.T, n.Idx), "=", toStorage(n.T.Type, x)}}, nil
	case *ir.If:
		c, err := lw.expr(n.Cond)
		if err != nil {
			return nil, err
		}
		th, err := lw.nodes(n.Then)
		if err != nil {
			return nil, err
		}
		el, err := lw.nodes(n.Else)
		if err != nil {
			return nil, err
		}
		return []Stmt{If{Cond: c, Then: th, Else: el}}, nil
	case *ir.Alloc:
		if n.T.Space == ir.Shared {
			return nil, fmt.Errorf("threadgroup buffer %s allocated inside a thread", n.T.Name)
		}
		if err := checkType(n.T.Type, "buffer "+n.T.Name); err != nil {
			return nil, err
		}
		size, ok := ir.Simplify(lw.plan(n.T.Size)).(ir.IConst)
		if !ok || size.V <= 0 {
			return nil, unsupported("per-thread buffer %s of size %s: sizes must be positive constants of the plan", n.T.Name, n.T.Size)
		}
		body, err := lw.nodes(n.Body)
		if err != nil {
			return nil, err
		}
		d := Decl{T: storageType(n.T.Type), Name: lw.names.name(n.T, n.T.Name), Len: size.V}
		return []Stmt{Block{append([]Stmt{d}, body...)}}, nil
	case *ir.Barrier:
		return []Stmt{lw.barrier(n.Scope)}, nil
	case *ir.AsyncCommit:
		return []Stmt{Comment{[]string{"async.commit: Metal has no asynchronous copies; the copies above completed synchronously"}}}, nil
	case *ir.AsyncWait:
		return []Stmt{Comment{[]string{fmt.Sprintf("async.wait %d: nothing to wait for (synchronous copies)", n.N)}}}, nil
	case *ir.Copy:
		return lw.copyTile(n)
	case *ir.WarpReduce:
		return lw.warpReduce(n)
	case *ir.AccDecl:
		return lw.accDecl(n.Acc)
	case *ir.MMA:
		return lw.mma(n)
	case *ir.AccStore:
		return lw.accStore(n)
	case *ir.Launch:
		return nil, fmt.Errorf("launch %s inside a launch", n.Name)
	}
	return nil, unsupported("%T inside a GPU thread", n)
}

// barrier is threadgroup_barrier or simdgroup_barrier; it orders device memory too when the launch
// reads a global tensor it writes (a row reduction's thread 0 publishes m[i] to the others).
func (lw *lowerer) barrier(s ir.Scope) Stmt {
	return barrierCall(s, lw.deviceSync)
}

// barrierCall is the barrier of scope s, ordering device memory too when device is set.
func barrierCall(s ir.Scope, device bool) Stmt {
	var flags Expr = Ident{"mem_flags::mem_threadgroup"}
	if device {
		flags = Binary{"|", Ident{"mem_flags::mem_device"}, flags}
	}
	fn := "threadgroup_barrier"
	if s != ir.ScopeBlock {
		fn = "simdgroup_barrier"
	}
	return ExprStmt{Call{fn, []Expr{flags}}}
}

// copyTile lowers a Copy to two loops over the tile: elements outside the valid extents are zeros and
// their sources are not read. An async copy (cp.async in the IR) is a plain copy here: Metal has no
// asynchronous global-to-threadgroup copy, so the copy has landed when the thread goes on, which
// satisfies every wait of the IR.
func (lw *lowerer) copyTile(n *ir.Copy) ([]Stmt, error) {
	for _, o := range []ir.Operand{n.Dst, n.Src} {
		if o.T == nil || o.Off == nil || o.Layout == nil || n.Rows == nil || n.Cols == nil {
			return nil, fmt.Errorf("copy with an incomplete operand or tile size")
		}
		if _, frag := o.Layout.(*ir.Fragment); frag {
			return nil, unsupported("copy through the fragment layout of %s", o.T.Name)
		}
		if err := checkType(o.T.Type, "tensor "+o.T.Name); err != nil {
			return nil, err
		}
	}
	r, c := &ir.Var{Name: "r"}, &ir.Var{Name: "c"}
	rn, cn := lw.names.fresh("r"), lw.names.fresh("c")
	lw.names.of[r], lw.names.of[c] = rn, cn
	src := lw.operandElem(n.Src, ir.IVar{V: r}, ir.IVar{V: c})
	var valid Expr
	for _, vc := range []struct {
		v     *ir.Var
		valid ir.IExpr
	}{{r, n.ValidRows}, {c, n.ValidCols}} {
		if vc.valid == nil {
			continue
		}
		cond := Binary{"<", Ident{lw.names.of[vc.v]}, lw.iexpr(vc.valid)}
		if valid == nil {
			valid = cond
		} else {
			valid = Binary{"&&", valid, cond}
		}
	}
	val := fromStorage(n.Src.T.Type, src)
	if valid != nil {
		val = Cond{valid, val, zero(n.Src.T.Type)}
	}
	dst := Index{Ident{lw.tensorName(n.Dst.T)}, lw.iexpr(ir.IAdd(n.Dst.Off, n.Dst.Layout.Offset(ir.IVar{V: r}, ir.IVar{V: c})))}
	what := n.String()
	if n.Async {
		what += " (a plain copy: Metal has no cp.async)"
	}
	return []Stmt{
		Comment{[]string{what}},
		For{Var: rn, Lo: IntLit{0}, Hi: lw.iexpr(n.Rows), Step: IntLit{1}, Body: []Stmt{
			For{Var: cn, Lo: IntLit{0}, Hi: lw.iexpr(n.Cols), Step: IntLit{1}, Body: []Stmt{
				Assign{dst, "=", toStorage(n.Dst.T.Type, val)},
			}},
		}},
	}, nil
}

// operandElem is element (r, c) of o in its storage type.
func (lw *lowerer) operandElem(o ir.Operand, r, c ir.IExpr) Expr {
	return Index{Ident{lw.tensorName(o.T)}, lw.iexpr(ir.IAdd(o.Off, o.Layout.Offset(r, c)))}
}

func (lw *lowerer) tensorName(t *ir.Tensor) string { return lw.names.name(t, t.Name) }
