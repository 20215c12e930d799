package ptx

import (
	"strings"
	"testing"
)

// buildAxpy builds y[i] += a·x[i] by hand with the builder.
func buildAxpy() *Module {
	e := NewEntry("axpy")
	px, py, pa, pn := e.AddParam("x", U64), e.AddParam("y", U64), e.AddParam("a", F32), e.AddParam("n", S64)
	e.AddShared("tile", F32, 16, 16)
	e.Comment("line 3: y[i] = a*x[i] + y[i]")
	x := e.Ld(Param, U64, Addr{Base: px})
	y := e.Ld(Param, U64, Addr{Base: py})
	a := e.Ld(Param, F32, Addr{Base: pa})
	n := e.Ld(Param, S64, Addr{Base: pn})
	tid := e.Mov(U32, Sym("%tid.x"))
	i := e.Cvt(S64, U32, "", tid)
	end := e.NewLabel()
	p := e.Setp("ge", S64, i, n)
	e.Bra(end, &p, false)
	off := e.Bin("shl", B64, i, Imm(2))
	ax := e.Bin("add", S64, x, off)
	ay := e.Bin("add", S64, y, off)
	vx := e.Ld(Global, F32, Addr{Base: ax})
	vy := e.Ld(Global, F32, Addr{Base: ay, Off: 0})
	r := e.Reg(F32)
	e.Emit(&Instr{Op: "fma", Mods: []string{".rn"}, Types: []Type{F32}, Args: []Operand{r, a, vx, vy}, Comment: "a*x+y"})
	e.St(Global, F32, Addr{Base: ay}, r)
	e.St(Shared, F32, Addr{Base: Sym("tile"), Off: 4}, FImm{V: 1.5, T: F32})
	e.Op0("bar.sync", Imm(0))
	e.Place(end)
	return &Module{Version: "7.8", Target: "sm_80", Header: "test module", Entries: []*Entry{e}}
}

// The expected text was checked by hand against the PTX ISA syntax (and assembles: TestBuilderAssembles).
const axpyText = `// test module
.version 7.8
.target sm_80
.address_size 64

.visible .entry axpy(
	.param .u64 x,
	.param .u64 y,
	.param .f32 a,
	.param .s64 n
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<2>;
	.reg .b64 %rd<8>;
	.reg .f32 %f<5>;
	.shared .align 16 .f32 tile[16];
	// line 3: y[i] = a*x[i] + y[i]
	ld.param.u64 %rd1, [x];
	ld.param.u64 %rd2, [y];
	ld.param.f32 %f1, [a];
	ld.param.s64 %rd3, [n];
	mov.u32 %r1, %tid.x;
	cvt.s64.u32 %rd4, %r1;
	setp.ge.s64 %p1, %rd4, %rd3;
	@%p1 bra $L1;
	shl.b64 %rd5, %rd4, 2;
	add.s64 %rd6, %rd1, %rd5;
	add.s64 %rd7, %rd2, %rd5;
	ld.global.f32 %f2, [%rd6];
	ld.global.f32 %f3, [%rd7];
	fma.rn.f32 %f4, %f1, %f2, %f3;	// a*x+y
	st.global.f32 [%rd7], %f4;
	st.shared.f32 [tile+4], 0f3FC00000;
	bar.sync 0;
$L1:
	ret;
}
`

func TestBuilderText(t *testing.T) {
	got := buildAxpy().Print()
	if got != axpyText {
		t.Fatalf("builder output differs:\n%s", got)
	}
}

func TestBuilderAssembles(t *testing.T) {
	ptxas := ptxasPath(t)
	st := assemble(t, ptxas, "sm_80", buildAxpy().Print())
	if _, ok := st["axpy"]; !ok {
		t.Fatalf("ptxas -v reported no entry axpy: %v", st)
	}
}

func TestImmediates(t *testing.T) {
	for _, c := range []struct {
		op   Operand
		want string
	}{
		{FImm{V: 1, T: F32}, "0f3F800000"},
		{FImm{V: -2, T: F64}, "0dC000000000000000"},
		{Imm(-7), "-7"},
		{Addr{Base: Sym("p"), Off: -8}, "[p-8]"},
		{Vec{{T: F32, n: 1}, {T: F32, n: 2}}, "{%f1, %f2}"},
	} {
		if got := c.op.String(); got != c.want {
			t.Errorf("%#v prints %q, want %q", c.op, got, c.want)
		}
	}
}

func TestRegisterClasses(t *testing.T) {
	e := NewEntry("k")
	a, b, c := e.Reg(U32), e.Reg(S32), e.Reg(F16x2)
	if a.String() != "%r1" || b.String() != "%r2" || c.String() != "%r3" {
		t.Fatalf("32-bit registers share one class: %v %v %v", a, b, c)
	}
	if h := e.Reg(BF16); h.String() != "%h1" {
		t.Fatalf("bf16 register %v", h)
	}
	text := (&Module{Version: "7.8", Target: "sm_80", Entries: []*Entry{e}}).Print()
	for _, want := range []string{".reg .b32 %r<4>;", ".reg .b16 %h<2>;"} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
}
