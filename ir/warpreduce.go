package ir

import (
	"fmt"
	"math"
	"strings"
)

// WarpReduce combines the local L of the lanes of one warp (ScopeWarp) or simdgroup (ScopeSimdgroup)
// with Op (Add, Max or Min): every lane of the warp runs it together, like a warp barrier, but it
// orders no memory access.
//
// It sits in the body of a gpu.warp nest, so a warp has its 32 lanes (WarpButterfly also defines the
// order for n < 32 lanes, lane l^m absent when l^m ≥ n, for backends that meet a partial warp). The
// order is a butterfly, the one shfl.sync.bfly and simd_shuffle_xor run: for m = 16, 8, 4, 2, 1 in turn, every
// lane l whose partner l^m exists (l^m < n) sets
//
//	v[l] = v[l] op v[l^m]    (its own value on the left)
//
// and a lane whose partner does not exist keeps its value. Afterwards lane 0 holds the reduction of all
// values in that association tree: g(0, 1), where g(b, s) = g(b, 2s) op g(b+s, 2s) and g(b, 32) = v[b]
// (even lanes op odd lanes, at the bottom v0 op v16). The other lanes hold partial
// results no program may rely on (for a full warp, and a commutative op, they equal lane 0's; a backend
// may broadcast or not): the interpreter sets their L to NaN, so a read of one shows.
type WarpReduce struct {
	Op    Op
	L     *LocalVar
	Scope Scope
}

func (*WarpReduce) node() {}

// WarpMasks are the butterfly distances of WarpReduce, in order.
var WarpMasks = [...]int{16, 8, 4, 2, 1}

// WarpButterfly reduces the values of the n lanes of one warp (len(v) = n ≤ 32) in WarpReduce's order,
// each operation through f(x, y) (x the lane's own value), and returns every lane's final value.
func WarpButterfly(v []float64, f func(x, y float64) float64) []float64 {
	cur := append([]float64(nil), v...)
	next := make([]float64, len(v))
	for _, m := range WarpMasks {
		for l := range cur {
			if p := l ^ m; p < len(cur) {
				next[l] = f(cur[l], cur[p])
			} else {
				next[l] = cur[l]
			}
		}
		cur, next = next, cur
	}
	return cur
}

func (n *WarpReduce) String() string {
	return fmt.Sprintf("%s.reduce %s %%%s", n.Scope, n.Op, n.L.Name)
}

// verifyWarpReduce checks a WarpReduce where it is (gpuNode has placed it at thread level).
func (v *fverifier) verifyWarpReduce(n *WarpReduce) error {
	if v.gpu != threadLevel {
		return fmt.Errorf("%s outside a GPU thread body", n)
	}
	if n.Scope != ScopeWarp && n.Scope != ScopeSimdgroup {
		return fmt.Errorf("%s: a lane reduction has scope warp or simdgroup", n)
	}
	if n.Op != Add && n.Op != Max && n.Op != Min {
		return fmt.Errorf("%s: the operator is +, max or min", n)
	}
	if n.L == nil || !v.locals[n.L] {
		return fmt.Errorf("%s of an undeclared local", n)
	}
	if n.L.T == Bool {
		return fmt.Errorf("%s of a bool", n)
	}
	if v.nest.Kind != GPUWarp {
		return fmt.Errorf("%s outside the body of a gpu.warp nest (its 32 lanes reduce together)", n)
	}
	return nil
}

// warpReduce runs a WarpReduce in the current thread: it posts the thread's value and waits, like at a
// warp barrier, until every lane of its warp has; the last to arrive computes all lanes' results
// (blockRun.release), and each thread takes its own.
func (in *interp) warpReduce(n *WarpReduce) {
	th := in.th
	if th == nil {
		fail("%s outside a GPU thread", n)
	}
	ls := in.launch
	if ls.reds == nil {
		ls.reds = map[*WarpReduce]*Barrier{}
	}
	b := ls.reds[n]
	if b == nil {
		b = &Barrier{Scope: n.Scope, red: n}
		ls.reds[n] = b
	}
	th.red = in.loc[n.L]
	th.barrier(b)
	in.loc[n.L] = th.red
}

// reduceLanes computes the results of a WarpReduce whose lanes g all posted their values.
func reduceLanes(n *WarpReduce, g []*gpuThread) {
	v := make([]float64, len(g))
	for i, o := range g {
		v[i] = o.red
	}
	in := g[0].in
	r := WarpButterfly(v, func(x, y float64) float64 { return in.round(n.L.T, binary(n.Op, n.L.T, x, y)) })
	for i, o := range g {
		o.red = math.NaN()
		if i == 0 {
			o.red = r[0]
		}
	}
}

// syncName names what a thread waits at: a barrier, or a lane reduction.
func syncName(b *Barrier) string {
	if b.red != nil {
		return b.red.String()
	}
	return "barrier " + b.Scope.String()
}

func printWarpReduce(b *strings.Builder, ind string, n Node) bool {
	r, ok := n.(*WarpReduce)
	if ok {
		fmt.Fprintf(b, "%s%s\n", ind, r)
	}
	return ok
}
