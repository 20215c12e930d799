package codegen

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/ir"
)

// VLoop describes one "vector-loop slot": a Vector loop of the loop IR (made by the vectorize pass) that
// a SIMD backend may run instead of the portable Go loop. The portable backend emits, for each VLoop, a
// package-level variable
//
//	var <Var> func(lo, hi int, t0 []S0, o0 int, ..., c0 T, ...) int          (elementwise)
//	var <Var> func(lo, hi int, t0 []S0, o0 int, ..., c0 T, ...) (int, T)     (reduction)
//
// where T is the compute type Elem (float32 or float64) and Sk the storage type of access k: T itself,
// or f16.F16 (kgen's f16 package) for an f16 tensor of an f32 loop. An f16 access is storage only: a
// load widens exactly (f16.F16.Float32) and a store narrows with round-to-nearest-even exactly like
// f16.FromFloat32 (overflow to ±Inf, subnormals kept, NaN stored as the quiet NaN sign|0x7e00, payload
// dropped); a cast to f16 in the lane body is that narrowing followed by the widening. bf16 tensors are
// not part of the contract (their loops keep the Go code).
//
// One exception, for loops whose every access is f16 and whose invariants are f16 values (arm64 with
// FEAT_FP16, codegen/arm64/fp16.go): a backend may compute such a loop on f16 lanes directly when every
// arithmetic step (+ - * / sqrt) takes f16 values and is rounded to f16 at once (by the store or a cast),
// the other operations being neg, abs, max, min and relu. That stores exactly the bits above (double
// rounding through f32 is innocuous: 24 ≥ 2·11+2), except that (1) a stored value a*b+c of f16 values is
// rounded once (fused) instead of to f32 and then to f16, so it may differ by one step in f16 order
// (65504 and Inf being neighbours), and (2) when several operands of one operation are NaN, the sign of
// the stored NaN (still sign|0x7e00) is unspecified.
//
// nil in the "go" variant, and before the loop's Go code a guarded call that passes:
//   - lo, hi: the part of the Vector loop still to run (hi - lo is a multiple of Width);
//   - for each unit-stride access k of the lane body (Accesses), the whole slice tk of its tensor and
//     ok, the flat element offset the access touches in iteration lo (iteration v touches
//     tk[ok + v - lo]);
//   - for each loop-invariant subexpression i of the lane body (Invariants), its value ci, computed by the
//     caller once (in the loop's compute type).
//
// The slot runs iterations [lo, next) for some next with lo <= next <= hi and (next-lo) % Width == 0,
// returns next, and the caller runs [next, hi) with its own code. A reduction slot also returns the
// reduction (Loop.Reduce.Op) of the lane values over [lo, next) and the caller folds it into the first partial
// accumulator; it may reassociate, like the vectorize pass. A slot must touch only tk[ok : ok+next-lo]; it
// checks the slice bounds itself and returns next == lo when they do not hold (the Go loop then runs and
// reports the error as it would have).
//
// VLoops holds only loops whose memory accesses fit this contract (see VLoops); whether a backend can
// compute the lane body's operations is the backend's decision (it leaves the variable nil otherwise).
// PackageVLoops adds the synthetic conversion loops of PackVLoops.
type VLoop struct {
	Var    string   // Go variable name: vloop_<kernel>_<n>
	Loop   *ir.Loop // the Vector loop (its Body is the lane body, ir/vector.go)
	Elem   ir.DType // compute type of every operand (F32 or F64), and storage type of every access but f16 ones
	Access []Access // unit-stride accesses, argument order
	// Invariants are the maximal loop-invariant subexpressions of the lane body, argument order.
	Invariants []ir.Expr
	acc        map[string]int
	inv        map[ir.Expr]int
}

// Access is one unit-stride memory access of a lane body: tensor T at Idx (in terms of the loop
// variable); Store says whether the lane body writes it. T.Type is the loop's Elem or, in an F32 loop,
// F16 (storage only: see VLoop).
type Access struct {
	T     *ir.Tensor
	Idx   []ir.IExpr
	Store bool
}

// F16 reports whether the access reads or writes f16 storage.
func (a Access) F16() bool { return a.T.Type == ir.F16 }

// HasF16 reports whether any access of v is f16 storage.
func (v *VLoop) HasF16() bool {
	for _, a := range v.Access {
		if a.F16() {
			return true
		}
	}
	return false
}

// ImplsNeedF16 reports whether the adapters of impls mention kgen's f16 package (a dispatch file
// importing it lists "<module>/f16" among DispatchFile's imports).
func ImplsNeedF16(impls []VLoopImpl) bool {
	for _, i := range impls {
		if i.VLoop.HasF16() {
			return true
		}
	}
	return false
}

// sliceType is the Go element type of access a's slice.
func (v *VLoop) sliceType(a Access) string {
	if a.F16() {
		return "f16.F16"
	}
	return goFloat(v.Elem)
}

// Reduction reports whether v is a reduction loop.
func (v *VLoop) Reduction() bool { return v.Loop.Reduce != nil }

// AccessOf returns the argument index of the access of t at idx.
func (v *VLoop) AccessOf(t *ir.Tensor, idx []ir.IExpr) (int, bool) {
	k, ok := v.acc[accessKey(t, idx)]
	return k, ok
}

// InvariantOf returns the argument index of e if e is one of v's invariants.
func (v *VLoop) InvariantOf(e ir.Expr) (int, bool) {
	k, ok := v.inv[e]
	return k, ok
}

func accessKey(t *ir.Tensor, idx []ir.IExpr) string {
	s := make([]string, len(idx))
	for i, e := range idx {
		s[i] = e.String()
	}
	return fmt.Sprintf("%p[%s]", t, strings.Join(s, ","))
}

// GoType is the Go type of an element.
func GoType(t ir.DType) string { return goFloat(t) }

// Signature is the Go function type of the slot.
func (v *VLoop) Signature() string {
	t := goFloat(v.Elem)
	ps := []string{"lo, hi int"}
	for k, a := range v.Access {
		ps = append(ps, fmt.Sprintf("t%d []%s, o%d int", k, v.sliceType(a), k))
	}
	for i := range v.Invariants {
		ps = append(ps, fmt.Sprintf("c%d %s", i, t))
	}
	res := "int"
	if v.Reduction() {
		res = "(int, " + t + ")"
	}
	return "func(" + strings.Join(ps, ", ") + ") " + res
}

// VLoops lists the vector-loop slots of a kernel, in the order of its loop IR.
func VLoops(k Kernel) []*VLoop {
	var out []*VLoop
	ir.WalkNodes(k.F.Body, func(n ir.Node) bool {
		l, ok := n.(*ir.Loop)
		if !ok || l.Kind != ir.Vector {
			return true
		}
		if v := analyse(l); v != nil {
			v.Var = VLoopVar(k.K.Name, len(out))
			out = append(out, v)
		}
		return false
	})
	return out
}

// PackageVLoops lists the vector-loop slots of every kernel of p, in kernel order, then those of
// PackVLoops.
func PackageVLoops(p *Package) []*VLoop {
	var out []*VLoop
	for _, k := range p.Kernels {
		out = append(out, VLoops(k)...)
	}
	return append(out, PackVLoops(p)...)
}

// PackVLoops lists the synthetic vector loops the packing code of p needs (not loops of any kernel):
// the f16 → f32 widening (CvtF16F32) when a Pack reads an f16 tensor.
func PackVLoops(p *Package) []*VLoop {
	need := false
	for _, k := range p.Kernels {
		ir.WalkNodes(k.F.Body, func(n ir.Node) bool {
			if pk, ok := n.(*ir.Pack); ok && PackReadsF16(pk) {
				need = true
			}
			return !need
		})
	}
	if !need {
		return nil
	}
	i := &ir.Var{Name: "i"}
	n := &ir.Dim{Name: "n"}
	src := &ir.Tensor{Name: "src", Type: ir.F16, Shape: []*ir.Dim{n}, Kind: ir.In}
	dst := &ir.Tensor{Name: "dst", Type: ir.F32, Shape: []*ir.Dim{n}, Kind: ir.Out}
	idx := []ir.IExpr{ir.IVar{V: i}}
	lane := []ir.Node{&ir.Store{T: dst, Idx: idx, Value: &ir.Cast{T: ir.F32, X: &ir.Load{T: src, Idx: idx}}}}
	l := &ir.Loop{Var: i, Lo: ir.IConst{V: 0}, Hi: ir.IDim{D: n}, Step: ir.IConst{V: 4}, Kind: ir.Vector, Width: 4, Body: lane}
	v := analyse(l)
	if v == nil {
		panic("codegen: the f16 conversion loop does not fit the vector-loop contract")
	}
	v.Var = CvtF16F32
	return []*VLoop{v}
}

// PackReadsF16 reports whether a Pack's value is a load of an f16 tensor, possibly widened to f32: the
// copies the portable backend converts through cvtF16F32.
func PackReadsF16(p *ir.Pack) bool {
	v := p.Value
	if c, ok := v.(*ir.Cast); ok {
		if c.T != ir.F32 {
			return false
		}
		v = c.X
	}
	l, ok := v.(*ir.Load)
	return ok && l.T.Type == ir.F16 && l.T.Kind != ir.Scratch && len(l.Idx) > 0
}

// analyse checks that l fits the slot contract and collects its arguments; nil if it does not fit.
func analyse(l *ir.Loop) *VLoop {
	v := &VLoop{Loop: l, acc: map[string]int{}, inv: map[ir.Expr]int{}}
	inner := map[*ir.LocalVar]bool{}
	stored := map[*ir.Tensor]bool{}
	red := l.Reduce
	for _, n := range l.Body {
		switch x := n.(type) {
		case *ir.Decl:
			inner[x.L] = true
		case *ir.Store:
			stored[x.T] = true
		case *ir.Assign:
			if !inner[x.L] && (red == nil || x.L != red.Acc) {
				return nil
			}
		default:
			return nil
		}
	}
	if red != nil {
		inner[red.Acc] = true
	}
	ok := true
	elem := ir.DType(0)
	setElem := func(t ir.DType) {
		if t != ir.F32 && t != ir.F64 {
			ok = false
			return
		}
		if elem == 0 {
			elem = t
		} else if elem != t {
			ok = false
		}
	}
	addAccess := func(t *ir.Tensor, idx []ir.IExpr, store bool) {
		// f16 is storage for an f32 loop; other narrow or integer types are outside the contract.
		if t.Kind == ir.Scalar || (t.Type != t.Type.Compute() && t.Type != ir.F16) {
			ok = false
			return
		}
		setElem(t.Type.Compute())
		if ir.Stride(idx, l.Var) != 1 {
			ok = false
			return
		}
		key := accessKey(t, idx)
		if k, seen := v.acc[key]; seen {
			v.Access[k].Store = v.Access[k].Store || store
			return
		}
		v.acc[key] = len(v.Access)
		v.Access = append(v.Access, Access{T: t, Idx: idx, Store: store})
	}
	// variant reports whether e depends on the iteration.
	var variant func(e ir.Expr) bool
	variant = func(e ir.Expr) bool {
		dep := false
		ir.Walk(e, func(x ir.Expr) {
			switch x := x.(type) {
			case *ir.Load:
				for _, ix := range x.Idx {
					ir.IVars(ix, func(w *ir.Var) { dep = dep || w == l.Var })
				}
			case *ir.Local:
				dep = dep || inner[x.L]
			case *ir.VarVal:
				dep = dep || x.V == l.Var
			}
		})
		return dep
	}
	var visit func(e ir.Expr)
	visit = func(e ir.Expr) {
		if !ok {
			return
		}
		if !variant(e) {
			// A loop-invariant value: read once by the caller. It must not read what the loop writes.
			ir.Walk(e, func(x ir.Expr) {
				if ld, isLoad := x.(*ir.Load); isLoad && stored[ld.T] {
					ok = false
				}
				if _, isRed := x.(*ir.Reduce); isRed {
					ok = false
				}
			})
			setElem(e.Type().Compute())
			if _, seen := v.inv[e]; !seen {
				v.inv[e] = len(v.Invariants)
				v.Invariants = append(v.Invariants, e)
			}
			return
		}
		switch x := e.(type) {
		case *ir.Load:
			addAccess(x.T, x.Idx, false)
		case *ir.Local:
		case *ir.VarVal:
			ok = false // the loop variable as a value: not part of the contract
		case *ir.Unary:
			visit(x.X)
		case *ir.Binary:
			visit(x.X)
			visit(x.Y)
		case *ir.Cast:
			visit(x.X)
		case *ir.Select:
			visit(x.C)
			visit(x.A)
			visit(x.B)
		default:
			ok = false
		}
	}
	for _, n := range l.Body {
		switch x := n.(type) {
		case *ir.Decl:
			setElem(x.L.T.Compute())
			visit(x.Init)
		case *ir.Assign:
			setElem(x.L.T.Compute())
			if red != nil && x.L == red.Acc {
				b, isBin := x.Value.(*ir.Binary)
				if !isBin || b.Op != red.Op {
					return nil
				}
				if loc, isLoc := b.X.(*ir.Local); !isLoc || loc.L != red.Acc {
					return nil
				}
				visit(b.Y)
			} else {
				visit(x.Value)
			}
		case *ir.Store:
			visit(x.Value)
			addAccess(x.T, x.Idx, true)
		}
	}
	if !ok || elem == 0 {
		return nil
	}
	// A tensor the loop writes may be read only at the index it is written at (lanes are independent).
	for k, a := range v.Access {
		if !stored[a.T] {
			continue
		}
		for j, b := range v.Access {
			if j != k && b.T == a.T {
				return nil
			}
		}
	}
	v.Elem = elem
	return v
}

// VLoopImpl points a vector-loop slot at a backend function in a variant: Func is the Go name of an
// assembly function with the signature
//
//	func(n int, p0 *P0, ..., c0 T, ...)       (elementwise)
//	func(n int, p0 *P0, ..., c0 T, ...) T     (reduction)
//
// that runs n ≥ 1 groups of Lanes iterations, pk pointing at the element access k touches in the first
// iteration (Pk is T, or uint16 for an f16 access: the bits of an f16.F16), ci the invariants; a
// reduction returns the reduction of its lane values.
//
// Counted marks a function whose n counts iterations instead of groups: it runs any n ≥ 1 iterations
// (the last partial group under a mask, touching no element past the n-th), so its adapter hands it the
// whole [lo, hi) and returns hi (amd64 avx512: opmask tails).
//
// Alt optionally names a second function with the same signature and Lanes that needs an optional
// extension of the variant's ISA: the variant installs Alt.Func when the Go expression Alt.Cond holds
// at run time and Func otherwise (arm64: the FP16 routine of an all-f16 loop, Alt.Cond testing
// FEAT_FP16, with the FCVTL/FCVTN routine as the fallback). Both must meet the slot contract; where
// their results may differ (rounding), the backend documents it.
type VLoopImpl struct {
	VLoop   *VLoop
	Func    string
	Lanes   int
	Counted bool
	Alt     VLoopAlt
}

// VLoopAlt is the conditional alternative of a VLoopImpl; the zero value is none.
type VLoopAlt struct {
	Func string // Go name of the assembly function ("" for none)
	Cond string // Go expression evaluated when the variant is installed, e.g. "cpu.ARM64.HasASIMDHP"
}

// adapter is the Go name of the slot-signature function wrapping an implementation.
func (i VLoopImpl) adapter() string { return i.Func + "Slot" }

// alt is the implementation of i's alternative (with no alternative of its own).
func (i VLoopImpl) alt() VLoopImpl {
	return VLoopImpl{VLoop: i.VLoop, Func: i.Alt.Func, Lanes: i.Lanes, Counted: i.Counted}
}

// writeVLoopAdapter emits the function adapting an implementation to the slot's signature: it runs as
// many whole groups of Lanes iterations as [lo, hi) holds, after checking that every access stays inside
// its slice.
func writeVLoopAdapter(b *bytes.Buffer, i VLoopImpl) {
	v := i.VLoop
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	sig := strings.TrimPrefix(v.Signature(), "func")
	if i.Counted {
		w("// %s runs %s (a Vector loop of the loop IR) through %s, %d lanes at a time and the rest under a mask.\n", i.adapter(), v.Var, i.Func, i.Lanes)
	} else {
		w("// %s runs %s (a Vector loop of the loop IR) through %s, %d lanes at a time.\n", i.adapter(), v.Var, i.Func, i.Lanes)
	}
	w("func %s%s {\n", i.adapter(), sig)
	fail := "lo"
	if v.Reduction() {
		fail = "lo, 0"
	}
	step := fmt.Sprintf("*%d", i.Lanes)
	if i.Counted {
		w("\tn := hi - lo\n")
		step = ""
	} else {
		w("\tn := (hi - lo) / %d\n", i.Lanes)
	}
	conds := []string{"n <= 0"}
	for k := range v.Access {
		conds = append(conds, fmt.Sprintf("o%d < 0 || o%d+n%s > len(t%d)", k, k, step, k))
	}
	w("\tif %s {\n\t\treturn %s\n\t}\n", strings.Join(conds, " || "), fail)
	args := []string{"n"}
	for k, a := range v.Access {
		if a.F16() {
			args = append(args, fmt.Sprintf("(*uint16)(&t%d[o%d])", k, k))
		} else {
			args = append(args, fmt.Sprintf("&t%d[o%d]", k, k))
		}
	}
	for c := range v.Invariants {
		args = append(args, fmt.Sprintf("c%d", c))
	}
	if v.Reduction() {
		w("\treturn lo + n%s, %s(%s)\n}\n\n", step, i.Func, strings.Join(args, ", "))
	} else {
		w("\t%s(%s)\n\treturn lo + n%s\n}\n\n", i.Func, strings.Join(args, ", "), step)
	}
}
