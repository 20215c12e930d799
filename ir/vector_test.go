package ir

import (
	"math"
	"math/rand"
	"strings"
	"testing"
)

// laneCase is a random function around one Vector loop: Z[i] = f(X[i], Y[i], i, t) for i < N, where t
// is an optional local the lane body declares, and optionally a reduction acc = acc op g(...) stored to
// R[0]. The vector loop covers [0, N/W*W); a serial loop over the same body runs the rest.
type laneCase struct {
	f    *Func
	vec  *Loop
	elem DType
	red  Op // "" when there is no reduction
}

func randLaneCase(rng *rand.Rand, elem DType, w int, red Op) laneCase {
	n, one := &Dim{Name: "N"}, &Dim{Name: "one"}
	x := &Tensor{Name: "X", Type: elem, Shape: []*Dim{n}, Kind: In}
	y := &Tensor{Name: "Y", Type: elem, Shape: []*Dim{n}, Kind: In}
	z := &Tensor{Name: "Z", Type: elem, Shape: []*Dim{n}, Kind: Out}
	r := &Tensor{Name: "R", Type: elem, Shape: []*Dim{one}, Kind: Out}
	i := &Var{Name: "i"}
	idx := []IExpr{IVar{V: i}}
	var locals []*LocalVar
	var gen func(depth int) Expr
	gen = func(depth int) Expr {
		if depth == 0 || rng.Intn(3) == 0 {
			switch k := rng.Intn(6); {
			case k < 2:
				return &Load{T: x, Idx: idx}
			case k == 2:
				return &Load{T: y, Idx: idx}
			case k == 3 && len(locals) > 0:
				return &Local{L: locals[rng.Intn(len(locals))]}
			case k == 4:
				return &VarVal{V: i, T: elem}
			default:
				vals := []float64{0.5, -2, 3, math.NaN(), math.Inf(1), math.Copysign(0, -1)}
				return &Const{Val: vals[rng.Intn(len(vals))], T: elem}
			}
		}
		if rng.Intn(3) == 0 {
			ops := []Op{Neg, Abs, Sqrt, Exp}
			return &Unary{Op: ops[rng.Intn(len(ops))], X: gen(depth - 1), T: elem}
		}
		ops := []Op{Add, Sub, Mul, Div, Max, Min}
		return &Binary{Op: ops[rng.Intn(len(ops))], X: gen(depth - 1), Y: gen(depth - 1), T: elem}
	}
	var body []Node
	if rng.Intn(2) == 0 {
		t := &LocalVar{Name: "t", T: elem}
		body = append(body, &Decl{L: t, Init: gen(2)})
		locals = append(locals, t)
		if rng.Intn(2) == 0 {
			body = append(body, &Assign{L: t, Value: gen(2)})
		}
	}
	body = append(body, &Store{T: z, Idx: idx, Value: gen(3)})
	end := IMul(IDiv(IDim{D: n}, IConst{V: w}), IConst{V: w})
	vec := &Loop{Var: i, Lo: IConst{V: 0}, Hi: end, Step: IConst{V: w}, Kind: Vector, Width: w}
	var pre, post []Node
	if red != "" {
		acc := &LocalVar{Name: "acc", T: elem}
		body = append(body, &Assign{L: acc, Value: &Binary{Op: red, X: &Local{L: acc}, Y: gen(3), T: elem}})
		lr := &LaneReduce{Acc: acc, Op: red, Parts: make([]*LocalVar, w)}
		pre = append(pre, &Decl{L: acc, Init: &Const{Val: identity(red), T: elem}})
		for k := range lr.Parts {
			lr.Parts[k] = &LocalVar{Name: "accv" + string(rune('a'+k)), T: elem}
			pre = append(pre, &Decl{L: lr.Parts[k], Init: &Const{Val: identity(red), T: elem}})
		}
		vec.Reduce = lr
		post = append(post, lr.Combine())
	}
	vec.Body = body
	rem := &Loop{Var: i, Lo: end, Hi: IDim{D: n}, Step: IConst{V: 1}, Body: body}
	post = append(post, rem)
	if red != "" {
		post = append(post, &Store{T: r, Idx: []IExpr{IConst{V: 0}}, Value: &Local{L: vec.Reduce.Acc}})
	}
	k := &Kernel{Name: "lanes", Params: []*Tensor{x, y, z, r}, Dims: []*Dim{n, one}}
	f := &Func{Kernel: k, Body: append(append(pre, vec), post...), Plan: map[string]int{}}
	return laneCase{f: f, vec: vec, elem: elem, red: red}
}

// replace returns a copy of f's body with the node old replaced by nw (top level only).
func replace(body []Node, old, nw Node) []Node {
	out := append([]Node(nil), body...)
	for i, n := range out {
		if n == old {
			out[i] = nw
		}
	}
	return out
}

func sameBits(a, b float64) bool {
	return a == b && math.Signbit(a) == math.Signbit(b) || a != a && b != b
}

// TestLaneSemantics: the interpreter's lane semantics of a Vector loop equal its replicated form
// (ExpandLanes under an unrolled loop) bit for bit, on random lane bodies with locals, the loop variable
// as a value, NaN, ±Inf and -0 operands, reductions (+, max, min) and lengths that leave a remainder;
// the elementwise output also equals the plain serial loop's, and so do max and min reductions.
func TestLaneSemantics(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for trial := 0; trial < 400; trial++ {
		elem := []DType{F32, F64}[trial%2]
		w := []int{2, 3, 4, 8}[rng.Intn(4)]
		red := []Op{"", Add, Max, Min}[rng.Intn(4)]
		c := randLaneCase(rng, elem, w, red)
		if err := VerifyFunc(c.f); err != nil {
			t.Fatalf("trial %d: %v\n%s", trial, err, c.f.String())
		}
		exp := &Loop{Var: c.vec.Var, Lo: c.vec.Lo, Hi: c.vec.Hi, Step: c.vec.Step, Kind: Unrolled, Width: w, Body: ExpandLanes(c.vec)}
		replicated := &Func{Kernel: c.f.Kernel, Body: replace(c.f.Body, c.vec, exp), Plan: c.f.Plan}
		if err := VerifyFunc(replicated); err != nil {
			t.Fatalf("trial %d: replicated form: %v\n%s", trial, err, replicated.String())
		}
		serial := &Loop{Var: c.vec.Var, Lo: c.vec.Lo, Hi: c.vec.Hi, Step: IConst{V: 1}, Body: c.vec.Body}
		plain := &Func{Kernel: c.f.Kernel, Body: replace(c.f.Body, c.vec, serial), Plan: c.f.Plan}
		n := 1 + rng.Intn(37)
		args := Args{Tensors: map[string][]float64{"X": make([]float64, n), "Y": make([]float64, n), "Z": make([]float64, n), "R": {7}},
			Dims: map[string]int{"N": n, "one": 1}}
		special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0}
		for _, name := range []string{"X", "Y"} {
			for j := range args.Tensors[name] {
				v := rng.NormFloat64() * 4
				if rng.Intn(8) == 0 {
					v = special[rng.Intn(len(special))]
				}
				args.Tensors[name][j] = elem.Round(v)
			}
		}
		for _, mode := range []Mode{Storage, Exact} {
			runs := map[string]Args{}
			for name, f := range map[string]*Func{"lanes": c.f, "replicated": replicated, "serial": plain} {
				a := args.Clone()
				if err := RunFunc(f, mode, a, nil); err != nil {
					t.Fatalf("trial %d %s: %v", trial, name, err)
				}
				runs[name] = a
			}
			for _, out := range []string{"Z", "R"} {
				for j, want := range runs["replicated"].Tensors[out] {
					if got := runs["lanes"].Tensors[out][j]; !sameBits(got, want) {
						t.Fatalf("trial %d (n=%d w=%d red=%q mode %d): lanes %s[%d] = %v, replicated %v\n%s", trial, n, w, red, mode, out, j, got, want, c.f.String())
					}
				}
			}
			for j, want := range runs["serial"].Tensors["Z"] {
				if got := runs["lanes"].Tensors["Z"][j]; !sameBits(got, want) {
					t.Fatalf("trial %d (n=%d w=%d): lanes Z[%d] = %v, serial loop %v\n%s", trial, n, w, j, got, want, c.f.String())
				}
			}
			if red == Max || red == Min {
				got, want := runs["lanes"].Tensors["R"][0], runs["serial"].Tensors["R"][0]
				if got != want && !(got != got && want != want) && !(got == 0 && want == 0) {
					t.Fatalf("trial %d: %s reduction %v, serial loop %v", trial, red, got, want)
				}
			}
		}
	}
}

// TestLaneTree fixes the combination order of partial results: neighbours first, an odd last one
// carried up a level.
func TestLaneTree(t *testing.T) {
	show := func(x, y string) string { return "(" + x + " " + y + ")" }
	for _, c := range []struct {
		n    int
		want string
	}{{1, "a"}, {2, "(a b)"}, {3, "((a b) c)"}, {4, "((a b) (c d))"}, {5, "(((a b) (c d)) e)"}, {8, "(((a b) (c d)) ((e f) (g h)))"}} {
		xs := strings.Split("abcdefgh"[:c.n], "")
		if got := LaneTree(xs, show); got != c.want {
			t.Errorf("LaneTree of %d = %s, want %s", c.n, got, c.want)
		}
	}
}

// TestVerifyLanes: the verifier rejects Vector loops outside the lane form, with a message naming the
// rule.
func TestVerifyLanes(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, c := range []struct {
		name   string
		red    Op
		break_ func(c laneCase)
		want   string
	}{
		{"step", "", func(c laneCase) { c.vec.Step = IConst{V: 1} }, "is not its width"},
		{"nested loop", "", func(c laneCase) {
			c.vec.Body = append(c.vec.Body, &Loop{Var: &Var{Name: "q"}, Lo: IConst{V: 0}, Hi: IConst{V: 1}, Step: IConst{V: 1}})
		}, "in a lane body"},
		{"outer assign", "", func(c laneCase) {
			o := &LocalVar{Name: "o", T: c.elem}
			c.f.Body = append([]Node{&Decl{L: o, Init: &Const{Val: 0, T: c.elem}}}, c.f.Body...)
			c.vec.Body = append(c.vec.Body, &Assign{L: o, Value: &Const{Val: 1, T: c.elem}})
		}, "lanes must be independent"},
		{"parts", Add, func(c laneCase) { c.vec.Reduce.Parts = c.vec.Reduce.Parts[1:] }, "partial accumulators for"},
		{"operator", Add, func(c laneCase) { c.vec.Reduce.Op = Mul }, "reduction operator"},
		{"update op", Max, func(c laneCase) { c.vec.Reduce.Op = Min }, "update is not"},
		{"acc read", Add, func(c laneCase) {
			st := c.vec.Body[len(c.vec.Body)-2].(*Store)
			st.Value = &Local{L: c.vec.Reduce.Acc}
		}, "reads the accumulator"},
		{"update not last", Add, func(c laneCase) {
			b := c.vec.Body
			b[len(b)-1], b[len(b)-2] = b[len(b)-2], b[len(b)-1]
		}, "as its last node"},
		{"reduce on serial", Add, func(c laneCase) { c.vec.Kind = Unrolled }, "has a lane reduction"},
	} {
		lc := randLaneCase(rng, F32, 4, c.red)
		// a private body: the remainder loop shares the slice
		lc.vec.Body = append([]Node(nil), lc.vec.Body...)
		c.break_(lc)
		err := VerifyFunc(lc.f)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestLaneGroupWhole: a Vector loop whose bounds leave a partial group is a run-time error, not a read
// past the loop.
func TestLaneGroupWhole(t *testing.T) {
	c := randLaneCase(rand.New(rand.NewSource(2)), F64, 4, "")
	c.vec.Hi = IDim{D: c.f.Kernel.Dims[0]}
	args := Args{Tensors: map[string][]float64{"X": make([]float64, 6), "Y": make([]float64, 6), "Z": make([]float64, 6), "R": {0}},
		Dims: map[string]int{"N": 6, "one": 1}}
	err := RunFunc(c.f, Storage, args, nil)
	if err == nil || !strings.Contains(err.Error(), "not whole") {
		t.Fatalf("got %v, want a partial-group error", err)
	}
}
