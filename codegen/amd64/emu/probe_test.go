//go:build amd64 && !purego

package emu

import (
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen/amd64/emu/internal/probe"
	"golang.org/x/sys/cpu"
)

func hostHas(isa string) bool {
	x := cpu.X86
	avx2 := x.HasAVX2 && x.HasFMA
	avx512 := avx2 && x.HasAVX512F && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL
	switch isa {
	case "avx2":
		return avx2 && x.HasF16C
	case "avx512":
		return avx512
	case "avx512bf16":
		return avx512 && x.HasAVX512BF16
	}
	return false
}

// wildBits fills b with random lanes of size es: ordinary values, NaNs with
// payloads (quiet and signaling), infinities, signed zeros, denormals, huge values.
func wildBits(rng *rand.Rand, b []byte, es int) {
	for i := 0; i < len(b); i += es {
		var v uint64
		switch es {
		case 2:
			switch rng.IntN(8) {
			case 0:
				v = 0x7C00 | uint64(rng.IntN(1024)) // Inf or NaN
			case 1:
				v = uint64(rng.IntN(1024)) // zero or denormal
			default:
				v = uint64(rng.IntN(1 << 15))
			}
			v |= uint64(rng.IntN(2)) << 15
		case 4:
			switch rng.IntN(10) {
			case 0:
				v = uint64(0x7F800000 | rng.Uint32()&0x7FFFFF)
			case 1:
				v = uint64(rng.Uint32() & 0x7FFFFF)
			case 2:
				v = 0x7F800000
			case 3:
				v = 0
			case 4:
				v = uint64(rng.Uint32())
			case 5: // halfway cases for rounding: small integers + .5
				v = uint64(math.Float32bits(float32(rng.IntN(64)) + 0.5))
			case 6: // near the f16 range edge and f16 denormals
				v = uint64(math.Float32bits(float32(rng.NormFloat64()) * []float32{65504, 65520, 6e-8, 3e-5}[rng.IntN(4)]))
			default:
				v = uint64(math.Float32bits(float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(40)-20)))))
			}
			v |= uint64(rng.IntN(2)) << 31
		case 8:
			switch rng.IntN(8) {
			case 0:
				v = 0x7FF0000000000000 | rng.Uint64()&0xFFFFFFFFFFFFF
			case 1:
				v = rng.Uint64() & 0xFFFFFFFFFFFFF
			case 2:
				v = 0x7FF0000000000000
			case 3:
				v = 0
			case 4:
				v = rng.Uint64()
			default:
				v = math.Float64bits(rng.NormFloat64() * math.Exp2(float64(rng.IntN(40)-20)))
			}
			v |= uint64(rng.IntN(2)) << 63
		}
		putN(b[i:], v, es)
	}
}

// TestProbes runs every probe routine (one instruction form each) natively
// and in the interpreter on the same random registers: all 512 bits of the
// result must agree.
func TestProbes(t *testing.T) {
	src, err := os.ReadFile("internal/probe/probe_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ran := 0
	for _, pr := range probe.Probes {
		t.Run(pr.Name, func(t *testing.T) {
			if !hostHas(pr.ISA) {
				t.Skipf("CPU lacks %s", pr.ISA)
			}
			m := p.Machine()
			fn, err := Func[func(a, b, c *[64]byte, k uint64)](m, pr.Name)
			if err != nil {
				t.Fatal(err)
			}
			ran++
			bad := 0
			for trial := 0; trial < 2000 && bad < 3; trial++ {
				var a, b, c [64]byte
				wildBits(rng, a[:], pr.Elem)
				wildBits(rng, b[:], pr.Elem)
				wildBits(rng, c[:], pr.Elem)
				if strings.HasPrefix(pr.Name, "FLAGS") {
					switch trial % 4 {
					case 0: // equal operands
						copy(b[:8], a[:8])
					case 1: // small operands, around the signed and unsigned edges
						edge := []uint64{0, 1, 2, 13, 14, 15, 1 << 63, 1<<63 - 1, 1<<63 + 1, ^uint64(0), ^uint64(0) - 1}
						putN(a[:], edge[rng.IntN(len(edge))]+uint64(rng.IntN(3)), 8)
						putN(b[:], edge[rng.IntN(len(edge))], 8)
					}
				}
				k := rng.Uint64()
				a2, b2, c2 := a, b, c
				pr.Fn(&a, &b, &c, k)
				m.SetRegions(Slice("a", a2[:]), Slice("b", b2[:]), Slice("c", c2[:]))
				fn(&a2, &b2, &c2, k)
				if c != c2 {
					bad++
					t.Errorf("k=%#x\na=% x\nb=% x\nnative   % x\nemulated % x", k, a[:], b[:], c[:], c2[:])
				}
			}
		})
	}
	if ran == 0 {
		t.Log("no probe could run natively on this CPU")
	}
}
