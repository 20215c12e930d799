package ir

import (
	"fmt"
	"math"
)

// The interpreter runs a Launch as the hardware would, one block at a time (blocks are independent):
//
//   - The block's shared buffers are allocated once (filled with NaN, like all scratch), then each
//     thread of the block runs the block-level body as its own goroutine, taking its own iteration of
//     every thread nest (thread t: iteration t in loop order).
//   - Only one thread runs at a time. A thread runs until it reaches a barrier or ends; when every
//     thread of the barrier's scope waits at it, they all go on. The phases between barriers are
//     therefore run thread after thread, in thread order — one legal interleaving of many, which is why
//     the accesses are checked as well.
//   - Every access to a shared element is recorded with the thread and the barrier counts it had made.
//     Two accesses by different threads, at least one a write, that no barrier orders (a block barrier
//     both passed between them, or a warp barrier when both are in one warp) are a race: the run stops
//     with an error that names the buffer, the element and both threads. The global tensors the launch
//     writes are checked the same way, where threads of different blocks are never ordered (blocks do
//     not synchronise).
//   - A barrier that some thread of its scope never reaches (it ended, or waits at a different barrier)
//     is an error too, as are blocks of more than 1024 threads, thread nests whose iteration count is
//     not the block's thread count, and grid loops whose trip count is not the launch's grid dim.
//   - Asynchronous copies (AsyncCommit, AsyncWait; the copies themselves are issued by Copy nodes) read
//     their source when issued and land in their destination when a wait retires their group, as
//     writes by the issuing thread at that moment. Touching a destination element while its copy is in
//     flight (issued, not yet retired) is an error rather than a read of the old value: on hardware that
//     read returns either value, and a test should fail on it. A thread that ends with copies in flight
//     is an error as well.

// maxBlockThreads is the largest thread block CUDA and Metal launch.
const maxBlockThreads = 1024

// launchState is the launch being interpreted.
type launchState struct {
	l        *Launch
	grid     []int
	nthreads int
	depth    int                      // grid loops entered
	blocks   int                      // blocks run so far
	global   map[*Tensor][]globalLog  // access logs of the global tensors the launch writes
	reds     map[*WarpReduce]*Barrier // the wait of each lane reduction
}

// access is one recorded access to a shared element: by which thread, after how many barriers of each
// scope that thread had passed.
type access struct {
	thread          int
	block, warp, wg int
	arr             int // mbarrier arrivals the thread had made (mbarrier.go)
}

// elemLog is the access history of one shared element in the current phase.
type elemLog struct {
	written bool
	w       access
	reads   []access
}

// blockRun is the state of one running block.
type blockRun struct {
	id         int // in run order
	nthreads   int
	threads    []*gpuThread
	log        map[*Tensor][]elemLog
	inflight   map[*Tensor]map[int]int     // element offset → issuing thread, for async copies not yet landed
	mbars      map[mbarKey]*mbarState      // mbarrier.go
	mbarFlight map[*Tensor]map[int]mbarTag // bulk copies in flight, by the phase they complete on
	landed     map[*Tensor]map[int]mbarTag // elements bulk copies landed, by the phase that landed them
	yield      chan threadEvent
}

type threadEvent struct {
	t       *gpuThread
	barrier *Barrier // nil: the thread ended, or waits on an mbarrier
	mwait   bool     // the thread waits on an mbarrier phase (gpuThread.mwait)
	err     error
	bug     any // a panic that is not a RuntimeError: rethrown on the interpreter's goroutine
}

// gpuThread is one thread of a running block.
type gpuThread struct {
	id              int
	blk             *blockRun
	in              *interp
	resume          chan bool // true: run on; false: abort
	block, warp, wg int       // barriers passed, by scope
	waiting         *Barrier
	done            bool
	pending         []asyncCopy     // issued, not committed
	groups          [][]asyncCopy   // committed, oldest first
	commits         int             // AsyncCommits run
	red             float64         // at a WarpReduce: the value posted, then the result
	mwait           func() bool     // at an MbarWait: whether the phase completed
	mwaitWhat       func() string   // at an MbarWait: the deadlock message
	seen            map[mbarKey]int // per mbarrier, the phases this thread saw complete (MbarWait)
	arrivals        int             // MbarArrives run
	hb              map[int]int     // per thread, its arrivals that happen before this thread's point
}

type asyncCopy struct {
	dst *Tensor
	off int
	val float64
}

// abortRun unwinds a thread's goroutine when another thread failed.
type abortRun struct{}

// gpuNode runs the GPU nodes and loops; it reports false for any other node.
func (in *interp) gpuNode(n Node) bool {
	switch n := n.(type) {
	case *Launch:
		in.runLaunch(n)
	case *Barrier, *AsyncCommit, *AsyncWait:
		if in.th == nil {
			fail("%s outside a GPU thread", nodeName(n))
		}
		in.syncNode(n)
	case *Copy:
		in.copyTile(n)
	case *WarpReduce:
		in.warpReduce(n)
	case *MbarInit, *MbarArrive, *MbarWait:
		in.mbarNode(n)
	case *AccDecl:
		return in.collective(n.Acc.Scope)
	case *AccStore:
		return in.collective(n.Acc.Scope)
	case *MMA:
		if in.collective(n.Acc.Scope) {
			return true
		}
		if in.th != nil {
			in.mmaReads(n)
		}
		return false
	case *Loop:
		if !n.Kind.IsGPU() {
			return false
		}
		if n.Kind != GPUGrid || in.launch == nil || in.th != nil {
			fail("%s loop %s outside the grid level of a launch", n.Kind, n.Var.Name)
		}
		in.gridLoop(n)
	default:
		return false
	}
	return true
}

func (in *interp) syncNode(n Node) {
	th := in.th
	switch n := n.(type) {
	case *Barrier:
		th.barrier(n)
	case *AsyncCommit:
		th.groups = append(th.groups, th.pending)
		th.pending = nil
		th.commits++
	case *AsyncWait:
		for len(th.groups) > n.N {
			th.land(th.groups[0])
			th.groups = th.groups[1:]
		}
	}
}

func (in *interp) runLaunch(l *Launch) {
	if in.launch != nil || in.th != nil {
		fail("launch %s inside a launch", l.Name)
	}
	ls := &launchState{l: l, nthreads: 1, global: map[*Tensor][]globalLog{}}
	for _, t := range l.Writes {
		ls.global[t] = nil
	}
	for _, e := range l.Grid {
		ls.grid = append(ls.grid, in.ival(e))
	}
	for _, e := range l.Block {
		ls.nthreads *= in.ival(e)
	}
	if ls.nthreads < 1 || ls.nthreads > maxBlockThreads {
		fail("launch %s: a block of %d threads (want 1 to %d)", l.Name, ls.nthreads, maxBlockThreads)
	}
	in.launch = ls
	defer func() { in.launch = nil }()
	in.nodes(l.Body)
}

func tripCount(lo, hi, step int) int {
	if hi <= lo {
		return 0
	}
	return (hi - lo + step - 1) / step
}

func (in *interp) gridLoop(n *Loop) {
	ls := in.launch
	if ls.depth == len(ls.grid) {
		fail("launch %s: more gpu.grid loops than grid dims", ls.l.Name)
	}
	lo, hi, step := in.ival(n.Lo), in.ival(n.Hi), in.ival(n.Step)
	if step <= 0 {
		fail("loop %s has step %d", n.Var.Name, step)
	}
	if c := tripCount(lo, hi, step); c != ls.grid[ls.depth] {
		fail("launch %s: gpu.grid loop %s runs %d blocks, grid dim %d is %d", ls.l.Name, n.Var.Name, c, ls.depth, ls.grid[ls.depth])
	}
	ls.depth++
	defer func() { ls.depth-- }()
	for x := lo; x < hi; x += step {
		in.vars[n.Var] = x
		if ls.depth == len(ls.grid) {
			in.runBlock(n.Body)
		} else {
			in.nodes(n.Body)
		}
	}
	delete(in.vars, n.Var)
}

// runBlock runs one thread block: body is the block level (shared allocations and thread nests).
func (in *interp) runBlock(body []Node) {
	ls := in.launch
	blk := &blockRun{id: ls.blocks, nthreads: ls.nthreads, log: map[*Tensor][]elemLog{}, inflight: map[*Tensor]map[int]int{}, yield: make(chan threadEvent),
		mbars: map[mbarKey]*mbarState{}, mbarFlight: map[*Tensor]map[int]mbarTag{}, landed: map[*Tensor]map[int]mbarTag{}}
	ls.blocks++
	saved := map[*Tensor][]float64{}
	in.allocShared(body, saved)
	defer func() {
		for t, old := range saved {
			if old == nil {
				delete(in.bufs, t)
			} else {
				in.bufs[t] = old
			}
		}
	}()
	barriers := false
	WalkNodes(body, func(n Node) bool {
		switch n.(type) {
		case *Barrier, *WarpReduce, *MbarWait:
			barriers = true
		}
		return !barriers
	})
	if !barriers {
		// One phase: each thread runs to its end in turn, on this goroutine.
		for id := 0; id < blk.nthreads; id++ {
			th := &gpuThread{id: id, blk: blk}
			th.in = in.fork(th)
			th.runAll(body)
		}
		blk.mbarEnd()
		return
	}
	for id := 0; id < blk.nthreads; id++ {
		th := &gpuThread{id: id, blk: blk, resume: make(chan bool)}
		th.in = in.fork(th)
		blk.threads = append(blk.threads, th)
		go th.run(body)
	}
	if err := blk.schedule(); err != nil {
		panic(err)
	}
	blk.mbarEnd()
}

// allocShared allocates the shared buffers of a block level, remembering what they shadowed.
func (in *interp) allocShared(body []Node, saved map[*Tensor][]float64) {
	for _, n := range body {
		switch n := n.(type) {
		case *Nest:
			in.allocShared(n.Body, saved)
		case *Alloc:
			if n.T.Space != Shared {
				fail("launch %s: %s buffer %s allocated at block level", in.launch.l.Name, n.T.Space, n.T.Name)
			}
			size := in.ival(n.T.Size)
			if size < 0 {
				fail("%s: negative size %d", n.T.Name, size)
			}
			if _, ok := saved[n.T]; !ok {
				saved[n.T] = in.bufs[n.T]
			}
			buf := make([]float64, size)
			for i := range buf {
				buf[i] = math.NaN()
			}
			in.bufs[n.T] = buf
			in.allocShared(n.Body, saved)
		}
	}
}

// fork makes the interpreter of one thread: its own variables, locals and buffer bindings (so that
// what it allocates is its own), sharing the buffers bound so far.
func (in *interp) fork(th *gpuThread) *interp {
	c := &interp{mode: in.mode, k: in.k, dims: in.dims, plan: in.plan, launch: in.launch, th: th,
		bufs: make(map[*Tensor][]float64, len(in.bufs)), vars: make(map[*Var]int, len(in.vars)), loc: make(map[*LocalVar]float64, len(in.loc)),
		accs: map[*Accum][]float64{}, lays: map[Layout]*layoutEval{}}
	for k, v := range in.bufs {
		c.bufs[k] = v
	}
	for k, v := range in.vars {
		c.vars[k] = v
	}
	for k, v := range in.loc {
		c.loc[k] = v
	}
	return c
}

func (th *gpuThread) run(body []Node) {
	defer func() {
		ev := threadEvent{t: th}
		if r := recover(); r != nil {
			switch r := r.(type) {
			case abortRun:
			case *RuntimeError:
				ev.err = r
			default:
				ev.bug = r
			}
		}
		th.blk.yield <- ev
	}()
	if !<-th.resume {
		panic(abortRun{})
	}
	th.runAll(body)
}

// runAll runs the thread's program: the block level, then the check that no copy is left in flight.
func (th *gpuThread) runAll(body []Node) {
	th.in.blockLevel(body)
	if len(th.pending) > 0 || len(th.groups) > 0 {
		fail("thread %d ends with %d async copy groups in flight (and %d copies not committed): missing async.wait 0", th.id, len(th.groups), len(th.pending))
	}
}

// blockLevel runs a block-level body in one thread: shared buffers are already allocated; of each
// thread nest the thread runs its own iteration.
func (in *interp) blockLevel(body []Node) {
	for _, n := range body {
		switch n := n.(type) {
		case *Nest:
			in.blockLevel(n.Body)
		case *Alloc:
			in.blockLevel(n.Body)
		case *Loop:
			if !n.Kind.IsThreadLoop() {
				fail("launch %s: %s loop %s at block level", in.launch.l.Name, n.Kind, n.Var.Name)
			}
			in.threadNest(n)
		default:
			fail("launch %s: %T at block level, outside the thread loops", in.launch.l.Name, n)
		}
	}
}

// threadNest runs this thread's iteration of the thread nest rooted at n.
func (in *interp) threadNest(n *Loop) {
	chain := []*Loop{n}
	for {
		l, ok := soleLoop(chain[len(chain)-1].Body)
		if !ok || !l.Kind.IsThreadLoop() {
			break
		}
		chain = append(chain, l)
	}
	counts := make([]int, len(chain))
	starts := make([]int, len(chain))
	steps := make([]int, len(chain))
	total := 1
	for i, l := range chain {
		lo, hi, step := in.ival(l.Lo), in.ival(l.Hi), in.ival(l.Step)
		if step <= 0 {
			fail("loop %s has step %d", l.Var.Name, step)
		}
		counts[i], starts[i], steps[i] = tripCount(lo, hi, step), lo, step
		total *= counts[i]
	}
	if total != in.launch.nthreads {
		fail("launch %s: the thread nest of %s has %d iterations for a block of %d threads", in.launch.l.Name, n.Var.Name, total, in.launch.nthreads)
	}
	rest := in.th.id
	for i := len(chain) - 1; i >= 0; i-- {
		in.vars[chain[i].Var] = starts[i] + rest%counts[i]*steps[i]
		rest /= counts[i]
	}
	in.nodes(chain[len(chain)-1].Body)
	for _, l := range chain {
		delete(in.vars, l.Var)
	}
}

// barrier suspends the thread until the scheduler releases it.
func (th *gpuThread) barrier(b *Barrier) {
	th.waiting = b
	th.blk.yield <- threadEvent{t: th, barrier: b}
	if !<-th.resume {
		panic(abortRun{})
	}
}

// group returns the threads a barrier of scope s synchronises with th.
func (blk *blockRun) group(th *gpuThread, s Scope) []*gpuThread {
	size := s.Threads()
	if s == ScopeBlock || size == 0 || size > blk.nthreads {
		return blk.threads
	}
	first := th.id / size * size
	return blk.threads[first:min(first+size, blk.nthreads)]
}

// schedule runs the block's threads to completion (or to the first error), one at a time.
func (blk *blockRun) schedule() (err error) {
	defer func() {
		if err != nil {
			blk.abort()
		}
	}()
	for {
		progress, alive := false, false
		for _, th := range blk.threads {
			if th.done {
				continue
			}
			alive = true
			if th.waiting != nil || (th.mwait != nil && !th.mwait()) {
				continue
			}
			th.mwait = nil
			progress = true
			th.resume <- true
			ev := <-blk.yield
			if ev.bug != nil {
				th.done = true
				blk.abort()
				panic(ev.bug)
			}
			if ev.err != nil {
				th.done = true
				return ev.err
			}
			if ev.mwait {
				continue
			}
			if ev.barrier == nil {
				th.done = true
				continue
			}
			if err := blk.release(th, ev.barrier); err != nil {
				return err
			}
		}
		if !alive {
			return nil
		}
		if !progress {
			for _, th := range blk.threads {
				if !th.done && th.mwait != nil {
					return &RuntimeError{"deadlock: " + th.mwaitWhat()}
				}
			}
			for _, th := range blk.threads {
				if th.waiting != nil {
					if _, err := blk.arrived(th, th.waiting, blk.group(th, th.waiting.Scope)); err != nil {
						return err
					}
					return &RuntimeError{fmt.Sprintf("deadlock: thread %d waits at %s that not every thread of its %s reaches", th.id, syncName(th.waiting), th.waiting.Scope)}
				}
			}
		}
	}
}

// release lets the threads of th's barrier group go on once all of them wait at barrier b.
func (blk *blockRun) release(th *gpuThread, b *Barrier) error {
	g := blk.group(th, b.Scope)
	if ok, err := blk.arrived(th, b, g); !ok || err != nil {
		return err
	}
	if b.red != nil {
		reduceLanes(b.red, g)
		for _, o := range g {
			o.waiting = nil
		}
		return nil
	}
	for _, o := range g {
		o.waiting = nil
		switch b.Scope {
		case ScopeBlock:
			o.block++
		case ScopeWarpgroup:
			o.wg++
		default:
			o.warp++
		}
	}
	return nil
}

// arrived reports whether every thread of group g waits at b, or the error that keeps one from ever
// arriving: it ended, or it waits at another barrier of the same scope.
func (blk *blockRun) arrived(th *gpuThread, b *Barrier, g []*gpuThread) (bool, error) {
	all := true
	for _, o := range g {
		switch {
		case o.done:
			return false, &RuntimeError{fmt.Sprintf("%s: thread %d waits at it but thread %d of its %s ended without reaching it", syncName(b), th.id, o.id, b.Scope)}
		case o.waiting != nil && o.waiting != b && o.waiting.Scope == b.Scope:
			x, y := min(th.id, o.id), max(th.id, o.id)
			return false, &RuntimeError{fmt.Sprintf("%s: threads %d and %d of one %s wait at different barriers (%s and %s)", syncName(b), x, y, b.Scope, syncName(b), syncName(o.waiting))}
		case o.waiting != b:
			all = false // still running, or waiting at a barrier of another scope (a deadlock if it stays)
		}
	}
	return all, nil
}

// abort ends every thread still running (their goroutines wait at a barrier or have not started).
func (blk *blockRun) abort() {
	for _, th := range blk.threads {
		if th.done {
			continue
		}
		th.done = true
		th.resume <- false
		<-blk.yield
	}
}

func (th *gpuThread) stamp() access {
	return access{thread: th.id, block: th.block, warp: th.warp, wg: th.wg, arr: th.arrivals}
}

// ordered reports whether access a, by a thread of th's block, happens before th's current point.
func (th *gpuThread) ordered(a access) bool {
	switch {
	case a.thread == th.id || a.block < th.block:
		return true
	case a.thread/32 == th.id/32 && a.warp < th.warp:
		return true
	case a.thread/128 == th.id/128 && a.wg < th.wg:
		return true
	case a.arr < th.hb[a.thread]: // an mbarrier arrival after a, whose phase th waited for
		return true
	}
	return false
}

// access records one access by the thread to element off of t, failing on a race or on an element
// whose async copy is in flight. Shared buffers are tracked, and the global tensors the launch writes.
func (th *gpuThread) access(t *Tensor, off int, write bool) {
	if t.Space != Shared {
		th.globalAccess(t, off, write)
		return
	}
	blk := th.blk
	th.mbarCheck(t, off, write)
	if who, ok := blk.inflight[t][off]; ok {
		fail("%s[%d]: thread %d %s it while thread %d's async copy into it is in flight (async.wait missing or too late)", t.Name, off, th.id, verb(write), who)
	}
	log := blk.log[t]
	if log == nil {
		log = make([]elemLog, len(th.in.bufs[t]))
		blk.log[t] = log
	}
	e := &log[off]
	if e.written && !th.ordered(e.w) {
		fail("race on shared %s[%d]: thread %d %s it after thread %d wrote it with no barrier between", t.Name, off, th.id, verb(write), e.w.thread)
	}
	if !write {
		live := e.reads[:0]
		for _, r := range e.reads {
			if r.block == th.block && r.thread != th.id {
				live = append(live, r)
			}
		}
		e.reads = append(live, th.stamp())
		return
	}
	for _, r := range e.reads {
		if !th.ordered(r) {
			fail("race on shared %s[%d]: thread %d writes it after thread %d read it with no barrier between", t.Name, off, th.id, r.thread)
		}
	}
	e.written, e.w, e.reads = true, th.stamp(), e.reads[:0]
}

// globalAccess checks an access to a global tensor the launch writes: an element one thread writes may
// be touched by another thread only after a barrier of their block orders the two (blocks never
// synchronise). Reads of tensors the launch does not write cannot race and are not recorded.
func (th *gpuThread) globalAccess(t *Tensor, off int, write bool) {
	ls := th.in.launch
	log, tracked := ls.global[t]
	if !tracked {
		return
	}
	if log == nil {
		log = make([]globalLog, len(th.in.bufs[t]))
		ls.global[t] = log
	}
	e := &log[off]
	me := globalAccess{blk: th.blk.id, a: th.stamp()}
	who := func(g globalAccess, did string) string {
		if g.blk != me.blk {
			return fmt.Sprintf("block %d thread %d %s it (blocks never synchronise)", g.blk, g.a.thread, did)
		}
		return fmt.Sprintf("thread %d %s it with no barrier between", g.a.thread, did)
	}
	ordered := func(g globalAccess) bool { return g.blk == me.blk && th.ordered(g.a) }
	if e.written && !ordered(e.w) {
		fail("race on global %s[%d]: block %d thread %d %s it after %s", t.Name, off, me.blk, th.id, verb(write), who(e.w, "wrote"))
	}
	if !write {
		if n := len(e.reads); n == 0 || e.reads[n-1] != me {
			e.reads = append(e.reads, me)
		}
		return
	}
	for _, r := range e.reads {
		if !ordered(r) {
			fail("race on global %s[%d]: block %d thread %d writes it after %s", t.Name, off, me.blk, th.id, who(r, "read"))
		}
	}
	e.written, e.w, e.reads = true, me, e.reads[:0]
}

// globalAccess is one access to a global element: by which block (in run order) and thread.
type globalAccess struct {
	blk int
	a   access
}

type globalLog struct {
	written bool
	w       globalAccess
	reads   []globalAccess
}

func verb(write bool) string {
	if write {
		return "writes"
	}
	return "reads"
}

// issueAsync starts an asynchronous copy of val into element off of dst by this thread.
func (th *gpuThread) issueAsync(dst *Tensor, off int, val float64) {
	th.access(dst, off, true) // the destination must be free of other threads' accesses in this phase
	m := th.blk.inflight[dst]
	if m == nil {
		m = map[int]int{}
		th.blk.inflight[dst] = m
	}
	m[off] = th.id
	th.pending = append(th.pending, asyncCopy{dst, off, val})
}

// land completes a group of copies: each lands as a write by the issuing thread.
func (th *gpuThread) land(g []asyncCopy) {
	for _, c := range g {
		delete(th.blk.inflight[c.dst], c.off)
		th.in.store(c.dst, c.off, c.val) // records the write
	}
}

// collective reports whether the current thread skips an MMA node of scope s: a warp-, warpgroup- or
// simdgroup-scope MMA is one operation of all the threads of its scope, run here by the first of them
// (its lane 0) on behalf of all, which holds the accumulator.
func (in *interp) collective(s Scope) bool {
	if in.th == nil || s == ScopeThread {
		return false
	}
	size := s.Threads()
	if size == 0 {
		fail("an MMA of scope %s", s)
	}
	return in.th.id%size != 0
}

// mmaReads records the shared-memory reads of an MMA (its valid operand elements) for the race check.
func (in *interp) mmaReads(n *MMA) {
	m, nn, k := in.ival(n.Acc.M), in.ival(n.Acc.N), in.ival(n.K)
	vm, vn, vk := in.validOr(n.ValidM, m), in.validOr(n.ValidN, nn), in.validOr(n.ValidK, k)
	for _, o := range []struct {
		op         Operand
		rows, cols int
	}{{n.A, vm, vk}, {n.B, vk, vn}} {
		if o.op.T.Space != Shared {
			continue
		}
		off := in.ival(o.op.Off)
		for r := 0; r < o.rows; r++ {
			for c := 0; c < o.cols; c++ {
				if at := off + in.layoutAt(o.op.Layout, r, c); at >= 0 && at < len(in.bufs[o.op.T]) {
					in.th.access(o.op.T, at, false)
				}
			}
		}
	}
}
