package golang

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/ir"
)

// microGo emits the portable MR×NR microkernel of element type elem (F32 or F64) from the MMA form of
// the microkernel contract: one ir.Micro call on packed panels, written as MMA nodes by ir.Micro.AsMMA
// (the same nodes passes.MicroToMMA, MMALower and the interpreter use), so the Go microkernel computes
// what the IR says and nothing is restated by hand:
//
//   - the AccDecl's M×N thread-scope tile becomes M·N local accumulators;
//   - the MMA's operand layouts give each element's offset in its panel, which must be affine in the
//     K position p with one stride per operand (panels: p·MR + i and p·NR + j); the K loop takes 4 steps
//     per trip through array pointers ((*[4·S]T)(a[i:i+4·S]): one length check per operand per trip),
//     then single steps, and updates every accumulator in the MMA's order (p outermost);
//   - the whole register tile is computed: an accumulator element (i, j) depends only on row i of Ã and
//     column j of B̃, so the rows and columns past m and n (the MMA's ValidM, ValidN) change nothing that
//     is stored;
//   - the AccStore's epilogue expression is emitted by the backend's expression printer, its selects
//     that extend a value (x, or x plus a term) as a local and an if statement, so that a branch reading
//     C or the bias runs only when the select takes it (beta = 0: C not read; no bias: not read).
func microGo(mod, name string, elem ir.DType, mr, nr int) (string, error) {
	dim := func(n string) *ir.Dim { return &ir.Dim{Name: n} }
	kc, m, n, ldc := dim("kc"), dim("m"), dim("n"), dim("ldc")
	buf := func(n string) *ir.Tensor { return &ir.Tensor{Name: n, Type: elem, Kind: ir.Scratch} }
	scalar := func(n string, t ir.DType) *ir.Tensor { return &ir.Tensor{Name: n, Type: t, Kind: ir.Scalar} }
	zero := ir.IConst{V: 0}
	u := &ir.Micro{Slot: name, Elem: elem, MR: ir.IConst{V: mr}, NR: ir.IConst{V: nr}, KC: ir.IDim{D: kc},
		A: ir.Operand{T: buf("a"), Off: zero, Layout: &ir.Panel{Width: ir.IConst{V: mr}, Depth: ir.IDim{D: kc}}},
		B: ir.Operand{T: buf("b"), Off: zero, Layout: &ir.Panel{Width: ir.IConst{V: nr}, Depth: ir.IDim{D: kc}, ByCol: true}},
		C: buf("c"), COff: zero, LDC: ir.IDim{D: ldc},
		M: ir.IDim{D: m}, N: ir.IDim{D: n}, Alpha: &ir.Load{T: scalar("alpha", elem)}, Beta: &ir.Load{T: scalar("beta", elem)},
		Bias: buf("bias"), BiasOff: zero, EP: &ir.Load{T: scalar("ep32", ir.I32)}}
	names := map[string]string{"acc": "acc", "ui": "i", "uj": "j"}
	nodes := u.AsMMA(func(base string) string { return names[base] })
	if len(nodes) != 3 {
		return "", fmt.Errorf("microkernel %s: the contract has no MMA form", name)
	}
	decl, ok1 := nodes[0].(*ir.AccDecl)
	mma, ok2 := nodes[1].(*ir.MMA)
	store, ok3 := nodes[2].(*ir.AccStore)
	if !ok1 || !ok2 || !ok3 {
		return "", fmt.Errorf("microkernel %s: unexpected MMA form %T %T %T", name, nodes[0], nodes[1], nodes[2])
	}
	tm, okM := decl.Acc.M.(ir.IConst)
	tn, okN := decl.Acc.N.(ir.IConst)
	if !okM || !okN {
		return "", fmt.Errorf("microkernel %s: the register tile %sx%s is not constant", name, decl.Acc.M, decl.Acc.N)
	}
	a, err := panelOffsetsOf(mma.A, tm.V, func(i, p int) (ir.IExpr, ir.IExpr) { return ir.IConst{V: i}, ir.IConst{V: p} })
	if err != nil {
		return "", fmt.Errorf("microkernel %s, operand A: %v", name, err)
	}
	b, err := panelOffsetsOf(mma.B, tn.V, func(j, p int) (ir.IExpr, ir.IExpr) { return ir.IConst{V: p}, ir.IConst{V: j} })
	if err != nil {
		return "", fmt.Errorf("microkernel %s, operand B: %v", name, err)
	}

	g := &gen{mod: mod, imports: map[string]bool{}}
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	ft := goType(elem)
	w("// %s is the portable %dx%d microkernel (docs/MICROKERNEL.md), emitted from the contract's MMA form.\n", name, tm.V, tn.V)
	w("func %s(kc int, a, b, c []%s, ldc, m, n int, alpha, beta %s, bias []%s, ep int) {\n", name, ft, ft, ft)
	acc := func(i, j int) string { return fmt.Sprintf("c%d_%d", i, j) }
	var accs []string
	for i := 0; i < tm.V; i++ {
		for j := 0; j < tn.V; j++ {
			accs = append(accs, acc(i, j))
		}
	}
	w("\tvar %s %s\n", strings.Join(accs, ", "), ft)
	w("\ta, b = a[:kc*%d], b[:kc*%d]\n", a.stride, b.stride)
	w("\ti, j := 0, 0\n")
	for _, u := range []int{4, 1} {
		w("\tfor ; i+%d <= len(a) && j+%d <= len(b); i, j = i+%d, j+%d {\n", u*a.stride, u*b.stride, u*a.stride, u*b.stride)
		w("\t\tap := (*[%d]%s)(a[i : i+%d])\n", u*a.stride, ft, u*a.stride)
		w("\t\tbp := (*[%d]%s)(b[j : j+%d])\n", u*b.stride, ft, u*b.stride)
		for s := 0; s < u; s++ {
			for i := 0; i < tm.V; i++ {
				for j := 0; j < tn.V; j++ {
					w("\t\t%s += ap[%d] * bp[%d]\n", acc(i, j), s*a.stride+a.at[i], s*b.stride+b.at[j])
				}
			}
		}
		w("\t}\n")
	}
	w("\tacc := [%d][%d]%s{", tm.V, tn.V, ft)
	for i := 0; i < tm.V; i++ {
		w("{")
		for j := 0; j < tn.V; j++ {
			w("%s, ", acc(i, j))
		}
		w("}, ")
	}
	w("}\n")
	w("\tep32 := int32(ep)\n")
	w("\tfor %s := 0; %s < %s; %s++ {\n", store.I.Name, store.I.Name, g.iexpr(store.M), store.I.Name)
	w("\t\tfor %s := 0; %s < %s; %s++ {\n", store.J.Name, store.J.Name, g.iexpr(store.N), store.J.Name)
	accAt := &ir.Local{L: &ir.LocalVar{Name: fmt.Sprintf("acc[%s][%s]", store.I.Name, store.J.Name), T: elem}}
	v := g.chain(&sb, "\t\t\t", store.Value, elem, func(e ir.Expr) string {
		return g.exprTop(ir.Rewrite(e, func(x ir.Expr) ir.Expr {
			if _, ok := x.(*ir.AccVal); ok {
				return accAt
			}
			return x
		}))
	})
	w("\t\t\t%s[%s] = %s\n", store.Out.Name, g.offset(store.Out, store.Idx), v)
	w("\t\t}\n\t}\n}\n")
	return sb.String(), nil
}

// panelOffsets are an operand's element offsets in its buffer, affine in the K position p: at[x] + p·stride
// for x < width (x the row of A or the column of B).
type panelOffsets struct {
	at     []int
	stride int
}

// panelOffsets evaluates o's layout at (x, p) for x < width and p < 4 through rc (which orders x and p
// as the layout's row and column) and checks that the offsets are constants, affine in p with one stride.
func panelOffsetsOf(o ir.Operand, width int, rc func(x, p int) (ir.IExpr, ir.IExpr)) (panelOffsets, error) {
	off := func(x, p int) (int, error) {
		r, c := rc(x, p)
		e := ir.Simplify(ir.IAdd(o.Off, o.Layout.Offset(r, c)))
		k, ok := e.(ir.IConst)
		if !ok {
			return 0, fmt.Errorf("offset of (%d, %d) is %s, not a constant", x, p, e)
		}
		return k.V, nil
	}
	var out panelOffsets
	o0, err := off(0, 0)
	if err != nil {
		return out, err
	}
	o1, err := off(0, 1)
	if err != nil {
		return out, err
	}
	out.stride = o1 - o0
	for x := 0; x < width; x++ {
		base, err := off(x, 0)
		if err != nil {
			return out, err
		}
		for p := 1; p < 4; p++ {
			if v, err := off(x, p); err != nil || v != base+p*out.stride {
				return out, fmt.Errorf("layout %s is not affine in K with stride %d", o.Layout, out.stride)
			}
		}
		if base < 0 || base >= out.stride {
			return out, fmt.Errorf("layout %s: element %d at %d, outside one K step of %d", o.Layout, x, base, out.stride)
		}
		out.at = append(out.at, base)
	}
	return out, nil
}

// chain emits, at indent, statements that compute e into a local and returns the local's name. A select
// one of whose branches is the other extended (Select(c, x, x + t), Select(c, f(x), x), x the same node)
// becomes the local x and an if statement that extends it, so the extension — and what it reads — runs
// only when taken; anything else is one assignment. render prints an expression.
func (g *gen) chain(sb *strings.Builder, indent string, e ir.Expr, t ir.DType, render func(ir.Expr) string) string {
	if s, ok := e.(*ir.Select); ok {
		for _, side := range []struct {
			base, ext ir.Expr
			neg       bool
		}{{s.A, s.B, true}, {s.B, s.A, false}} {
			if !containsExpr(side.ext, side.base) {
				continue
			}
			v := g.chain(sb, indent, side.base, t, render)
			ext := replaceExpr(side.ext, side.base, &ir.Local{L: &ir.LocalVar{Name: v, T: t}})
			fmt.Fprintf(sb, "%sif %s {\n%s\t%s = %s\n%s}\n", indent, g.cond(s.C, side.neg, render), indent, v, render(ext), indent)
			return v
		}
	}
	fmt.Fprintf(sb, "%sv := %s\n", indent, render(e))
	return "v"
}

// replaceExpr returns e with every occurrence of the node x (by identity) replaced by with.
func replaceExpr(e, x, with ir.Expr) ir.Expr {
	if e == x {
		return with
	}
	switch n := e.(type) {
	case *ir.Unary:
		c := *n
		c.X = replaceExpr(n.X, x, with)
		return &c
	case *ir.Binary:
		c := *n
		c.X, c.Y = replaceExpr(n.X, x, with), replaceExpr(n.Y, x, with)
		return &c
	case *ir.Select:
		c := *n
		c.C, c.A, c.B = replaceExpr(n.C, x, with), replaceExpr(n.A, x, with), replaceExpr(n.B, x, with)
		return &c
	case *ir.Cast:
		c := *n
		c.X = replaceExpr(n.X, x, with)
		return &c
	}
	return e
}

// cond renders a condition, negated when neg (x == y negates to x != y, which holds for NaN as !(x == y)
// does; other conditions are wrapped in !(...)).
func (g *gen) cond(c ir.Expr, neg bool, render func(ir.Expr) string) string {
	if !neg {
		return render(c)
	}
	if b, ok := c.(*ir.Binary); ok && b.Op == ir.Eq {
		n := *b
		n.Op = ir.Ne
		return render(&n)
	}
	return "!(" + render(c) + ")"
}

// containsExpr reports whether x occurs (as the same node) in e.
func containsExpr(e, x ir.Expr) bool {
	found := false
	ir.Walk(e, func(y ir.Expr) {
		if y == x {
			found = true
		}
	})
	return found
}
