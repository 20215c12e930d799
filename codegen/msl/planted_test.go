package msl

import (
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// planted is a bug planted into a kernel's GPU-mapped IR before emission, and what the CPU run must
// then report.
type planted struct {
	name, kernel string
	plant        func(t *testing.T, f *ir.Func)
	want         string // a substring of one of the errors
}

// firstNode returns the first node of body that match accepts, and the slice and index holding it.
func firstNode(body *[]ir.Node, match func(ir.Node) bool) (*[]ir.Node, int) {
	for i, n := range *body {
		if match(n) {
			return body, i
		}
		var inner *[]ir.Node
		switch n := n.(type) {
		case *ir.Loop:
			inner = &n.Body
		case *ir.Nest:
			inner = &n.Body
		case *ir.Alloc:
			inner = &n.Body
		case *ir.Launch:
			inner = &n.Body
		case *ir.If:
			if s, j := firstNode(&n.Then, match); s != nil {
				return s, j
			}
			inner = &n.Else
		}
		if inner != nil {
			if s, j := firstNode(inner, match); s != nil {
				return s, j
			}
		}
	}
	return nil, 0
}

func isBarrier(n ir.Node) bool { _, ok := n.(*ir.Barrier); return ok }

// inHalfWarp puts the first node of f that match accepts under `if lane < 16`: a simdgroup operation
// that only half of the simdgroup's lanes reach.
func inHalfWarp(t *testing.T, f *ir.Func, match func(ir.Node) bool) {
	s, i := firstNode(&f.Body, match)
	if s == nil {
		t.Fatalf("%s has no node to plant the bug in", f.Kernel.Name)
	}
	var lane *ir.Var
	ir.WalkNodes(f.Body, func(n ir.Node) bool {
		if l, ok := n.(*ir.Loop); ok && l.Kind == ir.GPUThread {
			lane = l.Var
		}
		return true
	})
	cond := &ir.Binary{Op: ir.Lt, X: &ir.VarVal{V: lane, T: ir.I32}, Y: &ir.Const{Val: 16, T: ir.I32}, T: ir.Bool}
	(*s)[i] = &ir.If{Cond: cond, Then: []ir.Node{(*s)[i]}}
}

var plantedBugs = []planted{
	{
		// the barrier between the two reduction levels is gone: warp 0 reads the warps' partial maxima
		// before the other warps have stored theirs
		name: "missing_barrier", kernel: "softmax", want: "want",
		plant: func(t *testing.T, f *ir.Func) {
			s, i := firstNode(&f.Body, isBarrier)
			if s == nil {
				t.Fatal("softmax has no barrier")
			}
			*s = append((*s)[:i:i], (*s)[i+1:]...)
		},
	},
	{
		// the barrier after lane 0 of warp 0 stores the row maximum m[i] to device memory is gone: in
		// forward order thread 0 has stored it before the others read it, in reverse order not yet
		name: "missing_barrier_before_read", kernel: "softmax", want: "a race",
		plant: func(t *testing.T, f *ir.Func) {
			n := 0
			s, i := firstNode(&f.Body, func(x ir.Node) bool {
				if isBarrier(x) {
					n++
					return n == 2
				}
				return false
			})
			if s == nil {
				t.Fatal("softmax has no second barrier")
			}
			*s = append((*s)[:i:i], (*s)[i+1:]...)
		},
	},
	{
		// the first barrier moved into the branch of each warp's lane 0: the others never reach it
		name: "divergent_barrier", kernel: "softmax", want: "not reached by all threads",
		plant: func(t *testing.T, f *ir.Func) {
			s, i := firstNode(&f.Body, isBarrier)
			b := (*s)[i]
			*s = append((*s)[:i:i], (*s)[i+1:]...)
			s2, j := firstNode(&f.Body, func(n ir.Node) bool { _, ok := n.(*ir.If); return ok })
			if s2 == nil {
				t.Fatal("softmax has no if")
			}
			iff := (*s2)[j].(*ir.If)
			iff.Then = append([]ir.Node{b}, iff.Then...)
		},
	},
	{
		// every simdgroup reads the A tile one row further down: a wrong simdgroup tile offset
		name: "simdgroup_tile_offset", kernel: "sgemm", want: "want",
		plant: func(t *testing.T, f *ir.Func) {
			s, i := firstNode(&f.Body, func(n ir.Node) bool { _, ok := n.(*ir.MMA); return ok })
			if s == nil {
				t.Fatal("sgemm has no mma")
			}
			m := (*s)[i].(*ir.MMA)
			m.A.Off = ir.IAdd(m.A.Off, ir.IConst{V: 8})
		},
	},
	{
		// the MMA runs in half of the simdgroup's lanes only: a simdgroup operation in divergent control flow
		name: "divergent_simdgroup_mma", kernel: "sgemm", want: "not reached by all threads",
		plant: func(t *testing.T, f *ir.Func) {
			inHalfWarp(t, f, func(n ir.Node) bool { _, ok := n.(*ir.MMA); return ok })
		},
	},
	{
		// the warps' first lane reduction runs in half of the lanes only: a simd function in divergent
		// control flow
		name: "divergent_simd_reduction", kernel: "softmax", want: "not reached by all threads",
		plant: func(t *testing.T, f *ir.Func) {
			inHalfWarp(t, f, func(n ir.Node) bool { _, ok := n.(*ir.WarpReduce); return ok })
		},
	},
	{
		// the first lane reduction of the row sum takes the lanes' maximum instead of their sum
		name: "lane_reduction_wrong_operator", kernel: "layernorm", want: "want",
		plant: func(t *testing.T, f *ir.Func) {
			s, i := firstNode(&f.Body, func(n ir.Node) bool { _, ok := n.(*ir.WarpReduce); return ok })
			if s == nil {
				t.Fatal("layernorm has no lane reduction")
			}
			r := (*s)[i].(*ir.WarpReduce)
			(*s)[i] = &ir.WarpReduce{Op: ir.Max, L: r.L, Scope: r.Scope}
		},
	},
	{
		// the ragged edge guard lets the last thread store y[N]: past the end of the buffer
		name: "edge_off_by_one", kernel: "saxpy", want: "out-of-range access",
		plant: func(t *testing.T, f *ir.Func) {
			s, i := firstNode(&f.Body, func(n ir.Node) bool { l, ok := n.(*ir.Loop); return ok && l.Kind == ir.Serial })
			if s == nil {
				t.Fatal("saxpy has no guard loop")
			}
			l := (*s)[i].(*ir.Loop)
			l.Hi = ir.IAdd(l.Hi, ir.IConst{V: 1})
		},
	},
}
