package arm64

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen"
)

// fp16Src has all-f16 loops that get an FP16 routine (one of each operation, the fused a*b+c, a chain
// of single roundings joined by casts and exact operations, an f16 constant) and loops that must not
// (two roundings in a row, an f32 invariant, a constant f16 does not represent, an f32 access, a
// reduction).
const fp16Src = `
kernel hadd(x: f16[N], y: f16[N], z: out f16[N]) {
    z[i] = f16(x[i] + y[i])
}
kernel haxpy(a: f16, x: f16[N], y: inout f16[N]) {
    y[i] = f16(a * x[i] + y[i])
}
kernel hsub(x: f16[N], y: f16[N], z: out f16[N]) {
    z[i] = f16(x[i] - y[i])
}
kernel hmul(x: f16[N], y: f16[N], z: out f16[N]) {
    z[i] = f16(x[i] * y[i])
}
kernel hdiv(x: f16[N], y: f16[N], z: out f16[N]) {
    z[i] = f16(x[i] / y[i])
}
kernel hmax(x: f16[N], y: f16[N], z: out f16[N]) {
    z[i] = f16(max(x[i], y[i]))
}
kernel hmin(x: f16[N], y: f16[N], z: out f16[N]) {
    z[i] = f16(min(x[i], y[i]))
}
kernel hneg(x: f16[N], z: out f16[N]) {
    z[i] = f16(-x[i])
}
kernel habs(x: f16[N], z: out f16[N]) {
    z[i] = f16(abs(x[i]))
}
kernel hsqrt(x: f16[N], z: out f16[N]) {
    z[i] = f16(sqrt(x[i]))
}
kernel hrelu(x: f16[N], y: f16[N], z: out f16[N]) {
    z[i] = f16(relu(x[i] + y[i]))
}
kernel hchain(x: f16[N], y: f16[N], z: out f16[N]) {
    z[i] = f16(max(f16(x[i] * y[i]), -abs(y[i])) / x[i])
}
kernel hhalf(x: f16[N], z: out f16[N]) {
    z[i] = f16(x[i] * 0.5)
}
kernel htwo(x: f16[N], y: f16[N], z: out f16[N]) {
    z[i] = f16((x[i] + y[i]) * x[i])
}
kernel hscale(x: f16[N], y: out f16[N], a: f32) {
    y[i] = f16(a * x[i])
}
kernel htenth(x: f16[N], z: out f16[N]) {
    z[i] = f16(x[i] * 0.1)
}
kernel hwiden(x: f16[N], y: f16[N], z: out f32[N]) {
    z[i] = x[i] + y[i]
}
kernel hsum(x: f16[N], r: out f32[]) {
    r[] = sum(i: x[i])
}
`

// fp16Want is the FP16 verdict of every loop of fp16Src: absent means no FP16 routine, true bit-exact.
var fp16Want = map[string]bool{
	"vloop_hadd_0": true, "vloop_haxpy_0": false, "vloop_hsub_0": true, "vloop_hmul_0": true,
	"vloop_hdiv_0": true, "vloop_hmax_0": true, "vloop_hmin_0": true, "vloop_hneg_0": true,
	"vloop_habs_0": true, "vloop_hsqrt_0": true, "vloop_hrelu_0": true, "vloop_hchain_0": true,
	"vloop_hhalf_0": true,
}

func TestHalfRoute(t *testing.T) {
	p := compile(t, fp16Src)
	seen := map[string]bool{}
	for _, v := range codegen.PackageVLoops(p) {
		seen[v.Var] = true
		ok, exact := HalfRoute(v)
		want, wantOK := fp16Want[v.Var]
		if ok != wantOK || ok && exact != want {
			t.Errorf("%s: HalfRoute = %v, %v; want %v, %v", v.Var, ok, exact, wantOK, want)
		}
	}
	for name := range fp16Want {
		if !seen[name] {
			t.Errorf("no vector-loop slot %s", name)
		}
	}
	_, impls := VLoopKernels(p, NEON)
	for _, i := range impls {
		_, want := fp16Want[i.VLoop.Var]
		if got := i.Alt.Func != ""; got != want {
			t.Errorf("%s: alternative %q, want one: %v", i.VLoop.Var, i.Alt.Func, want)
		}
		if i.Alt.Func != "" && (i.Alt.Func != i.VLoop.Var+"FP16" || i.Alt.Cond != FP16Cond || i.Func != i.VLoop.Var+"NEON") {
			t.Errorf("%s: impl %+v", i.VLoop.Var, i)
		}
	}
}

// TestVLoopFP16Asm is an asmcheck of the FP16 routines: .8H loads, stores and arithmetic in the loop,
// an odd group on .4H, no FCVTL/FCVTN in the loop; and their FCVTL/FCVTN fallbacks unchanged.
func TestVLoopFP16Asm(t *testing.T) {
	p := compile(t, fp16Src)
	ks, _ := VLoopKernels(p, NEON)
	asm, stubs, err := GenerateWithVLoops("x", nil, ks)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(asm, []byte("#include \"textflag.h\"\n"))
	goAsm(t, asm[i+len("#include \"textflag.h\"\n"):])
	for _, s := range []string{
		"func vloop_hadd_0FP16(n int, p0 *uint16, p1 *uint16, p2 *uint16)\n",
		"func vloop_haxpy_0FP16(n int, p0 *uint16, p1 *uint16, c0 float32)\n",
	} {
		if !strings.Contains(string(stubs), s) {
			t.Errorf("stubs lack %q", s)
		}
	}
	op := map[string]string{
		"hadd": "fadd", "haxpy": "fmla", "hsub": "fsub", "hmul": "fmul", "hdiv": "fdiv", "hmax": "fmax",
		"hmin": "fmin", "hneg": "fneg", "habs": "fabs", "hsqrt": "fsqrt", "hrelu": "fmax", "hchain": "fdiv",
		"hhalf": "fmul",
	}
	for k, mn := range op {
		body := funcBody(t, string(asm), "vloop_"+k+"_0FP16")
		loop := body[strings.Index(body, "_loop:"):strings.Index(body, "_tail:")]
		for _, re := range []string{
			`VLD1(\.P)?\s+(16)?\(R\d+\), \[V\d+\.H8\]`,
			`VST1\.P\s+\[V\d+\.H8\], 16\(R\d+\)`,
			`WORD\s+\$0x[0-9a-f]{8} // ` + mn + ` v\d+\.8h, v\d+\.8h`,
			`// fcmeq v\d+\.8h, v(\d+)\.8h, v(\d+)\.8h`,
			`VUSHR\s+\$9, V\d+\.H8`,
		} {
			if !regexp.MustCompile(re).MatchString(loop) {
				t.Errorf("%s FP16 loop: no match for %q in\n%s", k, re, loop)
			}
		}
		if regexp.MustCompile(`fcvt|\.4s|\.S4|\.H4`).MatchString(loop) {
			t.Errorf("%s FP16 loop converts or uses f32/.4H lanes:\n%s", k, loop)
		}
		tail := body[strings.Index(body, "_tail4:"):]
		for _, re := range []string{`TBZ\s+\$0, R0,`, `VST1\.P\s+\[V\d+\.H4\], 8\(R\d+\)`, `// ` + mn + ` v\d+\.4h`} {
			if !regexp.MustCompile(re).MatchString(tail) {
				t.Errorf("%s FP16 odd group: no match for %q in\n%s", k, re, tail)
			}
		}
		fb := funcBody(t, string(asm), "vloop_"+k+"_0NEON")
		if !strings.Contains(fb, "// fcvtl v") || !strings.Contains(fb, "// fcvtn v") || strings.Contains(fb, "8h") {
			t.Errorf("%s: the fallback routine is not FCVTL/FCVTN on .4S:\n%s", k, fb)
		}
	}
	// Invariants are narrowed once, before the loop.
	hx := funcBody(t, string(asm), "vloop_haxpy_0FP16")
	if !regexp.MustCompile(`FMOVS\s+c0\+24\(FP\), F(\d+)\n\tFCVTSH\s+F(\d+), F(\d+)\n\tVDUP\s+V\d+\.H\[0\], V\d+\.H8`).MatchString(hx) ||
		strings.Count(hx, "FCVTSH") != 1 {
		t.Errorf("haxpy FP16: invariant not narrowed once before the loop:\n%s", hx)
	}
	for _, k := range []string{"htwo", "hscale", "htenth", "hwiden", "hsum"} {
		if strings.Contains(string(asm), "vloop_"+k+"_0FP16") {
			t.Errorf("%s has an FP16 routine", k)
		}
	}
}

// TestVLoopFP16WordsLLVM disassembles every WORD of the generated FP16 routines with llvm-mc
// (+fullfp16) and checks it against its comment (beyond encode_test.go's form-by-form check).
func TestVLoopFP16WordsLLVM(t *testing.T) {
	mc := llvmMC(t)
	p := compile(t, fp16Src)
	ks, _ := VLoopKernels(p, NEON)
	seen := map[uint32]string{}
	for _, k := range ks {
		if !k.Half {
			continue
		}
		g, ok := emitVLoop(&Builder{}, k)
		if !ok {
			t.Fatalf("%s: not generated", k.Name)
		}
		for _, in := range g.b.Insts() {
			if in.Enc != nil {
				seen[in.Enc.Word] = in.Enc.Text
			}
		}
	}
	var words []uint32
	var in strings.Builder
	for w := range seen {
		words = append(words, w)
		fmt.Fprintf(&in, "0x%02x 0x%02x 0x%02x 0x%02x\n", w&0xff, w>>8&0xff, w>>16&0xff, w>>24)
	}
	// Output order follows input order.
	cmd := exec.Command(mc, "-triple=aarch64", "-mattr=+fullfp16", "-disassemble")
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("llvm-mc: %v\n%s", err, out)
	}
	var got []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, ".") {
			got = append(got, strings.Join(strings.Fields(l), " "))
		}
	}
	if len(got) != len(words) {
		t.Fatalf("%d lines for %d words:\n%s", len(got), len(words), out)
	}
	mns := map[string]bool{}
	for i, w := range words {
		if got[i] != seen[w] {
			t.Errorf("0x%08x: comment %q, llvm-mc %q", w, seen[w], got[i])
		}
		mns[strings.Fields(got[i])[0]] = true
	}
	for _, mn := range []string{"fadd", "fsub", "fmul", "fdiv", "fmax", "fmin", "fneg", "fabs", "fsqrt", "fmla", "fcmeq"} {
		if !mns[mn] {
			t.Errorf("no %s among the FP16 routines' words", mn)
		}
	}
	t.Logf("%d distinct FP16 words checked", len(words))
}
