package ir

import (
	"math"
	"math/rand"
	"strings"
	"testing"
)

// TestCopyInterp: a synchronous copy from a transposed strided source into a panel layout, with valid
// extents (zero fill, sources outside them not read) and narrowing to f16, against a naive loop.
func TestCopyInterp(t *testing.T) {
	for _, c := range []struct{ rows, cols, vr, vc, width int }{{4, 3, 4, 3, 2}, {6, 5, 5, 4, 3}, {1, 1, 1, 1, 1}, {8, 2, 0, 2, 4}} {
		for _, dt := range []DType{F32, F16} {
			ds, dd := &Dim{Name: "S"}, &Dim{Name: "D"}
			src := &Tensor{Name: "src", Type: F32, Shape: []*Dim{ds}, Kind: In}
			dst := &Tensor{Name: "dst", Type: dt, Shape: []*Dim{dd}, Kind: Out}
			ld := c.rows + 2
			// Source element (r, c) at 1 + c·ld + r: column-major with a leading dimension.
			cp := &Copy{Dst: Operand{T: dst, Off: IConst{3}, Layout: &Panel{Width: IConst{c.width}, Depth: IConst{c.cols}}},
				Src: Operand{T: src, Off: IConst{1}, Layout: ColMajor(IConst{ld})}, Rows: IConst{c.rows}, Cols: IConst{c.cols},
				ValidRows: IConst{c.vr}, ValidCols: IConst{c.vc}}
			k := &Kernel{Name: "c", Params: []*Tensor{src, dst}, Dims: []*Dim{ds, dd}}
			f := &Func{Kernel: k, Body: []Node{cp}, Plan: map[string]int{}}
			if err := VerifyFunc(f); err != nil {
				t.Fatal(err)
			}
			ns, nd := 1+(c.cols-1)*ld+c.vr, 3+c.rows*c.cols+2
			sv := make([]float64, ns)
			for i := range sv {
				sv[i] = F32.Round(math.Sqrt(float64(i) + 0.3))
			}
			want := make([]float64, nd)
			for i := range want {
				want[i] = -1
			}
			for r := 0; r < c.rows; r++ {
				for col := 0; col < c.cols; col++ {
					v := 0.0
					if r < c.vr && col < c.vc {
						v = sv[1+col*ld+r]
					}
					want[3+(r/c.width)*c.width*c.cols+col*c.width+r%c.width] = dt.Round(v)
				}
			}
			got := make([]float64, nd)
			for i := range got {
				got[i] = -1
			}
			args := Args{Tensors: map[string][]float64{"src": sv, "dst": got}, Dims: map[string]int{"S": ns, "D": nd}}
			if err := RunFunc(f, Storage, args, nil); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%+v %s: dst[%d] = %v, want %v\n%s", c, dt, i, got[i], want[i], cp)
				}
			}
		}
	}
}

// TestPackCopy: the Copy made from a Pack writes the same panels, for A-like (rows of a row-major
// operand) and B-like (columns) packs with ragged panels.
func TestPackCopy(t *testing.T) {
	dm, dk := &Dim{Name: "M"}, &Dim{Name: "K"}
	a := &Tensor{Name: "A", Type: F32, Shape: []*Dim{dm, dk}, Kind: In}
	buf := &Tensor{Name: "pk", Type: F32, Kind: Scratch, Space: Packed, Size: IConst{64}}
	for _, byCol := range []bool{false, true} {
		p, d := &Var{Name: "p"}, &Var{Name: "d"}
		idx := []IExpr{IAdd(IVar{p}, IConst{1}), IAdd(IVar{d}, IConst{2})} // A[1+p, 2+d]: rows of A
		if byCol {
			idx = []IExpr{IAdd(IVar{d}, IConst{1}), IAdd(IVar{p}, IConst{2})} // A[1+d, 2+p]: columns
		}
		pack := &Pack{Dst: buf, DstOff: IConst{2}, N: IConst{5}, Depth: IConst{3}, Panel: IConst{4}, P: p, D: d, Value: &Load{T: a, Idx: idx}}
		cp, ok := PackCopy(pack)
		if !ok {
			t.Fatal("PackCopy refused a plain load")
		}
		k := &Kernel{Name: "p", Params: []*Tensor{a}, Dims: []*Dim{dm, dk}}
		var outs [2][]float64
		for i, n := range []Node{pack, cp} {
			var snap []float64
			probe := &Loop{Var: &Var{Name: "z"}, Lo: IConst{0}, Hi: IConst{0}, Step: IConst{1}}
			f := &Func{Kernel: k, Body: []Node{&Alloc{T: buf, Body: []Node{n, probe}}}, Plan: map[string]int{}}
			if err := VerifyFunc(f); err != nil {
				t.Fatalf("%v: %v", n, err)
			}
			in, err := newInterp(k, Storage, Args{Tensors: map[string][]float64{"A": seq(7 * 9)}, Dims: map[string]int{"M": 7, "K": 9}})
			if err != nil {
				t.Fatal(err)
			}
			in.bufs[buf] = make([]float64, 64)
			in.node(n)
			snap = append(snap, in.bufs[buf]...)
			outs[i] = snap
		}
		for i := range outs[0] {
			if outs[0][i] != outs[1][i] {
				t.Fatalf("byCol %v: pk[%d]: pack %v, copy %v\n%v", byCol, i, outs[0][i], outs[1][i], cp)
			}
		}
	}
	// Non-affine gathers are not copies.
	p, d := &Var{Name: "p"}, &Var{Name: "d"}
	pack := &Pack{Dst: buf, DstOff: IConst{0}, N: IConst{5}, Depth: IConst{3}, Panel: IConst{4}, P: p, D: d,
		Value: &Load{T: a, Idx: []IExpr{IDiv(IVar{p}, IConst{2}), IVar{d}}}}
	if _, ok := PackCopy(pack); ok {
		t.Error("PackCopy accepted p/2")
	}
}

func seq(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = float64(i) + 0.5
	}
	return s
}

// asyncExchange is one block of n threads: thread t copies In[t] asynchronously into S[t] (group 0),
// commits, waits, passes a block barrier, and stores S[(t+1) % n] to Out[t]. The edit hook changes
// the thread body before it is built into the function.
func asyncExchange(n int, edit func(body []Node) []Node) *Func {
	d := &Dim{Name: "N"}
	in := &Tensor{Name: "In", Type: F32, Shape: []*Dim{d}, Kind: In}
	out := &Tensor{Name: "Out", Type: F32, Shape: []*Dim{d}, Kind: Out}
	s := &Tensor{Name: "S", Type: F32, Kind: Scratch, Space: Shared, Size: IConst{n}}
	g, tv := &Var{Name: "g"}, &Var{Name: "t"}
	next := IBin{'-', IAdd(IVar{tv}, IConst{1}), IMul(IDiv(IAdd(IVar{tv}, IConst{1}), IConst{n}), IConst{n})}
	body := []Node{
		&Copy{Dst: Operand{T: s, Off: IVar{tv}, Layout: RowMajor(IConst{1})}, Src: Operand{T: in, Off: IVar{tv}, Layout: RowMajor(IConst{1})},
			Rows: IConst{1}, Cols: IConst{1}, Async: true, Group: IConst{0}},
		&AsyncCommit{},
		&AsyncWait{N: 0},
		&Barrier{Scope: ScopeBlock},
		&Store{T: out, Idx: []IExpr{IVar{tv}}, Value: &Load{T: s, Idx: []IExpr{next}}},
	}
	if edit != nil {
		body = edit(body)
	}
	k := &Kernel{Name: "x", Params: []*Tensor{in, out}, Dims: []*Dim{d}}
	l := &Launch{Name: "x", Grid: []IExpr{IConst{1}}, Block: []IExpr{IConst{n}}, Reads: []*Tensor{in}, Writes: []*Tensor{out}, Body: []Node{
		&Loop{Var: g, Lo: IConst{0}, Hi: IConst{1}, Step: IConst{1}, Kind: GPUGrid, Body: []Node{&Alloc{T: s, Body: []Node{
			&Loop{Var: tv, Lo: IConst{0}, Hi: IConst{n}, Step: IConst{1}, Kind: GPUBlock, Body: body}}}}}}}
	return &Func{Kernel: k, Body: []Node{l}, Plan: map[string]int{}}
}

// TestAsyncCopy: async copies land at their wait; reading them before, reading another thread's copy
// without a barrier after the wait, a wrong group label and a thread ending with copies in flight are
// errors.
func TestAsyncCopy(t *testing.T) {
	const n = 6
	without := func(i int) func([]Node) []Node {
		return func(b []Node) []Node { return append(b[:i:i], b[i+1:]...) }
	}
	for _, c := range []struct {
		name  string
		edit  func([]Node) []Node
		error string
	}{
		{"whole", nil, ""},
		{"no wait", without(2), "in flight"},
		{"wait too lax", func(b []Node) []Node { b[2] = &AsyncWait{N: 1}; return b }, "in flight"},
		{"no barrier", without(3), "race on shared S[1]: thread 1 writes it after thread 0 read it"},
		{"no commit", func(b []Node) []Node { return b[:1] }, "(and 1 copies not committed): missing async.wait 0"},
		{"no wait at the end", func(b []Node) []Node { return b[:2] }, "thread 0 ends with 1 async copy groups in flight"},
		{"wrong group", func(b []Node) []Node { b[0].(*Copy).Group = IConst{1}; return b }, "labelled group 1 joins group 0"},
		{"empty groups first", func(b []Node) []Node {
			b[0].(*Copy).Group = IConst{2}
			return append([]Node{&AsyncCommit{}, &AsyncCommit{}}, b...)
		}, ""},
	} {
		checkExchange(t, c.name, asyncExchange(n, c.edit), n, c.error)
	}
}

// checkExchange verifies and runs an exchange of n threads (Out[t] = In[t+1 mod n]): it must fail with
// an error containing want, or (want "") compute the exchange.
func checkExchange(t *testing.T, name string, f *Func, n int, want string) {
	t.Helper()
	if err := VerifyFunc(f); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, f)
	}
	in := seq(n)
	args := Args{Tensors: map[string][]float64{"In": in, "Out": make([]float64, n)}, Dims: map[string]int{"N": n}}
	err := RunFunc(f, Storage, args, nil)
	if want == "" {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, v := range args.Tensors["Out"] {
			if v != in[(i+1)%n] {
				t.Fatalf("%s: Out[%d] = %v, want %v", name, i, v, in[(i+1)%n])
			}
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: err = %v, want %q", name, err, want)
	}
}

// TestVerifyCopy: the verifier's Copy rules.
func TestVerifyCopy(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(f *Func)
		error string
	}{
		{"async into global", func(f *Func) {
			cp := findCopy(f)
			cp.Dst = Operand{T: f.Kernel.Params[1], Off: cp.Dst.Off, Layout: cp.Dst.Layout}
		}, "async copies go from global into shared memory"},
		{"no group", func(f *Func) { findCopy(f).Group = nil }, "async copy into S has no group"},
		{"sync with group", func(f *Func) { findCopy(f).Async = false }, "a synchronous copy in a commit group"},
		{"at block level", func(f *Func) {
			g := findLoop(f, "g")
			g.Body = append(g.Body, findCopy(f))
		}, "launch x: copy into S outside the thread loops"},
		{"async on the host", func(f *Func) {
			tmp := &Tensor{Name: "T", Type: F32, Kind: Scratch, Size: IConst{4}}
			cp := *findCopy(f)
			cp.Dst = Operand{T: tmp, Off: IConst{0}, Layout: cp.Dst.Layout}
			cp.Src.Off = IConst{0}
			f.Body = append(f.Body, &Alloc{T: tmp, Body: []Node{&cp}})
		}, "async copy into T outside a GPU thread body"},
		{"into an input", func(f *Func) {
			tmp := &Tensor{Name: "T", Type: F32, Kind: Scratch, Size: IConst{4}}
			cp := *findCopy(f)
			cp.Dst, cp.Src, cp.Async, cp.Group = Operand{T: f.Kernel.Params[0], Off: IConst{0}, Layout: cp.Dst.Layout}, Operand{T: tmp, Off: IConst{0}, Layout: cp.Dst.Layout}, false, nil
			f.Body = append(f.Body, &Alloc{T: tmp, Body: []Node{&cp}})
		}, "copy into input In"}} {
		f := asyncExchange(4, nil)
		c.edit(f)
		err := VerifyFunc(f)
		if err == nil || !strings.Contains(err.Error(), c.error) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.error)
		}
	}
}

func findCopy(f *Func) *Copy {
	var cp *Copy
	WalkNodes(f.Body, func(n Node) bool {
		if c, ok := n.(*Copy); ok && cp == nil {
			cp = c
		}
		return true
	})
	return cp
}

// warpMMA is one block of W warps; warp w stages rows 16w.. of A (M×16, row-major) and B (16×8) in
// shared memory (lane l < 16 copies row l of its A tile, lane 16+r row r of B into its warp's copy of
// B), passes a block barrier, and computes C[16w.., :] = A·B with one warp-scope m16n8k16 MMA whose
// accumulator is the sm_80 C fragment.
func warpMMA(W int, scope Scope, frag *Fragment) (*Func, *Kernel) {
	dm, dk, dn := &Dim{Name: "M"}, &Dim{Name: "K"}, &Dim{Name: "N"}
	a := &Tensor{Name: "A", Type: F16, Shape: []*Dim{dm, dk}, Kind: In}
	b := &Tensor{Name: "B", Type: F16, Shape: []*Dim{dk, dn}, Kind: In}
	cc := &Tensor{Name: "C", Type: F32, Shape: []*Dim{dm, dn}, Kind: Out}
	as := &Tensor{Name: "As", Type: F16, Kind: Scratch, Space: Shared, Size: IConst{W * 256}}
	bs := &Tensor{Name: "Bs", Type: F16, Kind: Scratch, Space: Shared, Size: IConst{W * 128}}
	g, w, lane := &Var{Name: "g"}, &Var{Name: "w"}, &Var{Name: "lane"}
	i, j := &Var{Name: "i"}, &Var{Name: "j"}
	acc := &Accum{Name: "acc", T: F32, M: IConst{16}, N: IConst{8}, Scope: scope, Layout: frag}
	row := IBin{'-', IVar{lane}, IMul(IDiv(IVar{lane}, IConst{16}), IConst{16})}
	w16 := IMul(IVar{w}, IConst{16})
	body := []Node{
		&If{Cond: &Binary{Op: Lt, X: &VarVal{V: lane, T: I32}, Y: &Const{Val: 16, T: I32}, T: Bool}, Then: []Node{
			&Copy{Dst: Operand{T: as, Off: IAdd(IMul(IVar{w}, IConst{256}), IMul(row, IConst{16})), Layout: RowMajor(IConst{16})},
				Src: Operand{T: a, Off: IMul(IAdd(w16, row), IConst{16}), Layout: RowMajor(IConst{16})}, Rows: IConst{1}, Cols: IConst{16}},
		}, Else: []Node{
			&Copy{Dst: Operand{T: bs, Off: IAdd(IMul(IVar{w}, IConst{128}), IMul(row, IConst{8})), Layout: RowMajor(IConst{8})},
				Src: Operand{T: b, Off: IMul(row, IConst{8}), Layout: RowMajor(IConst{8})}, Rows: IConst{1}, Cols: IConst{8}}}},
		&Barrier{Scope: ScopeBlock},
		&AccDecl{Acc: acc},
		&MMA{Acc: acc, In: F16, K: IConst{16}, A: Operand{T: as, Off: IMul(IVar{w}, IConst{256}), Layout: RowMajor(IConst{16})},
			B: Operand{T: bs, Off: IMul(IVar{w}, IConst{128}), Layout: RowMajor(IConst{8})}},
		&AccStore{Acc: acc, I: i, J: j, M: IConst{16}, N: IConst{8}, Out: cc, Idx: []IExpr{IAdd(w16, IVar{i}), IVar{j}}, Value: &AccVal{Acc: acc}},
	}
	k := &Kernel{Name: "wmma", Params: []*Tensor{a, b, cc}, Dims: []*Dim{dm, dk, dn}}
	l := &Launch{Name: "wmma", Grid: []IExpr{IConst{1}}, Block: []IExpr{IConst{W}, IConst{32}}, Reads: []*Tensor{a, b}, Writes: []*Tensor{cc}, Body: []Node{
		&Loop{Var: g, Lo: IConst{0}, Hi: IConst{1}, Step: IConst{1}, Kind: GPUGrid, Body: []Node{&Alloc{T: as, Body: []Node{&Alloc{T: bs, Body: []Node{
			&Loop{Var: w, Lo: IConst{0}, Hi: IConst{W}, Step: IConst{1}, Kind: GPUWarp, Body: []Node{
				&Loop{Var: lane, Lo: IConst{0}, Hi: IConst{32}, Step: IConst{1}, Kind: GPUThread, Body: body}}}}}}}}}}}
	return &Func{Kernel: k, Body: []Node{l}, Plan: map[string]int{}}, k
}

// TestWarpMMA: a warp-scope MMA runs once per warp (not once per lane) to the exact product; the
// verifier ties MMA scopes to warp nests and warp-uniform control.
func TestWarpMMA(t *testing.T) {
	const W = 2
	f, _ := warpMMA(W, ScopeWarp, FragSM80C())
	if err := VerifyFunc(f); err != nil {
		t.Fatalf("%v\n%s", err, f)
	}
	rng := rand.New(rand.NewSource(5))
	m := W * 16
	av, bv := make([]float64, m*16), make([]float64, 16*8)
	for i := range av {
		av[i] = F16.Round(rng.Float64()*4 - 2)
	}
	for i := range bv {
		bv[i] = F16.Round(rng.Float64()*4 - 2)
	}
	args := Args{Tensors: map[string][]float64{"A": av, "B": bv, "C": make([]float64, m*8)}, Dims: map[string]int{"M": m, "K": 16, "N": 8}}
	if err := RunFunc(f, Storage, args, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < m; i++ {
		for j := 0; j < 8; j++ {
			s := 0.0
			for p := 0; p < 16; p++ {
				s = F32.Round(s + F32.Round(av[i*16+p]*bv[p*8+j]))
			}
			if got := args.Tensors["C"][i*8+j]; got != s {
				t.Fatalf("C[%d, %d] = %v, want %v", i, j, got, s)
			}
		}
	}
	// Without the barrier, the MMA of warp 0 (run by lane 0) reads rows of As that lanes 1..15 wrote.
	f, _ = warpMMA(W, ScopeWarp, FragSM80C())
	lane := findLoop(f, "lane")
	lane.Body = append(lane.Body[:1:1], lane.Body[2:]...)
	if err := RunFunc(f, Storage, args, nil); err == nil || !strings.Contains(err.Error(), "race on shared As[16]: thread 1 writes it after thread 0 read it") {
		t.Errorf("no barrier before the warp MMA: %v", err)
	}
	// Scope rules.
	f, _ = warpMMA(W, ScopeWarp, FragSM80C())
	findLoop(f, "w").Kind, findLoop(f, "lane").Kind = GPUBlock, GPUBlock
	if err := VerifyFunc(f); err == nil || !strings.Contains(err.Error(), "accumulator %acc of scope warp outside the body of a gpu.warp nest") {
		t.Errorf("warp MMA in a gpu.block nest: %v", err)
	}
	f, _ = warpMMA(W, ScopeWarp, FragSM80C())
	lane = findLoop(f, "lane")
	lane.Body[3] = &If{Cond: &Binary{Op: Lt, X: &VarVal{V: lane.Var, T: I32}, Y: &Const{Val: 4, T: I32}, T: Bool}, Then: []Node{lane.Body[3]}}
	if err := VerifyFunc(f); err == nil || !strings.Contains(err.Error(), "mma %acc under if (lane:i32 < 4:i32): not every thread of the warp reaches it") {
		t.Errorf("warp MMA under a lane condition: %v", err)
	}
	f, _ = warpMMA(W, ScopeWarpgroup, FragWGMMAAcc(8))
	if err := VerifyFunc(f); err == nil || !strings.Contains(err.Error(), "a block of whole warpgroups needs a multiple of 4 warps") {
		t.Errorf("warpgroup MMA in 2 warps: %v", err)
	}
}
