package arm64

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// everyNative emits each native builder method at least once (with register/addressing variety).
func everyNative(b *Builder) {
	b.TEXT("everything", "NOSPLIT", 64, 0)
	b.Label("top")
	b.MOVD(Arg{"x", 0}, R1) // arg refs are only checked by vet, not by the assembler
	b.MOVD(Imm(12), R2)
	b.MOVD(ZR, R3)
	b.MOVD(R3, R4)
	b.MOVD(Indexed(R5, R6, 3), R7)
	b.MOVD(R7, Indexed(R5, R6, 3))
	b.MOVW(R7, Indexed(R5, R6, 2))
	b.MOVWU(Indexed(R5, R6, 2), R7)
	b.MOVD(Addr(R1, 16), R2)
	b.FMOVS(Addr(R1, 4), F(0))
	b.FMOVD(Addr(R1, 8), F(31))
	b.ADD(Imm(8), RSP, R12)
	b.ADD(R4, R9, R9)
	b.ADD(ZR, R19, R19)
	b.SUB(Imm(48), R9, R9)
	b.SUBS(Imm(1), R10, R10)
	b.AND(Imm(3), R0, R10)
	b.LSL(Imm(2), R4, R4)
	b.LSR(Imm(3), R0, R9)
	b.CMP(Imm(8), R6)
	b.CMP(R7, R22)
	for _, br := range []func(Label){b.B, b.BEQ, b.BNE, b.BLT, b.BLE, b.BGT, b.BGE} {
		br("top")
	}
	b.CBZ(R9, "top")
	b.CBNZ(R9, "top")
	b.TBZ(Imm(0), R11, "top")
	b.TBNZ(Imm(1), R11, "top")
	b.PRFM(Addr(R1, 256), PLDL1KEEP)
	b.PRFM(Addr(R2, 0), PSTL1KEEP)
	b.PRFM(Addr(R2, 4032), PLDL2KEEP)
	b.PRFM(Addr(R2, 64), PLDL1STRM)
	b.PRFM(Addr(R2, 64), PSTL2KEEP)
	b.FCMPS(FZero{}, F(1))
	b.FCMPD(FZero{}, F(1))
	b.FCMPS(F(2), F(1))
	for n := 1; n <= 4; n++ {
		var l VecList
		var ld VecList
		for i := 0; i < n; i++ {
			l = append(l, V((30+i)%32).S4())
			ld = append(ld, V(i).D2())
		}
		b.VLD1P(R1, l)
		b.VLD1P(R2, ld)
		b.VLD1(Addr(R9, 0), l)
		b.VST1(l, Addr(R9, 0))
		b.VST1P(ld, R9)
	}
	b.VLD1Lane(Addr(R0, 0), V(4).S(3))
	b.VST1Lane(V(4).D(1), Addr(R0, 0))
	b.VEOR(V(8).B16(), V(8).B16(), V(8).B16())
	b.VDUP(V(1).S(0), V(2).S4())
	b.VFMLA(V(1).S4(), V(2).S4(), V(31).S4())
	b.VFMLA(V(1).S2(), V(2).S2(), V(31).S2())
	b.VFMLA(V(1).D2(), V(2).D2(), V(31).D2())
	b.FMLA(V(3).S4(), V(4).S4(), V(5).S4())
	b.FMLA(V(3).H8(), V(4).H8(), V(5).H8())
	b.FMLAElem(V(8).S4(), V(2).S4(), V(0).S(3))
	b.FMULElem(V(8).D2(), V(8).D2(), V(0).D(0))
	b.FADD(V(8).S4(), V(8).S4(), V(1).S4())
	b.FMUL(V(8).D2(), V(8).D2(), V(1).D2())
	b.FMAX(V(8).S4(), V(8).S4(), V(1).S4())
	b.FMIN(V(8).D2(), V(8).D2(), V(1).D2())
	b.FADDP(V(8).S4(), V(8).S4(), V(1).S4())
	b.FCVTL(V(2).S4(), V(3).H8())
	b.FCVTN(V(2).H8(), V(3).S4())
	b.BFDOT(V(2).S4(), V(3).H8(), V(4).H8())
	b.BFDOTElem(V(2).S4(), V(3).H8(), V(4).S(3))
	b.VDUPR(R3, V(2).S4())
	b.VDUPR(R3, V(2).D2())
	b.MOVD(Imm(-4503599627370496), R3)
	b.MOVD(Imm(0xff800000), R3)
	b.FMOVS(F(0), Arg{"ret", 8})
	b.VMOV(V(1).B16(), V(30).B16())
	b.VADD(V(1).S4(), V(2).S4(), V(3).S4())
	b.VSUB(V(1).S4(), V(2).S4(), V(3).S4())
	b.VSHL(Imm(23), V(1).S4(), V(2).S4())
	b.VFMLS(V(1).S4(), V(2).S4(), V(31).S4())
	b.VFMLS(V(1).D2(), V(2).D2(), V(31).D2())
	b.FSUB(V(8).S4(), V(8).S4(), V(1).S4())
	b.FDIV(V(8).D2(), V(8).D2(), V(1).D2())
	b.FMAXP(V(8).S4(), V(8).S4(), V(8).S4())
	b.FMINP(V(8).D2(), V(8).D2(), V(8).D2())
	b.FNEG(V(8).S4(), V(9).S4())
	b.FABS(V(8).D2(), V(9).D2())
	b.FSQRT(V(8).S4(), V(9).S4())
	b.FRINTN(V(8).S4(), V(9).S4())
	b.FCVTZS(V(8).S4(), V(9).S4())
	b.SSHR(V(8).S4(), V(9).S4(), 1)
	b.Comment("end")
	b.RET()
}

// goAsm assembles src for linux/arm64 with the Go toolchain's assembler.
func goAsm(t *testing.T, src []byte) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "x_arm64.s")
	full := append([]byte("#include \"textflag.h\"\n\n"), src...)
	if err := os.WriteFile(file, full, 0o644); err != nil {
		t.Fatal(err)
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(gobin, "tool", "asm", "-p", "x", "-I", filepath.Join(runtime.GOROOT(), "pkg", "include"),
		"-o", filepath.Join(dir, "x.o"), file)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go tool asm: %v\n%s\n--- source ---\n%s", err, out, numbered(full))
	}
}

func numbered(src []byte) string {
	var sb strings.Builder
	for i, l := range bytes.Split(src, []byte("\n")) {
		sb.WriteString(strings.Repeat(" ", 4-len(itoa(i+1))) + itoa(i+1) + " " + string(l) + "\n")
	}
	return sb.String()
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// TestGoAssemblerAcceptsBuilder checks that Go's arm64 assembler accepts every native form the
// builder emits (and the WORD lines).
func TestGoAssemblerAcceptsBuilder(t *testing.T) {
	var b Builder
	everyNative(&b)
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	goAsm(t, b.Bytes())
}

// TestGoAssemblerAcceptsKernels assembles the default kernels (the internal/mk package compiles
// them too, but only when built for arm64).
func TestGoAssemblerAcceptsKernels(t *testing.T) {
	asm, _, err := Generate("x", append(DefaultKernels(), GemmKernel{Name: "s4x20", Elem: "f32", MR: 4, NR: 20, KUnroll: 1}))
	if err != nil {
		t.Fatal(err)
	}
	// drop the header up to the #include, goAsm adds its own.
	i := bytes.Index(asm, []byte("#include \"textflag.h\"\n"))
	goAsm(t, asm[i+len("#include \"textflag.h\"\n"):])
}

func TestBuilderErrors(t *testing.T) {
	for i, f := range []func(b *Builder){
		func(b *Builder) { b.VLD1P(R1, VecList{V(0).S4(), V(2).S4()}) },   // not consecutive
		func(b *Builder) { b.VLD1P(R1, VecList{V(0).S4(), V(1).D2()}) },   // mixed arrangements
		func(b *Builder) { b.VST1(VecList{}, Addr(R1, 0)) },               // empty
		func(b *Builder) { b.VFMLA(V(0).H8(), V(1).H8(), V(2).H8()) },     // Go lacks .8H
		func(b *Builder) { b.FMLAElem(V(0).H8(), V(1).H8(), V(16).H(0)) }, // Rm > 15
		func(b *Builder) { b.FCVTL(V(0).D2(), V(1).H8()) },                // bad pair
		func(b *Builder) { b.VFMLS(V(0).H8(), V(1).H8(), V(2).H8()) },     // Go lacks .8H
		func(b *Builder) { b.SSHR(V(0).S4(), V(1).S4(), 0) },              // shift out of range
	} {
		var b Builder
		f(&b)
		if b.Err() == nil {
			t.Errorf("case %d: no error", i)
		}
	}
}

func TestRender(t *testing.T) {
	var b Builder
	b.FMLAElem(V(1).S4(), V(2).S4(), V(3).S(1))
	b.VLD1P(R1, VecList{V(0).S4(), V(1).S4()})
	b.MOVD(Arg{"alpha", 56}, R3)
	want := "\tWORD\t$0x4fa31041 // fmla v1.4s, v2.4s, v3.s[1]\n\tVLD1.P\t32(R1), [V0.S4, V1.S4]\n\tMOVD\talpha+56(FP), R3\n"
	if got := string(b.Bytes()); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if in := b.Insts()[0]; in.Native() || len(in.VRegs()) != 3 {
		t.Errorf("WORD inst: native=%v vregs=%v", in.Native(), in.VRegs())
	}
	if R18.Reserved() != true || R27.Reserved() != true || R19.Reserved() {
		t.Error("Reserved")
	}
}
