package msl

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/ir"
)

// The argument checks of a generated Metal method are those of the kernel's CPU function (the go
// backend's exported wrapper) written for lengths instead of slices, so that the device-buffer
// method and the host-slice method share them: each dim within rt.MaxDim (rt.DimError), each
// tensor's length equal to the product of its dims (rt.CheckLen), and every affine index of a load
// within its dim for all loop values (rt.Within, rt.Errorf), in that order and with the same
// messages. The generated test TestMetalChecks compares the two on random wrong arguments.

// checkFunc writes `func <kernel>MetalCheck(dims..., <tensor> int...) error`: the CPU function's
// checks on lengths.
func checkFunc(b *strings.Builder, k *ir.Kernel) error {
	var ps []string
	for _, d := range k.Dims {
		ps = append(ps, d.Name+" int")
	}
	for _, t := range k.Params {
		if t.Kind != ir.Scalar {
			ps = append(ps, t.Name+" int")
		}
	}
	fmt.Fprintf(b, "// %sMetalCheck checks the dims and the tensor lengths of %s as its CPU function does.\n", k.Name, k.Name)
	fmt.Fprintf(b, "func %sMetalCheck(%s) error {\n", k.Name, strings.Join(ps, ", "))
	for _, d := range k.Dims {
		fmt.Fprintf(b, "\tif uint(%s) > rt.MaxDim {\n\t\treturn rt.DimError(%q, %q, %s)\n\t}\n", d.Name, k.Name, d.Name, d.Name)
	}
	for _, t := range k.Params {
		if t.Kind == ir.Scalar {
			continue
		}
		var names []string
		for _, d := range t.Shape {
			names = append(names, d.Name)
		}
		shape, dl := "1", ""
		if len(names) > 0 {
			shape, dl = strings.Join(names, "*"), ", "+strings.Join(names, ", ")
		}
		fmt.Fprintf(b, "\tif err := rt.CheckLen(%q, %q, %s, %q%s); err != nil {\n\t\treturn err\n\t}\n", k.Name, t.Name, t.Name, shape, dl)
	}
	if err := boundsChecks(b, k); err != nil {
		return err
	}
	b.WriteString("\treturn nil\n}\n\n")
	return nil
}

// boundsChecks writes, for every load index that is not a plain variable over the tensor's own dim,
// the check that it stays within the dim for every value of its variables.
func boundsChecks(b *strings.Builder, k *ir.Kernel) error {
	seen := map[string]bool{}
	var err error
	for _, s := range k.Stmts {
		ir.Walk(s.Value, func(e ir.Expr) {
			l, ok := e.(*ir.Load)
			if !ok || err != nil {
				return
			}
			for pos, ix := range l.Idx {
				if v, plain := ix.(ir.IVar); plain && v.V.Range == l.T.Shape[pos] {
					continue
				}
				lin, ok := linearize(ix)
				if !ok || lin.size() >= 1<<30 {
					err = fmt.Errorf("msl: kernel %s: index %s of %s: not affine, or coefficients too large", k.Name, ix, l.T.Name)
					return
				}
				lo, hi := haffine{c: lin.c, dims: map[*ir.Dim]int64{}}, haffine{c: lin.c, dims: map[*ir.Dim]int64{}}
				var nonEmpty []string
				for _, t := range lin.terms {
					switch {
					case t.d != nil:
						lo.dims[t.d] += t.a
						hi.dims[t.d] += t.a
						continue
					case t.v.Range == nil: // a window variable with a constant range: never empty
						if t.a > 0 {
							hi.c += t.a * int64(t.v.Const-1)
						} else {
							lo.c += t.a * int64(t.v.Const-1)
						}
						continue
					case t.a > 0:
						hi.dims[t.v.Range] += t.a
						hi.c -= t.a
					default:
						lo.dims[t.v.Range] += t.a
						lo.c -= t.a
					}
					if c := t.v.Range.Name + " > 0"; !slices.Contains(nonEmpty, c) {
						nonEmpty = append(nonEmpty, c)
					}
				}
				dim := l.T.Shape[pos].Name
				cond := fmt.Sprintf("!rt.Within(%s, %s, %s)", dim, lo.call(k), hi.call(k))
				if len(nonEmpty) > 0 {
					cond = strings.Join(nonEmpty, " && ") + " && " + cond
				}
				if seen[cond] {
					continue
				}
				seen[cond] = true
				fmt.Fprintf(b, "\tif %s {\n\t\treturn rt.Errorf(%q, \"index %s of %s reaches outside dim %s = %%d\", %s)\n\t}\n",
					cond, k.Name, ix.String(), l.T.Name, dim, dim)
			}
		})
	}
	return err
}

// lterm is a·v for a loop variable v, or a·d for a dim d used as a value.
type lterm struct {
	a int64
	v *ir.Var
	d *ir.Dim
}

// linear is c + Σ terms, each variable or dim at most once, no zero coefficient.
type linear struct {
	c     int64
	terms []lterm
}

func (l linear) size() int64 {
	s := abs64(l.c)
	for _, t := range l.terms {
		s += abs64(t.a)
	}
	return s
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// linearize writes an affine index (constants, variables, dims, +, -, products with a constant) as
// a linear form; ok is false for anything else or when a coefficient reaches 2^30.
func linearize(e ir.IExpr) (linear, bool) {
	const limit = 1 << 30
	scale := func(l linear, c int64) (linear, bool) {
		if abs64(c) >= limit || abs64(l.c) >= limit {
			return l, false
		}
		out := linear{c: l.c * c}
		for _, t := range l.terms {
			if abs64(t.a) >= limit {
				return l, false
			}
			if t.a*c != 0 {
				out.terms = append(out.terms, lterm{t.a * c, t.v, t.d})
			}
		}
		return out, true
	}
	add := func(x, y linear) (linear, bool) {
		out := linear{c: x.c + y.c, terms: slices.Clone(x.terms)}
	next:
		for _, t := range y.terms {
			for i, u := range out.terms {
				if u.v == t.v && u.d == t.d {
					out.terms[i].a += t.a
					continue next
				}
			}
			out.terms = append(out.terms, t)
		}
		out.terms = slices.DeleteFunc(out.terms, func(t lterm) bool { return t.a == 0 })
		return out, out.size() < limit
	}
	switch e := e.(type) {
	case ir.IConst:
		return linear{c: int64(e.V)}, abs64(int64(e.V)) < limit
	case ir.IVar:
		return linear{terms: []lterm{{a: 1, v: e.V}}}, true
	case ir.IDim:
		return linear{terms: []lterm{{a: 1, d: e.D}}}, true
	case ir.IBin:
		x, ok1 := linearize(e.X)
		y, ok2 := linearize(e.Y)
		if !ok1 || !ok2 {
			return linear{}, false
		}
		switch e.Op {
		case '+':
			return add(x, y)
		case '-':
			ny, ok := scale(y, -1)
			if !ok {
				return linear{}, false
			}
			return add(x, ny)
		case '*':
			if len(x.terms) == 0 {
				return scale(y, x.c)
			}
			if len(y.terms) == 0 {
				return scale(x, y.c)
			}
		}
	}
	return linear{}, false
}

// haffine is c + Σ dims[d]·d.
type haffine struct {
	c    int64
	dims map[*ir.Dim]int64
}

// call renders a as an rt.Affine call, dims in the kernel's order.
func (a haffine) call(k *ir.Kernel) string {
	args := []string{strconv.FormatInt(a.c, 10)}
	for _, d := range k.Dims {
		if c := a.dims[d]; c != 0 {
			args = append(args, strconv.FormatInt(c, 10), d.Name)
		}
	}
	return "rt.Affine(" + strings.Join(args, ", ") + ")"
}
