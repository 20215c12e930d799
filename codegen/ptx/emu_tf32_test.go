package ptx

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/ir"
)

// tf32 instructions of the test emulator (emu_test.go), from the PTX ISA: cvt.rna.tf32.f32 and
// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32.

// roundTF32 is cvt.rna.tf32.f32: the f32 bits rounded to 10 mantissa bits, to nearest with ties away
// from zero (the 13 low bits cleared); NaN stays NaN, a carry out of the largest finite values gives
// infinity.
func roundTF32(v uint64) uint64 {
	x := uint32(v)
	if math.IsNaN(float64(math.Float32frombits(x))) {
		return uint64(x)
	}
	return uint64((x + 0x1000) &^ 0x1FFF)
}

// warpMMATF32 runs mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 for a warp ("Matrix Fragments
// for mma.m16n8k8", .tf32; g = lane>>2, t = lane%4): A a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4);
// B b0 (k = t, n = g), b1 (k = t+4, n = g); C and D as for m16n8k16. The unit reads only the tf32 bits
// of each operand (the 13 low bits are ignored). Products are summed exactly and rounded once to f32.
func (m *emulator) warpMMATF32(warp []*emuThread) {
	var A [16][8]float64
	var B [8][8]float64
	var C [16][8]float64
	in := warp[0].coll
	tf := func(v uint64) float64 { return float64(math.Float32frombits(uint32(v) &^ 0x1FFF)) }
	av, bv, cv, dv := in.Args[1].(Vec), in.Args[2].(Vec), in.Args[3].(Vec), in.Args[0].(Vec)
	if len(av) != 4 || len(bv) != 2 || len(cv) != 4 || len(dv) != 4 {
		emuError("%s: operand vectors of %d, %d, %d, %d registers", in.Op, len(dv), len(av), len(bv), len(cv))
	}
	for lane, th := range warp {
		g, t := lane>>2, lane%4
		for i := 0; i < 4; i++ {
			A[g+8*(i&1)][t+4*(i>>1)] = tf(m.reg(th, av[i]))
			C[g+8*(i>>1)][2*t+i&1] = float64(f32(m.reg(th, cv[i])))
		}
		for i := 0; i < 2; i++ {
			B[t+4*i][g] = tf(m.reg(th, bv[i]))
		}
	}
	for lane, th := range warp {
		g, t := lane>>2, lane%4
		for i := 0; i < 4; i++ {
			r, c := g+8*(i>>1), 2*t+i&1
			s := C[r][c]
			for k := 0; k < 8; k++ {
				s += A[r][k] * B[k][c]
			}
			m.set(th, dv[i], b32(float32(s)))
		}
	}
}

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
