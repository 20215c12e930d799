package passes

import (
	"math"

	"github.com/kgen-dev/kgen/ir"
)

// Vectorize groups each innermost unit-step loop of the non-GEMM nests into chunks of W iterations
// (W = the target's vector bytes / element size, or the factor of a vectorize directive), marked Vector,
// followed by a serial remainder loop.
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
				if w < 2 || constTrip(x) < w {
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

func vectorizeLoop(l *ir.Loop, w int, n namer) []ir.Node {
	car := carried(l.Body)
	if len(car) == 0 {
		nodes := replicate(l, w, ir.Vector, n)
		nodes[0].(*ir.Loop).Lane = &ir.Lane{Body: l.Body}
		return nodes
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
	// partial accumulators
	var pre []ir.Node
	parts := make([]*ir.LocalVar, w)
	for lane := range parts {
		parts[lane] = &ir.LocalVar{Name: n.name(upd.L.Name + "v"), T: upd.L.T}
		pre = append(pre, &ir.Decl{L: parts[lane], Init: &ir.Const{Val: identity(b.Op), T: upd.L.T}})
	}
	end := splitEnd(l, w)
	rem := remainder(l, end, n)
	var body []ir.Node
	for lane := 0; lane < w; lane++ {
		body = append(body, cloneBody(l.Body, map[*ir.Var]ir.IExpr{l.Var: ir.IAdd(ir.IVar{V: l.Var}, ir.IConst{V: lane})},
			map[*ir.LocalVar]*ir.LocalVar{upd.L: parts[lane]}, n)...)
	}
	main := &ir.Loop{Var: l.Var, Lo: l.Lo, Hi: end, Step: ir.IConst{V: w}, Kind: ir.Vector, Width: w, Body: body,
		Lane: &ir.Lane{Body: l.Body, Acc: upd.L, Op: b.Op, Parts: parts}}
	// combine pairwise: ((p0 op p1) op (p2 op p3)) ...
	terms := make([]ir.Expr, w)
	for i, p := range parts {
		terms[i] = &ir.Local{L: p}
	}
	for len(terms) > 1 {
		var next []ir.Expr
		for i := 0; i+1 < len(terms); i += 2 {
			next = append(next, &ir.Binary{Op: b.Op, X: terms[i], Y: terms[i+1], T: b.T})
		}
		if len(terms)%2 == 1 {
			next = append(next, terms[len(terms)-1])
		}
		terms = next
	}
	combine := &ir.Assign{L: upd.L, Value: &ir.Binary{Op: b.Op, X: &ir.Local{L: upd.L}, Y: terms[0], T: b.T}}
	out := append(pre, main, combine, rem)
	return out
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
