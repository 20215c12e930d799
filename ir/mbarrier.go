package ir

import (
	"fmt"
	"strings"
)

// Mbarriers: the completion mechanism of Hopper's bulk (TMA) copies (PTX ISA "Parallel Synchronization
// and Communication Instructions: mbarrier", "cp.async.bulk.tensor").
//
// An mbarrier array is a shared Scratch tensor of 8-byte elements (Type F64, for its size only: it holds
// no values, and the verifier refuses any load, store or copy of it), allocated at block level like
// any shared buffer; MbarRef names one of its barriers. A barrier counts phases. Each phase expects
// Count arrivals (MbarInit) and a transaction count of bytes: an arrival with expect_tx (MbarArrive
// with Tx) adds Tx bytes to it, and every bulk copy that completes on the barrier (a Copy with Bar)
// takes its bytes off when it lands. The phase completes when all arrivals are in and the byte count is
// back to zero; the barrier then starts the next phase, expecting Count arrivals again.
//
// MbarWait blocks the thread until phase Phase (0-based) of its barrier has completed. The hardware
// waits on the phase's parity (mbarrier.try_wait.parity with Phase & 1), which names phase Phase only
// while the barrier is in phase Phase or Phase+1: the interpreter checks that this holds when the
// thread waits and when it goes on, so that a wait that would return early (the barrier two phases
// behind) or hang (two phases ahead) is an error, not a silent wrong result.
//
// Arrivals also order ordinary accesses: what a thread did before an arrival happens before whatever a
// thread does after waiting for the phase that arrival completed (mbarrier arrive has release, the
// wait acquire semantics), so a producer may refill a stage once the consumers that read it arrived
// on its "empty" barrier and it waited for that phase.
//
// Data a bulk copy writes becomes readable by a thread only after that thread waited for the phase it
// completed on: the interpreter tags every element the copy lands with (barrier, phase), and touching
// an element before its phase completed, or reading it without having waited for that phase, is an
// error. Bulk copies write through the async proxy: they are not ordered by block barriers like a
// thread's writes, only by the mbarrier.

// AsyncMbarrier is the mechanism of copies that complete on an mbarrier (Copy.Bar).
const AsyncMbarrier = AsyncGroups + 1

// MbarRef is barrier Idx of the mbarrier array T.
type MbarRef struct {
	T   *Tensor
	Idx IExpr
}

func (r MbarRef) String() string { return fmt.Sprintf("%s[%s]", r.T.Name, r.Idx) }

// MbarInit initialises a barrier to expect Count arrivals per phase, in phase 0 with no bytes pending.
// One thread runs it; the others may use the barrier only after a block barrier that follows it.
type MbarInit struct {
	Bar   MbarRef
	Count int
}

// MbarArrive is one arrival on a barrier's current phase; with Tx (not nil) it first adds Tx bytes to
// the phase's expected transaction count (mbarrier.arrive.expect_tx).
type MbarArrive struct {
	Bar MbarRef
	Tx  IExpr
}

// MbarWait blocks the thread until phase Phase of the barrier has completed (see above).
type MbarWait struct {
	Bar   MbarRef
	Phase IExpr
}

func (*MbarInit) node()   {}
func (*MbarArrive) node() {}
func (*MbarWait) node()   {}

func (n *MbarInit) String() string { return fmt.Sprintf("mbarrier.init %s count %d", n.Bar, n.Count) }

func (n *MbarArrive) String() string {
	if n.Tx == nil {
		return fmt.Sprintf("mbarrier.arrive %s", n.Bar)
	}
	return fmt.Sprintf("mbarrier.arrive %s expect_tx %s", n.Bar, n.Tx)
}

func (n *MbarWait) String() string { return fmt.Sprintf("mbarrier.wait %s phase %s", n.Bar, n.Phase) }

// printMbar prints the mbarrier nodes; it reports false for any other node.
func printMbar(b *strings.Builder, ind string, n Node) bool {
	switch n.(type) {
	case *MbarInit, *MbarArrive, *MbarWait:
		fmt.Fprintf(b, "%s%s\n", ind, n)
		return true
	}
	return false
}

// copyBytes is the transaction count of a bulk copy: its whole tile in the destination's type (the
// zero-filled elements outside the valid extents count too, as TMA's out-of-bounds fill does).
func copyBytes(rows, cols int, t *Tensor) int { return rows * cols * t.Type.Size() }

// ---- verification ----

// verifyMbarRef checks that r names an allocated shared mbarrier array at thread level.
func (v *fverifier) verifyMbarRef(what string, r MbarRef) error {
	if v.gpu != threadLevel {
		return fmt.Errorf("%s outside a GPU thread body", what)
	}
	if r.T == nil || r.Idx == nil {
		return fmt.Errorf("%s: no barrier", what)
	}
	if r.T.Kind != Scratch || r.T.Space != Shared || r.T.Type.Size() != 8 {
		return fmt.Errorf("%s: %s is not a shared scratch array of 8-byte mbarriers", what, r.T.Name)
	}
	if err := v.tensor(r.T); err != nil {
		return err
	}
	if err := v.iexpr(r.Idx); err != nil {
		return fmt.Errorf("%s: %v", what, err)
	}
	return nil
}

// mbarNode checks an mbarrier node (done reports whether n is one).
func (v *fverifier) mbarNode(n Node) (done bool, err error) {
	switch n := n.(type) {
	case *MbarInit:
		if n.Count < 1 {
			return true, fmt.Errorf("mbarrier.init %s: count %d (want ≥ 1)", n.Bar, n.Count)
		}
		return true, v.verifyMbarRef("mbarrier.init", n.Bar)
	case *MbarArrive:
		if err := v.verifyMbarRef("mbarrier.arrive", n.Bar); err != nil {
			return true, err
		}
		if n.Tx != nil {
			if err := v.iexpr(n.Tx); err != nil {
				return true, fmt.Errorf("mbarrier.arrive %s: %v", n.Bar, err)
			}
		}
		return true, nil
	case *MbarWait:
		if err := v.verifyMbarRef("mbarrier.wait", n.Bar); err != nil {
			return true, err
		}
		if n.Phase == nil {
			return true, fmt.Errorf("mbarrier.wait %s: no phase", n.Bar.T.Name)
		}
		return true, v.iexpr(n.Phase)
	}
	return false, nil
}

// verifyBulkCopy checks the mbarrier of an async copy that completes on one.
func (v *fverifier) verifyBulkCopy(n *Copy) error {
	if n.Group != nil {
		return fmt.Errorf("copy into %s completes on mbarrier %s and joins commit group %s: one mechanism or the other", n.Dst.T.Name, n.Bar, n.Group)
	}
	return v.verifyMbarRef("bulk copy into "+n.Dst.T.Name, *n.Bar)
}

// mbarrierArrays checks that the mbarrier arrays a launch body names are used by mbarrier nodes only
// (never loaded, stored or copied: they hold barrier state, not data).
func mbarrierArrays(body []Node) error {
	bars := map[*Tensor]bool{}
	WalkNodes(body, func(n Node) bool {
		switch n := n.(type) {
		case *MbarInit:
			bars[n.Bar.T] = true
		case *MbarArrive:
			bars[n.Bar.T] = true
		case *MbarWait:
			bars[n.Bar.T] = true
		case *Copy:
			if n.Bar != nil {
				bars[n.Bar.T] = true
			}
		}
		return true
	})
	if len(bars) == 0 {
		return nil
	}
	var err error
	WalkNodes(body, func(n Node) bool {
		if err != nil {
			return false
		}
		NodeExprs(n, func(e Expr) {
			Walk(e, func(x Expr) {
				if l, ok := x.(*Load); ok && bars[l.T] && err == nil {
					err = fmt.Errorf("load of mbarrier array %s", l.T.Name)
				}
			})
		})
		NodeTensors(n, func(t *Tensor) {
			if bars[t] && err == nil {
				err = fmt.Errorf("%s reads mbarrier array %s", nodeName(n), t.Name)
			}
		}, func(t *Tensor) {
			if bars[t] && err == nil {
				err = fmt.Errorf("%s writes mbarrier array %s", nodeName(n), t.Name)
			}
		})
		return true
	})
	return err
}

// warpgroupSplit reports whether e is w < c or w >= c for the warp index w and c a multiple of 4: the
// same in every thread of a warpgroup (warp specialisation's producer/consumer split).
func (d *divergence) warpgroupSplit(e Expr) bool {
	b, ok := e.(*Binary)
	if !ok || d.warp == nil || (b.Op != Lt && b.Op != Ge) {
		return false
	}
	v, okv := b.X.(*VarVal)
	c, okc := b.Y.(*Const)
	return okv && okc && v.V == d.warp && c.Val == float64(int(c.Val)) && int(c.Val)%4 == 0
}

// ---- interpretation ----

// mbarState is one barrier of a running block.
type mbarState struct {
	init    access // the MbarInit
	count   int    // arrivals per phase
	pending int    // arrivals still expected in the current phase
	tx      int    // bytes expected minus bytes landed, current phase
	phase   int    // phases completed
	flight  []mbarCopy
	rel     map[int]int         // current phase: per arriving thread, its arrival count after arriving
	relOf   map[int]map[int]int // per completed phase, its rel
}

// mbarCopy is one element of a bulk copy in flight on a barrier.
type mbarCopy struct {
	dst    *Tensor
	buf    []float64 // dst's storage in this block
	off    int
	val    float64
	thread int
}

// mbarTag says which barrier phase landed a shared element.
type mbarTag struct {
	bar   *Tensor
	idx   int
	phase int
}

type mbarKey struct {
	bar *Tensor
	idx int
}

// mbarOf returns the state of barrier r, which the current thread may use.
func (in *interp) mbarOf(r MbarRef, what string) (*mbarState, mbarKey) {
	th := in.th
	k := mbarKey{r.T, in.ival(r.Idx)}
	if k.idx < 0 || k.idx >= len(in.bufs[r.T]) {
		fail("%s %s[%d]: index out of range [0, %d)", what, r.T.Name, k.idx, len(in.bufs[r.T]))
	}
	s := th.blk.mbars[k]
	if s == nil {
		fail("%s %s[%d] by thread %d before mbarrier.init", what, r.T.Name, k.idx, th.id)
	}
	if !th.ordered(s.init) {
		fail("%s %s[%d] by thread %d is not ordered after thread %d's mbarrier.init by a block barrier", what, r.T.Name, k.idx, th.id, s.init.thread)
	}
	return s, k
}

// mbarNode runs an mbarrier node in the current thread.
func (in *interp) mbarNode(n Node) bool {
	th := in.th
	switch n := n.(type) {
	case *MbarInit, *MbarArrive, *MbarWait:
		if th == nil {
			fail("%s outside a GPU thread", n)
		}
	default:
		return false
	}
	switch n := n.(type) {
	case *MbarInit:
		k := mbarKey{n.Bar.T, in.ival(n.Bar.Idx)}
		if k.idx < 0 || k.idx >= len(in.bufs[n.Bar.T]) {
			fail("mbarrier.init %s[%d]: index out of range [0, %d)", n.Bar.T.Name, k.idx, len(in.bufs[n.Bar.T]))
		}
		if s := th.blk.mbars[k]; s != nil && (s.pending != s.count || s.tx != 0 || len(s.flight) > 0) {
			fail("mbarrier.init %s[%d] while its phase %d is under way", n.Bar.T.Name, k.idx, s.phase)
		}
		th.blk.mbars[k] = &mbarState{init: th.stamp(), count: n.Count, pending: n.Count}
	case *MbarArrive:
		s, k := in.mbarOf(n.Bar, "mbarrier.arrive")
		if n.Tx != nil {
			tx := in.ival(n.Tx)
			if tx < 0 {
				fail("mbarrier.arrive %s[%d]: expect_tx %d bytes", k.bar.Name, k.idx, tx)
			}
			s.tx += tx
		}
		th.arrivals++
		if s.rel == nil {
			s.rel = map[int]int{}
		}
		s.rel[th.id] = th.arrivals // what the thread did before arriving happens before the phase's end
		s.pending--
		th.blk.mbarProgress(s, k)
	case *MbarWait:
		s, k := in.mbarOf(n.Bar, "mbarrier.wait")
		p := in.ival(n.Phase)
		th.checkParity(s, k, p)
		if s.phase == p {
			th.mwait = func() bool { return s.phase > p }
			th.mwaitWhat = func() string {
				return fmt.Sprintf("thread %d waits for phase %d of mbarrier %s[%d], which never completes (%d of %d arrivals missing, %d bytes expected and not landed)", th.id, p, k.bar.Name, k.idx, s.pending, s.count, s.tx)
			}
			th.blk.yield <- threadEvent{t: th, mwait: true}
			if !<-th.resume {
				panic(abortRun{})
			}
			th.checkParity(s, k, p)
		}
		if th.seen == nil {
			th.seen = map[mbarKey]int{}
		}
		th.seen[k] = max(th.seen[k], p+1)
		if th.hb == nil {
			th.hb = map[int]int{}
		}
		for t, a := range s.relOf[p] {
			th.hb[t] = max(th.hb[t], a)
		}
	}
	return true
}

// checkParity fails unless the parity of phase p names phase p on barrier s (see above).
func (th *gpuThread) checkParity(s *mbarState, k mbarKey, p int) {
	switch {
	case s.phase < p:
		fail("thread %d waits for phase %d of mbarrier %s[%d], which has completed only %d phases: the parity wait returns at once (the barrier is in a phase of the other parity)", th.id, p, k.bar.Name, k.idx, s.phase)
	case s.phase > p+1:
		fail("thread %d waits for phase %d of mbarrier %s[%d], which has completed %d phases: the parity wait names phase %d", th.id, p, k.bar.Name, k.idx, s.phase, s.phase)
	}
}

// mbarProgress completes the barrier's phase when every arrival is in and every expected byte landed.
func (blk *blockRun) mbarProgress(s *mbarState, k mbarKey) {
	switch {
	case s.pending < 0:
		fail("mbarrier %s[%d] phase %d: more arrivals than its count %d", k.bar.Name, k.idx, s.phase, s.count)
	case s.pending == 0 && s.tx < 0:
		fail("mbarrier %s[%d] phase %d: %d bytes landed beyond the expect_tx count", k.bar.Name, k.idx, s.phase, -s.tx)
	case s.pending > 0 || s.tx != 0:
		return
	}
	for _, c := range s.flight {
		delete(blk.mbarFlight[c.dst], c.off)
		c.buf[c.off] = c.val
		if log := blk.log[c.dst]; log != nil {
			// an async-proxy write: ordered by the barrier phase, not by block barriers
			log[c.off].written = false
		}
		m := blk.landed[c.dst]
		if m == nil {
			m = map[int]mbarTag{}
			blk.landed[c.dst] = m
		}
		m[c.off] = mbarTag{k.bar, k.idx, s.phase}
	}
	if s.relOf == nil {
		s.relOf = map[int]map[int]int{}
	}
	s.relOf[s.phase] = s.rel
	s.flight, s.phase, s.pending, s.tx, s.rel = nil, s.phase+1, s.count, 0, nil
}

// issueBulk starts a bulk copy of vals (element offsets offs of dst) completing on barrier r.
func (in *interp) issueBulk(r MbarRef, dst *Tensor, offs []int, vals []float64) {
	th := in.th
	s, k := in.mbarOf(r, "bulk copy on")
	for i, off := range offs {
		if t, ok := th.blk.mbarFlight[dst][off]; ok {
			fail("bulk copy into %s[%d] on mbarrier %s[%d] while an earlier one on %s[%d] is in flight", dst.Name, off, k.bar.Name, k.idx, t.bar.Name, t.idx)
		}
		delete(th.blk.landed[dst], off) // the landed data is replaced: what matters is who still reads it
		th.access(dst, off, true)       // earlier readers of the element must be ordered before the issue
		m := th.blk.mbarFlight[dst]
		if m == nil {
			m = map[int]mbarTag{}
			th.blk.mbarFlight[dst] = m
		}
		m[off] = mbarTag{k.bar, k.idx, s.phase}
		s.flight = append(s.flight, mbarCopy{dst, in.bufs[dst], off, vals[i], th.id})
	}
	s.tx -= copyBytes(len(offs), 1, dst)
	th.blk.mbarProgress(s, k)
}

// mbarCheck fails when the thread touches a shared element a bulk copy has not landed for it.
func (th *gpuThread) mbarCheck(t *Tensor, off int, write bool) {
	if tag, ok := th.blk.mbarFlight[t][off]; ok {
		fail("%s[%d]: thread %d %s it while a bulk copy into it is in flight (phase %d of mbarrier %s[%d] has not completed)", t.Name, off, th.id, verb(write), tag.phase, tag.bar.Name, tag.idx)
	}
	if tag, ok := th.blk.landed[t][off]; ok {
		if th.seen[mbarKey{tag.bar, tag.idx}] <= tag.phase {
			fail("%s[%d]: thread %d %s it without waiting for phase %d of mbarrier %s[%d], which landed it", t.Name, off, th.id, verb(write), tag.phase, tag.bar.Name, tag.idx)
		}
		if write {
			delete(th.blk.landed[t], off)
		}
	}
}

// mbarEnd fails when a block ends with bulk copies in flight.
func (blk *blockRun) mbarEnd() {
	for k, s := range blk.mbars {
		if len(s.flight) > 0 {
			fail("the block ends with %d elements of bulk copies in flight on mbarrier %s[%d] (phase %d: %d of %d arrivals missing, %d bytes not expected)", len(s.flight), k.bar.Name, k.idx, s.phase, s.pending, s.count, -s.tx)
		}
	}
}
