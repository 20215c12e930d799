package ir

import (
	"math"
	"math/rand"
	"strings"
	"testing"
)

// warpReduceFunc is a launch of one block of W warps: lane l of warp w loads X[32w+l] into %acc, the
// warp reduces it with op, and lane `out` of each warp stores its %acc to Y[w]. wrap, when set, puts
// the reduction under that condition instead.
func warpReduceFunc(W int, op Op, out int, wrap func(lane *Var, n Node) Node) (*Func, *Tensor, *Tensor) {
	nd, wd := &Dim{Name: "N"}, &Dim{Name: "W"}
	x := &Tensor{Name: "X", Type: F32, Shape: []*Dim{nd}, Kind: In}
	y := &Tensor{Name: "Y", Type: F32, Shape: []*Dim{wd}, Kind: Out}
	k := &Kernel{Name: "wred", Params: []*Tensor{x, y}, Dims: []*Dim{nd, wd}}
	b, w, lane := &Var{Name: "b"}, &Var{Name: "w"}, &Var{Name: "lane"}
	acc := &LocalVar{Name: "acc", T: F32}
	var red Node = &WarpReduce{Op: op, L: acc, Scope: ScopeWarp}
	if wrap != nil {
		red = wrap(lane, red)
	}
	isOut := &Binary{Op: Eq, X: &VarVal{V: lane, T: I32}, Y: &Const{Val: float64(out), T: I32}, T: Bool}
	body := []Node{
		&Decl{L: acc, Init: &Load{T: x, Idx: []IExpr{IAdd(IMul(IVar{w}, IConst{32}), IVar{lane})}}},
		red,
		&If{Cond: isOut, Then: []Node{&Store{T: y, Idx: []IExpr{IVar{w}}, Value: &Local{L: acc}}}},
	}
	nest := &Loop{Var: w, Lo: IConst{0}, Hi: IConst{W}, Step: IConst{1}, Kind: GPUWarp, Body: []Node{
		&Loop{Var: lane, Lo: IConst{0}, Hi: IConst{32}, Step: IConst{1}, Kind: GPUThread, Body: body}}}
	launch := &Launch{Name: "wred_0", Grid: []IExpr{IConst{1}}, Block: []IExpr{IConst{W}, IConst{32}},
		Reads: []*Tensor{x}, Writes: []*Tensor{y}, Body: []Node{
			&Loop{Var: b, Lo: IConst{0}, Hi: IConst{1}, Step: IConst{1}, Kind: GPUGrid, Body: []Node{nest}}}}
	return &Func{Kernel: k, Body: []Node{launch}, Plan: map[string]int{}}, x, y
}

// tree is WarpReduce's association tree written as a recursion (independently of WarpButterfly):
// g(b, s) = g(b, 2s) op g(b+s, 2s), g(b, 32) = v[b]; lane 0's result is g(0, 1).
func tree(v []float64, b, s int, f func(x, y float64) float64) float64 {
	if s == 32 {
		return v[b]
	}
	return f(tree(v, b, 2*s, f), tree(v, b+s, 2*s, f))
}

// TestWarpReduce: lane 0 of every warp holds the reduction of its warp in the documented tree (f32
// rounding after each step: a sum of values of mixed magnitude shows the order), NaN and Inf included;
// max and min are exact; the other lanes' values are NaN in the interpreter.
func TestWarpReduce(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	const W = 3
	for _, op := range []Op{Add, Max, Min} {
		for trial := 0; trial < 4; trial++ {
			f, _, _ := warpReduceFunc(W, op, 0, nil)
			if err := VerifyFunc(f); err != nil {
				t.Fatal(err)
			}
			x := make([]float64, 32*W)
			for i := range x {
				x[i] = float64(float32(rng.NormFloat64() * math.Pow(10, float64(rng.Intn(8)))))
			}
			if trial == 1 {
				x[5] = math.NaN()
				x[40] = math.Inf(1)
			}
			if trial == 2 {
				x[70], x[71] = math.Inf(1), math.Inf(-1)
			}
			y := make([]float64, W)
			if err := RunFunc(f, Storage, wargs(x, y), nil); err != nil {
				t.Fatal(err)
			}
			f32 := func(x, y float64) float64 { return float64(float32(binary(op, F32, x, y))) }
			for w := 0; w < W; w++ {
				v := x[32*w : 32*w+32]
				want := tree(v, 0, 1, f32)
				if got := WarpButterfly(v, f32)[0]; !sameFloat(got, want) {
					t.Errorf("%s warp %d: butterfly %v, tree %v", op, w, got, want)
				}
				if !sameFloat(y[w], want) {
					t.Errorf("%s trial %d warp %d: interpreter %v, want %v", op, trial, w, y[w], want)
				}
				if op != Add {
					exact := v[0]
					for _, e := range v[1:] {
						exact = binary(op, F32, exact, e)
					}
					if !sameFloat(want, exact) {
						t.Errorf("%s warp %d: %v, exact %v", op, w, want, exact)
					}
				}
			}
		}
	}
	f, _, _ := warpReduceFunc(2, Add, 1, nil)
	x := make([]float64, 64)
	y := make([]float64, 2)
	if err := RunFunc(f, Storage, wargs(x, y), nil); err != nil || !math.IsNaN(y[0]) || !math.IsNaN(y[1]) {
		t.Errorf("lane 1's result after a warp reduction: %v, err %v; want NaN", y, err)
	}
}

func wargs(x, y []float64) Args {
	return Args{Tensors: map[string][]float64{"X": x, "Y": y}, Dims: map[string]int{"N": len(x), "W": len(y)}}
}

func sameFloat(x, y float64) bool { return x == y || (x != x && y != y) }

// TestWarpReduceRules: the verifier keeps a lane reduction in a gpu.warp thread body under
// warp-uniform control, and the interpreter reports lanes that meet different collectives.
func TestWarpReduceRules(t *testing.T) {
	f, _, _ := warpReduceFunc(1, Add, 0, func(lane *Var, n Node) Node {
		return &If{Cond: &Binary{Op: Lt, X: &VarVal{V: lane, T: I32}, Y: &Const{Val: 16, T: I32}, T: Bool}, Then: []Node{n}}
	})
	if err := VerifyFunc(f); err == nil || !strings.Contains(err.Error(), "warp.reduce + %acc under if (lane:i32 < 16:i32): not every thread of the warp reaches it") {
		t.Errorf("reduction under a lane condition: %v", err)
	}
	if err := RunFunc(f, Storage, wargs(make([]float64, 32), make([]float64, 1)), nil); err == nil || !strings.Contains(err.Error(), "warp.reduce + %acc: thread 0 waits at it but thread 16 of its warp ended without reaching it") {
		t.Errorf("interpreting a divergent reduction: %v", err)
	}
	f, _, _ = warpReduceFunc(1, Add, 0, func(lane *Var, n Node) Node {
		return &If{Cond: &Binary{Op: Lt, X: &VarVal{V: lane, T: I32}, Y: &Const{Val: 16, T: I32}, T: Bool}, Then: []Node{n}, Else: []Node{&Barrier{Scope: ScopeWarp}}}
	})
	if err := RunFunc(f, Storage, wargs(make([]float64, 32), make([]float64, 1)), nil); err == nil || !strings.Contains(err.Error(), "wait at different barriers") || !strings.Contains(err.Error(), "warp.reduce + %acc") {
		t.Errorf("lanes at a reduction and a barrier: %v", err)
	}
	f, _, _ = warpReduceFunc(1, Sub, 0, nil)
	if err := VerifyFunc(f); err == nil || !strings.Contains(err.Error(), "the operator is +, max or min") {
		t.Errorf("a reduction with -: %v", err)
	}
	// Outside a gpu.warp nest.
	f, _, _ = warpReduceFunc(1, Add, 0, nil)
	nest := f.Body[0].(*Launch).Body[0].(*Loop).Body[0].(*Loop)
	nest.Kind, nest.Body[0].(*Loop).Kind = GPUBlock, GPUBlock
	if err := VerifyFunc(f); err == nil || !strings.Contains(err.Error(), "outside the body of a gpu.warp nest") {
		t.Errorf("a reduction in gpu.block loops: %v", err)
	}
	if s := f.String(); !strings.Contains(s, "warp.reduce + %acc\n") {
		t.Errorf("printed: %s", s)
	}
}

// TestWarpReduceOrdersNoMemory: a lane reduction is no barrier: a lane reading another lane's shared
// write across it is reported as a race, and with a warp barrier added it is not.
func TestWarpReduceOrdersNoMemory(t *testing.T) {
	for _, withBarrier := range []bool{false, true} {
		f, _, _ := warpReduceFunc(1, Add, 0, nil)
		s := &Tensor{Name: "S", Type: F32, Kind: Scratch, Space: Shared, Size: IConst{32}}
		grid := f.Body[0].(*Launch).Body[0].(*Loop)
		nest := grid.Body[0].(*Loop)
		lane := nest.Body[0].(*Loop)
		body := lane.Body
		red := body[1]
		next := IMod(IAdd(IVar{lane.Var}, IConst{1}), IConst{32})
		mid := []Node{red}
		if withBarrier {
			mid = append(mid, &Barrier{Scope: ScopeWarp})
		}
		lane.Body = append(append([]Node{body[0], &Store{T: s, Idx: []IExpr{IVar{lane.Var}}, Value: &Local{L: body[0].(*Decl).L}}}, mid...),
			&Assign{L: body[0].(*Decl).L, Value: &Load{T: s, Idx: []IExpr{next}}}, body[2])
		grid.Body = []Node{&Alloc{T: s, Body: []Node{nest}}}
		if err := VerifyFunc(f); err != nil {
			t.Fatal(err)
		}
		err := RunFunc(f, Storage, wargs(make([]float64, 32), make([]float64, 1)), nil)
		if withBarrier && err != nil {
			t.Errorf("with a warp barrier: %v", err)
		}
		if !withBarrier && (err == nil || !strings.Contains(err.Error(), "race on shared S[")) {
			t.Errorf("a shared write read across a lane reduction: %v, want a race", err)
		}
	}
}
