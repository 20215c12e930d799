package lanesel

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

// fake is an ISA whose registers are numbers and whose instructions are lines of text.
type fake struct {
	d      *Driver[int, int]
	log    []string
	masked bool
}

func (f *fake) emit(format string, a ...any) { f.log = append(f.log, fmt.Sprintf(format, a...)) }

func (f *fake) Load(k int) (int, bool, bool) {
	r := f.d.Alloc()
	f.emit("load r%d <- a%d", r, k)
	return r, true, true
}
func (f *fake) Operand(e ir.Expr) (int, bool) { return f.d.Eval(e) }
func (f *fake) Reg(o int) (int, bool)         { return o, true }
func (f *fake) Src(r int) int                 { return r }
func (f *fake) Copy(src, dst int)             { f.emit("copy r%d <- r%d", dst, src) }
func (f *fake) BinOp(op ir.Op, y, x, d int)   { f.emit("r%d = r%d %s r%d", d, x, op, y) }
func (f *fake) FMA(acc, a, b int)             { f.emit("r%d += r%d * r%d", acc, a, b) }
func (f *fake) Unary(op ir.Op, a, d int) {
	if op == ir.Log {
		f.d.Fail(ErrUnsupported)
		return
	}
	f.emit("r%d = %s r%d", d, op, a)
}
func (f *fake) Accumulate(op ir.Op, y ir.Expr, acc int) bool { return false }
func (f *fake) Store(k int, r int)                           { f.emit("store a%d <- r%d", k, r) }
func (f *fake) StoreF16(k int, r int, owned bool) {
	t := f.CanonNaN(r)
	f.emit("store16 a%d <- r%d", k, t)
	f.d.Release(t)
	if owned {
		f.d.Release(r)
	}
}
func (f *fake) CanonNaN(r int) int {
	t := f.d.Alloc()
	f.emit("canon r%d <- r%d", t, r)
	return t
}
func (f *fake) RoundF16(t int)           { f.emit("round16 r%d", t) }
func (f *fake) HalfLanes() bool          { return false }
func (f *fake) Masked() bool             { return f.masked }
func (f *fake) MergeMasked(src, dst int) { f.emit("merge r%d <- r%d", dst, src) }
func (f *fake) BeginGroup(j int)         { f.emit("group %d", j) }
func (f *fake) EndGroup()                { f.emit("end") }

func (f *fake) ClampExp(x, t int)           { f.emit("clamp r%d", x) }
func (f *fake) MulConst(d, x int, c int)    { f.emit("r%d = r%d * c%d", d, x, c) }
func (f *fake) RoundEven(x int)             { f.emit("round r%d", x) }
func (f *fake) SubMulConst(x, n int, c int) { f.emit("r%d -= r%d * c%d", x, n, c) }
func (f *fake) SetConst(d int, c int)       { f.emit("r%d = c%d", d, c) }
func (f *fake) MulAddConst(t, u, x, c int) (int, int) {
	f.emit("r%d = r%d * r%d + c%d", t, t, x, c)
	return t, u
}
func (f *fake) Mul(t, x int)         { f.emit("r%d *= r%d", t, x) }
func (f *fake) MulAddX(t, x int) int { f.emit("r%d = r%d * r%d + r%d", t, t, x, x); return t }
func (f *fake) AddConst(d int, c int) {
	f.emit("r%d += c%d", d, c)
}
func (f *fake) Scale2N(d, t, n, u int) { f.emit("r%d = r%d * 2^r%d", d, t, n) }

// laneLoop is the vector-loop slot of a one-loop function over X, Y (f32 inputs) and an f16 output H:
// the lane body is body(x, y, h), with a + reduction into acc when red.
func laneLoop(t *testing.T, red bool, body func(x, y ir.Expr, st func(ir.Expr) ir.Node) []ir.Node) *codegen.VLoop {
	n := &ir.Dim{Name: "N"}
	x := &ir.Tensor{Name: "X", Type: ir.F32, Shape: []*ir.Dim{n}, Kind: ir.In}
	y := &ir.Tensor{Name: "Y", Type: ir.F32, Shape: []*ir.Dim{n}, Kind: ir.In}
	h := &ir.Tensor{Name: "H", Type: ir.F16, Shape: []*ir.Dim{n}, Kind: ir.Out}
	i := &ir.Var{Name: "i"}
	idx := []ir.IExpr{ir.IVar{V: i}}
	st := func(e ir.Expr) ir.Node { return &ir.Store{T: h, Idx: idx, Value: e} }
	b := body(&ir.Load{T: x, Idx: idx}, &ir.Load{T: y, Idx: idx}, st)
	l := &ir.Loop{Var: i, Lo: ir.IConst{V: 0}, Hi: ir.IDim{D: n}, Step: ir.IConst{V: 4}, Kind: ir.Vector, Width: 4}
	var pre []ir.Node
	if red {
		acc := &ir.LocalVar{Name: "acc", T: ir.F32}
		r := &ir.LaneReduce{Acc: acc, Op: ir.Add}
		pre = append(pre, &ir.Decl{L: acc, Init: &ir.Const{T: ir.F32}})
		for k := 0; k < 4; k++ {
			p := &ir.LocalVar{Name: fmt.Sprint("p", k), T: ir.F32}
			r.Parts = append(r.Parts, p)
			pre = append(pre, &ir.Decl{L: p, Init: &ir.Const{T: ir.F32}})
		}
		b = append(b, &ir.Assign{L: acc, Value: &ir.Binary{Op: ir.Add, X: &ir.Local{L: acc},
			Y: &ir.Binary{Op: ir.Mul, X: &ir.Load{T: x, Idx: idx}, Y: &ir.Load{T: y, Idx: idx}, T: ir.F32}, T: ir.F32}})
		l.Reduce = r
	}
	l.Body = b
	k := &ir.Kernel{Name: "k", Params: []*ir.Tensor{x, y, h}, Dims: []*ir.Dim{n}}
	f := &ir.Func{Kernel: k, Body: append(pre, l), Plan: map[string]int{}}
	if err := ir.VerifyFunc(f); err != nil {
		t.Fatal(err)
	}
	vs := codegen.VLoops(codegen.Kernel{K: k, F: f})
	if len(vs) != 1 {
		t.Fatalf("%d vector-loop slots, want 1", len(vs))
	}
	return vs[0]
}

func newFake(v *codegen.VLoop, accs int) (*fake, int) {
	f := &fake{}
	f.d = New[int, int](f, v, []int{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, -1)
	for range accs {
		f.d.Accs = append(f.d.Accs, f.d.Alloc())
	}
	return f, len(f.d.Free)
}

// TestDriverWalk runs the driver over a lane body with a local, an f16 store of a cast, exp and a
// reduction: a*b+c becomes one FMA, exp follows the schedule, every register a group takes is given
// back, and the accumulators fold in ir.LaneTree order.
func TestDriverWalk(t *testing.T) {
	v := laneLoop(t, true, func(x, y ir.Expr, st func(ir.Expr) ir.Node) []ir.Node {
		s := &ir.LocalVar{Name: "s", T: ir.F32}
		return []ir.Node{
			&ir.Decl{L: s, Init: &ir.Binary{Op: ir.Add, X: &ir.Binary{Op: ir.Mul, X: x, Y: y, T: ir.F32}, Y: &ir.Unary{Op: ir.Exp, X: x, T: ir.F32}, T: ir.F32}},
			st(&ir.Cast{T: ir.F16, X: &ir.Unary{Op: ir.Neg, X: &ir.Local{L: s}, T: ir.F32}}),
		}
	})
	f, free := newFake(v, 4)
	for j := range 4 {
		f.d.Group(j)
		if len(f.d.Free) != free {
			t.Fatalf("group %d leaves %d free registers, want %d\n%s", j, len(f.d.Free), free, strings.Join(f.log, "\n"))
		}
	}
	if f.d.Err != nil {
		t.Fatal(f.d.Err)
	}
	got := strings.Join(f.log, "\n")
	for _, want := range []string{
		"clamp", "round r", "-= r", "c6\n", "c7\n", "c8\n", "c9\n", "c10\n", "* 2^r", // the exp schedule, in order
	} {
		i := strings.Index(got, want)
		if i < 0 {
			t.Fatalf("no %q after the previous step in\n%s", want, strings.Join(f.log, "\n"))
		}
		got = got[i:]
	}
	fmas := 0
	for _, l := range f.log {
		if strings.Contains(l, "+= r") && strings.Contains(l, " * r") {
			fmas++
		}
	}
	if fmas != 8 { // the local's a*b+exp and the reduction's a*b, per group
		t.Errorf("%d FMAs, want 8\n%s", fmas, strings.Join(f.log, "\n"))
	}
	if !slices.ContainsFunc(f.log, func(l string) bool { return strings.HasPrefix(l, "store16") }) {
		t.Errorf("no f16 store\n%s", strings.Join(f.log, "\n"))
	}
	f.log = nil
	accs := slices.Clone(f.d.Accs)
	if r := f.d.Fold(ir.Add); r != accs[0] {
		t.Errorf("fold into r%d, want r%d", r, accs[0])
	}
	want := []string{
		fmt.Sprintf("r%d = r%d + r%d", accs[0], accs[0], accs[1]),
		fmt.Sprintf("r%d = r%d + r%d", accs[2], accs[2], accs[3]),
		fmt.Sprintf("r%d = r%d + r%d", accs[0], accs[0], accs[2]),
	}
	if !slices.Equal(f.log, want) {
		t.Errorf("fold emitted %q, want %q", f.log, want)
	}
}

// TestDriverMasked: in the masked group a reduction accumulates into a copy merged back under the mask.
func TestDriverMasked(t *testing.T) {
	v := laneLoop(t, true, func(x, y ir.Expr, st func(ir.Expr) ir.Node) []ir.Node { return nil })
	f, _ := newFake(v, 1)
	f.masked = true
	f.d.Group(0)
	acc := f.d.Accs[0]
	got := strings.Join(f.log, "\n")
	var tmp int
	if len(f.log) < 2 {
		t.Fatalf("masked accumulate:\n%s", got)
	}
	if _, err := fmt.Sscanf(f.log[1], fmt.Sprintf("copy r%%d <- r%d", acc), &tmp); err != nil || tmp == acc ||
		!strings.Contains(got, fmt.Sprintf("r%d += ", tmp)) || f.log[len(f.log)-2] != fmt.Sprintf("merge r%d <- r%d", acc, tmp) {
		t.Errorf("masked accumulate (accumulator r%d):\n%s", acc, got)
	}
}

// TestDriverUnsupported: an operation the ISA lacks (log, here), or one the driver has no vector form
// for (a compare), fails the loop.
func TestDriverUnsupported(t *testing.T) {
	for _, op := range []ir.Op{ir.Log} {
		v := laneLoop(t, false, func(x, y ir.Expr, st func(ir.Expr) ir.Node) []ir.Node {
			return []ir.Node{st(&ir.Cast{T: ir.F16, X: &ir.Unary{Op: op, X: x, T: ir.F32}})}
		})
		f, _ := newFake(v, 0)
		f.d.Group(0)
		if f.d.Err == nil {
			t.Errorf("%s: no error", op)
		}
	}
	v := laneLoop(t, false, func(x, y ir.Expr, st func(ir.Expr) ir.Node) []ir.Node {
		return []ir.Node{st(&ir.Binary{Op: ir.Lt, X: x, Y: y, T: ir.Bool})}
	})
	f, _ := newFake(v, 0)
	f.d.Group(0)
	if f.d.Err == nil {
		t.Errorf("compare: no error")
	}
}
