package ir

import (
	"fmt"
	"strings"
)

// Copy moves a Rows×Cols tile between two buffers, each addressed as a flat row-major buffer through
// an Operand (tensor, offset, layout): for r < Rows, c < Cols,
//
//	Dst[Dst.Off + Dst.Layout.Offset(r, c)] = Src[Src.Off + Src.Layout.Offset(r, c)]   if r < ValidRows and c < ValidCols
//	                                       = 0                                          otherwise
//
// rounded to Dst's type (a copy may narrow, f32 to f16, or widen). Nil valid extents mean the whole
// tile. Elements outside them are zero-filled and their sources not read: the padding of the last BLIS
// panel, the edge of a GEMM tile staged in shared memory (cp.async's src-size zero fill).
//
// Copy is the one data-movement node of the IR: a BLIS panel pack is a Copy into a Panel layout from a
// strided (possibly transposed) operand — PackCopy builds it from a Pack, which stays as the CPU
// pipeline's form because its Value may also gather through any expression and its backends are fast —
// and staging a GEMM operand in shared memory is a Copy into a (swizzled) row-major tile.
//
// An Async copy is issued by the GPU thread that runs it (sm_80 cp.async): it reads its source at once
// and lands in its destination when an AsyncWait of that thread retires its group, as a write by that
// thread; until then the destination elements are in flight and touching them is an error (see
// interp_gpu.go). Group is the index of the commit group the copy joins — the number of AsyncCommits
// the thread has executed before it — so that a staging pipeline states which K tile each group holds;
// the interpreter checks it. Async copies go from global to shared memory and exist only in GPU threads.
type Copy struct {
	Dst, Src             Operand
	Rows, Cols           IExpr
	ValidRows, ValidCols IExpr // nil: Rows, Cols
	Async                bool
	Group                IExpr    // Async only, commit groups (cp.async)
	Bar                  *MbarRef // Async only: a bulk copy completing on this mbarrier (mbarrier.go)
}

func (*Copy) node() {}

func (c *Copy) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "copy %sx%s %s <- %s", c.Rows, c.Cols, c.Dst, c.Src)
	if c.ValidRows != nil || c.ValidCols != nil {
		vr, vc := c.ValidRows, c.ValidCols
		if vr == nil {
			vr = c.Rows
		}
		if vc == nil {
			vc = c.Cols
		}
		fmt.Fprintf(&b, " valid %sx%s", vr, vc)
	}
	switch {
	case c.Async && c.Bar != nil:
		fmt.Fprintf(&b, " async mbarrier %s", c.Bar)
	case c.Async:
		fmt.Fprintf(&b, " async group %s", c.Group)
	}
	return b.String()
}

// PackCopy returns the Copy with the meaning of p when p's Value is a load (or a cast of one) whose
// indices are affine in P and D with constant coefficients — every Pack the pack pass makes; ok is
// false otherwise. A-panels (P a row of the operand) and B-panels alike become copies of an N×Depth tile
// into a Panel layout of width Panel, with N valid rows: the last panel zero-padded.
func PackCopy(p *Pack) (c *Copy, ok bool) {
	x := p.Value
	if cast, isCast := x.(*Cast); isCast {
		x = cast.X
	}
	ld, isLoad := x.(*Load)
	if !isLoad {
		return nil, false
	}
	src, ok := LoadOperand(ld, p.P, p.D)
	if !ok {
		return nil, false
	}
	rows := IMul(IDiv(IAdd(p.N, ISub(p.Panel, IConst{1})), p.Panel), p.Panel)
	return &Copy{
		Dst:  Operand{T: p.Dst, Off: p.DstOff, Layout: &Panel{Width: p.Panel, Depth: p.Depth}},
		Src:  src,
		Rows: rows, Cols: p.Depth, ValidRows: p.N,
	}, true
}

// LoadOperand describes what ld reads as row and col vary: element (r, c) of the returned operand is
// ld at row = r, col = c (its tensor addressed as a flat row-major buffer, other variables unchanged).
// ok is false unless ld's indices are affine in row and col with constant coefficients.
func LoadOperand(ld *Load, row, col *Var) (op Operand, ok bool) {
	if ld.T.Kind == Scalar {
		return Operand{}, false
	}
	// Flat offset of ld = Σ idx_d · stride_d, stride_d the product of the later dims (scratch: one index).
	strides := make([]IExpr, len(ld.Idx))
	var stride IExpr = IConst{1}
	for d := len(ld.Idx) - 1; d >= 0; d-- {
		strides[d] = stride
		if ld.T.Kind != Scratch {
			stride = IMul(stride, IDim{ld.T.Shape[d]})
		}
	}
	zero := map[*Var]IExpr{row: IConst{0}, col: IConst{0}}
	var off, rs, cs IExpr = IConst{0}, IConst{0}, IConst{0}
	for d, ix := range ld.Idx {
		if !linearIn(ix, row) || !linearIn(ix, col) {
			return Operand{}, false
		}
		off = IAdd(off, IMul(SubstIExpr(ix, zero), strides[d]))
		rs = IAdd(rs, IMul(IConst{Coefficient(ix, row)}, strides[d]))
		cs = IAdd(cs, IMul(IConst{Coefficient(ix, col)}, strides[d]))
	}
	return Operand{T: ld.T, Off: off, Layout: &Strided{RowStride: rs, ColStride: cs}}, true
}

// linearIn reports whether v occurs in e only as a term of sums and differences, scaled by constants:
// then e = Coefficient(e, v)·v + (e with v = 0).
func linearIn(e IExpr, v *Var) bool {
	b, ok := e.(IBin)
	if !ok {
		return true
	}
	switch b.Op {
	case '+', '-':
		return linearIn(b.X, v) && linearIn(b.Y, v)
	case '*':
		_, cx := b.X.(IConst)
		_, cy := b.Y.(IConst)
		return (cx && linearIn(b.Y, v)) || (cy && linearIn(b.X, v)) || (!usesVar(b.X, v) && !usesVar(b.Y, v))
	}
	return !usesVar(e, v)
}

// verifyCopy checks a Copy where VerifyFunc reaches it (gpuNode has checked the level).
func (v *fverifier) verifyCopy(n *Copy) error {
	for _, o := range []struct {
		what string
		op   Operand
	}{{"destination", n.Dst}, {"source", n.Src}} {
		if o.op.T == nil || o.op.Off == nil || o.op.Layout == nil {
			return fmt.Errorf("copy: the %s needs a tensor, an offset and a layout", o.what)
		}
		if err := v.tensor(o.op.T); err != nil {
			return err
		}
		if o.op.T.Kind == Scalar {
			return fmt.Errorf("copy: the %s is the scalar %s", o.what, o.op.T.Name)
		}
		if err := v.iexpr(o.op.Off); err != nil {
			return fmt.Errorf("copy %s: %v", o.op.T.Name, err)
		}
		if err := v.iexpr(o.op.Layout.Offset(IConst{0}, IConst{0})); err != nil {
			return fmt.Errorf("copy %s layout: %v", o.op.T.Name, err)
		}
	}
	if n.Dst.T.Kind == In {
		return fmt.Errorf("copy into input %s", n.Dst.T.Name)
	}
	if n.Dst.T == n.Src.T {
		return fmt.Errorf("copy from %s into itself", n.Dst.T.Name)
	}
	if !n.Src.T.Type.IsFloat() && n.Src.T.Type != n.Dst.T.Type {
		return fmt.Errorf("copy converts %s %s to %s", n.Src.T.Type, n.Src.T.Name, n.Dst.T.Type)
	}
	for _, e := range []IExpr{n.Rows, n.Cols, n.ValidRows, n.ValidCols, n.Group} {
		if e != nil {
			if err := v.iexpr(e); err != nil {
				return fmt.Errorf("copy into %s: %v", n.Dst.T.Name, err)
			}
		}
	}
	if n.Rows == nil || n.Cols == nil {
		return fmt.Errorf("copy into %s: no tile size", n.Dst.T.Name)
	}
	if !n.Async {
		if n.Group != nil || n.Bar != nil {
			return fmt.Errorf("copy into %s: a synchronous copy in a commit group", n.Dst.T.Name)
		}
		return nil
	}
	switch {
	case v.gpu != threadLevel:
		return fmt.Errorf("async copy into %s outside a GPU thread body", n.Dst.T.Name)
	case n.Group == nil && n.Bar == nil:
		return fmt.Errorf("async copy into %s has no group", n.Dst.T.Name)
	case n.Dst.T.Space != Shared || n.Src.T.Space == Shared:
		return fmt.Errorf("async copy from %s %s into %s %s: async copies go from global into shared memory", n.Src.T.Space, n.Src.T.Name, n.Dst.T.Space, n.Dst.T.Name)
	case n.Bar != nil:
		return v.verifyBulkCopy(n) // mbarrier.go
	}
	return nil
}

// copyTile runs a Copy: synchronously, or issued asynchronously by the current GPU thread.
func (in *interp) copyTile(n *Copy) {
	if n.Async && in.th == nil {
		fail("async copy into %s outside a GPU thread", n.Dst.T.Name)
	}
	rows, cols := in.ival(n.Rows), in.ival(n.Cols)
	vr, vc := rows, cols
	if n.ValidRows != nil {
		vr = in.ival(n.ValidRows)
	}
	if n.ValidCols != nil {
		vc = in.ival(n.ValidCols)
	}
	var offs []int
	var vals []float64
	if n.Async && n.Bar == nil {
		if g := in.ival(n.Group); g != in.th.commits {
			fail("async copy into %s labelled group %d joins group %d (thread %d has committed %d groups)", n.Dst.T.Name, g, in.th.commits, in.th.id, in.th.commits)
		}
	}
	dst, src := in.bufs[n.Dst.T], in.bufs[n.Src.T]
	do, so := in.ival(n.Dst.Off), in.ival(n.Src.Off)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			d := do + in.layoutAt(n.Dst.Layout, r, c)
			if d < 0 || d >= len(dst) {
				fail("copy into %s: offset %d out of range [0, %d)", n.Dst.T.Name, d, len(dst))
			}
			v := 0.0
			if r < vr && c < vc {
				s := so + in.layoutAt(n.Src.Layout, r, c)
				if s < 0 || s >= len(src) {
					fail("copy from %s: offset %d out of range [0, %d)", n.Src.T.Name, s, len(src))
				}
				if in.th != nil {
					in.th.access(n.Src.T, s, false)
				}
				v = src[s]
			}
			if n.Async {
				if in.mode == Storage || !n.Dst.T.Type.IsFloat() {
					v = n.Dst.T.Type.Round(v)
				}
				if n.Bar != nil {
					offs, vals = append(offs, d), append(vals, v)
					continue
				}
				in.th.issueAsync(n.Dst.T, d, v)
			} else {
				in.store(n.Dst.T, d, v)
			}
		}
	}
	if n.Bar != nil {
		in.issueBulk(*n.Bar, n.Dst.T, offs, vals)
	}
}
