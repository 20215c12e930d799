// Package kerngen writes the measuring kernels of package probe (see probe/internal/gen, which
// go generate runs, and TestGeneratedUpToDate, which checks the committed files against Files):
//
//   - fma_amd64.s, fma_amd64.go: the f32/f64 FMA-peak kernels (AVX2 ymm, AVX-512 zmm), from kgen's own
//     amd64 code generator (codegen/amd64 PeakKernel), so the probe measures the instruction mix the
//     generated GEMMs run on;
//   - kern_amd64.s, kern_amd64.go: the bf16 dot (VDPBF16PS) and f16 FMA (VFMADD231PH) peaks, read and
//     copy loops on ymm and zmm, and a dependent-add clock loop, built with avo here
//     (CPUID is package target/hostcpu's);
//   - kern_arm64.s, kern_arm64.go: the NEON FMLA peaks, read and copy loops and the clock loop, written
//     as Go assembler text (avo has no arm64).
//
// The instructions the Go assembler lacks (VDPBF16PS, VFMADD231PH) are written as their EVEX bytes
// (package evex, checked against llvm-mc by the probe package's TestEVEXEncoding).
package kerngen

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/codegen/amd64"
	"github.com/kgen-dev/kgen/probe/internal/evex"
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	avoir "github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/pass"
	"github.com/mmcloughlin/avo/printer"
	"github.com/mmcloughlin/avo/reg"
)

// Files returns the generated files of package probe by name.
func Files() (map[string][]byte, error) {
	files := map[string][]byte{}
	asm, stubs, err := amd64.Generate("probe", nil, amd64.DefaultPeaks()...)
	if err != nil {
		return nil, err
	}
	files["fma_amd64.s"], files["fma_amd64.go"] = asm, stubs
	if asm, stubs, err = amd64Kernels(); err != nil {
		return nil, err
	}
	files["kern_amd64.s"], files["kern_amd64.go"] = asm, stubs
	files["kern_arm64.s"], files["kern_arm64.go"] = arm64Kernels()
	return files, nil
}

// Chains of the zmm dot/FMA peaks: 24 independent accumulators cover a 4-cycle latency on 2 pipes three
// times over, and leave Z0, Z1 for the multiplicands.
const zmmChains = 24

func amd64Kernels() (asm, stubs []byte, err error) {
	c := build.NewContext()
	c.ConstraintExpr("!purego")
	rawPeak(c, "dotPeakBF16", "VDPBF16PS", evex.VDPBF16PS)
	rawPeak(c, "fmaPeakFP16", "VFMADD231PH", evex.VFMADD231PH)
	for _, z := range []bool{false, true} {
		memLoop(c, z, false)
		memLoop(c, z, true)
	}
	clock(c)
	f, err := c.Result()
	if err != nil {
		return nil, nil, err
	}
	if err := pass.Compile.Execute(f); err != nil {
		return nil, nil, err
	}
	cfg := printer.Config{Name: "kgen probe/internal/gen", Pkg: "probe"}
	if asm, err = printer.NewGoAsm(cfg).Print(f); err != nil {
		return nil, nil, err
	}
	stubs, err = printer.NewStubs(cfg).Print(f)
	return asm, stubs, err
}

func header(c *build.Context, name, sig string, doc ...string) {
	c.Function(name)
	c.Attributes(attr.NOSPLIT)
	c.Pragma("noescape")
	c.Doc(doc...)
	c.SignatureExpr(sig)
}

func vec(z bool, i int) reg.VecPhysical {
	s := reg.S256
	if z {
		s = reg.S512
	}
	return reg.Vector.Lookup(reg.Index(i), s).(reg.VecPhysical)
}

// rawPeak emits iters iterations of zmmChains independent zmm instructions acc_i op= Z0·Z1, each written
// as the EVEX bytes enc gives (dst, src1, src2 in Intel order).
func rawPeak(c *build.Context, name, mnemonic string, enc evex.Op) {
	header(c, name, "func(iters int)",
		fmt.Sprintf("%s runs iters iterations of %d independent %s chains on zmm registers (AVX-512; %d flops per iteration).",
			name, zmmChains, mnemonic, zmmChains*enc.Flops))
	c.Load(c.Param("iters"), reg.RCX)
	for i := 0; i < zmmChains+2; i++ {
		c.VPXORD(vec(true, i), vec(true, i), vec(true, i))
	}
	c.TESTQ(reg.RCX, reg.RCX)
	c.JLE(operand.LabelRef("done"))
	c.Label("loop")
	for i := 0; i < zmmChains; i++ {
		b := enc.Encode(2+i, 1, 0)
		var parts []string
		for _, x := range b {
			parts = append(parts, fmt.Sprintf("BYTE $0x%02x", x))
		}
		text := strings.Join(parts, "; ") + fmt.Sprintf(" // %s Z0, Z1, Z%d", mnemonic, 2+i)
		c.Instruction(&avoir.Instruction{Opcode: text})
	}
	c.DECQ(reg.RCX)
	c.JNZ(operand.LabelRef("loop"))
	c.Label("done")
	c.VZEROUPPER()
	c.RET()
}

// memLoop emits readAVX2/readAVX512(p *byte, n, reps int), reps passes of loads over p[0:n] with
// nothing stored, or (copy) copyAVX2/copyAVX512(dst, src *byte, n, reps int), reps copies of src[0:n]
// to dst[0:n]: 8 independent vector loads (then 8 stores) per step; n is a multiple of 8 vectors.
func memLoop(c *build.Context, z, copy bool) {
	w, isa := 32, "AVX2"
	if z {
		w, isa = 64, "AVX512"
	}
	src, dst, n, reps := reg.RSI, reg.RDI, reg.RDX, reg.RCX
	if copy {
		header(c, "copy"+isa, "func(dst, src *byte, n, reps int)",
			fmt.Sprintf("copy%s copies src[0:n] to dst[0:n] reps times, 8 %d-byte vectors per step; n is a multiple of %d.", isa, w, 8*w))
	} else {
		header(c, "read"+isa, "func(src *byte, n, reps int)",
			fmt.Sprintf("read%s loads every byte of src[0:n] reps times, 8 %d-byte vectors per step; n is a multiple of %d.", isa, w, 8*w))
	}
	c.Load(c.Param("reps"), reps)
	c.Label("pass")
	c.Load(c.Param("src"), src)
	if copy {
		c.Load(c.Param("dst"), dst)
	}
	c.Load(c.Param("n"), n)
	c.SHRQ(operand.U8(shift(8*w)), n)
	c.TESTQ(n, n)
	c.JZ(operand.LabelRef("next"))
	c.Label("step")
	for i := 0; i < 8; i++ {
		c.VMOVUPS(operand.Mem{Base: src, Disp: i * w}, vec(z, i))
	}
	c.ADDQ(operand.U32(8*w), src)
	if copy {
		for i := 0; i < 8; i++ {
			c.VMOVUPS(vec(z, i), operand.Mem{Base: dst, Disp: i * w})
		}
		c.ADDQ(operand.U32(8*w), dst)
	}
	c.DECQ(n)
	c.JNZ(operand.LabelRef("step"))
	c.Label("next")
	c.DECQ(reps)
	c.JG(operand.LabelRef("pass"))
	c.VZEROUPPER()
	c.RET()
}

// clockAdds is the length of the dependent add chain of one clock iteration.
const clockAdds = 64

// clock emits clockLoop(iters int): iters × clockAdds dependent one-cycle integer adds, so its time is
// iters × clockAdds cycles at the clock the core runs scalar code at. The addend is a register: Intel
// cores since Golden Cove fold chains of adds of an immediate in the renamer (a chain of ADDQ $1 ran
// at 17 "GHz" on a Sapphire Rapids).
func clock(c *build.Context) {
	header(c, "clockLoop", "func(iters int)",
		fmt.Sprintf("clockLoop runs iters iterations of %d dependent ADDQ (one cycle each).", clockAdds))
	c.Load(c.Param("iters"), reg.RCX)
	c.XORQ(reg.RAX, reg.RAX)
	c.MOVQ(operand.U32(1), reg.RBX)
	c.TESTQ(reg.RCX, reg.RCX)
	c.JLE(operand.LabelRef("done"))
	c.Label("loop")
	for i := 0; i < clockAdds; i++ {
		c.ADDQ(reg.RBX, reg.RAX)
	}
	c.DECQ(reg.RCX)
	c.JNZ(operand.LabelRef("loop"))
	c.Label("done")
	c.RET()
}

func shift(n int) int {
	s := 0
	for 1<<s < n {
		s++
	}
	return s
}

// arm64Kernels writes the NEON kernels as Go assembler text and their declarations.
func arm64Kernels() (asm, stubs []byte) {
	var s, g strings.Builder
	const gen = "// Code generated by kgen probe/internal/gen. DO NOT EDIT.\n\n"
	s.WriteString(gen + "//go:build !purego\n\n#include \"textflag.h\"\n")
	g.WriteString(gen + "//go:build !purego\n\npackage probe\n")
	decl := func(name, sig, doc string, args int) {
		fmt.Fprintf(&g, "\n// %s\n//\n//go:noescape\nfunc %s%s\n", doc, name, sig)
		fmt.Fprintf(&s, "\n// func %s%s\nTEXT ·%s(SB), NOSPLIT, $0-%d\n", name, sig, name, 8*args)
	}
	// FMLA peaks: 24 chains V2..V25 += V0·V1 (latency 4 on up to 4 pipes needs 16).
	for _, t := range []struct{ name, arr string }{{"fmaPeakNEONF32", "S4"}, {"fmaPeakNEONF64", "D2"}} {
		lanes := map[string]int{"S4": 4, "D2": 2}[t.arr]
		decl(t.name, "(iters int)", fmt.Sprintf("%s runs iters iterations of %d independent NEON FMLA chains (%s, %d flops per iteration).",
			t.name, zmmChains, t.arr, 2*zmmChains*lanes), 1)
		s.WriteString("\tMOVD iters+0(FP), R0\n")
		for i := 0; i < zmmChains+2; i++ {
			fmt.Fprintf(&s, "\tVEOR V%d.B16, V%d.B16, V%d.B16\n", i, i, i)
		}
		s.WriteString("\tCBZ R0, done\nloop:\n")
		for i := 0; i < zmmChains; i++ {
			fmt.Fprintf(&s, "\tVFMLA V0.%s, V1.%s, V%d.%s\n", t.arr, t.arr, 2+i, t.arr)
		}
		s.WriteString("\tSUBS $1, R0, R0\n\tBNE loop\ndone:\n\tRET\n")
	}
	decl("readNEON", "(p *byte, n, reps int)", "readNEON loads every byte of p[0:n] reps times, 256 bytes per step; n is a multiple of 256.", 3)
	s.WriteString("\tMOVD reps+16(FP), R3\npass:\n\tMOVD p+0(FP), R0\n\tMOVD n+8(FP), R2\n\tLSR $8, R2, R2\n\tCBZ R2, next\nstep:\n")
	for i := 0; i < 4; i++ {
		fmt.Fprintf(&s, "\tVLD1.P 64(R0), [V%d.S4, V%d.S4, V%d.S4, V%d.S4]\n", 4*i, 4*i+1, 4*i+2, 4*i+3)
	}
	s.WriteString("\tSUBS $1, R2, R2\n\tBNE step\nnext:\n\tSUBS $1, R3, R3\n\tBGT pass\n\tRET\n")
	decl("copyNEON", "(dst, src *byte, n, reps int)", "copyNEON copies src[0:n] to dst[0:n] reps times, 256 bytes per step; n is a multiple of 256.", 4)
	s.WriteString("\tMOVD reps+24(FP), R3\npass:\n\tMOVD dst+0(FP), R1\n\tMOVD src+8(FP), R0\n\tMOVD n+16(FP), R2\n\tLSR $8, R2, R2\n\tCBZ R2, next\nstep:\n")
	for i := 0; i < 4; i++ {
		fmt.Fprintf(&s, "\tVLD1.P 64(R0), [V%d.S4, V%d.S4, V%d.S4, V%d.S4]\n", 4*i, 4*i+1, 4*i+2, 4*i+3)
	}
	for i := 0; i < 4; i++ {
		fmt.Fprintf(&s, "\tVST1.P [V%d.S4, V%d.S4, V%d.S4, V%d.S4], 64(R1)\n", 4*i, 4*i+1, 4*i+2, 4*i+3)
	}
	s.WriteString("\tSUBS $1, R2, R2\n\tBNE step\nnext:\n\tSUBS $1, R3, R3\n\tBGT pass\n\tRET\n")
	decl("clockLoop", "(iters int)", fmt.Sprintf("clockLoop runs iters iterations of %d dependent ADD (one cycle each).", clockAdds), 1)
	s.WriteString("\tMOVD iters+0(FP), R0\n\tMOVD ZR, R1\n\tMOVD $1, R2\n\tCBZ R0, done\nloop:\n")
	for i := 0; i < clockAdds; i++ {
		s.WriteString("\tADD R2, R1, R1\n")
	}
	s.WriteString("\tSUBS $1, R0, R0\n\tBNE loop\ndone:\n\tRET\n")
	return []byte(s.String()), []byte(g.String())
}
