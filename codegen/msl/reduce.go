package msl

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
)

// warpReduce lowers an ir.WarpReduce over a simdgroup (the verifier keeps it in a gpu.warp nest, whose
// simdgroups are the IR's 32-lane warps, under simdgroup-uniform control).
//
// A sum is the IR's butterfly written out with simd_shuffle_xor — `v = v + simd_shuffle_xor(v, m)` for
// m = 16, 8, 4, 2, 1 — because simd_sum's association order is not specified by Apple and the IR's
// order is the one the interpreter checks. Max and min do not depend on the order (but for the sign of
// a zero result), so they are simd_max / simd_min; Metal does not say what those do with NaN (fmax
// drops it), so a NaN anywhere in the simdgroup, found with simd_any, gives NaN, as the IR's max does.
func (lw *lowerer) warpReduce(n *ir.WarpReduce) ([]Stmt, error) {
	if n.Scope != ir.ScopeSimdgroup && n.Scope != ir.ScopeWarp {
		return nil, unsupported("a %s-scope lane reduction", n.Scope)
	}
	if err := checkType(n.L.T, "local %"+n.L.Name); err != nil {
		return nil, err
	}
	v := Ident{lw.names.name(n.L, n.L.Name)}
	if n.Op == ir.Add {
		out := []Stmt{Comment{[]string{fmt.Sprintf("%s: butterfly over the 32 lanes (xor %v), lane 0 holds the result", n, ir.WarpMasks)}}}
		for _, m := range ir.WarpMasks {
			out = append(out, Assign{v, "=", Binary{"+", v, Call{"simd_shuffle_xor", []Expr{v, IntLit{m}}}}})
		}
		return out, nil
	}
	fn := map[ir.Op]string{ir.Max: "simd_max", ir.Min: "simd_min"}[n.Op]
	if fn == "" {
		return nil, fmt.Errorf("%s: the operator is +, max or min", n)
	}
	var x Expr = Call{fn, []Expr{v}}
	if computeType(n.L.T) == Float {
		x = Cond{Call{"simd_any", []Expr{Call{"metal::isnan", []Expr{v}}}}, Ident{"NAN"}, x}
	}
	return []Stmt{Comment{[]string{fmt.Sprintf("%s: every lane gets the simdgroup's %s (NaN if any lane holds one)", n, n.Op)}}, Assign{v, "=", x}}, nil
}
