package ptx

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// TestRoundTF32 checks the emulator's cvt.rna.tf32.f32 against the interpreter's rounding
// (ir.RoundTF32Value) bit for bit: ties, carries into the exponent, the largest finite values, zeros,
// subnormals, infinities and NaN.
func TestRoundTF32(t *testing.T) {
	vals := []uint32{0, 0x80000000, 1, 0x1000, 0x3F801000, 0x3F800FFF, 0x3F801FFF, 0xBF801000, 0x3FFFF000,
		0x7F7FF000, 0x7F7FFFFF, 0xFF7FF000, 0x7F800000, 0xFF800000, 0x7FC00001, 0x00801000}
	rng := rand.New(rand.NewPCG(11, 5))
	for range 2000 {
		vals = append(vals, rng.Uint32())
	}
	for _, v := range vals {
		x := math.Float32frombits(v)
		got := uint32(roundTF32(uint64(v)))
		want := math.Float32bits(float32(ir.RoundTF32Value(float64(x))))
		if math.IsNaN(float64(x)) {
			if !math.IsNaN(float64(math.Float32frombits(got))) {
				t.Errorf("cvt.rna.tf32 of NaN %#x gives %#x", v, got)
			}
			continue
		}
		if got != want {
			t.Errorf("cvt.rna.tf32 of %#x (%g): emulator %#x, interpreter %#x", v, x, got, want)
		}
	}
}

// TestPlantedTF32Bugs: the emulated test of the tf32 GEMM (passes/testdata/mma.kdsl, `precision tf32`)
// fails with swapped A or B fragment registers. (An off-by-one fragment edge predicate is not caught:
// the extra element it reads is one the staging copies zero-filled, so the result is the same.)
func TestPlantedTF32Bugs(t *testing.T) {
	f := kernelsByName(t, "../../passes/testdata/mma.kdsl", "ptx:sm_80")["sgemm_tf32"]
	if f == nil {
		t.Fatal("no sgemm_tf32 in passes/testdata/mma.kdsl")
	}
	cases := []struct {
		name  string
		plant func(e *Entry) bool
	}{
		{"swapped A fragment registers a1, a2", func(e *Entry) bool {
			return edit(e, func(in *Instr) bool { return strings.HasPrefix(in.Op, "mma.sync.aligned.m16n8k8") }, func(in *Instr) *Instr {
				c := *in
				a := append(Vec{}, in.Args[1].(Vec)...)
				a[1], a[2] = a[2], a[1]
				c.Args = []Operand{in.Args[0], a, in.Args[2], in.Args[3]}
				return &c
			}, -1)
		}},
		{"swapped B fragment registers b0, b1", func(e *Entry) bool {
			return edit(e, func(in *Instr) bool { return strings.HasPrefix(in.Op, "mma.sync.aligned.m16n8k8") }, func(in *Instr) *Instr {
				c := *in
				b := in.Args[2].(Vec)
				c.Args = []Operand{in.Args[0], in.Args[1], Vec{b[1], b[0]}, in.Args[3]}
				return &c
			}, -1)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { expectDetected(t, f, "sm_80", 3, c.name, c.plant) })
	}
}
