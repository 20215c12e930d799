package ir

import (
	"strings"
	"testing"
)

func allFragments() []*Fragment {
	fs := []*Fragment{FragSM80A(), FragSM80B(), FragSM80C(), FragSM80TF32A(), FragSM80TF32B(), FragSimdgroup8x8(), RegisterTile(6, 16), RegisterTile(1, 1), RegisterTile(14, 2)}
	for _, n := range []int{8, 16, 64, 136, 256} {
		fs = append(fs, FragWGMMAAcc(n))
	}
	return fs
}

// Every fragment is a bijection between (lane, register) and (row, col), and its owner map is the inverse.
func TestFragmentBijection(t *testing.T) {
	for _, f := range allFragments() {
		if f.Threads()*f.Regs != f.Rows*f.Cols {
			t.Errorf("%s: %d threads × %d registers for a %dx%d tile", f.Name, f.Threads(), f.Regs, f.Rows, f.Cols)
			continue
		}
		seen := map[[2]int]bool{}
		for l := 0; l < f.Threads(); l++ {
			for i := 0; i < f.Regs; i++ {
				r, k, err := FragmentCoord(f, l, i)
				if err != nil {
					t.Fatalf("%s: %v", f.Name, err)
				}
				if r < 0 || r >= f.Rows || k < 0 || k >= f.Cols {
					t.Fatalf("%s: lane %d reg %d -> (%d, %d) outside %dx%d", f.Name, l, i, r, k, f.Rows, f.Cols)
				}
				if seen[[2]int{r, k}] {
					t.Fatalf("%s: (%d, %d) held twice", f.Name, r, k)
				}
				seen[[2]int{r, k}] = true
				lo, ro := f.Owner(IConst{r}, IConst{k})
				gl, _ := EvalIndex(lo, IEnv{})
				gr, _ := EvalIndex(ro, IEnv{})
				if gl != l || gr != i {
					t.Fatalf("%s: owner of (%d, %d) is lane %d reg %d, want %d, %d", f.Name, r, k, gl, gr, l, i)
				}
				off, err := LayoutOffset(f, r, k, IEnv{})
				if err != nil || off != l*f.Regs+i {
					t.Fatalf("%s: offset of (%d, %d) = %d, %v; want %d", f.Name, r, k, off, err, l*f.Regs+i)
				}
			}
		}
	}
	if FragWGMMAAcc(12) != nil || FragWGMMAAcc(264) != nil || FragWGMMAAcc(0) != nil {
		t.Error("wgmma accumulator accepted an invalid n")
	}
}

// Entries copied by hand from the PTX ISA fragment tables (mma.m16n8k16 f16/bf16 with f32
// accumulation; wgmma m64nNk16 accumulator D): {lane, register, row, col}.
func TestFragmentPTXTables(t *testing.T) {
	cases := []struct {
		f    *Fragment
		want [][4]int
	}{
		{FragSM80A(), [][4]int{
			{0, 0, 0, 0}, {0, 1, 0, 1}, {0, 2, 8, 0}, {0, 3, 8, 1}, {0, 4, 0, 8}, {0, 5, 0, 9}, {0, 6, 8, 8}, {0, 7, 8, 9},
			{5, 0, 1, 2}, {5, 3, 9, 3}, {5, 7, 9, 11}, {31, 0, 7, 6}, {31, 7, 15, 15},
		}},
		{FragSM80B(), [][4]int{
			{0, 0, 0, 0}, {0, 1, 1, 0}, {0, 2, 8, 0}, {0, 3, 9, 0}, {6, 1, 5, 1}, {31, 0, 6, 7}, {31, 3, 15, 7},
		}},
		{FragSM80C(), [][4]int{
			{0, 0, 0, 0}, {0, 1, 0, 1}, {0, 2, 8, 0}, {0, 3, 8, 1}, {9, 0, 2, 2}, {31, 3, 15, 7},
		}},
		{FragSM80TF32A(), [][4]int{{0, 0, 0, 0}, {0, 1, 8, 0}, {0, 2, 0, 4}, {0, 3, 8, 4}, {31, 3, 15, 7}}},
		{FragSM80TF32B(), [][4]int{{5, 0, 1, 1}, {5, 1, 5, 1}, {31, 1, 7, 7}}},
		{FragWGMMAAcc(16), [][4]int{
			{0, 0, 0, 0}, {0, 2, 8, 0}, {0, 4, 0, 8}, {32, 0, 16, 0}, {127, 0, 55, 6}, {127, 3, 63, 7}, {127, 4, 55, 14}, {127, 7, 63, 15},
		}},
	}
	for _, c := range cases {
		for _, w := range c.want {
			r, k, err := FragmentCoord(c.f, w[0], w[1])
			if err != nil || r != w[2] || k != w[3] {
				t.Errorf("%s: lane %d reg %d -> (%d, %d) %v, want (%d, %d)", c.f.Name, w[0], w[1], r, k, err, w[2], w[3])
			}
		}
	}
}

// Swizzles permute the offsets of the tile they swizzle, and the 128-byte swizzle moves 16-byte chunk c
// of row r to chunk c ^ (r % 8).
func TestSwizzlePermutes(t *testing.T) {
	for _, eb := range []int{2, 4} {
		per := 128 / eb // elements per 128-byte row
		chunk := 16 / eb
		s := Swizzle128B(IConst{per}, eb)
		rows := 16
		seen := make([]bool, rows*per)
		for r := 0; r < rows; r++ {
			for col := 0; col < per; col++ {
				o, err := LayoutOffset(s, r, col, IEnv{})
				if err != nil {
					t.Fatal(err)
				}
				want := r*per + chunk*((col/chunk)^(r%8)) + col%chunk
				if o != want {
					t.Fatalf("%d-byte elements: (%d, %d) -> %d, want %d", eb, r, col, o, want)
				}
				seen[o] = true
			}
		}
		for i, ok := range seen {
			if !ok {
				t.Fatalf("%d-byte elements: offset %d not reached", eb, i)
			}
		}
	}
	// Any CuTe swizzle is a permutation of each aligned block of 2^(B+M+S) offsets (here over a
	// symbolic leading dimension bound at evaluation time).
	ld := &Dim{Name: "ld"}
	for _, p := range [][3]int{{1, 0, 1}, {2, 1, 3}, {3, 4, 3}, {2, 2, 2}} {
		s := NewSwizzle(RowMajor(IDim{ld}), p[0], p[1], p[2])
		n := 1 << (p[0] + p[1] + p[2])
		env := IEnv{Dims: map[*Dim]int{ld: n}}
		seen := make([]bool, 2*n)
		for r := 0; r < 2; r++ {
			for col := 0; col < n; col++ {
				o, err := LayoutOffset(s, r, col, env)
				if err != nil || o < 0 || o >= 2*n || seen[o] || o/n != r {
					t.Fatalf("%v: (%d, %d) -> %d (%v) not a block permutation", s, r, col, o, err)
				}
				seen[o] = true
			}
		}
	}
}

func TestPanelAndStrided(t *testing.T) {
	mr, kc := &Dim{Name: "MR"}, &Dim{Name: "KC"}
	for _, byCol := range []bool{false, true} {
		p := &Panel{Width: IDim{mr}, Depth: IDim{kc}, ByCol: byCol}
		for _, sz := range [][2]int{{6, 5}, {4, 1}, {1, 7}} {
			w, d := sz[0], sz[1]
			env := IEnv{Dims: map[*Dim]int{mr: w, kc: d}}
			n := 3*w - 1 // a ragged last panel
			seen := map[int]bool{}
			for x := 0; x < n; x++ {
				for k := 0; k < d; k++ {
					r, col := x, k
					if byCol {
						r, col = k, x
					}
					o, err := LayoutOffset(p, r, col, env)
					want := (x/w)*w*d + k*w + x%w // Pack's placement
					if err != nil || o != want || seen[o] {
						t.Fatalf("%v %dx%d: (%d, %d) -> %d %v, want %d once", p, w, d, r, col, o, err, want)
					}
					seen[o] = true
				}
			}
		}
	}
	ld := &Dim{Name: "lda"}
	env := IEnv{Dims: map[*Dim]int{ld: 11}}
	if o, _ := LayoutOffset(RowMajor(IDim{ld}), 3, 4, env); o != 37 {
		t.Errorf("row major (3, 4) ld 11 = %d", o)
	}
	if o, _ := LayoutOffset(ColMajor(IDim{ld}), 3, 4, env); o != 47 {
		t.Errorf("col major (3, 4) ld 11 = %d", o)
	}
}

func TestBitIndexOps(t *testing.T) {
	x := &Var{Name: "x"}
	for _, c := range []struct {
		e    IExpr
		x    int
		want int
		str  string
	}{
		{IMod(IVar{x}, IConst{8}), -3, 5, "(x % 8)"},
		{IXor(IVar{x}, IConst{5}), 6, 3, "(x ^ 5)"},
		{IAnd(IVar{x}, IConst{12}), 13, 12, "(x & 12)"},
		{IShl(IVar{x}, IConst{3}), 5, 40, "(x << 3)"},
		{IShr(IVar{x}, IConst{2}), 13, 3, "(x >> 2)"},
		{IShr(IVar{x}, IConst{0}), 13, 13, "x"},
		{IXor(IConst{0}, IVar{x}), 9, 9, "x"},
		{IMod(IConst{-7}, IConst{4}), 0, 1, "1"},
	} {
		v, err := EvalIndex(c.e, IEnv{Vars: map[*Var]int{x: c.x}})
		if err != nil || v != c.want || c.e.String() != c.str {
			t.Errorf("%v at x=%d: %d %v, want %d printed %s", c.e, c.x, v, err, c.want, c.str)
		}
		// substitution rebuilds the same operation
		s := SubstIExpr(c.e, map[*Var]IExpr{x: IConst{c.x}})
		if sv, ok := s.(IConst); !ok || sv.V != c.want {
			t.Errorf("%v: substituting x=%d gives %v", c.e, c.x, s)
		}
	}
	for _, e := range []IExpr{IShl(IVar{x}, IConst{70}), IMod(IVar{x}, IConst{0}), IShr(IVar{x}, IConst{-1}), IVar{&Var{Name: "y"}}} {
		if _, err := EvalIndex(e, IEnv{Vars: map[*Var]int{x: 1}}); err == nil {
			t.Errorf("%v: no error", e)
		}
	}
}

func TestLayoutStrings(t *testing.T) {
	for _, c := range []struct {
		l    Layout
		want string
	}{
		{RowMajor(IConst{64}), "rowmajor(ld=64)"},
		{&Strided{RowStride: IConst{1}, ColStride: IConst{0}}, "strided(1, 0)"},
		{ColMajor(ISym{Name: "ld"}), "colmajor(ld=ld)"},
		{&Panel{Width: ISym{Name: "sgemm.MR"}, Depth: ISym{Name: "sgemm.KC"}}, "panel(rows sgemm.MR, depth sgemm.KC)"},
		{Swizzle128B(IConst{64}, 2), "swizzle128B<3,3,3>(rowmajor(ld=64))"},
		{FragSM80C(), "fragment sm80.m16n8k16.c warp 16x8, 4 per thread: (lane, reg) -> (((lane >> 2) + ((reg >> 1) * 8)), (((lane & 3) * 2) + (reg & 1)))"},
		{FragSimdgroup8x8(), "fragment metal.simdgroup8x8 simdgroup 8x8, 2 per thread, opaque"},
	} {
		if got := c.l.String(); got != c.want {
			t.Errorf("got %s\nwant %s", got, c.want)
		}
	}
	if !strings.Contains(RegisterTile(6, 16).String(), "thread 6x16, 96 per thread") {
		t.Error(RegisterTile(6, 16).String())
	}
}
