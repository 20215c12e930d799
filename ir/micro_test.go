package ir

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// microFixture is C[M, N] (inout, f32) = alpha·A·B + beta·C with A f32[M, K], B f32[K, N], and flat
// buffers Ap, Bp (S elements) for operands held as packed panels or in another order.
type microFixture struct {
	dM, dN, dK, dS *Dim
	A, B, Ap, Bp   *Tensor
	C, alpha, beta *Tensor
	k              *Kernel
}

func newMicroFixture() *microFixture {
	x := &microFixture{dM: &Dim{Name: "M"}, dN: &Dim{Name: "N"}, dK: &Dim{Name: "K"}, dS: &Dim{Name: "S"}}
	x.A = &Tensor{Name: "A", Type: F32, Shape: []*Dim{x.dM, x.dK}, Kind: In}
	x.B = &Tensor{Name: "B", Type: F32, Shape: []*Dim{x.dK, x.dN}, Kind: In}
	x.Ap = &Tensor{Name: "Ap", Type: F32, Shape: []*Dim{x.dS}, Kind: In}
	x.Bp = &Tensor{Name: "Bp", Type: F32, Shape: []*Dim{x.dS}, Kind: In}
	x.C = &Tensor{Name: "C", Type: F32, Shape: []*Dim{x.dM, x.dN}, Kind: InOut}
	x.alpha = &Tensor{Name: "alpha", Type: F32, Kind: Scalar}
	x.beta = &Tensor{Name: "beta", Type: F32, Kind: Scalar}
	x.k = &Kernel{Name: "microtest", Params: []*Tensor{x.A, x.B, x.Ap, x.Bp, x.C, x.alpha, x.beta}, Dims: []*Dim{x.dM, x.dN, x.dK, x.dS}}
	return x
}

// micro is a Micro over the whole M×N problem in an mr×nr tile (K in one block) reading a and b.
func (x *microFixture) micro(mr, nr IExpr, a, b Operand) *Micro {
	return &Micro{Slot: "t", Elem: F32, MR: mr, NR: nr, KC: IDim{D: x.dK},
		A: a, B: b,
		C: x.C, COff: IConst{V: 0}, LDC: IDim{D: x.dN}, M: IDim{D: x.dM}, N: IDim{D: x.dN},
		Alpha: &Load{T: x.alpha}, Beta: &Load{T: x.beta}, EP: &Const{Val: 0, T: I32}}
}

// The operand layouts alone decide which implementation a Micro binds: packed panels the packed
// microkernel, strided tiles in a register tile the unpacked one, strided tiles in a tile as high as
// the problem the rows kernel; a view, or a B whose columns are not contiguous, binds none.
func TestMicroKindFromLayouts(t *testing.T) {
	x := newMicroFixture()
	mr, nr, kc := ISym{Name: "t.MR"}, ISym{Name: "t.NR"}, IDim{D: x.dK}
	zero := IConst{V: 0}
	panelA := Operand{T: x.Ap, Off: zero, Layout: &Panel{Width: mr, Depth: kc}}
	panelB := Operand{T: x.Bp, Off: zero, Layout: &Panel{Width: nr, Depth: kc, ByCol: true}}
	rowA := Operand{T: x.A, Off: zero, Layout: RowMajor(IDim{D: x.dK})}
	colA := Operand{T: x.A, Off: zero, Layout: ColMajor(IDim{D: x.dM})}
	rowB := Operand{T: x.B, Off: zero, Layout: RowMajor(IDim{D: x.dN})}
	colB := Operand{T: x.B, Off: zero, Layout: ColMajor(IDim{D: x.dK})}
	view := &Micro{A: MicroOperand{View: &View{}}, B: rowB}
	for _, c := range []struct {
		what string
		u    *Micro
		want MicroKind
	}{
		{"panels", x.micro(mr, nr, panelA, panelB), MicroPacked},
		{"panels of another width", x.micro(IConst{V: 8}, nr, panelA, panelB), MicroUnbound},
		{"panels with A and B swapped", x.micro(mr, nr, Operand{T: x.Ap, Off: zero, Layout: &Panel{Width: mr, Depth: kc, ByCol: true}}, panelB), MicroUnbound},
		{"row-major A and B", x.micro(mr, nr, rowA, rowB), MicroUnpacked},
		{"column-major A", x.micro(IConst{V: 6}, IConst{V: 16}, colA, rowB), MicroUnpacked},
		{"a tile of all rows", x.micro(IDim{D: x.dM}, ISym{Name: "t.RowsNB"}, rowA, rowB), MicroRows},
		{"column-major B", x.micro(mr, nr, rowA, colB), MicroUnbound},
		{"a panel and a strided tile", x.micro(mr, nr, panelA, rowB), MicroUnbound},
		{"a view", view, MicroUnbound},
	} {
		if got := c.u.Kind(); got != c.want {
			t.Errorf("%s: kind %s, want %s", c.what, got, c.want)
		}
	}
}

// A Micro computes the same C whichever layout its operands are read through: packed panels, row-major
// tiles, a column-major copy of A, and a view; each equals the product computed here.
func TestMicroLayoutsAgree(t *testing.T) {
	x := newMicroFixture()
	const m, n, k, mr, nr = 3, 5, 7, 4, 6
	rng := rand.New(rand.NewPCG(3, 9))
	gen := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(rng.IntN(9) - 4)
		}
		return v
	}
	a, b, c0 := gen(m*k), gen(k*n), gen(m*n)
	const alpha, beta = 2, 3
	want := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			s := 0.0
			for p := 0; p < k; p++ {
				s += a[i*k+p] * b[p*n+j]
			}
			want[i*n+j] = alpha*s + beta*c0[i*n+j]
		}
	}
	// packed panels (zero-padded to the tile), and A transposed (column-major, ld M) in Ap
	ap, bp, at := make([]float64, mr*k), make([]float64, nr*k), make([]float64, m*k)
	for p := 0; p < k; p++ {
		for i := 0; i < m; i++ {
			ap[p*mr+i] = a[i*k+p]
			at[p*m+i] = a[i*k+p]
		}
		for j := 0; j < n; j++ {
			bp[p*nr+j] = b[p*n+j]
		}
	}
	zero := IConst{V: 0}
	dK, dM, dN := IDim{D: x.dK}, IDim{D: x.dM}, IDim{D: x.dN}
	rowA := Operand{T: x.A, Off: zero, Layout: RowMajor(dK)}
	rowB := Operand{T: x.B, Off: zero, Layout: RowMajor(dN)}
	pi, pk := &Var{Name: "pi"}, &Var{Name: "pk"}
	viewA := MicroOperand{View: &View{P: pi, D: pk, Value: &Load{T: x.A, Idx: []IExpr{IVar{V: pi}, IVar{V: pk}}}, Base0: zero, K0: zero}}
	for _, c := range []struct {
		what string
		u    *Micro
		ap   []float64
		bp   []float64
	}{
		{"packed", x.micro(IConst{V: mr}, IConst{V: nr}, Operand{T: x.Ap, Off: zero, Layout: &Panel{Width: IConst{V: mr}, Depth: dK}},
			Operand{T: x.Bp, Off: zero, Layout: &Panel{Width: IConst{V: nr}, Depth: dK, ByCol: true}}), ap, bp},
		{"unpacked", x.micro(IConst{V: mr}, IConst{V: nr}, rowA, rowB), nil, nil},
		{"rows", x.micro(dM, dN, rowA, rowB), nil, nil},
		{"column-major A", x.micro(IConst{V: mr}, IConst{V: nr}, Operand{T: x.Ap, Off: zero, Layout: ColMajor(dM)}, rowB), at, nil},
		{"view A", func() *Micro { u := x.micro(IConst{V: mr}, IConst{V: nr}, rowA, rowB); u.A = viewA; return u }(), nil, nil},
	} {
		size := max(len(c.ap), len(c.bp), 1)
		pad := func(v []float64) []float64 {
			return append(append([]float64(nil), v...), make([]float64, size-len(v))...)
		}
		args := Args{
			Tensors: map[string][]float64{"A": a, "B": b, "Ap": pad(c.ap), "Bp": pad(c.bp), "C": append([]float64(nil), c0...)},
			Scalars: map[string]float64{"alpha": alpha, "beta": beta},
			Dims:    map[string]int{"M": m, "N": n, "K": k, "S": size},
		}
		f := &Func{Kernel: x.k, Body: []Node{c.u}}
		if err := VerifyFunc(f); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if err := RunFunc(f, Exact, args, map[string]int{}); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		for i, v := range args.Tensors["C"] {
			if v != want[i] {
				t.Fatalf("%s: C[%d] = %v, want %v", c.what, i, v, want[i])
			}
		}
	}
	// an operand layout reaching past its tensor fails, it does not read a neighbour
	u := x.micro(IConst{V: mr}, IConst{V: nr}, Operand{T: x.A, Off: IConst{V: 1}, Layout: RowMajor(dK)}, rowB)
	args := Args{Tensors: map[string][]float64{"A": a, "B": b, "Ap": {0}, "Bp": {0}, "C": append([]float64(nil), c0...)},
		Scalars: map[string]float64{"alpha": alpha, "beta": beta}, Dims: map[string]int{"M": m, "N": n, "K": k, "S": 1}}
	if err := RunFunc(&Func{Kernel: x.k, Body: []Node{u}}, Exact, args, map[string]int{}); err == nil {
		t.Error("an operand past the end of A ran")
	}
}

// BindMicro takes back exactly what AsMMA writes (with and without a bias, views and panels), and
// refuses a triple that departs from the microkernel contract in any one respect: the binding must never
// claim a triple the microkernel would compute differently.
func TestBindMicroMatchesOnlyTheContract(t *testing.T) {
	x := newMicroFixture()
	zero := IConst{V: 0}
	dK := IDim{D: x.dK}
	bias := &Tensor{Name: "bias", Type: F32, Shape: []*Dim{x.dN}, Kind: In}
	pi, pk := &Var{Name: "pi"}, &Var{Name: "pk"}
	viewA := Operand{View: &View{P: pi, D: pk, Value: &Load{T: x.A, Idx: []IExpr{IVar{V: pi}, IVar{V: pk}}}, Base0: zero, K0: zero}}
	packed := func() *Micro {
		return x.micro(IConst{V: 4}, IConst{V: 6}, Operand{T: x.Ap, Off: zero, Layout: &Panel{Width: IConst{V: 4}, Depth: dK}},
			Operand{T: x.Bp, Off: IConst{V: 3}, Layout: &Panel{Width: IConst{V: 6}, Depth: dK, ByCol: true}})
	}
	withBias := func() *Micro {
		u := packed()
		u.Bias, u.BiasOff, u.EP = bias, IConst{V: 2}, &Const{Val: 3, T: I32}
		u.COff = IAdd(IVar{V: pi}, IConst{V: 5})
		return u
	}
	withView := func() *Micro { u := packed(); u.A = viewA; u.LDC = IConst{V: 1}; return u }
	name := func(b string) string { return b }
	triple := func(u *Micro) (*AccDecl, *MMA, *AccStore) {
		n := u.AsMMA(name)
		if len(n) != 3 {
			t.Fatalf("no MMA form of %v", u)
		}
		return n[0].(*AccDecl), n[1].(*MMA), n[2].(*AccStore)
	}
	for _, u := range []*Micro{packed(), withBias(), withView()} {
		got, ok := BindMicro(triple(u))
		if !ok || !reflect.DeepEqual(got, u) {
			t.Errorf("AsMMA then BindMicro: %v, %#v, want %#v", ok, got, u)
		}
	}
	for _, c := range []struct {
		what  string
		plant func(d *AccDecl, m *MMA, s *AccStore)
	}{
		{"no slot", func(d *AccDecl, m *MMA, s *AccStore) { m.Slot = "" }},
		{"tf32", func(d *AccDecl, m *MMA, s *AccStore) { m.TF32 = true }},
		{"a valid depth", func(d *AccDecl, m *MMA, s *AccStore) { m.ValidK = IConst{V: 2} }},
		{"warp scope", func(d *AccDecl, m *MMA, s *AccStore) { d.Acc.Scope = ScopeWarp }},
		{"f16 inputs", func(d *AccDecl, m *MMA, s *AccStore) { m.In = F16 }},
		{"stores fewer rows than it multiplies", func(d *AccDecl, m *MMA, s *AccStore) { s.M = IConst{V: 1} }},
		{"acc·alpha", func(d *AccDecl, m *MMA, s *AccStore) {
			s.Value = Rewrite(s.Value, func(e Expr) Expr {
				if b, ok := e.(*Binary); ok && b.Op == Mul {
					if _, ok := b.Y.(*AccVal); ok {
						return &Binary{Op: Mul, X: b.Y, Y: b.X, T: b.T}
					}
				}
				return e
			})
		}},
		{"no relu select", func(d *AccDecl, m *MMA, s *AccStore) { s.Value = s.Value.(*Select).B }},
		{"relu bit 1", func(d *AccDecl, m *MMA, s *AccStore) {
			sel := s.Value.(*Select)
			s.Value = &Select{C: epBit(sel.C.(*Binary).X, 1), A: sel.A, B: sel.B}
		}},
		{"beta reads C elsewhere", func(d *AccDecl, m *MMA, s *AccStore) {
			s.Value = Rewrite(s.Value, func(e Expr) Expr {
				if l, ok := e.(*Load); ok && l.T == x.C {
					return &Load{T: x.C, Idx: []IExpr{zero, zero}}
				}
				return e
			})
		}},
		{"stores at i·LDC + i", func(d *AccDecl, m *MMA, s *AccStore) {
			s.Idx = flatIndex(x.C, IAdd(IMul(IVar{V: s.I}, IDim{D: x.dN}), IVar{V: s.I}))
		}},
	} {
		for _, u := range []*Micro{packed(), withBias()} {
			d, m, s := triple(u)
			c.plant(d, m, s)
			if got, ok := BindMicro(d, m, s); ok {
				t.Errorf("%s: bound as %#v", c.what, got)
			}
		}
	}
}
