package codegen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/ir"
)

// IndexCheck is a generated wrapper's run-time check of one affine load index (like x+kx in a
// convolution): every value the index takes over its variables' ranges must lie inside the dim, whenever
// the domain is not empty. Cond is a Go condition that holds when it does not; Return is the Go statement
// that then returns the error; Comment says what is checked. The extremes of the index are affine in the
// dims and rt.Affine evaluates them exactly (128-bit), so no dim, however large, wraps a check around.
// The portable backend's wrappers and the GPU backends' host methods (ptx, msl) print the same checks.
type IndexCheck struct {
	Comment, Cond, Return string
}

// IndexChecks lists the checks of kernel k's loads, each distinct condition once, in statement order. An
// index that is not affine, or whose coefficients sum to 2^30 or more, is an error.
func IndexChecks(k *ir.Kernel) ([]IndexCheck, error) {
	var out []IndexCheck
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
				if !ok {
					err = fmt.Errorf("index %s of %s: not affine, or a coefficient beyond 2^30", ix, l.T.Name)
					return
				}
				// lo and hi: the constant and the coefficient of each dim; a variable v < R with
				// coefficient a contributes a·(R-1) to hi when a > 0, to lo when a < 0.
				lo, hi := affine{c: lin.c, dims: map[*ir.Dim]int64{}}, affine{c: lin.c, dims: map[*ir.Dim]int64{}}
				var nonEmpty, ranges []string
				for _, t := range lin.terms {
					switch {
					case t.d != nil:
						lo.dims[t.d] += t.a
						hi.dims[t.d] += t.a
						continue
					case t.v.Range == nil: // a window index with a constant range (r < 2): never empty
						if t.a > 0 {
							hi.c += t.a * int64(t.v.Const-1)
						} else {
							lo.c += t.a * int64(t.v.Const-1)
						}
						ranges = append(ranges, t.v.Name+" < "+t.v.RangeName())
						continue
					case t.a > 0:
						hi.dims[t.v.Range] += t.a
						hi.c -= t.a
					default:
						lo.dims[t.v.Range] += t.a
						lo.c -= t.a
					}
					c := t.v.Range.Name + " > 0"
					if !slices.Contains(nonEmpty, c) {
						nonEmpty = append(nonEmpty, c)
					}
					ranges = append(ranges, t.v.Name+" < "+t.v.Range.Name)
				}
				if lin.size() >= 1<<30 {
					err = fmt.Errorf("index %s of %s: coefficients too large (their sum must stay below 2^30)", ix, l.T.Name)
					return
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
				over := ""
				if len(ranges) > 0 {
					over = ", for " + strings.Join(ranges, ", ") + ","
				}
				out = append(out, IndexCheck{
					Comment: fmt.Sprintf("index %s of %s%s must lie in [0, %s)", ix, l.T.Name, over, dim),
					Cond:    cond,
					Return:  fmt.Sprintf("return rt.Errorf(%q, \"index %s of %s reaches outside dim %s = %%d\", %s)", k.Name, ix.String(), l.T.Name, dim, dim),
				})
			}
		})
	}
	return out, err
}

// lterm is one term of a linear index: a·v for a loop variable v, or a·d for a dim d used as a value.
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

// size bounds the magnitude of every coefficient involved: |c| + Σ|a|.
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

// linearize writes an affine index (constants, variables, dims, +, -, and products with a constant)
// as a linear form; ok is false for anything else or when a coefficient reaches 2^30.
func linearize(e ir.IExpr) (linear, bool) {
	const limit = 1 << 30
	scale := func(l linear, k int64) (linear, bool) {
		if abs64(k) >= limit || abs64(l.c) >= limit {
			return l, false
		}
		out := linear{c: l.c * k}
		for _, t := range l.terms {
			if abs64(t.a) >= limit {
				return l, false
			}
			if t.a*k != 0 {
				out.terms = append(out.terms, lterm{t.a * k, t.v, t.d})
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

// affine is c + Σ dims[d]·d.
type affine struct {
	c    int64
	dims map[*ir.Dim]int64
}

// call renders a as an rt.Affine call, dims in the kernel's order.
func (a affine) call(k *ir.Kernel) string {
	args := []string{strconv.FormatInt(a.c, 10)}
	for _, d := range k.Dims {
		if c := a.dims[d]; c != 0 {
			args = append(args, strconv.FormatInt(c, 10), d.Name)
		}
	}
	return "rt.Affine(" + strings.Join(args, ", ") + ")"
}
