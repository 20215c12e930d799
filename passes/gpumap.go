package passes

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
)

// GPU mapping plan symbols: the thread-block shape of a two-dimensional mapping (BY × BX threads) and of
// a one-dimensional one (B1 threads).
const (
	gpuBY = "gpu.BY"
	gpuBX = "gpu.BX"
	gpuB1 = "gpu.B1"
)

// GPUMap turns every top-level statement nest of f into a GPU launch. It assumes lowered loop IR (after
// Lower, optionally Fusion; before the CPU passes: no Micro, Pack or Transpose) and guarantees the
// launch nesting ir/gpu.go describes, with the same result.
//
// The outermost loop of a nest, and the loop directly inside it if it is the only node there, are
// mapped when their iterations are independent (each writes its own elements, reads written tensors
// only at its own elements, and assigns no local declared outside it) — the output-index loops Lower
// makes. Two mapped loops i (outer) and j become a grid of ⌈i-range/BY⌉ × ⌈j-range/BX⌉ blocks of BY×BX
// threads, thread (ti, tj) of block (bi, bj) running the original loops restricted to the one point
// i = bi+ti, j = bj+tj (no trip when that point is past the end: the guard of a ragged edge). One mapped
// loop uses blocks of B1 threads. A nest with no independent outer loop (a full reduction into a scalar)
// runs in one thread of one block. The block shapes are plan symbols (gpu.BY, gpu.BX, gpu.B1).
//
// GPUMap is not in the CPU pipeline (List); GPU pipelines run it.
func GPUMap(f *ir.Func, c *Context) (bool, error) {
	nm := funcNamer(f)
	changed := false
	for idx, n := range f.Body {
		nest, ok := n.(*ir.Nest)
		if !ok {
			return changed, fmt.Errorf("gpumap: top-level %T (want the statement nests of lowered IR)", n)
		}
		bad := false
		ir.WalkNodes(nest.Body, func(x ir.Node) bool {
			switch x := x.(type) {
			case *ir.Micro, *ir.Pack, *ir.Transpose, *ir.Launch:
				bad = true
			case *ir.Loop:
				bad = bad || x.Kind != ir.Serial
			}
			return !bad
		})
		if bad {
			return changed, fmt.Errorf("gpumap: nest %d is not plain lowered loops (run gpumap before the CPU passes)", idx)
		}
		launch := mapNest(f, nest, fmt.Sprintf("%s_%d", f.Kernel.Name, idx), nm)
		nest.Body = []ir.Node{launch}
		changed = true
	}
	return changed, nil
}

func mapNest(f *ir.Func, nest *ir.Nest, name string, nm namer) *ir.Launch {
	var mapped []*ir.Loop
	if l, ok := soleLoopOf(nest.Body); ok && independentLoop(l) {
		mapped = append(mapped, l)
		if l2, ok := soleLoopOf(l.Body); ok && independentLoop(l2) && !loopUses(l2, l.Var) {
			mapped = append(mapped, l2)
		}
	}
	syms := []string{gpuB1}
	if len(mapped) == 2 {
		syms = []string{gpuBY, gpuBX}
	}
	var grids, threads []*ir.Loop
	var gridDims, blockDims []ir.IExpr
	body := nest.Body
	if len(mapped) == 0 {
		g, t := &ir.Var{Name: nm.name("g")}, &ir.Var{Name: nm.name("t")}
		grids = []*ir.Loop{{Var: g, Lo: ir.IConst{V: 0}, Hi: ir.IConst{V: 1}, Step: ir.IConst{V: 1}, Kind: ir.GPUGrid}}
		threads = []*ir.Loop{{Var: t, Lo: ir.IConst{V: 0}, Hi: ir.IConst{V: 1}, Step: ir.IConst{V: 1}, Kind: ir.GPUBlock}}
		gridDims, blockDims = []ir.IExpr{ir.IConst{V: 1}}, []ir.IExpr{ir.IConst{V: 1}}
	} else {
		body = []ir.Node{mapped[0]}
		for i, l := range mapped {
			size := ir.ISym{Name: syms[i]}
			if _, ok := f.Plan[syms[i]]; !ok {
				f.Plan[syms[i]] = map[string]int{gpuBY: 16, gpuBX: 16, gpuB1: 128}[syms[i]]
			}
			b, t := &ir.Var{Name: nm.name("b" + l.Var.Name)}, &ir.Var{Name: nm.name("t" + l.Var.Name)}
			grids = append(grids, &ir.Loop{Var: b, Lo: l.Lo, Hi: l.Hi, Step: size, Kind: ir.GPUGrid})
			threads = append(threads, &ir.Loop{Var: t, Lo: ir.IConst{V: 0}, Hi: size, Step: ir.IConst{V: 1}, Kind: ir.GPUBlock})
			gridDims = append(gridDims, ir.IDiv(ir.IAdd(ir.ISub(l.Hi, l.Lo), ir.ISub(size, ir.IConst{V: 1})), size))
			blockDims = append(blockDims, size)
			// The original loop keeps its variable (uses of it as a value stay valid) and runs the one
			// point of this thread, or none past the end.
			at := ir.IAdd(ir.IVar{V: b}, ir.IVar{V: t})
			l.Lo, l.Hi = at, ir.IMin(ir.IAdd(at, ir.IConst{V: 1}), l.Hi)
		}
	}
	node := body
	for i := len(threads) - 1; i >= 0; i-- {
		threads[i].Body = node
		node = []ir.Node{threads[i]}
	}
	for i := len(grids) - 1; i >= 0; i-- {
		grids[i].Body = node
		node = []ir.Node{grids[i]}
	}
	reads, writes := ir.LaunchTensors(node)
	return &ir.Launch{Name: name, Grid: gridDims, Block: blockDims, Reads: reads, Writes: writes, Body: node}
}

func soleLoopOf(body []ir.Node) (*ir.Loop, bool) {
	if len(body) != 1 {
		return nil, false
	}
	l, ok := body[0].(*ir.Loop)
	return l, ok
}

func loopUses(l *ir.Loop, v *ir.Var) bool {
	used := false
	for _, e := range []ir.IExpr{l.Lo, l.Hi, l.Step} {
		ir.IVars(e, func(w *ir.Var) { used = used || w == v })
	}
	return used
}

// independentLoop reports whether l's iterations touch disjoint data: every tensor stored in l is
// indexed by l's variable alone at one position, every load of such a tensor uses that same index at
// that position, and every local l's body assigns is declared inside it.
func independentLoop(l *ir.Loop) bool {
	pos := map[*ir.Tensor]int{}
	declared := map[*ir.LocalVar]bool{}
	local := map[*ir.Tensor]bool{}
	ok := true
	isVar := func(e ir.IExpr) bool {
		v, isv := e.(ir.IVar)
		return isv && v.V == l.Var
	}
	ir.WalkNodes(l.Body, func(n ir.Node) bool {
		switch n := n.(type) {
		case *ir.Alloc:
			local[n.T] = true
		case *ir.Decl:
			declared[n.L] = true
		case *ir.Assign:
			ok = ok && declared[n.L]
		case *ir.Store:
			if local[n.T] {
				break
			}
			p := -1
			for i, e := range n.Idx {
				if isVar(e) {
					p = i
					break
				}
			}
			if q, seen := pos[n.T]; p < 0 || (seen && q != p) {
				ok = false
			}
			pos[n.T] = p
		}
		return ok
	})
	if !ok {
		return false
	}
	ir.WalkNodes(l.Body, func(n ir.Node) bool {
		ir.NodeExprs(n, func(e ir.Expr) {
			ir.Walk(e, func(x ir.Expr) {
				if ld, isLoad := x.(*ir.Load); isLoad {
					if p, written := pos[ld.T]; written && (p >= len(ld.Idx) || !isVar(ld.Idx[p])) {
						ok = false
					}
				}
			})
		})
		return ok
	})
	return ok
}
