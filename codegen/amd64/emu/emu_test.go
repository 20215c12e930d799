package emu

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

func mustParse(t *testing.T, text string) *Program {
	t.Helper()
	p, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const sumText = `#include "textflag.h"

// func sum4(p *float32, n int) float32
TEXT ·sum4(SB), NOSPLIT, $16-20
	MOVQ   p+0(FP), AX
	MOVQ   n+8(FP), CX
	VXORPS X0, X0, X0
loop:
	VADDSS (AX), X0, X0
	ADDQ   $4, AX
	DECQ   CX
	JNZ    loop
	MOVQ   (SP), DX  // the local frame starts zeroed
	MOVQ   DX, 8(SP)
	VMOVSS X0, ret+16(FP)
	RET
`

func TestCallResultAndFrame(t *testing.T) {
	p := mustParse(t, sumText)
	m := p.Machine()
	fn, err := Func[func(*float32, int) float32](m, "sum4")
	if err != nil {
		t.Fatal(err)
	}
	s := []float32{1, 2, 3.5, 4}
	m.SetRegions(Slice("s", s))
	if got := fn(&s[0], 4); got != 10.5 {
		t.Errorf("sum4 = %v, want 10.5", got)
	}
	// the signature must match the TEXT argument size
	if _, err := Func[func(*float32) float32](m, "sum4"); err == nil || !strings.Contains(err.Error(), "TEXT says 20") {
		t.Errorf("mismatched signature: err = %v", err)
	}
}

func TestOutOfBounds(t *testing.T) {
	p := mustParse(t, sumText)
	m := p.Machine()
	var got error
	m.OnError(func(err error) { got = err })
	fn, err := Func[func(*float32, int) float32](m, "sum4")
	if err != nil {
		t.Fatal(err)
	}
	s := []float32{1, 2, 3, 4, 5}
	m.SetRegions(Slice("s", s[:4]))
	fn(&s[0], 5)
	var e *Error
	if !errors.As(got, &e) || e.Line != 9 || !strings.Contains(e.Msg, "4-byte read") || !strings.Contains(e.Msg, "nearest region s") || !strings.Contains(e.Msg, "offset 16") {
		t.Errorf("reading one past the slice: err = %v", got)
	}
}

func TestRunaway(t *testing.T) {
	p := mustParse(t, "TEXT ·spin(SB), 0, $0-0\nloop:\n\tJMP loop\n")
	m := p.Machine()
	m.MaxSteps = 1000
	if err := m.Call("spin"); err == nil || !strings.Contains(err.Error(), "more than 1000 instructions") {
		t.Errorf("runaway loop: err = %v", err)
	}
}

func TestUnsupported(t *testing.T) {
	p := mustParse(t, "TEXT ·f(SB), 0, $0-0\n\tVADDPS X0, X1, X2\n\tVFOOPS Y1, Y2, Y3\n\tRET\nTEXT ·g(SB), 0, $0-0\n\tVADDPS (AX), Y1, K1, Z2\n\tRET\n")
	for name, want := range map[string]string{"f": `line 3: "VFOOPS Y1, Y2, Y3": VFOOPS with operands (Y, Y, Y) is not modeled`, "g": `line 6`} {
		err := p.Check()[name]
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Check = %v, want it to mention %q", name, err, want)
		}
		if err := p.Machine().Call(name); err == nil {
			t.Errorf("%s: Call ran a function with an unmodeled instruction", name)
		}
	}
}

func TestUndefinedFlags(t *testing.T) {
	p := mustParse(t, "TEXT ·f(SB), 0, $0-0\n\tMOVQ $3, AX\n\tIMULQ AX, AX\n\tJZ out\nout:\n\tRET\n")
	if err := p.Machine().Call("f"); err == nil || !strings.Contains(err.Error(), "undefined") {
		t.Errorf("JZ after IMULQ: err = %v", err)
	}
}

// Masked loads and stores touch only their active lanes; prefetches touch nothing.
func TestMaskedAccess(t *testing.T) {
	p := mustParse(t, `TEXT ·f(SB), 0, $0-16
	MOVQ p+0(FP), AX
	MOVQ k+8(FP), BX
	KMOVW BX, K1
	PREFETCHT0 4096(AX)
	VMOVUPS.Z (AX), K1, Z0
	VADDPS Z0, Z0, Z0
	VMOVUPS Z0, K1, (AX)
	RET
`)
	m := p.Machine()
	s := []float32{1, 2, 3}
	if err := m.Call("f", &s[0], uint64(7)); err == nil {
		t.Fatal("pointer argument without a region was accepted")
	}
	m.SetRegions(Slice("s", s))
	if err := m.Call("f", &s[0], uint64(7)); err != nil {
		t.Fatal(err)
	}
	if s[0] != 2 || s[1] != 4 || s[2] != 6 {
		t.Errorf("s = %v", s)
	}
	err := m.Call("f", &s[0], uint64(15))
	if err == nil || !strings.Contains(err.Error(), "line 6") || !strings.Contains(err.Error(), "offset 12") {
		t.Errorf("lane 3 active: err = %v", err)
	}
}

// Legacy SSE scalar moves keep bits 128..511; VEX ones clear them; 32-bit writes zero-extend.
func TestUpperBits(t *testing.T) {
	p := mustParse(t, `TEXT ·f(SB), 0, $0-8
	MOVQ p+0(FP), AX
	MOVQ $-1, BX
	MOVL $5, BX
	MOVQ BX, 8(AX)
	VBROADCASTSS (AX), Z1
	VBROADCASTSS (AX), Z2
	MOVSS 4(AX), X1
	VMOVSS 4(AX), X2
	VMOVUPS Z1, 64(AX)
	VMOVUPS Z2, 128(AX)
	RET
`)
	m := p.Machine()
	s := make([]float32, 48)
	s[0], s[1] = 7, 9
	m.SetRegions(Slice("s", s))
	if err := m.Call("f", &s[0]); err != nil {
		t.Fatal(err)
	}
	if b := math.Float32bits(s[2]); b != 5 || s[3] != 0 {
		t.Errorf("MOVL into a 64-bit register: %#x %v", b, s[3])
	}
	want1 := []float32{9, 0, 0, 0, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7}
	want2 := []float32{9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	for i := range want1 {
		if s[16+i] != want1[i] || s[32+i] != want2[i] {
			t.Fatalf("MOVSS %v\nVMOVSS %v", s[16:32], s[32:48])
		}
	}
}

// TestExactFMA32 checks the single rounding of the f32 FMA against math/big,
// on random operands and on products that land exactly on a tie of the sum.
func TestExactFMA32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	ref := func(a, b, c float32) float32 {
		x := new(big.Float).SetPrec(400).SetFloat64(float64(a))
		x.Mul(x, new(big.Float).SetPrec(400).SetFloat64(float64(b)))
		x.Add(x, new(big.Float).SetPrec(400).SetFloat64(float64(c)))
		f, _ := x.Float32()
		if x.Sign() == 0 { // exact zero: the sign of a*b + c under round to nearest
			return a*b + c
		}
		return f
	}
	rnd := func() float32 {
		switch rng.IntN(4) {
		case 0:
			return math.Float32frombits(rng.Uint32() & 0x807FFFFF) // denormal
		case 1:
			return float32(rng.IntN(1<<12)) * 0x1p-6
		}
		return float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(60)-30)))
	}
	for i := 0; i < 200000; i++ {
		a, b, c := rnd(), rnd(), rnd()
		if i%3 == 0 {
			// c + a*b exactly halfway between two float32: a*b = half an ulp of c plus a tiny tail
			c = float32(1 + rng.IntN(1<<20))
			a, b = 0.5, 1+0x1p-20*float32(rng.IntN(3)-1)
		}
		got := math.Float32frombits(exactFMA32(a, b, c))
		if want := ref(a, b, c); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fma(%g, %g, %g) = %g, want %g", a, b, c, got, want)
		}
	}
}

func TestReadOnlyData(t *testing.T) {
	p := mustParse(t, `DATA c<>+0(SB)/4, $0x3f800000
GLOBL c<>(SB), RODATA|NOPTR, $4
TEXT ·f(SB), 0, $0-0
	MOVL c<>+0(SB), AX
	MOVL AX, c<>+0(SB)
	RET
`)
	err := p.Machine().Call("f")
	if err == nil || !strings.Contains(err.Error(), "read-only") || !strings.Contains(err.Error(), "line 5") {
		t.Errorf("store to RODATA: err = %v", err)
	}
}

const callText = `#include "textflag.h"

// func twice(p *float32, n int)
TEXT ·twice(SB), NOSPLIT, $24-16
	MOVQ p+0(FP), AX
	MOVQ AX, (SP)
	MOVQ n+8(FP), AX
	MOVQ AX, 8(SP)
	MOVQ $7, 16(SP)
	CALL ·double(SB)
	MOVQ 16(SP), DX // the caller's frame survives the call
	CMPQ DX, $7
	JNE  bad
	CALL ·double(SB)
	RET
bad:
	MOVQ $0, (DX)
	RET

// func double(p *float32, n int)
TEXT ·double(SB), NOSPLIT, $8-16
	MOVQ   p+0(FP), AX
	MOVQ   n+8(FP), CX
	MOVQ   AX, (SP)
loop:
	VMOVSS (AX), X0
	VADDSS X0, X0, X0
	VMOVSS X0, (AX)
	ADDQ   $4, AX
	DECQ   CX
	JNZ    loop
	RET
`

// TestCall: a CALL runs the callee with the caller's outgoing area at 0(SP) as its argument frame and a
// frame of its own; the caller's frame and SP are back after it; the callee's accesses are checked
// against the caller's regions (one element too many is a stray access).
func TestCall(t *testing.T) {
	p := mustParse(t, callText)
	m := p.Machine()
	fn, err := Func[func(*float32, int)](m, "twice")
	if err != nil {
		t.Fatal(err)
	}
	s := []float32{1, 2, 3}
	m.SetRegions(Slice("s", s))
	fn(&s[0], 3)
	if s[0] != 4 || s[1] != 8 || s[2] != 12 {
		t.Errorf("twice = %v, want [4 8 12]", s)
	}
	var got error
	m.OnError(func(err error) { got = err })
	fn(&s[0], 4)
	var e *Error
	if !errors.As(got, &e) || e.Func != "double" {
		t.Errorf("a stray access in the callee: err = %v, want an *Error in double", got)
	}
}
