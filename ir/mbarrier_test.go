package ir

import (
	"strings"
	"testing"
)

// mbarExchange is asyncExchange with a bulk copy per thread completing on one mbarrier: thread 0
// initialises it (count 1) and, after a block barrier, every thread copies In[t] into S[t] on it;
// thread 0 arrives expecting all n·4 bytes; every thread waits for phase 0 and stores S[t+1 mod n].
func mbarExchange(n int, edit func(body []Node, bar *Tensor) []Node) *Func {
	f := asyncExchange(n, nil)
	l := f.Body[0].(*Launch)
	g := l.Body[0].(*Loop)
	alloc := g.Body[0].(*Alloc)
	tl := alloc.Body[0].(*Loop)
	s, in := alloc.T, f.Kernel.Params[0]
	bar := &Tensor{Name: "bar", Type: F64, Kind: Scratch, Space: Shared, Size: IConst{1}}
	tv := IVar{tl.Var}
	ref := MbarRef{T: bar, Idx: IConst{0}}
	thread0 := func(nodes ...Node) Node {
		return &Loop{Var: &Var{Name: "p"}, Lo: tv, Hi: IConst{1}, Step: IConst{n}, Body: nodes}
	}
	body := []Node{
		thread0(&MbarInit{Bar: ref, Count: 1}),
		&Barrier{Scope: ScopeBlock},
		&Copy{Dst: Operand{T: s, Off: tv, Layout: RowMajor(IConst{1})}, Src: Operand{T: in, Off: tv, Layout: RowMajor(IConst{1})},
			Rows: IConst{1}, Cols: IConst{1}, Async: true, Bar: &ref},
		thread0(&MbarArrive{Bar: ref, Tx: IConst{4 * n}}),
		&MbarWait{Bar: ref, Phase: IConst{0}},
		tl.Body[4], // Out[t] = S[t+1 mod n]
	}
	if edit != nil {
		body = edit(body, bar)
	}
	tl.Body = body
	g.Body[0] = &Alloc{T: bar, Body: []Node{alloc}}
	return f
}

// TestMbarrierInterp: bulk copies land when their barrier's phase completes and are readable after a
// wait for that phase; each broken protocol is an error that says what is wrong.
func TestMbarrierInterp(t *testing.T) {
	const n = 6
	without := func(i int) func([]Node, *Tensor) []Node {
		return func(b []Node, _ *Tensor) []Node { return append(b[:i:i], b[i+1:]...) }
	}
	setTx := func(tx int) func([]Node, *Tensor) []Node {
		return func(b []Node, _ *Tensor) []Node {
			b[3].(*Loop).Body[0].(*MbarArrive).Tx = IConst{tx}
			return b
		}
	}
	for _, c := range []struct {
		name  string
		edit  func([]Node, *Tensor) []Node
		error string
	}{
		{"whole", nil, ""},
		{"no wait", without(4), "race on shared S[1]: thread 1 writes it after thread 0 read it"}, // thread 0 read S[1] before thread 1 issued its copy
		{"no init", without(0), "before mbarrier.init"},
		{"no barrier after the init", without(1), "is not ordered after thread 0's mbarrier.init by a block barrier"},
		{"wait for phase 1", func(b []Node, _ *Tensor) []Node { b[4].(*MbarWait).Phase = IConst{1}; return b }, "which has completed only 0 phases"},
		{"expect_tx 4 bytes short", setTx(4*n - 4), "race on shared S[5]: thread 5 writes it after thread 4 read it"}, // the phase completed without S[5]
		{"expect_tx 4 bytes over", setTx(4*n + 4), "deadlock: thread 0 waits for phase 0 of mbarrier bar[0], which never completes"},
		{"no expect_tx", setTx(0), "4 bytes landed beyond the expect_tx count"},
		{"every thread arrives", func(b []Node, _ *Tensor) []Node {
			b[3] = b[3].(*Loop).Body[0]
			return b
		}, "more arrivals than its count 1"},
	} {
		checkExchange(t, c.name, mbarExchange(n, c.edit), n, c.error)
	}
	s := mbarExchange(n, nil).String()
	for _, w := range []string{"mbarrier.init bar[0] count 1", "async mbarrier bar[0]", "mbarrier.arrive bar[0] expect_tx 24", "mbarrier.wait bar[0] phase 0"} {
		if !strings.Contains(s, w) {
			t.Errorf("the printed IR lacks %q:\n%s", w, s)
		}
	}
}

// TestVerifyMbarrier: the verifier's mbarrier rules.
func TestVerifyMbarrier(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func([]Node, *Tensor) []Node
		error string
	}{
		{"load of the barrier array", func(b []Node, bar *Tensor) []Node {
			b[5] = &Store{T: b[5].(*Store).T, Idx: b[5].(*Store).Idx, Value: &Load{T: bar, Idx: []IExpr{IConst{0}}}}
			return b
		}, "load of mbarrier array bar"},
		{"group and barrier", func(b []Node, _ *Tensor) []Node { b[2].(*Copy).Group = IConst{0}; return b }, "one mechanism or the other"},
		{"synchronous copy on a barrier", func(b []Node, _ *Tensor) []Node { b[2].(*Copy).Async = false; return b }, "a synchronous copy in a commit group"},
		{"bulk copy into global memory", func(b []Node, _ *Tensor) []Node {
			cp := b[2].(*Copy)
			cp.Dst = Operand{T: b[5].(*Store).T, Off: cp.Dst.Off, Layout: cp.Dst.Layout}
			return b
		}, "async copies go from global into shared memory"},
		{"count 0", func(b []Node, _ *Tensor) []Node { b[0].(*Loop).Body[0].(*MbarInit).Count = 0; return b }, "count 0 (want ≥ 1)"},
		{"4-byte barriers", func(b []Node, bar *Tensor) []Node { bar.Type = F32; return b }, "not a shared scratch array of 8-byte mbarriers"},
	} {
		f := mbarExchange(4, c.edit)
		err := VerifyFunc(f)
		if err == nil || !strings.Contains(err.Error(), c.error) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.error)
		}
	}
}
