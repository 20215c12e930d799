package probe

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen/amd64"
	"github.com/kgen-dev/kgen/probe/internal/evex"
	"github.com/kgen-dev/kgen/probe/internal/kerngen"
)

// TestGeneratedUpToDate: the committed kernels are what the generator writes now (go generate ./probe
// rewrites them).
func TestGeneratedUpToDate(t *testing.T) {
	files, err := kerngen.Files()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(name)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs from the generator's output (%v): run go generate ./probe", name, err)
		}
	}
}

// TestPeakTable: the flops per iteration hostPeaks counts are those of the generated kernels: the
// codegen/amd64 peak kernels' own count, and for the raw zmm kernels chains × the instruction's flops.
func TestPeakTable(t *testing.T) {
	want := map[string]int{}
	for _, p := range amd64.DefaultPeaks() {
		want[strings.ToLower(p.ISA)+"/"+strings.ToLower(p.Elem)] = p.FlopsPerIter()
	}
	want["avx512bf16/bf16"] = zmmChainsWant * evex.VDPBF16PS.Flops
	want["avx512fp16/f16"] = zmmChainsWant * evex.VFMADD231PH.Flops
	want["neon/f32"], want["neon/f64"], want["go/f32"], want["go/f64"] = 2*4*24, 2*2*24, 24, 24
	for _, k := range hostPeaks() {
		key := k.isa + "/" + k.typ
		if w, ok := want[key]; !ok || w != k.flops {
			t.Errorf("%s: %d flops per iteration, the generator's %d (known %v)", key, k.flops, w, ok)
		}
	}
}

// zmmChainsWant is the generator's chain count, read from the generated doc comment.
var zmmChainsWant = func() int {
	b, _ := os.ReadFile("kern_amd64.go")
	m := regexp.MustCompile(`dotPeakBF16 runs iters iterations of (\d+) independent`).FindSubmatch(b)
	n := 0
	if m != nil {
		fmt.Sscan(string(m[1]), &n)
	}
	return n
}()

// TestEVEXEncoding checks evex.Op.Encode (the bytes of the instructions the Go assembler lacks)
// against llvm-mc for every register in every operand position.
func TestEVEXEncoding(t *testing.T) {
	mc, err := exec.LookPath("llvm-mc")
	if err != nil {
		if os.Getenv("KGEN_REQUIRE_TOOLS") == "1" {
			t.Fatalf("llvm-mc not found and KGEN_REQUIRE_TOOLS=1: %v", err)
		}
		t.Skip("llvm-mc not installed (set KGEN_REQUIRE_TOOLS=1 to make this fatal)")
	}
	for _, op := range []struct {
		name string
		op   evex.Op
	}{{"vdpbf16ps", evex.VDPBF16PS}, {"vfmadd231ph", evex.VFMADD231PH}} {
		type regs struct{ dst, src1, src2 int }
		var cases []regs
		var lines []string
		for r := 0; r < 32; r++ {
			for _, c := range []regs{{r, (r + 7) % 32, (r + 19) % 32}, {(r + 11) % 32, r, (r + 3) % 32}, {(r + 5) % 32, (r + 23) % 32, r}} {
				cases = append(cases, c)
				// AT&T order: src2, src1, dst.
				lines = append(lines, fmt.Sprintf("%s %%zmm%d, %%zmm%d, %%zmm%d", op.name, c.src2, c.src1, c.dst))
			}
		}
		cmd := exec.Command(mc, "-triple=x86_64", "-mattr=+avx512bf16,+avx512fp16", "-show-encoding")
		cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("llvm-mc: %v\n%s", err, out)
		}
		got := regexp.MustCompile(`encoding: \[((?:0x[0-9a-f]{2},?)+)\]`).FindAllStringSubmatch(string(out), -1)
		if len(got) != len(cases) {
			t.Fatalf("%s: llvm-mc gave %d encodings for %d lines:\n%s", op.name, len(got), len(cases), out)
		}
		for i, c := range cases {
			enc := op.op.Encode(c.dst, c.src1, c.src2)
			var mine []string
			for _, b := range enc {
				mine = append(mine, fmt.Sprintf("0x%02x", b))
			}
			if strings.Join(mine, ",") != got[i][1] {
				t.Errorf("%s: Encode = [%s], llvm-mc [%s]", lines[i], strings.Join(mine, ","), got[i][1])
			}
		}
	}
}
