package ptx

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
)

// warpReduce lowers an ir.WarpReduce: the butterfly of ir.WarpMasks through shfl.sync.bfly, each step
// `v = v op shfl(v, lane ^ m)` with the lane's own value on the left, as the IR orders it. The verifier
// keeps the node in a gpu.warp nest under warp-uniform control, so all 32 lanes of the warp execute
// every shuffle (full member mask, clamp 31: every partner exists). A 64-bit value moves as two .b32
// halves.
func (l *lowerer) warpReduce(n *ir.WarpReduce) {
	l.needThread("a warp reduction")
	if n.Scope != ir.ScopeWarp {
		l.fail("a %s-scope lane reduction", n.Scope)
	}
	v, ok := l.locals[n.L]
	if !ok {
		l.fail("%s of an undeclared local", n)
	}
	l.e.Comment(fmt.Sprintf("%s: butterfly over the 32 lanes (xor %v), lane 0 holds the result", n, ir.WarpMasks))
	for _, m := range ir.WarpMasks {
		var t Reg
		if v.T.Bits() == 64 {
			lo, hi := l.e.Reg(B32), l.e.Reg(B32)
			l.e.Op("mov", B64, Vec{lo, hi}, v)
			slo, shi := l.shfl(lo, m), l.shfl(hi, m)
			t = l.e.Reg(v.T)
			l.e.Op("mov", B64, t, Vec{slo, shi})
		} else {
			t = l.shfl(v, m)
		}
		var r Reg
		switch {
		case n.Op == ir.Add && v.T == S32:
			r = l.e.Bin("add", S32, v, t)
		case n.Op == ir.Add:
			r = l.e.Bin("add.rn", v.T, v, t)
		case v.T == S32:
			r = l.e.Bin(map[ir.Op]string{ir.Min: "min", ir.Max: "max"}[n.Op], S32, v, t)
		default:
			r = l.minmax(n.Op == ir.Max, v.T, v, t)
		}
		l.e.Op("mov", v.T, v, r)
	}
}

// shfl returns lane (laneid ^ m)'s value of the 32-bit register x, for all 32 lanes of the warp.
func (l *lowerer) shfl(x Reg, m int) Reg {
	d := l.e.Reg(x.T)
	l.e.Op("shfl.sync.bfly", B32, d, x, Imm(m), Imm(31), Imm(-1))
	return d
}
