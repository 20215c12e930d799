package ir

import (
	"math/rand"
	"strings"
	"testing"
)

// gemmKernel is sgemm at the algorithm level: C[i, j] = alpha·sum(k: A[i, k]·B[k, j]) + beta·C[i, j].
func gemmKernel() *Kernel {
	m, n, kd := &Dim{Name: "M"}, &Dim{Name: "N"}, &Dim{Name: "K"}
	a := &Tensor{Name: "A", Type: F32, Shape: []*Dim{m, kd}, Kind: In}
	b := &Tensor{Name: "B", Type: F32, Shape: []*Dim{kd, n}, Kind: In}
	c := &Tensor{Name: "C", Type: F32, Shape: []*Dim{m, n}, Kind: InOut}
	alpha := &Tensor{Name: "alpha", Type: F32, Kind: Scalar}
	beta := &Tensor{Name: "beta", Type: F32, Kind: Scalar}
	i, j, k := &Var{Name: "i", Range: m}, &Var{Name: "j", Range: n}, &Var{Name: "k", Range: kd}
	prod := &Binary{Op: Mul, X: &Load{T: a, Idx: []IExpr{IVar{i}, IVar{k}}}, Y: &Load{T: b, Idx: []IExpr{IVar{k}, IVar{j}}}, T: F32}
	sum := &Reduce{Op: Add, Vars: []*Var{k}, X: prod, T: F32}
	val := &Binary{Op: Add, X: &Binary{Op: Mul, X: &Load{T: alpha}, Y: sum, T: F32},
		Y: &Binary{Op: Mul, X: &Load{T: beta}, Y: &Load{T: c, Idx: []IExpr{IVar{i}, IVar{j}}}, T: F32}, T: F32}
	return &Kernel{Name: "sgemm", Params: []*Tensor{a, b, c, alpha, beta}, Dims: []*Dim{m, kd, n},
		Stmts: []*Stmt{{Out: c, Vars: []*Var{i, j}, Value: val}}}
}

// ilt is the Bool expression x < y over index variables and a dim.
func ilt(x, y *Var, d *Dim) Expr {
	return &Binary{Op: Lt, X: &Binary{Op: Add, X: &VarVal{V: x, T: I32}, Y: &VarVal{V: y, T: I32}, T: I32}, Y: &DimVal{D: d, T: I32}, T: Bool}
}

// tiledGemm is a block-tiled GEMM for a GPU: T×T blocks of T×T threads, each thread one element of C;
// per K step of T, the threads stage a T×T tile of A and of B in shared memory (zero outside the
// matrices), synchronise, accumulate from shared memory, and synchronise again before the next tile
// overwrites the staging buffers. drop ≥ 0 removes that barrier (0: after the loads, 1: after the use).
func tiledGemm(k *Kernel, T, drop int) *Func {
	a, b, c, alpha, beta := k.Params[0], k.Params[1], k.Params[2], k.Params[3], k.Params[4]
	m, kd, n := k.Dims[0], k.Dims[1], k.Dims[2]
	ts := IConst{T}
	bi, bj := &Var{Name: "bi"}, &Var{Name: "bj"}
	ty, tx := &Var{Name: "ty"}, &Var{Name: "tx"}
	k0, kk := &Var{Name: "k0"}, &Var{Name: "kk"}
	as := &Tensor{Name: "As", Type: F32, Kind: Scratch, Space: Shared, Size: IConst{T * T}}
	bs := &Tensor{Name: "Bs", Type: F32, Kind: Scratch, Space: Shared, Size: IConst{T * T}}
	acc := &LocalVar{Name: "acc", T: F32}
	zero := &Const{Val: 0, T: F32}
	slot := IAdd(IMul(IVar{ty}, ts), IVar{tx})
	guard := func(cond Expr, t *Tensor, val Expr) Node {
		return &If{Cond: cond, Then: []Node{&Store{T: t, Idx: []IExpr{slot}, Value: val}}, Else: []Node{&Store{T: t, Idx: []IExpr{slot}, Value: zero}}}
	}
	loadA := guard(ilt(bi, ty, m), as, &Load{T: a, Idx: []IExpr{IAdd(IVar{bi}, IVar{ty}), IAdd(IVar{k0}, IVar{tx})}})
	loadA = &If{Cond: ilt(k0, tx, kd), Then: []Node{loadA}, Else: []Node{&Store{T: as, Idx: []IExpr{slot}, Value: zero}}}
	loadB := guard(ilt(bj, tx, n), bs, &Load{T: b, Idx: []IExpr{IAdd(IVar{k0}, IVar{ty}), IAdd(IVar{bj}, IVar{tx})}})
	loadB = &If{Cond: ilt(k0, ty, kd), Then: []Node{loadB}, Else: []Node{&Store{T: bs, Idx: []IExpr{slot}, Value: zero}}}
	use := &Loop{Var: kk, Lo: IConst{0}, Hi: IMin(ts, ISub(IDim{kd}, IVar{k0})), Step: IConst{1}, Body: []Node{
		&Assign{L: acc, Value: &Binary{Op: Add, X: &Local{L: acc}, Y: &Binary{Op: Mul,
			X: &Load{T: as, Idx: []IExpr{IAdd(IMul(IVar{ty}, ts), IVar{kk})}},
			Y: &Load{T: bs, Idx: []IExpr{IAdd(IMul(IVar{kk}, ts), IVar{tx})}}, T: F32}, T: F32}},
	}}
	kbody := []Node{loadA, loadB, &Barrier{Scope: ScopeBlock}, use, &Barrier{Scope: ScopeBlock}}
	if drop >= 0 {
		at := []int{2, 4}[drop]
		kbody = append(kbody[:at:at], kbody[at+1:]...)
	}
	ci := []IExpr{IAdd(IVar{bi}, IVar{ty}), IAdd(IVar{bj}, IVar{tx})}
	epi := &Binary{Op: Add, X: &Binary{Op: Mul, X: &Load{T: alpha}, Y: &Local{L: acc}, T: F32},
		Y: &Binary{Op: Mul, X: &Load{T: beta}, Y: &Load{T: c, Idx: ci}, T: F32}, T: F32}
	thread := []Node{
		&Decl{L: acc, Init: zero},
		&Loop{Var: k0, Lo: IConst{0}, Hi: IDim{kd}, Step: ts, Body: kbody},
		&If{Cond: ilt(bi, ty, m), Then: []Node{&If{Cond: ilt(bj, tx, n), Then: []Node{&Store{T: c, Idx: ci, Value: epi}}}}},
	}
	nest := &Loop{Var: ty, Lo: IConst{0}, Hi: ts, Step: IConst{1}, Kind: GPUBlock, Body: []Node{
		&Loop{Var: tx, Lo: IConst{0}, Hi: ts, Step: IConst{1}, Kind: GPUBlock, Body: thread}}}
	blocks := func(d *Dim) IExpr { return IDiv(IAdd(IDim{d}, IConst{T - 1}), ts) }
	launch := &Launch{Name: "sgemm_tiled", Grid: []IExpr{blocks(m), blocks(n)}, Block: []IExpr{ts, ts},
		Reads: []*Tensor{a, b, alpha, beta, c}, Writes: []*Tensor{c}, Body: []Node{
			&Loop{Var: bi, Lo: IConst{0}, Hi: IDim{m}, Step: ts, Kind: GPUGrid, Body: []Node{
				&Loop{Var: bj, Lo: IConst{0}, Hi: IDim{n}, Step: ts, Kind: GPUGrid, Body: []Node{
					&Alloc{T: as, Body: []Node{&Alloc{T: bs, Body: []Node{nest}}}}}}}}}}
	return &Func{Kernel: k, Body: []Node{launch}, Plan: map[string]int{}}
}

func gemmArgs(rng *rand.Rand, m, n, kd int) Args {
	fill := func(n int) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = F32.Round(rng.Float64()*2 - 1)
		}
		return s
	}
	return Args{Tensors: map[string][]float64{"A": fill(m * kd), "B": fill(kd * n), "C": fill(m * n)},
		Scalars: map[string]float64{"alpha": 1.5, "beta": -0.75}, Dims: map[string]int{"M": m, "N": n, "K": kd}}
}

var raggedGemmShapes = [][3]int{{1, 1, 1}, {1, 7, 3}, {5, 1, 9}, {4, 4, 4}, {7, 11, 13}, {13, 5, 17}, {9, 16, 2}}

// TestGPUTiledGemm runs the block-tiled GEMM with shared staging on ragged shapes and compares it with
// the algorithm level: bit for bit in storage precision (same summation order), and in exact mode.
func TestGPUTiledGemm(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	k := gemmKernel()
	for _, T := range []int{1, 4, 5} {
		f := tiledGemm(k, T, -1)
		if err := VerifyFunc(f); err != nil {
			t.Fatalf("T=%d: %v\n%s", T, err, f)
		}
		for _, s := range raggedGemmShapes {
			for _, mode := range []Mode{Storage, Exact} {
				args := gemmArgs(rng, s[0], s[1], s[2])
				want := args.Clone()
				if err := RunKernel(k, mode, want); err != nil {
					t.Fatal(err)
				}
				if err := RunFunc(f, mode, args, nil); err != nil {
					t.Fatalf("T=%d %v mode %d: %v", T, s, mode, err)
				}
				for i, w := range want.Tensors["C"] {
					if g := args.Tensors["C"][i]; g != w {
						t.Fatalf("T=%d %v mode %d: C[%d] = %v, want %v", T, s, mode, i, g, w)
					}
				}
			}
		}
	}
}

// TestGPURaceMissingBarrier removes each barrier of the tiled GEMM in turn: the verifier accepts the
// program (it is well formed) but the interpreter reports the race, naming the buffer and two threads.
func TestGPURaceMissingBarrier(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	k := gemmKernel()
	for drop, want := range []string{"writes it after thread 0 read it", "reads it after thread 0 wrote it"} {
		f := tiledGemm(k, 4, drop)
		if err := VerifyFunc(f); err != nil {
			t.Fatal(err)
		}
		args := gemmArgs(rng, 7, 6, 9)
		err := RunFunc(f, Storage, args, nil)
		if err == nil {
			t.Fatalf("barrier %d removed: no race reported", drop)
		}
		for _, s := range []string{"race on shared ", "thread ", want} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("barrier %d removed: error %q does not mention %q", drop, err, s)
			}
		}
		if !strings.Contains(err.Error(), "As[") && !strings.Contains(err.Error(), "Bs[") {
			t.Errorf("barrier %d removed: error %q names no staging buffer element", drop, err)
		}
	}
	// With one K tile the second barrier orders nothing: no race, and the right result.
	f := tiledGemm(k, 4, 1)
	args := gemmArgs(rng, 7, 6, 3)
	want := args.Clone()
	if err := RunKernel(k, Storage, want); err != nil {
		t.Fatal(err)
	}
	if err := RunFunc(f, Storage, args, nil); err != nil {
		t.Fatalf("one K tile without the second barrier: %v", err)
	}
}

// warpExchange is a block of W warps in which every lane writes its slot of S, passes a barrier of
// the given scope (none if sc is ScopeThread), and reads the slot `shift` places further on (mod the
// block), storing it to Out.
func warpExchange(W, shift int, sc Scope) *Func {
	d := &Dim{Name: "N"}
	out := &Tensor{Name: "Out", Type: F32, Shape: []*Dim{d}, Kind: Out}
	s := &Tensor{Name: "S", Type: F32, Kind: Scratch, Space: Shared, Size: IConst{W * 32}}
	g, w, lane := &Var{Name: "g"}, &Var{Name: "w"}, &Var{Name: "lane"}
	tid := IAdd(IMul(IVar{w}, IConst{32}), IVar{lane})
	other := IBin{'-', IAdd(tid, IConst{shift}), IMul(IDiv(IAdd(tid, IConst{shift}), IConst{W * 32}), IConst{W * 32})}
	body := []Node{&Store{T: s, Idx: []IExpr{tid}, Value: &VarVal{V: lane, T: F32}}}
	if sc != ScopeThread {
		body = append(body, &Barrier{Scope: sc})
	}
	body = append(body, &Store{T: out, Idx: []IExpr{tid}, Value: &Load{T: s, Idx: []IExpr{other}}})
	k := &Kernel{Name: "x", Params: []*Tensor{out}, Dims: []*Dim{d}}
	l := &Launch{Name: "x", Grid: []IExpr{IConst{1}}, Block: []IExpr{IConst{W}, IConst{32}}, Writes: []*Tensor{out}, Body: []Node{
		&Loop{Var: g, Lo: IConst{0}, Hi: IConst{1}, Step: IConst{1}, Kind: GPUGrid, Body: []Node{&Alloc{T: s, Body: []Node{
			&Loop{Var: w, Lo: IConst{0}, Hi: IConst{W}, Step: IConst{1}, Kind: GPUWarp, Body: []Node{
				&Loop{Var: lane, Lo: IConst{0}, Hi: IConst{32}, Step: IConst{1}, Kind: GPUThread, Body: body}}}}}}}}}
	return &Func{Kernel: k, Body: []Node{l}, Plan: map[string]int{}}
}

// TestGPUWarpBarrier: a warp barrier orders the lanes of one warp and no others.
func TestGPUWarpBarrier(t *testing.T) {
	for _, c := range []struct {
		shift int
		sc    Scope
		race  bool
	}{
		{1, ScopeWarp, true}, // lane 31 reads the next warp's slot (and lane 63 warp 0's)
		{1, ScopeBlock, false},
		{0, ScopeThread, false},    // every lane reads its own slot
		{1, ScopeThread, true},     // no barrier
		{32, ScopeWarp, true},      // the next warp's slot: a warp barrier does not order it
		{32, ScopeBlock, false},    // a block barrier does
		{33, ScopeSimdgroup, true}, // as warp
	} {
		f := warpExchange(2, c.shift, c.sc)
		if err := VerifyFunc(f); err != nil {
			t.Fatal(err)
		}
		args := Args{Tensors: map[string][]float64{"Out": make([]float64, 64)}, Dims: map[string]int{"N": 64}}
		err := RunFunc(f, Storage, args, nil)
		if (err != nil) != c.race {
			t.Fatalf("shift %d barrier %s: err = %v, want race %v", c.shift, c.sc, err, c.race)
		}
		if err == nil {
			for i, v := range args.Tensors["Out"] {
				if want := float64((i + c.shift) % 64 % 32); v != want {
					t.Fatalf("shift %d: Out[%d] = %v, want %v", c.shift, i, v, want)
				}
			}
		}
	}
}

// TestGPUInterpErrors: misuses the verifier cannot see (or that are run unverified) stop the run with
// a clear error instead of passing by luck.
func TestGPUInterpErrors(t *testing.T) {
	k := gemmKernel()
	args := func() Args { return gemmArgs(rand.New(rand.NewSource(3)), 5, 6, 7) }
	for _, c := range []struct {
		name  string
		edit  func(f *Func)
		error string
	}{
		{"grid mismatch", func(f *Func) { f.Body[0].(*Launch).Grid[0] = IConst{1} }, "runs 2 blocks, grid dim 0 is 1"},
		{"thread mismatch", func(f *Func) { f.Body[0].(*Launch).Block[1] = IConst{3} }, "has 16 iterations for a block of 12 threads"},
		{"huge block", func(f *Func) { f.Body[0].(*Launch).Block[1] = IConst{1000} }, "a block of 4000 threads"},
	} {
		f := tiledGemm(k, 4, -1)
		c.edit(f)
		err := RunFunc(f, Storage, args(), nil)
		if err == nil || !strings.Contains(err.Error(), c.error) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.error)
		}
	}
	// A barrier under `if lane < 16` (an exchange that needs no barrier, so no race comes first): half
	// the threads end without reaching it; with a second barrier in the else branch they wait at a
	// different one.
	for _, both := range []bool{false, true} {
		f := warpExchange(1, 0, ScopeBlock)
		WalkNodes(f.Body, func(n Node) bool {
			if l, ok := n.(*Loop); ok && l.Kind == GPUThread {
				cond := &Binary{Op: Lt, X: &VarVal{V: l.Var, T: I32}, Y: &Const{Val: 16, T: I32}, T: Bool}
				iff := &If{Cond: cond, Then: []Node{l.Body[1]}}
				if both {
					iff.Else = []Node{&Barrier{Scope: ScopeBlock}}
				}
				l.Body[1] = iff
			}
			return true
		})
		want := "thread 16 of its block ended without reaching it"
		if both {
			want = "threads 0 and 16 of one block wait at different barriers"
		}
		args := Args{Tensors: map[string][]float64{"Out": make([]float64, 32)}, Dims: map[string]int{"N": 32}}
		if err := RunFunc(f, Storage, args, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("divergent barrier (else barrier %v): err = %v, want %q", both, err, want)
		}
		if err := VerifyFunc(f); err == nil || !strings.Contains(err.Error(), "barrier block under if (lane:i32 < 16:i32): not every thread of the block reaches it") {
			t.Errorf("divergent barrier (else barrier %v): verifier says %v", both, err)
		}
	}
}

func TestGPUPrint(t *testing.T) {
	s := tiledGemm(gemmKernel(), 4, -1).String()
	for _, want := range []string{
		"launch sgemm_tiled grid(((M + 3) / 4), ((N + 3) / 4)) block(4, 4) reads(A, B, alpha, beta, C) writes(C)",
		"gpu.grid bi = 0 .. M step 4", "alloc shared As f32[16]", "gpu.block tx = 0 .. 4 step 1", "barrier block",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("printed IR lacks %q:\n%s", want, s)
		}
	}
	var b strings.Builder
	printNodes(&b, []Node{&AsyncCommit{}, &AsyncWait{N: 2}, &Barrier{Scope: ScopeWarp}}, 0)
	if got := b.String(); got != "async.commit\nasync.wait 2\nbarrier warp\n" {
		t.Errorf("printed %q", got)
	}
}

// findLoop returns the loop of f whose variable is named name.
func findLoop(f *Func, name string) *Loop {
	var found *Loop
	WalkNodes(f.Body, func(n Node) bool {
		if l, ok := n.(*Loop); ok && l.Var.Name == name {
			found = l
		}
		return true
	})
	return found
}

// TestVerifyGPU: each GPU rule of the verifier fires on a program that breaks it, with a clear error.
func TestVerifyGPU(t *testing.T) {
	launchOf := func(f *Func) *Launch { return f.Body[0].(*Launch) }
	for _, c := range []struct {
		name  string
		edit  func(f *Func)
		error string
	}{
		{"barrier under a thread condition", func(f *Func) {
			k0 := findLoop(f, "k0")
			tx := findLoop(f, "tx").Var
			k0.Body[2] = &If{Cond: ilt(tx, tx, f.Kernel.Dims[0]), Then: []Node{k0.Body[2]}}
		}, "barrier block under if ((tx:i32 + tx:i32) < M:i32): not every thread of the block reaches it"},
		{"barrier in a thread-dependent loop", func(f *Func) {
			k0 := findLoop(f, "k0")
			k0.Hi = IAdd(k0.Hi, IVar{findLoop(f, "ty").Var})
		}, "barrier block under loop k0 whose bounds differ between threads"},
		{"barrier under a local that differs", func(f *Func) {
			k0 := findLoop(f, "k0")
			acc := findAcc(f)
			k0.Body[4] = &If{Cond: &Binary{Op: Lt, X: &Local{L: acc}, Y: &Const{Val: 0, T: F32}, T: Bool}, Then: []Node{k0.Body[4]}}
		}, "barrier block under if (%acc < 0:f32)"},
		{"shared alloc in a thread", func(f *Func) {
			tx := findLoop(f, "tx")
			s := &Tensor{Name: "S", Type: F32, Kind: Scratch, Space: Shared, Size: IConst{4}}
			tx.Body = []Node{&Alloc{T: s, Body: tx.Body}}
		}, "shared buffer S allocated inside a thread loop"},
		{"shared alloc outside the grid", func(f *Func) {
			l := launchOf(f)
			s := &Tensor{Name: "S", Type: F32, Kind: Scratch, Space: Shared, Size: IConst{4}}
			l.Body = []Node{&Alloc{T: s, Body: l.Body}}
		}, "shared buffer S allocated outside the grid loops"},
		{"shared alloc on the host", func(f *Func) {
			s := &Tensor{Name: "S", Type: F32, Kind: Scratch, Space: Shared, Size: IConst{4}}
			f.Body = []Node{&Alloc{T: s, Body: f.Body}}
		}, "shared buffer S allocated outside a launch"},
		{"grid loop on the host", func(f *Func) { f.Body = launchOf(f).Body }, "gpu.grid loop bi outside a launch"},
		{"barrier on the host", func(f *Func) { f.Body = append(f.Body, &Barrier{Scope: ScopeBlock}) }, "barrier block outside a GPU thread body"},
		{"nested launch", func(f *Func) {
			tx := findLoop(f, "tx")
			tx.Body = append(tx.Body, &Launch{Name: "inner", Grid: []IExpr{IConst{1}}, Block: []IExpr{IConst{1}}})
		}, "launch inner inside launch sgemm_tiled"},
		{"store at block level", func(f *Func) {
			bj := findLoop(f, "bj")
			c := f.Kernel.Params[2]
			bj.Body = append(bj.Body, &Store{T: c, Idx: []IExpr{IConst{0}, IConst{0}}, Value: &Const{Val: 0, T: F32}})
		}, "launch sgemm_tiled: store to C outside the thread loops"},
		{"serial loop at block level", func(f *Func) {
			bj := findLoop(f, "bj")
			bj.Body = []Node{&Loop{Var: &Var{Name: "r"}, Lo: IConst{0}, Hi: IConst{2}, Step: IConst{1}, Body: bj.Body}}
		}, "for loop r outside the thread loops"},
		{"thread loop outside the grid", func(f *Func) {
			l := launchOf(f)
			l.Body = []Node{&Loop{Var: &Var{Name: "t"}, Lo: IConst{0}, Hi: IConst{2}, Step: IConst{1}, Kind: GPUBlock}}
		}, "gpu.block loop t outside its grid loops (0 of 2)"},
		{"too many grid loops", func(f *Func) { launchOf(f).Grid = launchOf(f).Grid[:1] }, "more gpu.grid loops than its 1 grid dims"},
		{"thread loop in a thread body", func(f *Func) {
			tx := findLoop(f, "tx")
			tx.Body = append(tx.Body, &Loop{Var: &Var{Name: "t"}, Lo: IConst{0}, Hi: IConst{2}, Step: IConst{1}, Kind: GPUBlock})
		}, "gpu.block loop t inside a thread body"},
		{"thread bounds depend on a thread", func(f *Func) {
			tx := findLoop(f, "tx")
			tx.Hi = IVar{findLoop(f, "ty").Var}
		}, "the bounds of thread loop tx depend on thread index ty"},
		{"warp in a block nest", func(f *Func) { findLoop(f, "tx").Kind = GPUWarp }, "gpu.warp loop tx inside gpu.block loop ty"},
		{"lane loop alone", func(f *Func) { findLoop(f, "ty").Kind = GPUThread }, "gpu.thread loop ty outside a gpu.warp loop"},
		{"parallel loop in a thread", func(f *Func) { findLoop(f, "kk").Kind = Parallel }, "parallel loop kk inside a GPU thread"},
		{"unlisted write", func(f *Func) { launchOf(f).Writes = nil }, "launch sgemm_tiled writes C but does not list it in writes"},
		{"unlisted read", func(f *Func) { launchOf(f).Reads = launchOf(f).Reads[1:] }, "launch sgemm_tiled reads A but does not list it in reads"},
		{"listed shared", func(f *Func) {
			var as *Tensor
			WalkNodes(f.Body, func(n Node) bool {
				if a, ok := n.(*Alloc); ok && as == nil {
					as = a.T
				}
				return true
			})
			launchOf(f).Reads = append(launchOf(f).Reads, as)
		}, "launch sgemm_tiled reads shared buffer As"},
		{"no block dims", func(f *Func) { launchOf(f).Block = nil }, "2 grid and 0 block dims"},
		{"thread-scope barrier", func(f *Func) { findLoop(f, "k0").Body[2] = &Barrier{Scope: ScopeThread} }, "barrier of scope thread"},
		{"negative wait", func(f *Func) { findLoop(f, "k0").Body[2] = &AsyncWait{N: -1} }, "async.wait -1: the count of groups left in flight is negative"},
	} {
		f := tiledGemm(gemmKernel(), 4, -1)
		c.edit(f)
		err := VerifyFunc(f)
		if err == nil || !strings.Contains(err.Error(), c.error) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.error)
		}
	}
	// A warp nest must have 32 lanes; a warp barrier may sit under a warp-uniform condition.
	f := warpExchange(2, 0, ScopeWarp)
	lane := findLoop(f, "lane")
	lane.Hi = IConst{16}
	if err := VerifyFunc(f); err == nil || !strings.Contains(err.Error(), "a warp has 32 lanes") {
		t.Errorf("16-lane warp: %v", err)
	}
	f = warpExchange(2, 0, ScopeWarp)
	lane, w := findLoop(f, "lane"), findLoop(f, "w")
	cond := &Binary{Op: Lt, X: &VarVal{V: w.Var, T: I32}, Y: &Const{Val: 1, T: I32}, T: Bool}
	lane.Body[1] = &If{Cond: cond, Then: []Node{lane.Body[1]}}
	if err := VerifyFunc(f); err != nil {
		t.Errorf("warp barrier under a warp-uniform condition: %v", err)
	}
	lane.Body[1].(*If).Then[0] = &Barrier{Scope: ScopeBlock}
	if err := VerifyFunc(f); err == nil || !strings.Contains(err.Error(), "barrier block under if (w:i32 < 1:i32)") {
		t.Errorf("block barrier under a warp-dependent condition: %v", err)
	}
}

func findAcc(f *Func) *LocalVar {
	var acc *LocalVar
	WalkNodes(f.Body, func(n Node) bool {
		if d, ok := n.(*Decl); ok {
			acc = d.L
		}
		return true
	})
	return acc
}

// TestGPUGlobalRace: threads that write one global element without a barrier between them race, within
// a block and across blocks (which never synchronise); with a block barrier between, threads of one
// block do not.
func TestGPUGlobalRace(t *testing.T) {
	for _, c := range []struct {
		blocks, threads int
		barrier         bool
		error           string
	}{
		{1, 2, false, "race on global Out[0]: block 0 thread 1 reads it after thread 0 wrote it with no barrier between"},
		{2, 1, false, "race on global Out[0]: block 1 thread 0 reads it after block 0 thread 0 wrote it (blocks never synchronise)"},
		{2, 1, true, "race on global Out[0]: block 1 thread 0 reads it after block 0 thread 0 wrote it (blocks never synchronise)"},
		{1, 2, true, ""},
	} {
		d := &Dim{Name: "N"}
		out := &Tensor{Name: "Out", Type: F32, Shape: []*Dim{d}, Kind: InOut}
		g, tv := &Var{Name: "g"}, &Var{Name: "t"}
		// Thread t of block g does Out[0] = Out[0] + 1 in its turn: thread by thread, separated by a
		// barrier per turn when asked.
		turn := &Var{Name: "turn"}
		upd := &Store{T: out, Idx: []IExpr{IConst{0}}, Value: &Binary{Op: Add, X: &Load{T: out, Idx: []IExpr{IConst{0}}}, Y: &Const{Val: 1, T: F32}, T: F32}}
		mine := &If{Cond: &Binary{Op: Eq, X: &VarVal{V: tv, T: I32}, Y: &VarVal{V: turn, T: I32}, T: Bool}, Then: []Node{upd}}
		body := []Node{mine}
		if c.barrier {
			body = append(body, &Barrier{Scope: ScopeBlock})
		}
		k := &Kernel{Name: "x", Params: []*Tensor{out}, Dims: []*Dim{d}}
		l := &Launch{Name: "x", Grid: []IExpr{IConst{c.blocks}}, Block: []IExpr{IConst{c.threads}}, Reads: []*Tensor{out}, Writes: []*Tensor{out}, Body: []Node{
			&Loop{Var: g, Lo: IConst{0}, Hi: IConst{c.blocks}, Step: IConst{1}, Kind: GPUGrid, Body: []Node{
				&Loop{Var: tv, Lo: IConst{0}, Hi: IConst{c.threads}, Step: IConst{1}, Kind: GPUBlock, Body: []Node{
					&Loop{Var: turn, Lo: IConst{0}, Hi: IConst{c.threads}, Step: IConst{1}, Body: body}}}}}}}
		f := &Func{Kernel: k, Body: []Node{l}, Plan: map[string]int{}}
		if err := VerifyFunc(f); err != nil {
			t.Fatal(err)
		}
		args := Args{Tensors: map[string][]float64{"Out": {0}}, Dims: map[string]int{"N": 1}}
		err := RunFunc(f, Storage, args, nil)
		if c.error == "" {
			if err != nil || args.Tensors["Out"][0] != float64(c.threads) {
				t.Errorf("%+v: err %v, Out[0] = %v", c, err, args.Tensors["Out"][0])
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.error) {
			t.Errorf("%+v: err = %v, want %q", c, err, c.error)
		}
	}
}
