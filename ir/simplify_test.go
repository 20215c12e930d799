package ir

import (
	"math"
	"math/rand"
	"strings"
	"testing"
)

// evalI evaluates an index expression with floor division (the IR's meaning); trunc evaluates '/' as
// Go's truncating division instead and reports through neg whether some dividend was negative.
func evalI(e IExpr, vars map[*Var]int, dims map[*Dim]int, syms map[string]int, trunc bool, neg *bool) int {
	switch e := e.(type) {
	case IConst:
		return e.V
	case IVar:
		return vars[e.V]
	case IDim:
		return dims[e.D]
	case ISym:
		return syms[e.Name]
	case IBin:
		x, y := evalI(e.X, vars, dims, syms, trunc, neg), evalI(e.Y, vars, dims, syms, trunc, neg)
		switch e.Op {
		case '+':
			return x + y
		case '-':
			return x - y
		case '*':
			return x * y
		case 'm':
			return min(x, y)
		case 'M':
			return max(x, y)
		case '/', '%':
			if x < 0 {
				*neg = true
			}
			if trunc && e.Op == '/' {
				return x / y
			}
			if trunc {
				return x % y
			}
		}
		v, msg := IBinOp(e.Op, x, y)
		if msg != "" {
			panic(msg)
		}
		return v
	}
	panic("bad index expression")
}

func iSize(e IExpr) int {
	if b, ok := e.(IBin); ok {
		return 1 + iSize(b.X) + iSize(b.Y)
	}
	return 1
}

type simplifyEnv struct {
	r    *rand.Rand
	vars []*Var
	dims []*Dim
	syms []string
}

func (s *simplifyEnv) leaf() IExpr {
	switch s.r.Intn(5) {
	case 0:
		return IConst{s.r.Intn(15) - 5}
	case 1:
		return IDim{s.dims[s.r.Intn(len(s.dims))]}
	case 2:
		return ISym{Name: s.syms[s.r.Intn(len(s.syms))]}
	}
	return IVar{s.vars[s.r.Intn(len(s.vars))]}
}

// gen builds a random expression of the shapes the passes make: tile bounds (x/k)*k, remainders
// x - (x/k)*k, min with constants, sums of such terms, products with constants.
func (s *simplifyEnv) gen(depth int) IExpr {
	if depth == 0 || s.r.Intn(5) == 0 {
		return s.leaf()
	}
	x := s.gen(depth - 1)
	switch s.r.Intn(12) {
	case 9:
		return IBin{'%', x, IConst{1 + s.r.Intn(8)}}
	case 10:
		return IBin{"^&>"[s.r.Intn(3)], x, IConst{s.r.Intn(4)}}
	case 11:
		return IBin{"^&"[s.r.Intn(2)], x, s.gen(depth - 1)}
	case 0:
		return IBin{'+', x, s.gen(depth - 1)}
	case 1:
		return IBin{'-', x, s.gen(depth - 1)}
	case 2:
		return IBin{'*', x, IConst{s.r.Intn(9) - 2}}
	case 3:
		return IBin{'*', x, s.gen(depth - 1)}
	case 4:
		return IBin{'/', x, IConst{1 + s.r.Intn(8)}}
	case 5:
		k := IConst{1 + s.r.Intn(8)}
		return IBin{'*', IBin{'/', x, k}, k}
	case 6:
		k := IConst{1 + s.r.Intn(8)}
		return IBin{'-', x, IBin{'*', IBin{'/', x, k}, k}}
	case 7:
		return IBin{'m', x, s.gen(depth - 1)}
	}
	return IBin{'M', x, s.gen(depth - 1)}
}

// Simplify keeps the value of every expression for every assignment, negative and zero values included,
// and never makes a dividend negative where the original's were not (for non-negative variables), so a
// backend's truncating '/' still computes the floor.
func TestSimplifyRandom(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	env := &simplifyEnv{r: r, vars: []*Var{{Name: "i"}, {Name: "j"}, {Name: "i"}}, dims: []*Dim{{Name: "N"}, {Name: "M"}}, syms: []string{"s.MR", "s.KC"}}
	smaller := 0
	for n := 0; n < 20000; n++ {
		e := env.gen(1 + r.Intn(5))
		s := Simplify(e)
		if s2 := Simplify(s); s2.String() != s.String() {
			t.Fatalf("Simplify is not idempotent on %v: %v then %v", e, s, s2)
		}
		if iSize(s) < iSize(e) {
			smaller++
		}
		for try := 0; try < 20; try++ {
			lo, hi := -20, 21
			if try%2 == 0 {
				lo = 0 // what generated code sees
			}
			vars, dims, syms := map[*Var]int{}, map[*Dim]int{}, map[string]int{}
			for _, v := range env.vars {
				vars[v] = lo + r.Intn(hi-lo)
			}
			for _, d := range env.dims {
				dims[d] = lo + r.Intn(hi-lo)
			}
			for _, y := range env.syms {
				syms[y] = lo + r.Intn(hi-lo)
			}
			var neg bool
			want := evalI(e, vars, dims, syms, false, &neg)
			var negS bool
			if got := evalI(s, vars, dims, syms, false, &negS); got != want {
				t.Fatalf("Simplify(%v) = %v: %d, want %d at %v %v %v", e, s, got, want, vars, dims, syms)
			}
			if lo == 0 && !neg && negS {
				t.Fatalf("Simplify(%v) = %v divides a negative number where the original does not (%v %v %v)", e, s, vars, dims, syms)
			}
			if lo == 0 && !neg {
				var n2 bool
				if got := evalI(s, vars, dims, syms, true, &n2); got != want {
					t.Fatalf("Simplify(%v) = %v with truncating division: %d, want %d", e, s, got, want)
				}
			}
		}
	}
	if smaller < 5000 {
		t.Errorf("only %d of 20000 random expressions got smaller", smaller)
	}
}

func TestSimplifyExamples(t *testing.T) {
	N, M := IDim{&Dim{Name: "N"}}, IDim{&Dim{Name: "M"}}
	i, j := IVar{&Var{Name: "i"}}, IVar{&Var{Name: "j"}}
	c := func(v int) IExpr { return IConst{v} }
	b := func(op byte, x, y IExpr) IExpr { return IBin{op, x, y} }
	n4 := b('*', b('/', N, c(4)), c(4)) // (N/4)*4: the vectorized part of a loop
	groups := b('/', b('+', n4, c(3)), c(4))
	rem := b('-', N, n4)
	cost := IExpr(c(1))
	for k := 0; k < 4; k++ {
		cost = b('+', b('+', cost, groups), rem)
	}
	for _, tc := range []struct {
		e    IExpr
		want string
	}{
		{cost, "(((4 * N) - ((N / 4) * 12)) + 1)"},
		{groups, "(N / 4)"},
		{b('+', b('*', i, c(1)), c(0)), "i"},
		{b('-', b('+', j, c(3)), j), "3"},
		{b('+', b('*', b('+', i, c(1)), N), j), "(((i + 1) * N) + j)"},
		{b('/', b('+', b('*', i, c(8)), b('+', j, c(9))), c(4)), "(((2 * i) + ((j + 1) / 4)) + 2)"},
		{b('/', b('-', N, M), c(4)), "((N - M) / 4)"},
		{b('/', b('+', b('*', N, c(4)), b('-', c(0), M)), c(4)), "(((4 * N) - M) / 4)"},
		{b('/', b('/', N, c(4)), c(2)), "(N / 8)"},
		{b('m', b('m', b('+', j, c(4)), N), b('+', j, c(1))), "min((j + 1), N)"},
		{b('M', b('M', N, c(3)), c(5)), "max(N, 5)"},
		{b('m', c(3), c(-2)), "-2"},
		{b('-', c(3), i), "(3 - i)"},
		{b('-', c(0), i), "(-1 * i)"},
		{b('%', b('+', b('*', i, c(1)), c(0)), c(4)), "(i % 4)"},
		{b('^', b('-', j, j), i), "i"},
		{b('>', b('+', c(8), c(8)), c(2)), "4"},
	} {
		if got := Simplify(tc.e).String(); got != tc.want {
			t.Errorf("Simplify(%v) = %s, want %s", tc.e, got, tc.want)
		}
	}
}

// TestFoldSelects: decidable selects fold, undecidable ones stay, and the value never changes.
func TestFoldSelects(t *testing.T) {
	i32 := func(v float64) Expr { return &Const{Val: v, T: I32} }
	f32 := func(v float64) Expr { return &Const{Val: v, T: F32} }
	beta := &Tensor{Name: "beta", Type: F32, Kind: Scalar}
	k := &DimVal{D: &Dim{Name: "K"}, T: I32}
	cmp := func(op Op, x, y Expr) Expr { return &Binary{Op: op, X: x, Y: y, T: Bool} }
	for _, c := range []struct {
		e    Expr
		want string
	}{
		{&Select{C: cmp(Eq, i32(0), i32(0)), A: &Load{T: beta}, B: f32(1)}, "beta"},
		{&Select{C: cmp(Lt, i32(2), i32(1)), A: &Load{T: beta}, B: f32(1)}, "1:f32"},
		{&Select{C: cmp(Ge, k, i32(1)), A: i32(0), B: i32(0)}, "0:i32"},
		{&Select{C: cmp(Ge, k, i32(1)), A: i32(3), B: i32(0)}, "select((K:i32 >= 1:i32), 3:i32, 0:i32)"},
		// +0 and -0 differ: not the same constant
		{&Select{C: cmp(Ge, k, i32(1)), A: f32(0), B: f32(math.Copysign(0, -1))}, "select("},
	} {
		if got := FormatExpr(FoldSelects(c.e)); !strings.HasPrefix(got, c.want) {
			t.Errorf("FoldSelects(%s) = %s, want %s", FormatExpr(c.e), got, c.want)
		}
	}
}
