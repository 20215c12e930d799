//go:build amd64 && !purego

package mk

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/kgen-dev/kgen/codegen/amd64"
	"github.com/kgen-dev/kgen/codegen/amd64/emu"
)

// The interpreter's own validation: every routine of mk_amd64.s that the
// CPU can run executes natively and emulated on the same random operands
// (with NaNs carrying payloads, signaling NaNs, infinities, signed zeros,
// denormals and values that overflow) and the outputs must be identical bit
// for bit.

// wild returns a random T from a mix of ordinary and special values.
func wild[T float](rng *rand.Rand) T {
	var z T
	f32 := unsafe.Sizeof(z) == 4
	switch rng.IntN(16) {
	case 0:
		if f32 {
			return T(math.Float32frombits(0x7F800001 + uint32(rng.IntN(1<<22)) | uint32(rng.IntN(2))<<31 | uint32(rng.IntN(2))<<22))
		}
		return T(math.Float64frombits(0x7FF0000000000001 + uint64(rng.Int64N(1<<51)) | uint64(rng.IntN(2))<<63 | uint64(rng.IntN(2))<<51))
	case 1:
		return T(math.Inf(1 - 2*rng.IntN(2)))
	case 2:
		return T(math.Copysign(0, float64(1-2*rng.IntN(2))))
	case 3: // denormal
		if f32 {
			return T(math.Float32frombits(uint32(rng.IntN(1<<23)) | uint32(rng.IntN(2))<<31))
		}
		return T(math.Float64frombits(uint64(rng.Int64N(1<<52)) | uint64(rng.IntN(2))<<63))
	case 4: // huge
		if f32 {
			return T(float32(rng.Float64()*2-1) * math.MaxFloat32)
		}
		return T((rng.Float64()*2 - 1) * math.MaxFloat64)
	case 5: // tiny normal
		if f32 {
			return T(float32(rng.Float64()*2-1) * 0x1p-120)
		}
		return T((rng.Float64()*2 - 1) * 0x1p-1015)
	}
	return T(rng.NormFloat64())
}

// sameBits compares two slices bit for bit.
func sameBits[T float](t *testing.T, what string, got, want []T) {
	t.Helper()
	bad := 0
	for i := range want {
		var g, w uint64
		switch x := any(got[i]).(type) {
		case float32:
			g, w = uint64(math.Float32bits(x)), uint64(math.Float32bits(any(want[i]).(float32)))
		case float64:
			g, w = math.Float64bits(x), math.Float64bits(any(want[i]).(float64))
		}
		if g != w {
			if bad < 3 {
				t.Errorf("%s: element %d: emulated %#x (%v), native %#x (%v)", what, i, g, got[i], w, want[i])
			}
			bad++
		}
	}
	if bad > 3 {
		t.Errorf("%s: %d elements differ", what, bad)
	}
}

func fill[T float](rng *rand.Rand, s []T, special bool) {
	for i := range s {
		if special {
			s[i] = wild[T](rng)
		} else {
			s[i] = T(rng.NormFloat64())
		}
	}
}

func testBitExact[T float](t *testing.T, k kernel[T]) {
	if !k.runnable() {
		t.Skipf("CPU lacks %s: nothing native to compare with", k.isa)
	}
	ek := k.in(t, "emulated")
	rng := rand.New(rand.NewPCG(11, uint64(k.mr*k.nr)))
	for trial := 0; trial < 300; trial++ {
		kc := []int{0, 1, 2, 3, 4, 5, 7, 9, 33}[rng.IntN(9)]
		m, n := 1+rng.IntN(k.mr), 1+rng.IntN(k.nr)
		if trial%5 == 0 {
			m, n = k.mr, k.nr
		}
		ldc := n + rng.IntN(4)
		p := newProblem[T](rng, k.mr, k.nr, kc, m, n, ldc)
		special := trial%3 != 0
		fill(rng, p.a, special)
		fill(rng, p.b, special)
		fill(rng, p.c0, special)
		fill(rng, p.bias, special)
		p.ep = trial % 4
		switch trial % 4 {
		case 0:
			p.beta = 0
		case 1:
			p.alpha, p.beta = wild[T](rng), wild[T](rng)
		}
		want := p.run(k, nil, nil)
		got := p.run(ek, nil, nil)
		sameBits(t, k.name+" "+p.String(), got, want)
	}
}

func testBitExactU[T float](t *testing.T, k kernelU[T]) {
	if !k.runnable() {
		t.Skipf("CPU lacks %s: nothing native to compare with", k.isa)
	}
	ek := k.in(t, "emulated")
	rng := rand.New(rand.NewPCG(12, uint64(k.mr*k.nr)))
	for trial := 0; trial < 300; trial++ {
		kc := []int{0, 1, 2, 3, 4, 5, 7, 9, 33}[rng.IntN(9)]
		m, n := 1+rng.IntN(k.mr), 1+rng.IntN(k.nr)
		if trial%5 == 0 {
			m, n = k.mr, k.nr
		}
		p := newProblemU[T](rng, k.mr, k.nr, kc, m, n, n+rng.IntN(4), n+rng.IntN(4), trial%numLayouts)
		special := trial%3 != 0
		fill(rng, p.ua, special)
		fill(rng, p.ub, special)
		fill(rng, p.c0, special)
		fill(rng, p.bias, special)
		p.ep = trial % 4
		switch trial % 4 {
		case 0:
			p.beta = 0
		case 1:
			p.alpha, p.beta = wild[T](rng), wild[T](rng)
		}
		want := p.runU(k, nil, nil, nil, nil)
		got := p.runU(ek, nil, nil, nil, nil)
		sameBits(t, k.name+" "+p.String(), got, want)
	}
}

func TestEmuBitExact(t *testing.T) {
	for _, k := range f32Kernels {
		t.Run(k.name, func(t *testing.T) { testBitExact(t, k) })
	}
	for _, k := range f64Kernels {
		t.Run(k.name, func(t *testing.T) { testBitExact(t, k) })
	}
	for _, k := range f32KernelsU {
		t.Run(k.name, func(t *testing.T) { testBitExactU(t, k) })
	}
	for _, k := range f64KernelsU {
		t.Run(k.name, func(t *testing.T) { testBitExactU(t, k) })
	}
}

// TestEmuPeaks runs the FMA-peak kernels (registers only) in the interpreter:
// they must run to RET without touching memory.
func TestEmuPeaks(t *testing.T) {
	for _, pk := range peaks {
		t.Run(pk.Name, func(t *testing.T) {
			fn, _ := emulate[func(int)](t, program(t), pk.Name)
			fn(3)
			if amd64.HostSupports(pk.ISA) {
				pk.fn(3)
			}
		})
	}
}

// BenchmarkEmuSlowdown times one full-tile call (kc = 256) natively and in
// the interpreter: the ratio of the two is the interpreter's slowdown.
func BenchmarkEmuSlowdown(b *testing.B) {
	for _, k := range f32Kernels {
		benchSlowdown(b, k)
	}
	for _, k := range f64Kernels {
		benchSlowdown(b, k)
	}
}

func benchSlowdown[T float](b *testing.B, k kernel[T]) {
	const kc = 256
	rng := rand.New(rand.NewPCG(1, 1))
	p := newProblem[T](rng, k.mr, k.nr, kc, k.mr, k.nr, k.nr)
	p.ep = 3
	for _, mode := range []string{"native", "emulated"} {
		b.Run(k.name+"/"+mode, func(b *testing.B) {
			kk := k
			if mode == "emulated" {
				m := program(b).Machine()
				fn, err := emu.Func[kernFunc[T]](m, k.name)
				if err != nil {
					b.Fatal(err)
				}
				kk.fn, kk.bind = fn, m.SetRegions
			} else if !k.runnable() {
				b.Skipf("CPU lacks %s", k.isa)
			}
			c := append([]T(nil), p.c0...)
			for b.Loop() {
				p.run(kk, c, nil)
			}
		})
	}
}
