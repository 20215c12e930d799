package ir

import "fmt"

// This file defines the Vector loop: one body with lane semantics, read by the interpreter, the
// verifier and every backend.
//
// A Loop of Kind Vector runs its Body once per lane: for each group start v (Lo, Lo+Width, ... < Hi; Step
// is the constant Width and Hi-Lo a multiple of it), lane k = 0 .. Width-1 runs Body with Var = v+k. The
// lanes are defined to run in lane order (so ExpandLanes, which writes them one after the other, is
// exactly the loop's meaning); a SIMD backend that runs them at once checks that they are independent
// (codegen.VLoops). Locals declared in Body are per lane. The body is straight-line: Decl, Assign to a
// local it declares, Store, and, when Reduce is set, the reduction update as its last node.
//
// A reduction loop (Reduce != nil) ends its body with `Acc = Acc Op e`, e not reading Acc. In lane k,
// Acc stands for the partial accumulator Reduce.Parts[k], which the enclosing code declares (at the
// identity of Op) before the loop; after the loop it folds the partials into Acc in the order of
// LaneTree (LaneReduce.Combine), the order the SIMD routines combine their accumulators in too.

// LaneReduce is the reduction of a Vector loop: the body's last node is `Acc = Acc Op e`, and lane k
// accumulates into Parts[k] (len(Parts) == Width). Op is Add, Max or Min.
type LaneReduce struct {
	Acc   *LocalVar
	Op    Op
	Parts []*LocalVar
}

// Combine is the node that folds the partial accumulators into Acc after the loop:
// Acc = Acc Op LaneTree(Parts).
func (r *LaneReduce) Combine() *Assign {
	terms := make([]Expr, len(r.Parts))
	for i, p := range r.Parts {
		terms[i] = &Local{L: p}
	}
	bin := func(x, y Expr) Expr { return &Binary{Op: r.Op, X: x, Y: y, T: r.Acc.T} }
	return &Assign{L: r.Acc, Value: bin(&Local{L: r.Acc}, LaneTree(terms, bin))}
}

// LaneTree combines xs (at least one) pairwise, neighbours first, an odd last element moving up a level
// unchanged: ((x0 op x1) op (x2 op x3)) for four. It is the one combination order of per-lane partial
// results: the IR's partial accumulators (LaneReduce.Combine) and a SIMD routine's unrolled accumulator
// registers both fold through it.
func LaneTree[T any](xs []T, op func(x, y T) T) T {
	for len(xs) > 1 {
		next := make([]T, 0, (len(xs)+1)/2)
		for i := 0; i+1 < len(xs); i += 2 {
			next = append(next, op(xs[i], xs[i+1]))
		}
		if len(xs)%2 == 1 {
			next = append(next, xs[len(xs)-1])
		}
		xs = next
	}
	return xs[0]
}

// ExpandLanes is the replicated form of a Vector loop's body: the Width lanes one after the other, lane
// k with the loop variable shifted by k, the reduction's accumulator replaced by its partial Parts[k],
// and every local the body declares renamed per lane (name_k). A loop over it with the same bounds and
// step computes what l computes; the portable Go backend emits it. For other loops it returns Body.
func ExpandLanes(l *Loop) []Node {
	if l.Kind != Vector {
		return l.Body
	}
	var out []Node
	for k := 0; k < l.Width; k++ {
		ren := map[*LocalVar]*LocalVar{}
		if l.Reduce != nil {
			ren[l.Reduce.Acc] = l.Reduce.Parts[k]
		}
		shift := map[*Var]IExpr{l.Var: IAdd(IVar{V: l.Var}, IConst{V: k})}
		fix := func(e Expr) Expr {
			return Rewrite(SubstVars(e, shift), func(x Expr) Expr {
				switch x := x.(type) {
				case *Local:
					if r, ok := ren[x.L]; ok {
						return &Local{L: r}
					}
				case *VarVal:
					// SubstVars keeps VarVal when the variable maps to more than a variable.
					if x.V == l.Var && k > 0 {
						return &Binary{Op: Add, X: x, Y: &Const{Val: float64(k), T: x.T}, T: x.T}
					}
				}
				return x
			})
		}
		for _, n := range l.Body {
			switch x := n.(type) {
			case *Decl:
				init := fix(x.Init)
				nl := &LocalVar{Name: fmt.Sprintf("%s_%d", x.L.Name, k), T: x.L.T}
				ren[x.L] = nl
				out = append(out, &Decl{L: nl, Init: init})
			case *Assign:
				t := x.L
				if r, ok := ren[t]; ok {
					t = r
				}
				out = append(out, &Assign{L: t, Value: fix(x.Value)})
			case *Store:
				idx := make([]IExpr, len(x.Idx))
				for i, e := range x.Idx {
					idx[i] = SubstIExpr(e, shift)
				}
				out = append(out, &Store{T: x.T, Idx: idx, Value: fix(x.Value)})
			default:
				panic(fmt.Sprintf("ir: %T in the lane body of vector loop %s (VerifyFunc rejects it)", n, l.Var.Name))
			}
		}
	}
	return out
}

// verifyLanes checks the lane-body rules of a Vector loop (the reduction form, what may appear in the
// body) and the reduction fields of any loop; the caller has bound the loop variable.
func (v *fverifier) verifyLanes(l *Loop) error {
	if l.Kind != Vector {
		if l.Reduce != nil {
			return fmt.Errorf("%s loop %s has a lane reduction", l.Kind, l.Var.Name)
		}
		return nil
	}
	if s, ok := l.Step.(IConst); !ok || s.V != l.Width {
		return fmt.Errorf("vector loop %s: step %s is not its width %d", l.Var.Name, l.Step, l.Width)
	}
	r := l.Reduce
	if r != nil {
		if r.Acc == nil || !v.locals[r.Acc] {
			return fmt.Errorf("vector loop %s: the reduction's accumulator is not declared", l.Var.Name)
		}
		if r.Op != Add && r.Op != Max && r.Op != Min {
			return fmt.Errorf("vector loop %s: reduction operator %s (want +, max or min)", l.Var.Name, r.Op)
		}
		if len(r.Parts) != l.Width {
			return fmt.Errorf("vector loop %s: %d partial accumulators for %d lanes", l.Var.Name, len(r.Parts), l.Width)
		}
		seen := map[*LocalVar]bool{r.Acc: true}
		for _, p := range r.Parts {
			if p == nil || !v.locals[p] || seen[p] || p.T != r.Acc.T {
				return fmt.Errorf("vector loop %s: partial accumulators must be distinct locals of type %s declared before the loop", l.Var.Name, r.Acc.T)
			}
			seen[p] = true
		}
		if len(l.Body) == 0 {
			return fmt.Errorf("vector loop %s: a reduction needs the update %%%s = %%%s %s e as its last node", l.Var.Name, r.Acc.Name, r.Acc.Name, r.Op)
		}
	}
	own := map[*LocalVar]bool{}
	reads := func(e Expr, l *LocalVar) bool {
		found := false
		Walk(e, func(x Expr) {
			if y, ok := x.(*Local); ok && y.L == l {
				found = true
			}
		})
		return found
	}
	for i, n := range l.Body {
		last := i == len(l.Body)-1
		var e Expr
		switch x := n.(type) {
		case *Decl:
			own[x.L] = true
			e = x.Init
		case *Assign:
			if r != nil && x.L == r.Acc && last {
				b, ok := x.Value.(*Binary)
				if !ok || b.Op != r.Op {
					return fmt.Errorf("vector loop %s: the reduction update is not %%%s = %%%s %s e", l.Var.Name, r.Acc.Name, r.Acc.Name, r.Op)
				}
				if a, ok := b.X.(*Local); !ok || a.L != r.Acc {
					return fmt.Errorf("vector loop %s: the reduction update is not %%%s = %%%s %s e", l.Var.Name, r.Acc.Name, r.Acc.Name, r.Op)
				}
				e = b.Y
				break
			}
			if r != nil && x.L == r.Acc {
				return fmt.Errorf("vector loop %s: a reduction needs the update %%%s = %%%s %s e as its last node", l.Var.Name, r.Acc.Name, r.Acc.Name, r.Op)
			}
			if !own[x.L] {
				return fmt.Errorf("vector loop %s: lanes assign %%%s, declared outside the body (lanes must be independent)", l.Var.Name, x.L.Name)
			}
			e = x.Value
		case *Store:
			e = x.Value
		default:
			return fmt.Errorf("vector loop %s: %T in a lane body (only declarations, assignments and stores)", l.Var.Name, n)
		}
		if r != nil && reads(e, r.Acc) {
			return fmt.Errorf("vector loop %s: the lane body reads the accumulator %%%s outside its update", l.Var.Name, r.Acc.Name)
		}
		if r != nil && last {
			if a, ok := n.(*Assign); !ok || a.L != r.Acc {
				return fmt.Errorf("vector loop %s: a reduction needs the update %%%s = %%%s %s e as its last node", l.Var.Name, r.Acc.Name, r.Acc.Name, r.Op)
			}
		}
	}
	return nil
}

// lanes runs one group of a Vector loop starting at x: the body once per lane, in lane order, the
// reduction's accumulator standing for the lane's partial.
func (in *interp) lanes(l *Loop, x, hi int) {
	if hi-x < l.Width {
		fail("vector loop %s: group at %d is not whole (ends at %d)", l.Var.Name, x, hi)
	}
	r := l.Reduce
	var saved float64
	if r != nil {
		saved = in.loc[r.Acc]
	}
	for k := 0; k < l.Width; k++ {
		in.vars[l.Var] = x + k
		if r != nil {
			in.loc[r.Acc] = in.loc[r.Parts[k]]
		}
		in.nodes(l.Body)
		if r != nil {
			in.loc[r.Parts[k]] = in.loc[r.Acc]
		}
	}
	if r != nil {
		in.loc[r.Acc] = saved
	}
}
