package ir

import "fmt"

// The GPU rules of VerifyFunc (the nesting is described in gpu.go):
//   - GPU loops, barriers and async copy nodes appear only inside a Launch; launches do not nest;
//   - a launch body holds len(Grid) nested GPUGrid loops (1 to 3) and nothing else computes at that
//     level; Block has 1 to 3 dims; the tensors the body reads and writes in global memory are listed in
//     Reads and Writes;
//   - at block level (inside the grid loops) only shared allocations, Nests and thread nests;
//   - a thread nest is a chain of GPUBlock loops, or a GPUWarp loop whose body is one GPUThread loop of
//     exactly 32 lanes (0 .. 32 step 1); thread-loop bounds are the same for every thread; no thread loop,
//     grid loop, launch or shared allocation inside a thread body, and no parallel loop;
//   - Shared buffers are allocated only at block level, so they are used only inside their block;
//   - a lane reduction (WarpReduce) sits in a thread body, under control uniform over each warp, and
//     reduces a declared local with +, max or min;
//   - a barrier is reached by every thread of its scope: it is not under an If whose condition, nor in a
//     loop whose bounds, may differ between those threads (block scope: between any threads of the
//     block; warp and simdgroup scope: between lanes of one warp).

// gpuLevel is where a node sits relative to a GPU launch.
type gpuLevel uint8

const (
	hostLevel   gpuLevel = iota // outside any launch
	launchLevel                 // inside a Launch, outside its grid loops
	blockLevel                  // inside the grid loops, outside the thread loops
	threadLevel                 // inside a thread nest
)

// Divergence levels: how far a value may differ between the threads of a block.
const (
	uniform          = 0 // the same in every thread of the block
	warpgroupUniform = 1 // the same in the 128 threads of a warpgroup (mbarrier.go: w < 4k)
	warpUniform      = 2 // the same in the 32 lanes of a warp
	divergent        = 3 // may differ between lanes
)

// gpuNode checks where n may appear and handles the GPU nodes and loops completely; it reports
// done = false for nodes whose ordinary checks (plainNode) still have to run.
func (v *fverifier) gpuNode(n Node) (done bool, err error) {
	switch n := n.(type) {
	case *Launch:
		return true, v.launchNode(n)
	case *Barrier, *AsyncCommit, *AsyncWait:
		if v.gpu != threadLevel {
			return true, fmt.Errorf("%s outside a GPU thread body", nodeName(n))
		}
		if b, ok := n.(*Barrier); ok && (b.Scope == ScopeThread || b.Scope > ScopeBlock) {
			return true, fmt.Errorf("barrier of scope %s: want block, warp, warpgroup or simdgroup", b.Scope)
		}
		if w, ok := n.(*AsyncWait); ok && w.N < 0 {
			return true, fmt.Errorf("async.wait %d: the count of groups left in flight is negative", w.N)
		}
		return true, nil
	case *Loop:
		if n.Kind.IsGPU() {
			return true, v.gpuLoop(n)
		}
		switch v.gpu {
		case launchLevel, blockLevel:
			return true, fmt.Errorf("launch %s: %s loop %s outside the thread loops (every computation runs in a thread)", v.launch.Name, n.Kind, n.Var.Name)
		case threadLevel:
			if n.Kind == Parallel {
				return true, fmt.Errorf("parallel loop %s inside a GPU thread", n.Var.Name)
			}
		}
	case *Alloc:
		if n.T.Space == Shared && v.gpu != blockLevel {
			where := "outside a launch"
			switch v.gpu {
			case launchLevel:
				where = "outside the grid loops"
			case threadLevel:
				where = "inside a thread loop"
			}
			return true, fmt.Errorf("shared buffer %s allocated %s: shared memory is allocated at block level (inside the grid loops, outside the thread loops)", n.T.Name, where)
		}
		if n.T.Space != Shared && (v.gpu == launchLevel || v.gpu == blockLevel) {
			return true, fmt.Errorf("launch %s: %s buffer %s allocated outside the thread loops (only shared buffers live at block level)", v.launch.Name, n.T.Space, n.T.Name)
		}
	case *Copy:
		if v.gpu == launchLevel || v.gpu == blockLevel {
			return true, fmt.Errorf("launch %s: copy into %s outside the thread loops (every computation runs in a thread)", v.launch.Name, n.Dst.T.Name)
		}
		return true, v.verifyCopy(n)
	case *WarpReduce:
		return true, v.verifyWarpReduce(n)
	case *MbarInit, *MbarArrive, *MbarWait:
		return v.mbarNode(n)
	case *AccDecl:
		err := v.mmaScope(n.Acc)
		return err != nil, err
	case *MMA:
		err := v.mmaScope(n.Acc)
		return err != nil, err
	case *AccStore:
		err := v.mmaScope(n.Acc)
		return err != nil, err
	case *Nest:
	default:
		if v.gpu == launchLevel || v.gpu == blockLevel {
			return true, fmt.Errorf("launch %s: %s outside the thread loops (every computation runs in a thread)", v.launch.Name, nodeName(n))
		}
	}
	return false, nil
}

// mmaScope checks that the threads an MMA's scope names are the ones that run it: a thread-scope MMA
// runs anywhere; inside a launch, a warp or simdgroup MMA runs in the body of a gpu.warp nest (its 32
// lanes run it together; the divergence check keeps it under warp-uniform control), and a warpgroup MMA
// there too, in a block of whole warpgroups. Outside launches (before gpumap) an MMA of any scope
// stands for the whole operation.
func (v *fverifier) mmaScope(a *Accum) error {
	if a.Scope == ScopeThread || v.gpu == hostLevel {
		return nil
	}
	if a.Scope == ScopeBlock {
		return fmt.Errorf("accumulator %%%s has scope block: an MMA is done by a thread, warp, warpgroup or simdgroup", a.Name)
	}
	if v.gpu != threadLevel || v.nest.Kind != GPUWarp {
		return fmt.Errorf("accumulator %%%s of scope %s outside the body of a gpu.warp nest (its %d threads run each MMA together)", a.Name, a.Scope, a.Scope.Threads())
	}
	if a.Scope == ScopeWarpgroup {
		if w, ok := v.nest.Hi.(IConst); !ok || !isConst(v.nest.Lo, 0) || !isConst(v.nest.Step, 1) || w.V%4 != 0 {
			return fmt.Errorf("accumulator %%%s of scope warpgroup in gpu.warp loop %s = %s .. %s: a block of whole warpgroups needs a multiple of 4 warps", a.Name, v.nest.Var.Name, v.nest.Lo, v.nest.Hi)
		}
	}
	return nil
}

func nodeName(n Node) string {
	switch n := n.(type) {
	case *Barrier:
		return "barrier " + n.Scope.String()
	case *AsyncCommit:
		return "async.commit"
	case *AsyncWait:
		return fmt.Sprintf("async.wait %d", n.N)
	case *Store:
		return "store to " + n.T.Name
	case *Decl:
		return "declaration of %" + n.L.Name
	case *Assign:
		return "assignment to %" + n.L.Name
	}
	return fmt.Sprintf("%T node", n)
}

func (v *fverifier) launchNode(l *Launch) error {
	if v.gpu != hostLevel {
		return fmt.Errorf("launch %s inside launch %s", l.Name, v.launch.Name)
	}
	if len(l.Grid) < 1 || len(l.Grid) > 3 || len(l.Block) < 1 || len(l.Block) > 3 {
		return fmt.Errorf("launch %s: %d grid and %d block dims (want 1 to 3 each)", l.Name, len(l.Grid), len(l.Block))
	}
	for _, e := range append(append([]IExpr(nil), l.Grid...), l.Block...) {
		if err := v.iexpr(e); err != nil {
			return fmt.Errorf("launch %s: %v", l.Name, err)
		}
	}
	reads, writes := LaunchTensors(l.Body)
	for _, c := range []struct {
		what       string
		used, list []*Tensor
	}{{"reads", reads, l.Reads}, {"writes", writes, l.Writes}} {
		listed := map[*Tensor]bool{}
		for _, t := range c.list {
			if t.Space == Shared {
				return fmt.Errorf("launch %s %s shared buffer %s (shared memory lives inside a block)", l.Name, c.what, t.Name)
			}
			listed[t] = true
		}
		for _, t := range c.used {
			if !listed[t] {
				return fmt.Errorf("launch %s %s %s but does not list it in %s", l.Name, c.what, t.Name, c.what)
			}
		}
	}
	for _, t := range l.Writes {
		if t.Kind == In || t.Kind == Scalar {
			return fmt.Errorf("launch %s writes input %s", l.Name, t.Name)
		}
	}
	if err := mbarrierArrays(l.Body); err != nil {
		return fmt.Errorf("launch %s: %v", l.Name, err)
	}
	v.gpu, v.launch, v.grids = launchLevel, l, 0
	err := v.nodes(l.Body)
	v.gpu, v.launch = hostLevel, nil
	return err
}

func (v *fverifier) gpuLoop(n *Loop) error {
	switch {
	case v.gpu == hostLevel:
		return fmt.Errorf("%s loop %s outside a launch", n.Kind, n.Var.Name)
	case n.Kind == GPUGrid:
		if v.gpu == threadLevel {
			return fmt.Errorf("launch %s: gpu.grid loop %s inside a thread loop", v.launch.Name, n.Var.Name)
		}
		if v.grids == len(v.launch.Grid) {
			return fmt.Errorf("launch %s: more gpu.grid loops than its %d grid dims", v.launch.Name, len(v.launch.Grid))
		}
		v.grids++
		err := v.bindLoop(n, func() error {
			if v.grids == len(v.launch.Grid) {
				v.gpu = blockLevel
			}
			return v.nodes(n.Body)
		})
		v.grids--
		v.gpu = launchLevel
		return err
	case v.gpu == threadLevel:
		return fmt.Errorf("launch %s: %s loop %s inside a thread body (a block has one set of threads)", v.launch.Name, n.Kind, n.Var.Name)
	case v.gpu == launchLevel:
		return fmt.Errorf("launch %s: %s loop %s outside its grid loops (%d of %d)", v.launch.Name, n.Kind, n.Var.Name, v.grids, len(v.launch.Grid))
	}
	// A thread nest at block level.
	chain := []*Loop{n}
	switch n.Kind {
	case GPUThread:
		return fmt.Errorf("launch %s: gpu.thread loop %s outside a gpu.warp loop", v.launch.Name, n.Var.Name)
	case GPUWarp:
		lane, ok := soleLoop(n.Body)
		if !ok || lane.Kind != GPUThread {
			return fmt.Errorf("launch %s: the body of gpu.warp loop %s must be one gpu.thread loop over its 32 lanes", v.launch.Name, n.Var.Name)
		}
		if !isConst(lane.Lo, 0) || !isConst(lane.Hi, 32) || !isConst(lane.Step, 1) {
			return fmt.Errorf("launch %s: gpu.thread loop %s runs %s .. %s step %s; a warp has 32 lanes (0 .. 32 step 1)", v.launch.Name, lane.Var.Name, lane.Lo, lane.Hi, lane.Step)
		}
		chain = append(chain, lane)
	case GPUBlock:
		for {
			in, ok := soleLoop(chain[len(chain)-1].Body)
			if !ok || !in.Kind.IsThreadLoop() {
				break
			}
			if in.Kind != GPUBlock {
				return fmt.Errorf("launch %s: %s loop %s inside gpu.block loop %s (a thread nest is gpu.block loops, or gpu.warp around gpu.thread)", v.launch.Name, in.Kind, in.Var.Name, chain[len(chain)-1].Var.Name)
			}
			chain = append(chain, in)
		}
	}
	for _, l := range chain {
		for _, e := range []IExpr{l.Lo, l.Hi, l.Step} {
			for _, o := range chain {
				if usesVar(e, o.Var) {
					return fmt.Errorf("launch %s: the bounds of thread loop %s depend on thread index %s", v.launch.Name, l.Var.Name, o.Var.Name)
				}
			}
		}
	}
	body := chain[len(chain)-1].Body
	div := &divergence{vars: map[*Var]int{}, locals: map[*LocalVar]int{}}
	for _, l := range chain {
		div.vars[l.Var] = divergent
		if l.Kind == GPUWarp {
			div.vars[l.Var] = warpUniform
			if isConst(l.Lo, 0) && isConst(l.Step, 1) {
				div.warp = l.Var // the warp index: thread / 32
			}
		}
	}
	for div.walk(body, uniform, nil) {
	}
	if err := div.err; err != nil {
		return fmt.Errorf("launch %s: %v", v.launch.Name, err)
	}
	// Bind the chain's variables (checking bounds as ordinary loops) and check the body at thread level.
	var bind func(i int) error
	bind = func(i int) error {
		if i == len(chain) {
			v.gpu, v.nest = threadLevel, chain[0]
			err := v.nodes(body)
			v.gpu, v.nest = blockLevel, nil
			return err
		}
		return v.bindLoop(chain[i], func() error { return bind(i + 1) })
	}
	return bind(0)
}

// bindLoop checks n's bounds and runs inner with n's variable bound.
func (v *fverifier) bindLoop(n *Loop, inner func() error) error {
	for _, e := range []IExpr{n.Lo, n.Hi, n.Step} {
		if err := v.iexpr(e); err != nil {
			return fmt.Errorf("loop %s: %v", n.Var.Name, err)
		}
	}
	if v.bound[n.Var] {
		return fmt.Errorf("loop variable %s rebound", n.Var.Name)
	}
	v.bound[n.Var] = true
	err := inner()
	delete(v.bound, n.Var)
	return err
}

func soleLoop(body []Node) (*Loop, bool) {
	if len(body) != 1 {
		return nil, false
	}
	l, ok := body[0].(*Loop)
	return l, ok
}

func isConst(e IExpr, c int) bool {
	k, ok := e.(IConst)
	return ok && k.V == c
}

func usesVar(e IExpr, v *Var) bool {
	found := false
	IVars(e, func(w *Var) { found = found || w == v })
	return found
}

// divergence finds, for a thread body, how far each variable and local may differ between threads
// (iterated to a fixpoint: a local assigned late in a loop is read early in the next trip), and checks
// that every barrier is reached under conditions and loop bounds uniform over its scope.
type divergence struct {
	vars    map[*Var]int
	locals  map[*LocalVar]int
	warp    *Var // the warp index of a gpu.warp nest from 0 by 1, if any
	changed bool
	err     error
}

func (d *divergence) iexpr(e IExpr) int {
	lv := uniform
	IVars(e, func(v *Var) { lv = max(lv, d.vars[v]) })
	return lv
}

func (d *divergence) expr(e Expr) int {
	if d.warpgroupSplit(e) {
		return warpgroupUniform
	}
	lv := uniform
	Walk(e, func(x Expr) {
		switch x := x.(type) {
		case *Local:
			lv = max(lv, d.locals[x.L])
		case *VarVal:
			lv = max(lv, d.vars[x.V])
		case *Load:
			for _, ix := range x.Idx {
				lv = max(lv, d.iexpr(ix))
			}
		}
	})
	return lv
}

func (d *divergence) setLocal(l *LocalVar, lv int) {
	if lv > d.locals[l] {
		d.locals[l] = lv
		d.changed = true
	}
}

func (d *divergence) setVar(v *Var, lv int) {
	if lv > d.vars[v] {
		d.vars[v] = lv
		d.changed = true
	}
}

// walk visits body under control divergence ctrl; where names the condition or loop that made ctrl
// non-uniform. It reports whether any level rose (another round is needed); once none rises it checks
// the barriers, recording the first violation in d.err.
func (d *divergence) walk(body []Node, ctrl int, where []string) bool {
	d.changed = false
	d.visit(body, ctrl, where, false)
	if d.changed {
		return true
	}
	d.visit(body, ctrl, where, true)
	return false
}

func (d *divergence) visit(body []Node, ctrl int, where []string, check bool) {
	for _, n := range body {
		switch n := n.(type) {
		case *Decl:
			d.setLocal(n.L, max(ctrl, d.expr(n.Init)))
		case *Assign:
			d.setLocal(n.L, max(ctrl, d.expr(n.Value)))
		case *Nest:
			d.visit(n.Body, ctrl, where, check)
		case *Alloc:
			d.visit(n.Body, ctrl, where, check)
		case *Loop:
			lv := max(ctrl, d.iexpr(n.Lo), d.iexpr(n.Hi), d.iexpr(n.Step))
			d.setVar(n.Var, lv)
			w := where
			if lv > ctrl {
				w = append(append([]string(nil), where...), "loop "+n.Var.Name+" whose bounds differ between threads")
			}
			d.visit(n.Body, lv, w, check)
		case *If:
			lv := max(ctrl, d.expr(n.Cond))
			w := where
			if lv > ctrl {
				w = append(append([]string(nil), where...), "if "+FormatExpr(n.Cond))
			}
			d.visit(n.Then, lv, w, check)
			d.visit(n.Else, lv, w, check)
		case *Barrier:
			d.collective(check, ctrl, where, "barrier "+n.Scope.String(), n.Scope)
		case *WarpReduce:
			d.collective(check, ctrl, where, n.String(), n.Scope)
			d.setLocal(n.L, divergent) // lane 0's result differs from the other lanes' values
		case *AccDecl:
			d.collective(check, ctrl, where, "acc %"+n.Acc.Name, n.Acc.Scope)
		case *MMA:
			d.collective(check, ctrl, where, "mma %"+n.Acc.Name, n.Acc.Scope)
		case *AccStore:
			d.collective(check, ctrl, where, "accstore %"+n.Acc.Name, n.Acc.Scope)
		}
	}
}

// collective records an error when an operation of all the threads of scope s is under control that
// may differ between them.
func (d *divergence) collective(check bool, ctrl int, where []string, what string, s Scope) {
	limit := uniform
	switch s {
	case ScopeThread:
		return
	case ScopeWarp, ScopeSimdgroup:
		limit = warpUniform
	case ScopeWarpgroup:
		limit = warpgroupUniform
	}
	if check && ctrl > limit && d.err == nil {
		d.err = fmt.Errorf("%s under %s: not every thread of the %s reaches it", what, where[len(where)-1], s)
	}
}
