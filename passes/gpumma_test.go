package passes

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
	"github.com/kgen-dev/kgen/target"
)

// mmaFormed builds, for a GEMM kernel of the library (one statement C[i, j] = E(Σ_k A[i, k]·B[k, j])),
// the nest MMAForm makes: tile loops i0 (step mr), j0 (step nr) around an accumulator of the given
// scope, a K loop of MMAs (step kc) on strided operands with ragged valid extents, and the epilogue
// store. Plan symbols among mr, nr, kc get defaults in the returned function.
func mmaFormed(t *testing.T, name string, scope ir.Scope, frag *ir.Fragment, mr, nr, kc ir.IExpr, plan map[string]int) (*ir.Kernel, *ir.Func) {
	t.Helper()
	var k *ir.Kernel
	for _, x := range library(t) {
		if x.Name == name {
			k = x
		}
	}
	f, _ := lowered(t, k, false)
	for s, v := range plan {
		f.Plan[s] = v
	}
	s := k.Stmts[0]
	var red *ir.Reduce
	ir.Walk(s.Value, func(e ir.Expr) {
		if r, ok := e.(*ir.Reduce); ok {
			red = r
		}
	})
	mul := red.X.(*ir.Binary)
	la, lb := mul.X.(*ir.Load), mul.Y.(*ir.Load)
	i, j, kv := s.Vars[0], s.Vars[1], red.Vars[0]
	i0, j0, p0 := &ir.Var{Name: "i0"}, &ir.Var{Name: "j0"}, &ir.Var{Name: "p0"}
	ei, ej := &ir.Var{Name: "ei"}, &ir.Var{Name: "ej"}
	opnd := func(ld *ir.Load, row, col *ir.Var, r0, c0 ir.IExpr) ir.Operand {
		o, ok := ir.LoadOperand(ld, row, col)
		if !ok {
			t.Fatalf("%s: operand %s not affine", name, ld.T.Name)
		}
		st := o.Layout.(*ir.Strided)
		o.Off = ir.IAdd(o.Off, ir.IAdd(ir.IMul(r0, st.RowStride), ir.IMul(c0, st.ColStride)))
		return o
	}
	acc := &ir.Accum{Name: "acc", T: red.T, M: mr, N: nr, Scope: scope, Layout: frag}
	dm, dn, dk := ir.IDim{D: i.Range}, ir.IDim{D: j.Range}, ir.IDim{D: kv.Range}
	restM, restN := ir.ISub(dm, ir.IVar{V: i0}), ir.ISub(dn, ir.IVar{V: j0})
	mma := &ir.MMA{Acc: acc, In: la.T.Type, K: kc,
		A: opnd(la, i, kv, ir.IVar{V: i0}, ir.IVar{V: p0}), B: opnd(lb, kv, j, ir.IVar{V: p0}, ir.IVar{V: j0}),
		ValidM: restM, ValidN: restN, ValidK: ir.ISub(dk, ir.IVar{V: p0})}
	sub := map[*ir.Var]ir.IExpr{i: ir.IAdd(ir.IVar{V: i0}, ir.IVar{V: ei}), j: ir.IAdd(ir.IVar{V: j0}, ir.IVar{V: ej})}
	val := ir.SubstVars(ir.Rewrite(s.Value, func(e ir.Expr) ir.Expr {
		if _, ok := e.(*ir.Reduce); ok {
			return &ir.AccVal{Acc: acc}
		}
		return e
	}), sub)
	store := &ir.AccStore{Acc: acc, I: ei, J: ej, M: ir.IMin(mr, restM), N: ir.IMin(nr, restN), Out: s.Out,
		Idx: []ir.IExpr{sub[i], sub[j]}, Value: val}
	f.Body = []ir.Node{&ir.Nest{Stmts: []*ir.Stmt{s}, Body: []ir.Node{
		&ir.Loop{Var: i0, Lo: ir.IConst{V: 0}, Hi: dm, Step: mr, Body: []ir.Node{
			&ir.Loop{Var: j0, Lo: ir.IConst{V: 0}, Hi: dn, Step: nr, Body: []ir.Node{
				&ir.AccDecl{Acc: acc},
				&ir.Loop{Var: p0, Lo: ir.IConst{V: 0}, Hi: dk, Step: kc, Body: []ir.Node{mma}},
				store,
			}}}}}}}
	if err := ir.VerifyFunc(f); err != nil {
		t.Fatalf("%s formed: %v\n%s", name, err, f)
	}
	return k, f
}

// TestGPUMapMMA: MMA nests map onto threads (register tiles) or warps (tensor-core tiles), run to the
// algorithm-level result on ragged shapes under the race check.
func TestGPUMapMMA(t *testing.T) {
	for _, c := range []struct {
		kernel string
		scope  ir.Scope
		frag   *ir.Fragment
		mr, nr ir.IExpr
		kc     ir.IExpr
		plan   map[string]int
		odd    map[string]int
		want   string
	}{
		{"sgemm", ir.ScopeThread, nil, ir.ISym{Name: "t.MR"}, ir.ISym{Name: "t.NR"}, ir.ISym{Name: "t.KC"},
			map[string]int{"t.MR": 4, "t.NR": 4, "t.KC": 16}, map[string]int{"t.MR": 3, "t.NR": 2, "t.KC": 5, gpuBY: 3, gpuBX: 2, gpuBK: 4},
			"gpu.block tj = 0 .. gpu.BX step 1"},
		{"gemm_bias_relu", ir.ScopeThread, nil, ir.ISym{Name: "t.MR"}, ir.ISym{Name: "t.NR"}, ir.ISym{Name: "t.KC"},
			map[string]int{"t.MR": 4, "t.NR": 4, "t.KC": 16}, map[string]int{"t.MR": 1, "t.NR": 3, "t.KC": 2, gpuBY: 2, gpuBX: 3, gpuBK: 7}, "launch"},
		{"hgemm", ir.ScopeWarp, ir.FragSM80C(), ir.IConst{V: 16}, ir.IConst{V: 8}, ir.IConst{V: 16},
			nil, map[string]int{gpuW: 3}, "gpu.warp w = 0 .. gpu.W step 1"},
		// both operands stored transposed: stages in the global orientation (SM80TLayout)
		{"bgemm_tt", ir.ScopeWarp, ir.FragSM80C(), ir.IConst{V: 16}, ir.IConst{V: 8}, ir.IConst{V: 16},
			nil, map[string]int{gpuW: 3}, "gpu.warp w = 0 .. gpu.W step 1"},
		{"hgemm", ir.ScopeWarpgroup, ir.FragWGMMAAcc(8), ir.IConst{V: 64}, ir.IConst{V: 8}, ir.IConst{V: 16},
			nil, map[string]int{}, "block(4, 32)"},
	} {
		k, f := mmaFormed(t, c.kernel, c.scope, c.frag, c.mr, c.nr, c.kc, c.plan)
		if _, err := GPUMap(f, nil); err != nil {
			t.Fatal(err)
		}
		if err := ir.VerifyFunc(f); err != nil {
			t.Fatalf("%s mapped: %v\n%s", c.kernel, err, f)
		}
		if !strings.Contains(f.String(), c.want) {
			t.Errorf("%s mapped lacks %q:\n%s", c.kernel, c.want, f)
		}
		checkGPU(t, k, f, "mma mapped", []map[string]int{nil, withPlan(f, c.odd)}, 3)
		for _, stages := range []int{2, 3} {
			k, f := mmaFormed(t, c.kernel, c.scope, c.frag, c.mr, c.nr, c.kc, c.plan)
			if _, err := GPUMap(f, nil); err != nil {
				t.Fatal(err)
			}
			if !stage(f, stages) {
				t.Fatalf("%s %s: not staged\n%s", c.kernel, c.scope, f)
			}
			if err := ir.VerifyFunc(f); err != nil {
				t.Fatalf("%s staged: %v\n%s", c.kernel, err, f)
			}
			checkGPU(t, k, f, "mma staged", []map[string]int{nil, withPlan(f, c.odd)}, 3)
			// Without its barrier the staged nest races.
			ir.WalkNodes(f.Body, func(n ir.Node) bool {
				if l, ok := n.(*ir.Loop); ok && strings.HasPrefix(l.Var.Name, "kt") {
					l.Body = append(l.Body[:1:1], l.Body[2:]...)
				}
				return true
			})
			args := randomGPUArgs(k, 9)
			if err := ir.RunFunc(f, ir.Storage, args, withPlan(f, c.odd)); err == nil || !strings.Contains(err.Error(), "race on shared") {
				t.Errorf("%s %s staged without its barrier: %v", c.kernel, c.scope, err)
			}
		}
	}
}

// randomGPUArgs draws arguments for k with every dim n.
func randomGPUArgs(k *ir.Kernel, n int) ir.Args {
	dims := map[string]int{}
	for _, d := range k.Dims {
		dims[d.Name] = n
	}
	return kgentest.RandomArgs(k, dims, rand.New(rand.NewPCG(3, 4)), 1)
}

// TestGPUPipelineMMA: the GEMM family (the library's and testdata/mma.kdsl's: an f16-in/f32-accumulate
// GEMM with a bias+GELU epilogue, a bf16 one with a residual) compiled for ptx and msl is formed into
// MMAs, mapped onto warps or threads by the accumulator's scope, and staged through shared memory with
// async copies and barriers; it runs to the algorithm-level result on ragged shapes under the race check.
func TestGPUPipelineMMA(t *testing.T) {
	for _, tgt := range []string{"ptx", "msl"} {
		m, _ := target.Lookup(tgt)
		for _, k := range mmaKernels(t) {
			if !mmaFamily[k.Name] {
				continue
			}
			f, err := Compile(k, m, Options{})
			if err != nil {
				t.Fatalf("%s: %v", tgt, err)
			}
			s := f.String()
			want := []string{"mma %", "barrier block", "async.wait", "copy 1x"}
			if tgt == "ptx" && k.Name == "hgemm_bias_gelu" {
				want = append(want, "gpu.warp w = 0 .. gpu.W", "warp sm80.m16n8k16.c", "tanh(")
			}
			for _, w := range want {
				if !strings.Contains(s, w) {
					t.Errorf("%s %s lacks %q:\n%s", tgt, k.Name, w, s)
				}
			}
			odd := map[string]int{gpuW: 3, gpuBY: 3, gpuBX: 2, gpuBK: 3}
			for key := range f.Plan {
				switch {
				case strings.HasSuffix(key, ".MR"):
					odd[key] = 3
				case strings.HasSuffix(key, ".NR"):
					odd[key] = 2
				case strings.HasSuffix(key, ".KC"):
					odd[key] = 5
				}
			}
			checkGPU(t, k, f, tgt, []map[string]int{withPlan(f, odd)}, 2)
		}
	}
}

// TestGPUMapMMARefuses: a warp-scope MMA nest gpumap cannot give to whole warps is an error, not a
// launch that puts the MMA in divergent threads.
func TestGPUMapMMARefuses(t *testing.T) {
	_, f := mmaFormed(t, "hgemm", ir.ScopeWarp, ir.FragSM80C(), ir.IConst{V: 16}, ir.IConst{V: 8}, ir.IConst{V: 16}, nil)
	nest := f.Body[0].(*ir.Nest)
	// Two batch-like loops around the tile loops: more than the grid has dims for.
	for _, name := range []string{"x", "y"} {
		nest.Body = []ir.Node{&ir.Loop{Var: &ir.Var{Name: name}, Lo: ir.IConst{V: 0}, Hi: ir.IConst{V: 1}, Step: ir.IConst{V: 1}, Body: nest.Body}}
	}
	if _, err := GPUMap(f, nil); err == nil || !strings.Contains(err.Error(), "a warp-scope MMA (%acc) outside the nest shape gpumap maps onto warps") {
		t.Errorf("err = %v", err)
	}
}
