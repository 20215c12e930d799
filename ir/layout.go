package ir

import (
	"fmt"
	"strconv"
)

// A Layout says where each element (row, col) of a two-dimensional operand tile lives. Layouts are data:
// their maps are index expressions (IExpr) that the interpreter evaluates, the printer prints and a
// backend compiles, so no backend re-derives where an element is.
//
// Every layout gives an element offset: Offset(row, col) is the position of the element in the buffer
// that holds the tile, relative to the tile's base. For memory layouts (Strided, Panel, Swizzle) that is
// an address in elements; for a Fragment — a tile spread over the threads of a warp, warpgroup or
// simdgroup, or held in one thread's registers — it is lane·Regs + reg, the register file of the scope
// seen as one buffer, so one evaluator serves both.
type Layout interface {
	// Offset returns the element offset of (row, col), folding constants.
	Offset(row, col IExpr) IExpr
	String() string
	layout()
}

// Strided is a row- or column-major tile with leading dimension: (row, col) is at
// row·RowStride + col·ColStride. Row major with leading dimension ld is {ld, 1}; column major {1, ld}.
type Strided struct {
	RowStride, ColStride IExpr
}

// RowMajor is the layout of a row-major tile whose rows are ld elements apart.
func RowMajor(ld IExpr) *Strided { return &Strided{RowStride: ld, ColStride: IConst{1}} }

// ColMajor is the layout of a column-major tile whose columns are ld elements apart.
func ColMajor(ld IExpr) *Strided { return &Strided{RowStride: IConst{1}, ColStride: ld} }

func (s *Strided) Offset(row, col IExpr) IExpr {
	return IAdd(IMul(row, s.RowStride), IMul(col, s.ColStride))
}

func (s *Strided) String() string {
	zero := func(e IExpr) bool { c, ok := e.(IConst); return ok && c.V == 0 }
	if zero(s.RowStride) || zero(s.ColStride) {
		// a vector (a GEMV's x, a dot product's operands) or a broadcast: neither major order
		return "strided(" + s.RowStride.String() + ", " + s.ColStride.String() + ")"
	}
	if c, ok := s.ColStride.(IConst); ok && c.V == 1 {
		return "rowmajor(ld=" + s.RowStride.String() + ")"
	}
	if c, ok := s.RowStride.(IConst); ok && c.V == 1 {
		return "colmajor(ld=" + s.ColStride.String() + ")"
	}
	return "strided(" + s.RowStride.String() + ", " + s.ColStride.String() + ")"
}

// Panel is a BLIS packed operand: the tile is cut into panels Width wide across the panel dimension
// (rows for an A operand, columns for B), each panel stored k-major — Depth steps of Width consecutive
// elements. With ByCol false (A: rows i, reduction p as the column):
//
//	(i, p) ↦ (i / Width)·Width·Depth + p·Width + i % Width
//
// and with ByCol true (B: reduction p as the row, columns j): (p, j) ↦ (j / Width)·Width·Depth +
// p·Width + j % Width. This is what Pack writes and Micro reads (docs/MICROKERNEL.md).
type Panel struct {
	Width, Depth IExpr // MR or NR; KC
	ByCol        bool
}

func (p *Panel) Offset(row, col IExpr) IExpr {
	x, k := row, col
	if p.ByCol {
		x, k = col, row
	}
	return IAdd(IAdd(IMul(IDiv(x, p.Width), IMul(p.Width, p.Depth)), IMul(k, p.Width)), IMod(x, p.Width))
}

func (p *Panel) String() string {
	what := "rows"
	if p.ByCol {
		what = "cols"
	}
	return fmt.Sprintf("panel(%s %s, depth %s)", what, p.Width, p.Depth)
}

// Swizzle permutes the offsets of another layout by an XOR of address bits, the CuTe Swizzle<B, M, S>
// functor (NVIDIA/cutlass include/cute/swizzle.hpp):
//
//	o ↦ o ^ ((o & (2^B − 1) << (M + S)) >> S)
//
// that is, the B bits of o starting at bit M+S are XORed into the B bits starting at bit M. It is a
// permutation of every aligned block of 2^(M+S+B) offsets, so a swizzled tile occupies exactly the
// space of the unswizzled one. With 16-bit elements and 128-byte rows (64 elements), Swizzle128B16 =
// Swizzle<3, 3, 3> over a row-major layout with ld 64 moves 16-byte chunk c of row r to chunk c ^ (r % 8):
// the PTX ISA's 128-byte swizzle mode (wgmma matrix descriptors, "Shared Memory Matrix Layout"; TMA
// CU_TENSOR_MAP_SWIZZLE_128B) and CUTLASS's SM80 default for f16/bf16 tiles, under which ldmatrix reads
// of one 16-byte column of 8 rows hit 8 different bank groups.
type Swizzle struct {
	Of         Layout
	B, M, S    int
	byteFormat string // optional name for printing ("128B")
}

// NewSwizzle swizzles the offsets of of by CuTe's Swizzle<b, m, s>.
func NewSwizzle(of Layout, b, m, s int) *Swizzle { return &Swizzle{Of: of, B: b, M: m, S: s} }

// Swizzle128B is the PTX ISA 128-byte swizzle of a row-major tile of elemBytes-byte elements (2 or 4)
// with ld elements per row (128/elemBytes for a dense 128-byte row): 16-byte chunks XORed with the row
// modulo 8. Offsets stay in elements, so M is log2 of the elements in 16 bytes.
func Swizzle128B(ld IExpr, elemBytes int) *Swizzle {
	m := 0
	for e := 16 / elemBytes; e > 1; e >>= 1 {
		m++
	}
	return &Swizzle{Of: RowMajor(ld), B: 3, M: m, S: 3, byteFormat: "128B"}
}

func (s *Swizzle) Offset(row, col IExpr) IExpr {
	o := s.Of.Offset(row, col)
	mask := ((1 << s.B) - 1) << (s.M + s.S)
	return IXor(o, IShr(IAnd(o, IConst{mask}), IConst{s.S}))
}

func (s *Swizzle) String() string {
	name := "swizzle<" + strconv.Itoa(s.B) + "," + strconv.Itoa(s.M) + "," + strconv.Itoa(s.S) + ">"
	if s.byteFormat != "" {
		name = "swizzle" + s.byteFormat + "<" + strconv.Itoa(s.B) + "," + strconv.Itoa(s.M) + "," + strconv.Itoa(s.S) + ">"
	}
	return name + "(" + s.Of.String() + ")"
}

// Fragment is a Rows×Cols tile held in the registers of the threads of Scope: thread (lane) l holds
// Regs elements, register r being element (Row, Col) evaluated at Lane = l, Reg = r; the inverse maps
// (row, col) back to its owner (OwnerLane, OwnerReg evaluated at RowV = row, ColV = col). Both directions
// are data (index expressions in the placeholder variables), and tests check that they are inverse
// bijections between [0, Threads)×[0, Regs) and [0, Rows)×[0, Cols).
//
// Opaque fragments (Metal's simdgroup matrices, whose element-to-lane mapping the Metal specification
// leaves to the implementation) carry a stand-in map so that the interpreter can run them; no backend
// may compile an access that depends on it — their elements move only through whole-tile loads and
// stores (simdgroup_load/simdgroup_store).
type Fragment struct {
	Name       string
	Scope      Scope
	Rows, Cols int
	Regs       int // elements per thread
	Opaque     bool
	Lane, Reg  *Var // placeholders of Row and Col
	Row, Col   IExpr
	RowV, ColV *Var // placeholders of OwnerLane and OwnerReg
	OwnerLane  IExpr
	OwnerReg   IExpr
}

// Threads is the number of threads that hold the fragment.
func (f *Fragment) Threads() int { return f.Scope.Threads() }

// Coord returns the (row, col) of register reg of thread lane.
func (f *Fragment) Coord(lane, reg IExpr) (IExpr, IExpr) {
	m := map[*Var]IExpr{f.Lane: lane, f.Reg: reg}
	return SubstIExpr(f.Row, m), SubstIExpr(f.Col, m)
}

// Owner returns the thread and register that hold (row, col).
func (f *Fragment) Owner(row, col IExpr) (IExpr, IExpr) {
	m := map[*Var]IExpr{f.RowV: row, f.ColV: col}
	return SubstIExpr(f.OwnerLane, m), SubstIExpr(f.OwnerReg, m)
}

func (f *Fragment) Offset(row, col IExpr) IExpr {
	l, r := f.Owner(row, col)
	return IAdd(IMul(l, IConst{f.Regs}), r)
}

func (f *Fragment) String() string {
	s := fmt.Sprintf("fragment %s %s %dx%d, %d per thread", f.Name, f.Scope, f.Rows, f.Cols, f.Regs)
	if f.Opaque {
		return s + ", opaque"
	}
	return fmt.Sprintf("%s: (%s, %s) -> (%s, %s)", s, f.Lane.Name, f.Reg.Name, f.Row, f.Col)
}

func (*Strided) layout()  {}
func (*Panel) layout()    {}
func (*Swizzle) layout()  {}
func (*Fragment) layout() {}

// fragment builds a Fragment whose maps are written in terms of its placeholders.
func fragment(name string, scope Scope, rows, cols, regs int, opaque bool, fwd, inv func(a, b IExpr) (IExpr, IExpr)) *Fragment {
	f := &Fragment{Name: name, Scope: scope, Rows: rows, Cols: cols, Regs: regs, Opaque: opaque,
		Lane: &Var{Name: "lane"}, Reg: &Var{Name: "reg"}, RowV: &Var{Name: "row"}, ColV: &Var{Name: "col"}}
	f.Row, f.Col = fwd(IVar{f.Lane}, IVar{f.Reg})
	f.OwnerLane, f.OwnerReg = inv(IVar{f.RowV}, IVar{f.ColV})
	return f
}

func c(v int) IExpr { return IConst{v} }

// The sm_80 mma.sync.m16n8k16 fragments with f16/bf16 inputs and an f32 accumulator, as the PTX ISA
// section "Matrix Fragments for mma.m16n8k16 with floating point type" gives them, with
// groupID = lane >> 2 and threadID_in_group = lane % 4:
//
//	A (16×16, 8 per thread): row = groupID + 8 for a2, a3, a6, a7 (else groupID);
//	                         col = 2·threadID_in_group + (i & 1), + 8 for i ≥ 4
//	B (16×8, 4 per thread):  row = 2·threadID_in_group + (i & 1), + 8 for i ≥ 2; col = groupID
//	C/D (16×8, 4 per thread): row = groupID, + 8 for i ≥ 2; col = 2·threadID_in_group + (i & 1)
//
// (i is the register index: a0..a7, b0..b3, c0..c3.)

// FragSM80A is the A fragment of mma.m16n8k16 (row operand, 16×16).
func FragSM80A() *Fragment {
	return fragment("sm80.m16n8k16.a", ScopeWarp, 16, 16, 8, false,
		func(l, i IExpr) (IExpr, IExpr) {
			row := IAdd(IShr(l, c(2)), IMul(IAnd(IShr(i, c(1)), c(1)), c(8)))
			col := IAdd(IAdd(IMul(IAnd(l, c(3)), c(2)), IAnd(i, c(1))), IMul(IShr(i, c(2)), c(8)))
			return row, col
		},
		func(r, k IExpr) (IExpr, IExpr) {
			lane := IAdd(IMul(IAnd(r, c(7)), c(4)), IShr(IAnd(k, c(7)), c(1)))
			reg := IAdd(IAdd(IAnd(k, c(1)), IMul(IShr(r, c(3)), c(2))), IMul(IShr(k, c(3)), c(4)))
			return lane, reg
		})
}

// FragSM80B is the B fragment of mma.m16n8k16 (column operand, 16×8: rows are k).
func FragSM80B() *Fragment {
	return fragment("sm80.m16n8k16.b", ScopeWarp, 16, 8, 4, false,
		func(l, i IExpr) (IExpr, IExpr) {
			row := IAdd(IAdd(IMul(IAnd(l, c(3)), c(2)), IAnd(i, c(1))), IMul(IShr(i, c(1)), c(8)))
			return row, IShr(l, c(2))
		},
		func(k, n IExpr) (IExpr, IExpr) {
			lane := IAdd(IMul(n, c(4)), IShr(IAnd(k, c(7)), c(1)))
			reg := IAdd(IAnd(k, c(1)), IMul(IShr(k, c(3)), c(2)))
			return lane, reg
		})
}

// FragSM80C is the C/D (accumulator) fragment of mma.m16n8k16 with f32 accumulation (16×8).
func FragSM80C() *Fragment {
	return fragment("sm80.m16n8k16.c", ScopeWarp, 16, 8, 4, false,
		func(l, i IExpr) (IExpr, IExpr) {
			row := IAdd(IShr(l, c(2)), IMul(IShr(i, c(1)), c(8)))
			col := IAdd(IMul(IAnd(l, c(3)), c(2)), IAnd(i, c(1)))
			return row, col
		},
		func(r, n IExpr) (IExpr, IExpr) {
			lane := IAdd(IMul(IAnd(r, c(7)), c(4)), IShr(n, c(1)))
			reg := IAdd(IAnd(n, c(1)), IMul(IShr(r, c(3)), c(2)))
			return lane, reg
		})
}

// FragSM80TF32A and FragSM80TF32B are the operand fragments of mma.m16n8k8 with .tf32 inputs (PTX ISA
// "Matrix Fragments for mma.m16n8k8", .tf32): A (16×8, a0..a3) at row = groupID + 8·(i & 1),
// col = threadID_in_group + 4·(i >> 1); B (8×8, b0, b1) at row = threadID_in_group + 4·i,
// col = groupID. The accumulator is FragSM80C.
func FragSM80TF32A() *Fragment {
	return fragment("sm80.m16n8k8.tf32.a", ScopeWarp, 16, 8, 4, false,
		func(l, i IExpr) (IExpr, IExpr) {
			return IAdd(IShr(l, c(2)), IMul(IAnd(i, c(1)), c(8))), IAdd(IAnd(l, c(3)), IMul(IShr(i, c(1)), c(4)))
		},
		func(r, k IExpr) (IExpr, IExpr) {
			return IAdd(IMul(IAnd(r, c(7)), c(4)), IAnd(k, c(3))), IAdd(IShr(r, c(3)), IMul(IShr(k, c(2)), c(2)))
		})
}

// FragSM80TF32B is the B fragment of mma.m16n8k8 with .tf32 inputs (8×8); see FragSM80TF32A.
func FragSM80TF32B() *Fragment {
	return fragment("sm80.m16n8k8.tf32.b", ScopeWarp, 8, 8, 2, false,
		func(l, i IExpr) (IExpr, IExpr) {
			return IAdd(IAnd(l, c(3)), IMul(i, c(4))), IShr(l, c(2))
		},
		func(k, n IExpr) (IExpr, IExpr) {
			return IAdd(IMul(n, c(4)), IAnd(k, c(3))), IShr(k, c(2))
		})
}

// FragWGMMAAcc is the f32 accumulator D of sm_90a wgmma.mma_async.m64nNk16 (64×n, n a multiple of 8
// from 8 to 256) over the 128 threads of a warpgroup (PTX ISA "Matrix Fragments for
// wgmma.mma_async.m64nNk16", register fragment D): warp w of the warpgroup holds rows 16w..16w+15, and
// within a warp each 8-column slab is laid out as the m16n8 C fragment; thread t holds n/2 values, d_i at
//
//	row = 16·(t / 32) + groupID + 8·((i >> 1) & 1),  col = 8·(i >> 2) + 2·threadID_in_group + (i & 1)
//
// with groupID = (t % 32) >> 2 and threadID_in_group = t % 4. It returns nil for an invalid n.
func FragWGMMAAcc(n int) *Fragment {
	if n < 8 || n > 256 || n%8 != 0 {
		return nil
	}
	return fragment("sm90a.m64n"+strconv.Itoa(n)+"k16.d", ScopeWarpgroup, 64, n, n/2, false,
		func(t, i IExpr) (IExpr, IExpr) {
			row := IAdd(IAdd(IMul(IShr(t, c(5)), c(16)), IShr(IAnd(t, c(31)), c(2))), IMul(IAnd(IShr(i, c(1)), c(1)), c(8)))
			col := IAdd(IAdd(IMul(IShr(i, c(2)), c(8)), IMul(IAnd(t, c(3)), c(2))), IAnd(i, c(1)))
			return row, col
		},
		func(r, k IExpr) (IExpr, IExpr) {
			lane := IAdd(IAdd(IMul(IShr(r, c(4)), c(32)), IMul(IAnd(r, c(7)), c(4))), IShr(IAnd(k, c(7)), c(1)))
			reg := IAdd(IAdd(IAnd(k, c(1)), IMul(IAnd(IShr(r, c(3)), c(1)), c(2))), IMul(IShr(k, c(3)), c(4)))
			return lane, reg
		})
}

// FragSimdgroup8x8 is a Metal simdgroup_matrix 8×8 (simdgroup_float8x8, _half8x8, _bfloat8x8): 64
// elements over the 32 threads of a simdgroup, 2 each. The mapping is implementation-defined (Metal
// Shading Language specification, "SIMD-group Matrix Functions"), so the fragment is opaque; the
// stand-in map the interpreter uses puts (row, col) in thread 4·row + col/2, register col % 2.
func FragSimdgroup8x8() *Fragment {
	return fragment("metal.simdgroup8x8", ScopeSimdgroup, 8, 8, 2, true,
		func(l, i IExpr) (IExpr, IExpr) {
			return IShr(l, c(2)), IAdd(IMul(IAnd(l, c(3)), c(2)), i)
		},
		func(r, k IExpr) (IExpr, IExpr) {
			return IAdd(IMul(r, c(4)), IShr(k, c(1))), IAnd(k, c(1))
		})
}

// RegisterTile is a rows×cols tile in the registers of one thread (a CPU microkernel's accumulators,
// a GPU thread's FFMA tile), register r = row·cols + col.
func RegisterTile(rows, cols int) *Fragment {
	return fragment(fmt.Sprintf("regs%dx%d", rows, cols), ScopeThread, rows, cols, rows*cols, false,
		func(_, i IExpr) (IExpr, IExpr) { return IDiv(i, c(cols)), IMod(i, c(cols)) },
		func(r, k IExpr) (IExpr, IExpr) { return c(0), IAdd(IMul(r, c(cols)), k) })
}

// IEnv binds what an index expression may read outside the interpreter: variables, dims and plan
// symbols.
type IEnv struct {
	Vars map[*Var]int
	Dims map[*Dim]int
	Plan map[string]int
}

// EvalIndex evaluates an index expression; an unbound name, a division by a non-positive number or a
// shift out of range is an error.
func EvalIndex(e IExpr, env IEnv) (int, error) {
	switch e := e.(type) {
	case IConst:
		return e.V, nil
	case IVar:
		if v, ok := env.Vars[e.V]; ok {
			return v, nil
		}
		return 0, fmt.Errorf("variable %s used outside its loop", e.V.Name)
	case IDim:
		if v, ok := env.Dims[e.D]; ok {
			return v, nil
		}
		return 0, fmt.Errorf("dim %s has no value", e.D.Name)
	case ISym:
		if v, ok := env.Plan[e.Name]; ok {
			return v, nil
		}
		return 0, fmt.Errorf("plan symbol %s has no value", e.Name)
	case IBin:
		x, err := EvalIndex(e.X, env)
		if err != nil {
			return 0, err
		}
		y, err := EvalIndex(e.Y, env)
		if err != nil {
			return 0, err
		}
		v, msg := IBinOp(e.Op, x, y)
		if msg != "" {
			return 0, fmt.Errorf("%s", msg)
		}
		return v, nil
	}
	return 0, fmt.Errorf("bad index expression %v", e)
}

// LayoutOffset evaluates l's offset of (row, col) under env.
func LayoutOffset(l Layout, row, col int, env IEnv) (int, error) {
	return EvalIndex(l.Offset(IConst{row}, IConst{col}), env)
}

// FragmentCoord evaluates the (row, col) that register reg of thread lane holds.
func FragmentCoord(f *Fragment, lane, reg int) (row, col int, err error) {
	r, k := f.Coord(IConst{lane}, IConst{reg})
	if row, err = EvalIndex(r, IEnv{}); err != nil {
		return 0, 0, err
	}
	col, err = EvalIndex(k, IEnv{})
	return row, col, err
}
