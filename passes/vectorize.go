package passes

import (
	"math"

	"github.com/kgen-dev/kgen/ir"
)

// Vectorize groups each innermost unit-step loop of the non-GEMM nests into chunks of W iterations
// (W = the target's vector bytes / element size, or the factor of a vectorize directive), marked Vector,
// followed by a serial remainder loop. A loop that only an unroll directive names stays serial for the
// unroll pass.
//   - Elementwise bodies (no loop-carried local) become W independent lanes.
//   - A reduction body `acc = acc op e` (op +, max, min) gets W partial accumulators, one per lane,
//     combined into acc after the vector loop: this breaks the dependency chain so lanes run in parallel.
//     It reassociates the reduction; for sums the result changes within the usual γ_K error bound.
//   - Other loop-carried bodies are left alone.
func Vectorize(f *ir.Func, c *Context) (bool, error) {
	changed := false
	n := funcNamer(f)
	var walk func(body []ir.Node) []ir.Node
	walk = func(body []ir.Node) []ir.Node {
		var out []ir.Node
		for _, node := range body {
			switch x := node.(type) {
			case *ir.Nest:
				x.Body = walk(x.Body)
			case *ir.Alloc:
				x.Body = walk(x.Body)
			case *ir.Loop:
				if x.Kind != ir.Serial || !innermost(x) || !unitStep(x) {
					x.Body = walk(x.Body)
					break
				}
				w := vectorWidth(x, c)
				if w < 2 || constTrip(x) < w || unrollOnly(x, c) {
					break
				}
				if nodes := vectorizeLoop(x, w, n); nodes != nil {
					out = append(out, nodes...)
					changed = true
					continue
				}
			}
			out = append(out, node)
		}
		return out
	}
	f.Body = walk(f.Body)
	return changed, nil
}

// unrollOnly reports whether an unroll directive, and no vectorize directive, names l: the schedule
// asks for its body replicated in order (the unroll pass), which grouping it into lanes would preempt.
func unrollOnly(l *ir.Loop, c *Context) bool {
	_, unroll := c.sizes("unroll", l.Var.Name)
	_, vec := c.sizes("vectorize", l.Var.Name)
	return unroll && !vec
}

// constTrip is l's trip count when its bounds are constants (a window reduction, r < 2), else MaxInt.
func constTrip(l *ir.Loop) int {
	lo, ok1 := l.Lo.(ir.IConst)
	hi, ok2 := l.Hi.(ir.IConst)
	if !ok1 || !ok2 {
		return math.MaxInt
	}
	return hi.V - lo.V
}

func unitStep(l *ir.Loop) bool {
	s, ok := l.Step.(ir.IConst)
	return ok && s.V == 1
}

// vectorWidth is the lane count for l: a directive's factor, or vector bytes / element size of what the
// loop stores or accumulates.
func vectorWidth(l *ir.Loop, c *Context) int {
	if s, ok := c.sizes("vectorize", l.Var.Name); ok && len(s) == 1 {
		return s[0]
	}
	size := 0
	for _, node := range l.Body {
		switch x := node.(type) {
		case *ir.Store:
			size = max(size, x.T.Type.Compute().Size())
		case *ir.Assign:
			size = max(size, x.L.T.Size())
		}
	}
	if size == 0 {
		return 0
	}
	return c.Machine.VecBytes / size
}

// vectorizeLoop makes l a Vector loop of width w over its whole groups, its body unchanged (it is the
// lane body, ir/vector.go), followed by the remainder loop; nil if the body does not fit the lane form.
func vectorizeLoop(l *ir.Loop, w int, n namer) []ir.Node {
	end := splitEnd(l, w)
	main := func(r *ir.LaneReduce) *ir.Loop {
		return &ir.Loop{Var: l.Var, Lo: l.Lo, Hi: end, Step: ir.IConst{V: w}, Kind: ir.Vector, Width: w, Body: l.Body, Reduce: r}
	}
	car := carried(l.Body)
	if len(car) == 0 {
		rem := remainder(l, end, n)
		return []ir.Node{main(nil), rem}
	}
	if len(car) != 1 || len(l.Body) == 0 || l.Body[len(l.Body)-1] != ir.Node(car[0]) {
		return nil
	}
	upd := car[0]
	b, ok := upd.Value.(*ir.Binary)
	if !ok || (b.Op != ir.Add && b.Op != ir.Max && b.Op != ir.Min) {
		return nil
	}
	if x, ok := b.X.(*ir.Local); !ok || x.L != upd.L || usesLocal(b.Y, upd.L) {
		return nil
	}
	for _, node := range l.Body[:len(l.Body)-1] {
		bad := false
		ir.NodeExprs(node, func(e ir.Expr) { bad = bad || usesLocal(e, upd.L) })
		if bad {
			return nil
		}
	}
	// the per-lane partial accumulators, declared before the loop at the operator's identity
	var pre []ir.Node
	r := &ir.LaneReduce{Acc: upd.L, Op: b.Op, Parts: make([]*ir.LocalVar, w)}
	for lane := range r.Parts {
		r.Parts[lane] = &ir.LocalVar{Name: n.name(upd.L.Name + "v"), T: upd.L.T}
		pre = append(pre, &ir.Decl{L: r.Parts[lane], Init: &ir.Const{Val: identity(b.Op), T: upd.L.T}})
	}
	rem := remainder(l, end, n)
	return append(pre, main(r), r.Combine(), rem)
}

func usesLocal(e ir.Expr, l *ir.LocalVar) bool {
	found := false
	ir.Walk(e, func(x ir.Expr) {
		if y, ok := x.(*ir.Local); ok && y.L == l {
			found = true
		}
	})
	return found
}
