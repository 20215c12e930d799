package ir

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// mmaKernel has A f16[M, K], B f16[K, N], bias f32[N], C inout f32[M, N], beta f32, and flat f16
// buffers Af, Bf (S elements) for operands held in another layout.
type mmaKernel struct {
	k                 *Kernel
	dM, dN, dK, dS    *Dim
	A, B, Af, Bf      *Tensor
	bias, C, beta     *Tensor
	m, n, kk, s       int
	a, b, cInit, bvec []float64
}

func newMMAKernel(rng *rand.Rand, m, n, k, s int) *mmaKernel {
	t := &mmaKernel{dM: &Dim{Name: "M"}, dN: &Dim{Name: "N"}, dK: &Dim{Name: "K"}, dS: &Dim{Name: "S"}, m: m, n: n, kk: k, s: s}
	t.A = &Tensor{Name: "A", Type: F16, Shape: []*Dim{t.dM, t.dK}, Kind: In}
	t.B = &Tensor{Name: "B", Type: F16, Shape: []*Dim{t.dK, t.dN}, Kind: In}
	t.Af = &Tensor{Name: "Af", Type: F16, Shape: []*Dim{t.dS}, Kind: In}
	t.Bf = &Tensor{Name: "Bf", Type: F16, Shape: []*Dim{t.dS}, Kind: In}
	t.bias = &Tensor{Name: "bias", Type: F32, Shape: []*Dim{t.dN}, Kind: In}
	t.C = &Tensor{Name: "C", Type: F32, Shape: []*Dim{t.dM, t.dN}, Kind: InOut}
	t.beta = &Tensor{Name: "beta", Type: F32, Kind: Scalar}
	t.k = &Kernel{Name: "mmatest", Params: []*Tensor{t.A, t.B, t.Af, t.Bf, t.bias, t.C, t.beta}, Dims: []*Dim{t.dM, t.dN, t.dK, t.dS}}
	gen := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = F16.Round(rng.Float64()*4 - 2)
		}
		return v
	}
	t.a, t.b, t.cInit, t.bvec = gen(m*k), gen(k*n), gen(m*n), gen(n)
	return t
}

func (t *mmaKernel) args(beta float64, af, bf []float64) Args {
	if af == nil {
		af = make([]float64, t.s)
	}
	if bf == nil {
		bf = make([]float64, t.s)
	}
	return Args{
		Tensors: map[string][]float64{"A": t.a, "B": t.b, "Af": af, "Bf": bf, "bias": t.bvec, "C": append([]float64(nil), t.cInit...)},
		Scalars: map[string]float64{"beta": beta},
		Dims:    map[string]int{"M": t.m, "N": t.n, "K": t.kk, "S": t.s},
	}
}

// want is the epilogue relu(Σ_p A·B + bias[j]) + beta·C computed in f32, summing p in order.
func (t *mmaKernel) want(beta float64) []float64 {
	out := make([]float64, t.m*t.n)
	for i := 0; i < t.m; i++ {
		for j := 0; j < t.n; j++ {
			var s float32
			for p := 0; p < t.kk; p++ {
				s += float32(t.a[i*t.kk+p]) * float32(t.b[p*t.n+j])
			}
			v := float32(math.Max(float64(s+float32(t.bvec[j])), 0))
			if beta != 0 {
				v += float32(beta) * float32(t.cInit[i*t.n+j])
			}
			out[i*t.n+j] = float64(v)
		}
	}
	return out
}

// epilogue builds C[i0+i, j0+j] = relu(acc + bias[j0+j]) + beta·C[i0+i, j0+j].
func (t *mmaKernel) epilogue(acc *Accum, i0, j0 IExpr, m, n IExpr) *AccStore {
	i, j := &Var{Name: "i"}, &Var{Name: "j"}
	row, col := IAdd(i0, IVar{i}), IAdd(j0, IVar{j})
	sum := &Binary{Op: Add, X: &AccVal{Acc: acc}, Y: &Load{T: t.bias, Idx: []IExpr{col}}, T: F32}
	beta := &Binary{Op: Mul, X: &Load{T: t.beta}, Y: &Load{T: t.C, Idx: []IExpr{row, col}}, T: F32}
	val := &Binary{Op: Add, X: &Unary{Op: Relu, X: sum, T: F32}, Y: beta, T: F32}
	return &AccStore{Acc: acc, I: i, J: j, M: m, N: n, Out: t.C, Idx: []IExpr{row, col}, Value: val}
}

// tiled is the thread-scope form: MR×NR register tiles, a K loop by KC of MMAs on unpacked row-major
// operands with ragged edges, one epilogue per tile.
func (t *mmaKernel) tiled(mr, nr, kc int) *Func {
	i0, j0, p0 := &Var{Name: "i0"}, &Var{Name: "j0"}, &Var{Name: "p0"}
	acc := &Accum{Name: "acc", T: F32, M: IConst{mr}, N: IConst{nr}, Scope: ScopeThread}
	M, N, K := IDim{t.dM}, IDim{t.dN}, IDim{t.dK}
	mma := &MMA{Acc: acc, In: F16, K: IConst{kc},
		A:      Operand{T: t.A, Off: IAdd(IMul(IVar{i0}, K), IVar{p0}), Layout: RowMajor(K)},
		B:      Operand{T: t.B, Off: IAdd(IMul(IVar{p0}, N), IVar{j0}), Layout: RowMajor(N)},
		ValidM: ISub(M, IVar{i0}), ValidN: ISub(N, IVar{j0}), ValidK: ISub(K, IVar{p0})}
	kloop := &Loop{Var: p0, Lo: IConst{0}, Hi: K, Step: IConst{kc}, Body: []Node{mma}}
	tile := []Node{&AccDecl{Acc: acc}, kloop, t.epilogue(acc, IVar{i0}, IVar{j0}, IMin(IConst{mr}, ISub(M, IVar{i0})), IMin(IConst{nr}, ISub(N, IVar{j0})))}
	jl := &Loop{Var: j0, Lo: IConst{0}, Hi: N, Step: IConst{nr}, Body: tile}
	il := &Loop{Var: i0, Lo: IConst{0}, Hi: M, Step: IConst{mr}, Body: []Node{jl}}
	return &Func{Kernel: t.k, Body: []Node{il}, Plan: map[string]int{}}
}

func checkRun(t *testing.T, f *Func, args Args, want []float64) {
	t.Helper()
	if err := VerifyFunc(f); err != nil {
		t.Fatalf("%v\n%s", err, f)
	}
	if err := RunFunc(f, Storage, args, nil); err != nil {
		t.Fatalf("%v\n%s", err, f)
	}
	for i, w := range want {
		if g := args.Tensors["C"][i]; g != w {
			t.Fatalf("C[%d] = %v, want %v\n%s", i, g, w, f)
		}
	}
}

// TestMMAThreadTiles runs register-tile MMAs over a K loop on ragged shapes: the sum is in the
// reduction's order, so the result is exact; beta = 0 does not read a NaN C.
func TestMMAThreadTiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sh := range [][3]int{{1, 1, 1}, {7, 5, 13}, {4, 3, 5}, {9, 11, 2}, {6, 16, 0}} {
		mk := newMMAKernel(rng, sh[0], sh[1], sh[2], 1)
		f := mk.tiled(4, 3, 5)
		checkRun(t, f, mk.args(0.5, nil, nil), mk.want(0.5))
		for i := range mk.cInit {
			mk.cInit[i] = math.NaN()
		}
		checkRun(t, f, mk.args(0, nil, nil), mk.want(0))
	}
}

// fragFunc is one warp- or warpgroup-scope MMA of a whole tile: A from Af through la, B from Bf through
// lb (or B itself when lb is nil: row-major), the accumulator in fragment fc.
func (t *mmaKernel) fragFunc(scope Scope, la, lb Layout, fc *Fragment) *Func {
	acc := &Accum{Name: "acc", T: F32, M: IConst{t.m}, N: IConst{t.n}, Scope: scope, Layout: fc}
	b := Operand{T: t.Bf, Off: IConst{0}, Layout: lb}
	if lb == nil {
		b = Operand{T: t.B, Off: IConst{0}, Layout: RowMajor(IConst{t.n})}
	}
	mma := &MMA{Acc: acc, In: F16, K: IConst{t.kk}, A: Operand{T: t.Af, Off: IConst{0}, Layout: la}, B: b}
	body := []Node{&AccDecl{Acc: acc}, mma, t.epilogue(acc, IConst{0}, IConst{0}, IConst{t.m}, IConst{t.n})}
	return &Func{Kernel: t.k, Body: body, Plan: map[string]int{}}
}

// scatter places a row-major rows×cols matrix into a buffer of size n through layout l.
func scatter(t *testing.T, l Layout, v []float64, rows, cols, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN() // a read of a position the layout does not map shows up
	}
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			o, err := LayoutOffset(l, r, c, IEnv{})
			if err != nil {
				t.Fatal(err)
			}
			out[o] = v[r*cols+c]
		}
	}
	return out
}

// TestMMAFragments runs an sm_80 m16n8k16 MMA whose operands are held as warp fragments and a
// wgmma-shaped one (m64n16k16) reading A from a 128-byte-swizzled tile: the interpreter finds every
// element through the layouts.
func TestMMAFragments(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	mk := newMMAKernel(rng, 16, 8, 16, 256)
	fa, fb := FragSM80A(), FragSM80B()
	af, bf := scatter(t, fa, mk.a, 16, 16, 256), scatter(t, fb, mk.b, 16, 8, 256)
	checkRun(t, mk.fragFunc(ScopeWarp, fa, fb, FragSM80C()), mk.args(0.25, af, bf), mk.want(0.25))

	mk = newMMAKernel(rng, 64, 16, 16, 64*64)
	sw := Swizzle128B(IConst{64}, 2)
	af = scatter(t, sw, mk.a, 64, 16, 64*64)
	checkRun(t, mk.fragFunc(ScopeWarpgroup, sw, nil, FragWGMMAAcc(16)), mk.args(0, af, nil), mk.want(0))
}

func TestMMAVerify(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	mk := newMMAKernel(rng, 16, 8, 16, 256)
	good := func() *Func { return mk.fragFunc(ScopeWarp, FragSM80A(), FragSM80B(), FragSM80C()) }
	if err := VerifyFunc(good()); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit func(f *Func)
		want string
	}{
		{"mma after store", func(f *Func) { f.Body = append(f.Body, f.Body[1]) }, "outside its declaration"},
		{"never stored", func(f *Func) { f.Body = f.Body[:2] }, "never stored"},
		{"stored twice", func(f *Func) { f.Body = append(f.Body, f.Body[2]) }, "outside its declaration"},
		{"no decl", func(f *Func) { f.Body = f.Body[1:] }, "outside its declaration"},
		{"store in a loop", func(f *Func) {
			f.Body[2] = &Loop{Var: &Var{Name: "x"}, Lo: IConst{0}, Hi: IConst{1}, Step: IConst{1}, Body: []Node{f.Body[2]}}
		}, "not in the block"},
		{"acc read elsewhere", func(f *Func) {
			acc := f.Body[0].(*AccDecl).Acc
			f.Body = append(f.Body[:2], &Store{T: mk.C, Idx: []IExpr{IConst{0}, IConst{0}}, Value: &AccVal{Acc: acc}}, f.Body[2])
		}, "read outside its accstore"},
		{"thread fragment in a warp mma", func(f *Func) { f.Body[1].(*MMA).A.Layout = RegisterTile(16, 16) }, "belongs to a thread"},
		{"fragment shape", func(f *Func) { f.Body[1].(*MMA).B.Layout = FragSM80A() }, "is 16x16, the tile 16x8"},
		{"wrong acc fragment", func(f *Func) {
			a := f.Body[0].(*AccDecl).Acc
			a.Layout = FragWGMMAAcc(8)
		}, "belongs to a warpgroup"},
		{"input type", func(f *Func) { f.Body[1].(*MMA).In = F32 }, "the mma reads f32"},
		{"narrowing acc", func(f *Func) {
			a := f.Body[0].(*AccDecl).Acc
			a.T = F16
			f.Body[2].(*AccStore).Value = &Cast{X: &AccVal{Acc: a}, T: F32}
			f.Body[1].(*MMA).In = F32
		}, "do not widen"},
		{"symbolic K at warp scope", func(f *Func) { f.Body[1].(*MMA).K = IDim{mk.dK} }, "constant K"},
		{"store to input", func(f *Func) { f.Body[2].(*AccStore).Out = mk.A }, "input A"},
		{"store past the tile", func(f *Func) { f.Body[2].(*AccStore).M = IConst{17} }, "stores 17x8 of a 16x8 tile"},
		{"narrowing epilogue", func(f *Func) {
			s := f.Body[2].(*AccStore)
			s.Out = &Tensor{Name: "H", Type: F16, Kind: Out, Shape: mk.C.Shape}
		}, "stores f32 into f16"},
	}
	for _, c := range cases {
		f := good()
		c.edit(f)
		err := VerifyFunc(f)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	// The interpreter reports the same misuse without panicking.
	f := good()
	f.Body = append(f.Body, f.Body[1])
	if err := RunFunc(f, Storage, mk.args(0, make([]float64, 256), make([]float64, 256)), nil); err == nil {
		t.Error("interpreter ran an mma after its store")
	}
}

func TestMMAPrint(t *testing.T) {
	mk := newMMAKernel(rand.New(rand.NewPCG(1, 1)), 5, 5, 5, 1)
	got := mk.tiled(4, 3, 5).String()
	for _, want := range []string{
		"acc %acc f32[4 x 3] thread = 0",
		"mma %acc += A·B f16 k=5 A=A+((i0 * K) + p0) rowmajor(ld=K) B=B+((p0 * N) + j0) rowmajor(ld=N) valid m<(M - i0), n<(N - j0), k<(K - p0)",
		"accstore %acc for i < min(4, (M - i0)), j < min(3, (N - j0)): C[(i0 + i), (j0 + j)] = (relu((%acc + bias[(j0 + j)])) + (beta * C[(i0 + i), (j0 + j)]))",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}

// TestRoundTF32Value: values checked by hand against the tf32 format (10 mantissa bits, cvt.rna: to
// nearest, ties away from zero).
func TestRoundTF32Value(t *testing.T) {
	for _, c := range []struct{ x, want float64 }{
		{1, 1},
		{1 + 0x1p-12, 1},                     // below half an ulp (2⁻¹⁰): down
		{1 + 0x1p-11, 1 + 0x1p-10},           // a tie: away from zero
		{-(1 + 0x1p-11), -(1 + 0x1p-10)},     // a tie, negative: away from zero
		{1 + 0x1p-11 + 0x1p-23, 1 + 0x1p-10}, // above half: up
		{1 + 3*0x1p-11, 1 + 2*0x1p-10},       // a tie between 1+2⁻¹⁰ and 1+2⁻⁹: away
		{2 - 0x1p-23, 2},                     // carries into the exponent
		{0x1p-130, 0x1p-130},                 // subnormal with no low bits
		{0x1p-149, 0},                        // the smallest subnormal: below half of 2⁻¹³⁶
		{math.MaxFloat32, math.Inf(1)},       // beyond tf32's largest finite value
		{math.Inf(-1), math.Inf(-1)},
	} {
		if got := RoundTF32Value(c.x); got != c.want {
			t.Errorf("RoundTF32Value(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if v := RoundTF32Value(math.NaN()); v == v {
		t.Errorf("RoundTF32Value(NaN) = %v", v)
	}
}
