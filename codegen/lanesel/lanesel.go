// Package lanesel is the lane instruction selection of the SIMD backends: the walk that turns the lane
// body of a Vector loop (codegen.VLoop; ir/vector.go) into vector instructions, written once and generic
// over an ISA that emits them (codegen/amd64 with avo, codegen/arm64 with its NEON builder; later
// LLVM). The Driver owns register allocation, the locals of the lane body, the loop-invariant and
// accumulator registers, the evaluation of expressions (casts, unary and binary operations, a*b+c
// contracted to one fused multiply-add), reductions (the accumulator fold in ir.LaneTree order) and the
// masked last group of an ISA with opmasks; the ISA supplies loads, stores, the instructions of each
// operation and the f16 conversions. Math expansions (exp; exp.go) are schedules over ISA steps, their
// constants defined once.
//
// Register allocation is a stack: Alloc pops the most recently released register. The generated code
// depends on that order, so the walk's alloc and release calls are part of its contract with the
// backends' committed output.
package lanesel

import (
	"errors"
	"fmt"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

// ErrUnsupported marks a lane body (or an operation of it) an ISA cannot vectorize.
var ErrUnsupported = errors.New("unsupported")

// ISA emits the instructions of one architecture for the Driver. R is a vector register; O is an
// instruction's source operand, a register or (x86) a memory operand.
type ISA[R comparable, O any] interface {
	// Load returns the vector of the current group's access k, or ok false when the ISA has none
	// (owned: the caller releases it).
	Load(k int) (r R, owned, ok bool)
	// Operand evaluates e as an instruction's second source: a memory operand where the ISA can use
	// one, else a register from Driver.Eval.
	Operand(e ir.Expr) (O, bool)
	// Reg reports whether o is a register, and which.
	Reg(o O) (R, bool)
	// Src is the register r as a source operand.
	Src(r R) O
	// Copy emits dst = src (all lanes).
	Copy(src, dst R)
	// BinOp emits d = x op y for op + - * / max min (NaN propagating); it fails on other operators.
	BinOp(op ir.Op, y O, x, d R)
	// FMA emits acc += a*b, rounded once.
	FMA(acc, a R, b O)
	// Unary emits d = op a for neg, abs, sqrt and relu (exp is the Driver's, exp.go); it fails on
	// other operators.
	Unary(op ir.Op, a, d R)
	// Accumulate emits acc = acc op y when the ISA has a form of its own for it (true), after the
	// Driver's fused multiply-add form was ruled out.
	Accumulate(op ir.Op, y ir.Expr, acc R) bool
	// Store writes r to access k in the current group; StoreF16 narrows r to f16 (NaN as
	// f16.FromFloat32) and writes it, releasing r when owned.
	Store(k int, r R)
	StoreF16(k int, r R, owned bool)
	// CanonNaN returns a new register holding r with every NaN lane made sign|0x7fc00000 (which
	// narrows to f16.FromFloat32's NaN); RoundF16 narrows t to f16 and widens it back in place.
	CanonNaN(r R) R
	RoundF16(t R)
	// HalfLanes reports whether the lanes hold f16 values (an FP16 routine), so that a cast to f16 of
	// an f32 value the routine computes is already rounded.
	HalfLanes() bool
	// Masked reports whether the group being emitted is the masked last one (AVX-512 opmask tail), and
	// MergeMasked moves the lanes of src under the mask into dst.
	Masked() bool
	MergeMasked(src, dst R)
	// BeginGroup starts the j-th group of the unrolled loop body (its accesses at displacement j
	// groups, its accumulator the j-th); EndGroup ends it.
	BeginGroup(j int)
	EndGroup()
	ExpISA[R]
}

// Driver walks the lane body of one vector loop for an ISA.
type Driver[R comparable, O any] struct {
	ISA ISA[R, O]
	V   *codegen.VLoop
	F64 bool // the loop computes in f64 lanes
	// Free is the allocation stack (Alloc pops its last element); Spare is the register returned when
	// allocation or evaluation fails (the emission then continues, to be discarded by the error).
	Free  []R
	Spare R
	// Inv holds the broadcast loop invariants, by codegen.VLoop argument index; Accs the reduction's
	// accumulators, one per unrolled group.
	Inv  []R
	Accs []R
	Err  error

	locals map[*ir.LocalVar]R
}

// New makes a driver for v with the allocation stack free (its last element is allocated first).
func New[R comparable, O any](isa ISA[R, O], v *codegen.VLoop, free []R, spare R) *Driver[R, O] {
	return &Driver[R, O]{ISA: isa, V: v, F64: v.Elem == ir.F64, Free: free, Spare: spare, locals: map[*ir.LocalVar]R{}}
}

// Alloc takes a free register; when none is left it fails.
func (d *Driver[R, O]) Alloc() R {
	if len(d.Free) == 0 {
		d.Fail(fmt.Errorf("out of vector registers"))
		return d.Spare
	}
	r := d.Free[len(d.Free)-1]
	d.Free = d.Free[:len(d.Free)-1]
	return r
}

// Release returns r to the allocation stack.
func (d *Driver[R, O]) Release(r R) { d.Free = append(d.Free, r) }

// Fail records the first error.
func (d *Driver[R, O]) Fail(err error) {
	if d.Err == nil {
		d.Err = err
	}
}

// Invariants gives each loop invariant (codegen.VLoop argument order) a register, which load fills
// (a broadcast of the caller's value).
func (d *Driver[R, O]) Invariants(load func(i int, r R)) {
	for i := range d.V.Invariants {
		r := d.Alloc()
		load(i, r)
		d.Inv = append(d.Inv, r)
	}
}

// Accumulators gives a reduction loop u accumulators (one per unrolled group), which identity sets to
// the identity of the operator in every lane; nothing for an elementwise loop.
func (d *Driver[R, O]) Accumulators(u int, identity func(op ir.Op, r R)) {
	red := d.V.Loop.Reduce
	if red == nil {
		return
	}
	for range u {
		r := d.Alloc()
		identity(red.Op, r)
		d.Accs = append(d.Accs, r)
	}
}

// Group emits the j-th group of the unrolled loop body: the lane body once, on vectors. Locals live in
// registers for the group; the reduction update accumulates into Accs[j].
func (d *Driver[R, O]) Group(j int) {
	d.ISA.BeginGroup(j)
	red := d.V.Loop.Reduce
	var own []R
	for _, n := range d.V.Loop.Body {
		switch x := n.(type) {
		case *ir.Decl:
			r := d.Owned(x.Init)
			d.locals[x.L] = r
			own = append(own, r)
		case *ir.Assign:
			if red != nil && x.L == red.Acc {
				d.Accumulate(red.Op, x.Value.(*ir.Binary).Y, d.Accs[j])
				continue
			}
			old, ok := d.locals[x.L]
			if !ok {
				d.Fail(ErrUnsupported)
				return
			}
			r := d.Owned(x.Value)
			d.locals[x.L] = r
			for i, o := range own {
				if o == old {
					own[i] = r
					d.Release(old)
				}
			}
		case *ir.Store:
			k, ok := d.V.AccessOf(x.T, x.Idx)
			if !ok {
				d.Fail(ErrUnsupported)
				return
			}
			d.store(k, x.Value)
		}
	}
	for _, r := range own {
		d.Release(r)
	}
	d.ISA.EndGroup()
	clear(d.locals)
}

// store evaluates e and writes it to access k (narrowing to f16 for an f16 access: storing a value
// cast to f16 rounds once, so the cast is dropped).
func (d *Driver[R, O]) store(k int, e ir.Expr) {
	if d.V.Access[k].F16() {
		if x, ok := F16Narrowing(e); ok {
			e = x
		}
		r, o := d.Eval(e)
		d.ISA.StoreF16(k, r, o)
		return
	}
	r, o := d.Eval(e)
	d.ISA.Store(k, r)
	if o {
		d.Release(r)
	}
}

// F16Narrowing returns x when e is a cast of the f32 value x to f16.
func F16Narrowing(e ir.Expr) (ir.Expr, bool) {
	if c, ok := e.(*ir.Cast); ok && c.T == ir.F16 && c.X.Type().Compute() == ir.F32 {
		return c.X, true
	}
	return nil, false
}

// Owned evaluates e into a register the caller owns.
func (d *Driver[R, O]) Owned(e ir.Expr) R {
	r, o := d.Eval(e)
	if o {
		return r
	}
	dst := d.Alloc()
	d.ISA.Copy(r, dst)
	return dst
}

// Accumulate emits acc = acc op y; in the masked group only the lanes under the mask change.
func (d *Driver[R, O]) Accumulate(op ir.Op, y ir.Expr, acc R) {
	if d.ISA.Masked() {
		t := d.Alloc()
		d.ISA.Copy(acc, t)
		d.accumulate(op, y, t)
		d.ISA.MergeMasked(t, acc)
		d.Release(t)
		return
	}
	d.accumulate(op, y, acc)
}

func (d *Driver[R, O]) accumulate(op ir.Op, y ir.Expr, acc R) {
	if op == ir.Add {
		if m, ok := y.(*ir.Binary); ok && m.Op == ir.Mul {
			d.fma(m, acc)
			return
		}
	}
	if d.ISA.Accumulate(op, y, acc) {
		return
	}
	r, o := d.ISA.Operand(y)
	d.ISA.BinOp(op, r, acc, acc)
	if rr, isReg := d.ISA.Reg(r); isReg && o {
		d.Release(rr)
	}
}

// fma emits acc += m.X * m.Y.
func (d *Driver[R, O]) fma(m *ir.Binary, acc R) {
	a, ao := d.Eval(m.X)
	b, bo := d.ISA.Operand(m.Y)
	d.ISA.FMA(acc, a, b)
	if ao {
		d.Release(a)
	}
	if r, ok := d.ISA.Reg(b); ok && bo && r != a {
		d.Release(r)
	}
}

// Eval evaluates e into a register; owned says whether the caller must release it.
func (d *Driver[R, O]) Eval(e ir.Expr) (R, bool) {
	if i, ok := d.V.InvariantOf(e); ok {
		return d.Inv[i], false
	}
	switch x := e.(type) {
	case *ir.Local:
		if r, ok := d.locals[x.L]; ok {
			return r, false
		}
	case *ir.Load:
		if k, ok := d.V.AccessOf(x.T, x.Idx); ok {
			if r, o, ok := d.ISA.Load(k); ok {
				return r, o
			}
		}
	case *ir.Cast:
		if x.T.Compute() == x.X.Type().Compute() && x.T == x.T.Compute() {
			return d.Eval(x.X)
		}
		if y, ok := F16Narrowing(x); ok {
			if d.ISA.HalfLanes() {
				return d.Eval(y) // already an f16 value
			}
			// Round through f16: narrow (NaN as f16.FromFloat32) and widen back.
			r, o := d.Eval(y)
			t := d.ISA.CanonNaN(r)
			if o {
				d.Release(r)
			}
			d.ISA.RoundF16(t)
			return t, true
		}
	case *ir.Unary:
		return d.unary(x)
	case *ir.Binary:
		switch x.Op {
		case ir.Add, ir.Sub, ir.Mul, ir.Div, ir.Max, ir.Min:
		default:
			d.Fail(ErrUnsupported)
			return d.Spare, false
		}
		if x.Op == ir.Add {
			for _, p := range [][2]ir.Expr{{x.X, x.Y}, {x.Y, x.X}} {
				if m, ok := p[0].(*ir.Binary); ok && m.Op == ir.Mul {
					acc := d.Owned(p[1])
					d.fma(m, acc)
					return acc, true
				}
			}
		}
		a, ao := d.Eval(x.X)
		b, bo := d.ISA.Operand(x.Y)
		br, isReg := d.ISA.Reg(b)
		var dst R
		switch {
		case ao:
			dst = a
		case bo && isReg:
			dst = br
		default:
			dst = d.Alloc()
		}
		d.ISA.BinOp(x.Op, b, a, dst)
		if bo && isReg && br != dst {
			d.Release(br)
		}
		return dst, true
	}
	d.Fail(ErrUnsupported)
	return d.Spare, false
}

func (d *Driver[R, O]) unary(x *ir.Unary) (R, bool) {
	a, ao := d.Eval(x.X)
	dst := a
	if !ao {
		dst = d.Alloc()
	}
	if x.Op != ir.Exp && x.Op != ir.Sigmoid {
		d.ISA.Unary(x.Op, a, dst)
		return dst, true
	}
	if d.F64 {
		d.Fail(ErrUnsupported)
		return dst, true
	}
	if dst != a {
		d.ISA.Copy(a, dst)
	}
	if x.Op == ir.Sigmoid {
		return d.sigmoid(dst), true
	}
	d.exp(dst)
	return dst, true
}

// Fold combines the accumulators into the first, in ir.LaneTree order, and returns it; the ISA then
// reduces its lanes.
func (d *Driver[R, O]) Fold(op ir.Op) R {
	return ir.LaneTree(d.Accs, func(x, y R) R {
		d.ISA.BinOp(op, d.ISA.Src(y), x, x)
		return x
	})
}

// HasExp reports whether the lane body computes an exp (or a function expanded through one: sigmoid).
func HasExp(body []ir.Node) bool {
	return bodyHas(body, func(e ir.Expr) bool {
		u, ok := e.(*ir.Unary)
		return ok && (u.Op == ir.Exp || u.Op == ir.Sigmoid)
	})
}

// bodyHas reports whether some expression of the straight-line body satisfies f.
func bodyHas(body []ir.Node, f func(ir.Expr) bool) bool {
	found := false
	for _, n := range body {
		ir.NodeExprs(n, func(e ir.Expr) {
			ir.Walk(e, func(x ir.Expr) { found = found || f(x) })
		})
	}
	return found
}

// CastsToF16 reports whether the lane body casts a value to f16.
func CastsToF16(body []ir.Node) bool {
	return bodyHas(body, func(e ir.Expr) bool {
		c, ok := e.(*ir.Cast)
		return ok && c.T == ir.F16
	})
}
