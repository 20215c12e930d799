//go:build amd64 && !purego

package mk

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/kgen-dev/kgen/codegen/amd64"
	"github.com/kgen-dev/kgen/codegen/amd64/emu"
)

// The bf16 kernels take pair panels (codegen/bf16.go): word p2*MR+i of a is A(i, 2p2) | A(i, 2p2+1)<<16,
// word p2*NR+j of b is B(2p2, j) | B(2p2+1, j)<<16, and accumulate with VDPBF16PS. They are checked bit
// for bit against vdpbf16ps below, a model of the instruction (Intel SDM; verified on this Zen 5 with
// the special cases of TestBF16Special), with alpha = 1, beta = 0 and no epilogue, and against a float64
// reference within the error bound of docs/LANGUAGE.md with the epilogue.

var bf16Kernels = []kernel[float32]{
	{name: "bgemm14x32AVX512", isa: amd64.AVX512, mr: 14, nr: 32, fn: bgemm14x32AVX512},
}

func skipUnlessBF16(t testing.TB) {
	t.Helper()
	if !amd64.HostSupportsBF16() {
		t.Skip("CPU lacks AVX512_BF16")
	}
}

// bf16Modes is modes for the bf16 kernels: native where the CPU has
// AVX512_BF16, emulated (codegen/amd64/emu) where it has not or KGEN_EMU=1.
func bf16Modes() []string {
	var ms []string
	if amd64.HostSupportsBF16() {
		ms = append(ms, "native")
	}
	if !amd64.HostSupportsBF16() || forceEmu() {
		ms = append(ms, "emulated")
	}
	return ms
}

// forBF16Modes runs f(t, k as it runs in the mode) for every bf16 kernel and mode, as subtests name/mode.
func forBF16Modes(t *testing.T, f func(t *testing.T, k kernel[float32])) {
	for _, k := range bf16Kernels {
		for _, mode := range bf16Modes() {
			t.Run(k.name+"/"+mode, func(t *testing.T) {
				if mode == "emulated" {
					k.fn, k.bind = emulate[kernFunc[float32]](t, program(t), k.name)
				}
				f(t, k)
			})
		}
	}
}

// bf16 value of a bit pattern (exact).
func bfv(x uint16) float64 { return float64(math.Float32frombits(uint32(x) << 16)) }

// daz is VDPBF16PS's input handling: a bf16 denormal is a zero of its sign.
func daz(x uint16) uint16 {
	if x&0x7f80 == 0 {
		return x & 0x8000
	}
	return x
}

// addRound returns acc + p rounded once to f32, to nearest even, with the exponent unbounded, and flushed
// to a zero of its sign when the rounded magnitude is below 2^-126 (tininess after rounding, as this
// CPU does: TestBF16Special). p is the exact product of two bf16 values (16 significant bits, so exact in
// float64); the sum is made exact with TwoSum and rounded to f32 correcting float32()'s one double-rounding
// case (a float64 sum that lands on a midpoint of two f32 values).
func addRound(acc float32, p float64) float32 {
	a := float64(acc)
	s := a + p
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return float32(s)
	}
	bb := s - a
	e := (a - (s - bb)) + (p - bb) // s + e == a + p exactly
	scale := 1.0
	if math.Abs(s) < 0x1p-100 { // round in the normal range: unbounded exponent
		scale = 0x1p100
	}
	ss, es := s*scale, e*scale
	r := float32(ss)
	if es != 0 {
		lo, hi := r, r // the f32 neighbours around ss
		if float64(r) < ss {
			hi = math.Nextafter32(r, float32(math.Inf(1)))
		} else if float64(r) > ss {
			lo = math.Nextafter32(r, float32(math.Inf(-1)))
		}
		mid := func(x, y float32) float64 { // halfway, also between ±MaxFloat32 and ±Inf (2^128 - 2^103)
			if math.IsInf(float64(y), 1) {
				return math.MaxFloat32 + 0x1p103
			}
			if math.IsInf(float64(x), -1) {
				return -math.MaxFloat32 - 0x1p103
			}
			return (float64(x) + float64(y)) / 2
		}
		if lo != hi && mid(lo, hi) == ss { // a tie in float64 that the error breaks
			if es > 0 {
				r = hi
			} else {
				r = lo
			}
		}
	}
	if scale != 1 {
		if math.Abs(float64(r)) < 0x1p-126*scale {
			return float32(math.Copysign(0, float64(r)))
		}
		return float32(float64(r) / scale)
	}
	if math.Abs(float64(r)) < 0x1p-126 {
		return float32(math.Copysign(0, float64(r)))
	}
	return r
}

// vdpbf16ps is one lane of VDPBF16PS: acc += a.hi·b.hi, then acc += a.lo·b.lo, each product exact and
// each sum rounded (addRound), bf16 denormal inputs read as zeros. NaN payloads are not modelled.
func vdpbf16ps(acc float32, a, b uint32) float32 {
	a0, a1, b0, b1 := daz(uint16(a)), daz(uint16(a>>16)), daz(uint16(b)), daz(uint16(b>>16))
	acc = addRound(acc, bfv(a1)*bfv(b1))
	return addRound(acc, bfv(a0)*bfv(b0))
}

// bf16Problem is one call of a bf16 kernel: the logical A (m×kc) and B (kc×n) as bf16 bits, their pair
// panels, C, bias.
type bf16Problem struct {
	mr, nr, kc, m, n, ldc int
	alpha, beta           float32
	ep                    int
	av, bv                []uint16 // A(i, p) at av[i*kc+p], B(p, j) at bv[p*n+j]
	a, b                  []uint32 // pair panels, exactly ⌈kc/2⌉·MR and ⌈kc/2⌉·NR words
	c0, bias              []float32
}

// randBF16 is a bf16 with a random sign, mantissa and an exponent in [emin, emax] (biased).
func randBF16(rng *rand.Rand, emin, emax int) uint16 {
	e := emin + rng.IntN(emax-emin+1)
	return uint16(rng.IntN(2))<<15 | uint16(e)<<7 | uint16(rng.IntN(128))
}

func newBF16Problem(rng *rand.Rand, mr, nr, kc, m, n, ldc int, wide bool) *bf16Problem {
	p := &bf16Problem{mr: mr, nr: nr, kc: kc, m: m, n: n, ldc: ldc, alpha: 1}
	p.av, p.bv = make([]uint16, m*kc), make([]uint16, kc*n)
	for i := range p.av {
		if wide { // exponents over a wide range, so that the order of the roundings shows
			p.av[i] = randBF16(rng, 100, 140)
		} else {
			p.av[i] = randBF16(rng, 120, 126)
		}
	}
	for i := range p.bv {
		if wide {
			p.bv[i] = randBF16(rng, 110, 130)
		} else {
			p.bv[i] = randBF16(rng, 120, 126)
		}
	}
	p.c0 = make([]float32, (m-1)*ldc+n)
	for i := range p.c0 {
		p.c0[i] = sentinel
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			p.c0[i*ldc+j] = float32(rng.Float64()*2 - 1)
		}
	}
	p.bias = make([]float32, n)
	for j := range p.bias {
		p.bias[j] = float32(rng.Float64()*2 - 1)
	}
	p.pack()
	return p
}

// pack builds the pair panels from av and bv (zero past m, n and kc).
func (p *bf16Problem) pack() {
	h := (p.kc + 1) / 2
	p.a, p.b = make([]uint32, h*p.mr), make([]uint32, h*p.nr)
	for p2 := 0; p2 < h; p2++ {
		for i := 0; i < p.m; i++ {
			w := uint32(p.av[i*p.kc+2*p2])
			if 2*p2+1 < p.kc {
				w |= uint32(p.av[i*p.kc+2*p2+1]) << 16
			}
			p.a[p2*p.mr+i] = w
		}
		for j := 0; j < p.n; j++ {
			w := uint32(p.bv[2*p2*p.n+j])
			if 2*p2+1 < p.kc {
				w |= uint32(p.bv[(2*p2+1)*p.n+j]) << 16
			}
			p.b[p2*p.nr+j] = w
		}
	}
}

func (p *bf16Problem) String() string {
	return fmt.Sprintf("kc=%d m=%d n=%d ldc=%d alpha=%v beta=%v ep=%d", p.kc, p.m, p.n, p.ldc, p.alpha, p.beta, p.ep)
}

// run calls fn with the panels a and b (p's when nil), C c (a copy of c0 when nil) and bias.
func (p *bf16Problem) run(k kernel[float32], a, b []uint32, c, bias []float32) []float32 {
	if a == nil {
		a, b = p.a, p.b
	}
	if c == nil {
		c = append([]float32(nil), p.c0...)
	}
	if bias == nil {
		bias = p.bias
	}
	var ap, bp, biasp *float32
	if len(a) > 0 { // kc == 0: empty panels, not read
		ap, bp = (*float32)(unsafe.Pointer(&a[0])), (*float32)(unsafe.Pointer(&b[0]))
	}
	if len(bias) > 0 {
		biasp = &bias[0]
	}
	if k.bind != nil { // emulated: the panels, C and bias are what it may touch
		k.bind(emu.Slice("a", a), emu.Slice("b", b), emu.Slice("c", c), emu.Slice("bias", bias))
	}
	k.fn(p.kc, ap, bp, &c[0], p.ldc, p.m, p.n, p.alpha, p.beta, biasp, p.ep)
	return c
}

// words32 views float32 memory as the uint32 words it holds (no copy: the guard test's panels stay put).
func words32(f []float32) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(f))), len(f))
}

// exact is the kernel's accumulator for C(i, j) by the model, pair by pair.
func (p *bf16Problem) exact(i, j int) float32 {
	var acc float32
	for p2 := 0; p2 < (p.kc+1)/2; p2++ {
		acc = vdpbf16ps(acc, p.a[p2*p.mr+i], p.b[p2*p.nr+j])
	}
	return acc
}

// checkExact: with alpha = 1, beta = 0 and ep = 0 the kernel stores its accumulators, which must equal
// the model's bit for bit (any NaN for a NaN); nothing outside the tile is written.
func (p *bf16Problem) checkExact(t *testing.T, name string, got []float32) {
	t.Helper()
	bad := 0
	for idx, g := range got {
		i, j := idx/p.ldc, idx%p.ldc
		var want float32 = sentinel
		if i < p.m && j < p.n {
			want = p.exact(i, j)
		}
		ok := math.Float32bits(g) == math.Float32bits(want) || g != g && want != want
		if !ok {
			if bad < 5 {
				t.Errorf("%s %v: C[%d,%d] = %v (%08x), model %v (%08x)", name, p, i, j, g, math.Float32bits(g), want, math.Float32bits(want))
			}
			bad++
		}
	}
	if bad > 5 {
		t.Errorf("%s %v: %d bad elements in all", name, p, bad)
	}
}

// checkBound compares the kernel with a float64 reference of the whole epilogue within the bound of
// docs/LANGUAGE.md: |Ĉ − C| ≤ γ(kc+4)·G + (kc+4)·2^-126 with G = |α|Σ|a||b| + |β||C₀| + |bias| (no bf16
// denormal inputs here: those terms are exact zeros of the bound).
func (p *bf16Problem) checkBound(t *testing.T, name string, got []float32) {
	t.Helper()
	bad := 0
	for i := 0; i < p.m; i++ {
		for j := 0; j < p.n; j++ {
			var acc, g float64
			for q := 0; q < p.kc; q++ {
				x, y := bfv(p.av[i*p.kc+q]), bfv(p.bv[q*p.n+j])
				acc += x * y
				g += math.Abs(x * y)
			}
			v := float64(p.alpha) * acc
			g *= math.Abs(float64(p.alpha))
			if p.beta != 0 {
				c0 := float64(p.c0[i*p.ldc+j])
				v += float64(p.beta) * c0
				g += math.Abs(float64(p.beta) * c0)
			}
			if p.ep&1 != 0 {
				v += float64(p.bias[j])
				g += math.Abs(float64(p.bias[j]))
			}
			if p.ep&2 != 0 && v < 0 {
				v = 0
			}
			r := float64(got[i*p.ldc+j])
			nu := float64(p.kc+4) * 0x1p-24
			tol := nu/(1-nu)*g + float64(p.kc+4)*0x1p-126
			var ok bool
			switch {
			case math.IsNaN(v):
				ok = math.IsNaN(r)
			case math.IsInf(v, 0):
				ok = r == v
			default:
				ok = math.Abs(r-v) <= tol
			}
			if !ok {
				if bad < 5 {
					t.Errorf("%s %v: C[%d,%d] = %v, want %v (|diff| %.3g > %.3g)", name, p, i, j, r, v, math.Abs(r-v), tol)
				}
				bad++
			}
		}
	}
	for idx, x := range got {
		if i, j := idx/p.ldc, idx%p.ldc; (i >= p.m || j >= p.n) && x != sentinel {
			t.Errorf("%s %v: C[%d,%d] outside the tile was written: %v", name, p, i, j, x)
		}
	}
}

var bf16kcs = []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 17, 64, 255, 1000, 1001}

// TestBF16Differential: every kc (odd ones included: a zero high half in the last pair), edge and full
// tiles, against the model bit for bit and against float64 with the epilogue.
func TestBF16Differential(t *testing.T) {
	forBF16Modes(t, func(t *testing.T, k kernel[float32]) {
		rng := rand.New(rand.NewPCG(uint64(k.mr), 16))
		for _, kc := range bf16kcs {
			for trial := 0; trial < 16; trial++ {
				m, n := 1+rng.IntN(k.mr), 1+rng.IntN(k.nr)
				switch trial {
				case 0, 1:
					m, n = k.mr, k.nr
				case 2:
					m, n = 1, 1
				case 3:
					m, n = k.mr, 1
				case 4:
					m, n = 1, k.nr
				}
				ldc := n + rng.IntN(5)
				p := newBF16Problem(rng, k.mr, k.nr, kc, m, n, ldc, trial%2 == 0)
				p.beta = 0
				p.checkExact(t, k.name, p.run(k, nil, nil, nil, nil))
				q := newBF16Problem(rng, k.mr, k.nr, kc, m, n, ldc, false)
				q.alpha, q.beta, q.ep = float32(rng.Float64()*4-2), float32(rng.Float64()*4-2), trial%4
				if trial%3 == 0 { // beta == 0: C is not read, its NaNs do not leak
					q.beta = 0
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							q.c0[i*ldc+j] = float32(math.NaN())
						}
					}
				}
				q.checkBound(t, k.name, q.run(k, nil, nil, nil, nil))
			}
		}
	})
}

// TestBF16Special: NaN, ±Inf, bf16 denormals (read as zeros), products and sums below 2^-126 (flushed
// to zeros), overflow, at random places, against the model bit for bit; and the cases that fix the
// semantics the model encodes (each checked against a number worked out by hand).
func TestBF16Special(t *testing.T) {
	forBF16Modes(t, func(t *testing.T, k kernel[float32]) {
		rng := rand.New(rand.NewPCG(5, 6))
		specials := []uint16{0x7fc0, 0xffc1, 0x7f80, 0xff80, 0x0001, 0x807f, 0x0040, 0x0080, 0x8080, 0x7f7f, 0xff7f, 0x0000, 0x8000}
		for trial := 0; trial < 400; trial++ {
			kc := bf16kcs[1+rng.IntN(len(bf16kcs)-1)]
			m, n := 1+rng.IntN(k.mr), 1+rng.IntN(k.nr)
			p := newBF16Problem(rng, k.mr, k.nr, kc, m, n, n, trial%2 == 0)
			p.beta = 0
			for s := 0; s < 1+rng.IntN(4); s++ {
				v := specials[rng.IntN(len(specials))]
				if rng.IntN(2) == 0 {
					p.av[rng.IntN(len(p.av))] = v
				} else {
					p.bv[rng.IntN(len(p.bv))] = v
				}
			}
			if trial%5 == 0 { // tiny values everywhere: sums cross 2^-126 and flush
				for i := range p.av {
					p.av[i] = randBF16(rng, 1, 8)
				}
				for i := range p.bv {
					p.bv[i] = randBF16(rng, 120, 127)
				}
			}
			p.pack()
			p.checkExact(t, k.name, p.run(k, nil, nil, nil, nil))
		}
		// Hand-worked cases on a 1×1 tile: pair p2 adds A(2p2+1)·B(2p2+1) (hi) first, then A(2p2)·B(2p2) (lo).
		for _, c := range []struct {
			what   string
			av, bv []uint16
			want   uint32
			nan    bool // want a NaN (payload not checked)
		}{
			{what: "denormal input read as 0: 2^-133·2^100 → 0", av: []uint16{0x0040, 0}, bv: []uint16{0x7180, 0}, want: 0},
			{what: "negative denormal input read as -0: -2^-126 + (-0)", av: []uint16{0x8001, 0xbf80}, bv: []uint16{0x3f80, 0x0080}, want: 0x80800000},
			{what: "product 2^-127 below 2^-126 flushed: 2^-126·0.5", av: []uint16{0x0080, 0}, bv: []uint16{0x3f00, 0}, want: 0},
			{what: "hi first: -2^-126, then +2^-127 = -2^-127 → -0", av: []uint16{0x0080, 0x8080}, bv: []uint16{0x3f00, 0x3f80}, want: 0x80000000},
			// acc = 1; then hi 2^-25 (1 + 2^-25 → 1), lo -2^-24 → 1 - 2^-24 exactly. Lo first would give
			// 1 - 2^-24, then + 2^-25: a tie, rounded to even: 1.
			{what: "order: hi before lo", av: []uint16{0x3f80, 0, 0xb380, 0x3300}, bv: []uint16{0x3f80, 0x3f80, 0x3f80, 0x3f80}, want: 0x3f7fffff},
			{what: "overflow: max·max = +Inf", av: []uint16{0x7f7f, 0}, bv: []uint16{0x7f7f, 0}, want: 0x7f800000},
			{what: "Inf·0 = NaN", av: []uint16{0x7f80, 0}, bv: []uint16{0, 0}, nan: true},
			{what: "Inf·denormal = NaN (the denormal is 0)", av: []uint16{0x7f80, 0}, bv: []uint16{0x0001, 0}, nan: true},
		} {
			kc := len(c.av)
			p := &bf16Problem{mr: k.mr, nr: k.nr, kc: kc, m: 1, n: 1, ldc: 1, alpha: 1,
				av: c.av, bv: c.bv, c0: []float32{sentinel}, bias: []float32{0}}
			p.pack()
			got := p.run(k, nil, nil, nil, nil)[0]
			model := p.exact(0, 0)
			if c.nan {
				if got == got || model == model {
					t.Errorf("%s: got %v, model %v, want NaN", c.what, got, model)
				}
				continue
			}
			if math.Float32bits(got) != c.want || math.Float32bits(model) != c.want {
				t.Errorf("%s: got %08x, model %08x, want %08x", c.what, math.Float32bits(got), math.Float32bits(model), c.want)
			}
		}
	})
}

// TestBF16Model checks the model's rounding on its own against cases worked out by hand.
func TestBF16Model(t *testing.T) {
	for _, c := range []struct {
		acc  float32
		p    float64
		want uint32
	}{
		{1, 0x1p-24, 0x3f800000},                        // tie to even
		{1, 0x1p-24 + 0x1p-60, 0x3f800001},              // just above the tie: float64 sum lands on the tie
		{1, -0x1p-25 - 0x1p-70, 0x3f7fffff},             // below 1 the ulp halves: 1 - 2^-25 - ε rounds down
		{0x1p-126, -0x1p-151, 0x00800000},               // tininess after rounding: rounds to 2^-126, kept
		{0x1p-126, -0x1p-150, 0},                        // rounds below 2^-126: flushed
		{-0x1p-126, 0x1p-150, 0x80000000},               // flushed to -0
		{math.MaxFloat32, 0x1p103, 0x7f800000},          // halfway to 2^128: tie to even overflows
		{math.MaxFloat32, 0x1p103 - 0x1p60, 0x7f7fffff}, // just below it: stays
	} {
		if got := math.Float32bits(addRound(c.acc, c.p)); got != c.want {
			t.Errorf("addRound(%v, %v) = %08x, want %08x", c.acc, c.p, got, c.want)
		}
	}
}

// TestEmuBitExactBF16 validates the interpreter's VDPBF16PS (decoded from the BYTE line the generator
// writes) against the CPU: the bf16 kernel runs natively and emulated on the same panels, with NaNs
// carrying payloads in either operand and in C, infinities, denormals and tiny values, every epilogue,
// and the results must be identical bit for bit. It needs AVX512_BF16 (there is nothing native to compare
// with otherwise; TestBF16Differential and TestBF16Special then run the emulated kernel alone).
func TestEmuBitExactBF16(t *testing.T) {
	skipUnlessBF16(t)
	for _, k := range bf16Kernels {
		ek := k
		ek.fn, ek.bind = emulate[kernFunc[float32]](t, program(t), k.name)
		rng := rand.New(rand.NewPCG(13, 14))
		specials := []uint16{0x7fc0, 0xffc1, 0x7f81, 0xffa5, 0x7f80, 0xff80, 0x0001, 0x807f, 0x0040, 0x0080, 0x8080, 0x7f7f, 0xff7f, 0x0000, 0x8000}
		for trial := 0; trial < 200; trial++ {
			kc := bf16kcs[rng.IntN(len(bf16kcs)-2)] // up to 255
			m, n := 1+rng.IntN(k.mr), 1+rng.IntN(k.nr)
			if trial%5 == 0 {
				m, n = k.mr, k.nr
			}
			p := newBF16Problem(rng, k.mr, k.nr, kc, m, n, n+rng.IntN(3), trial%2 == 0)
			for s := 0; s < rng.IntN(6); s++ {
				v := specials[rng.IntN(len(specials))]
				if rng.IntN(2) == 0 && len(p.av) > 0 {
					p.av[rng.IntN(len(p.av))] = v
				} else if len(p.bv) > 0 {
					p.bv[rng.IntN(len(p.bv))] = v
				}
			}
			p.pack()
			p.ep = trial % 4
			switch trial % 3 {
			case 0:
				p.beta = 0
			case 1:
				p.alpha, p.beta = wild[float32](rng), wild[float32](rng)
				fill(rng, p.c0, true)
			}
			want := p.run(k, nil, nil, nil, nil)
			got := p.run(ek, nil, nil, nil, nil)
			sameBits(t, k.name+" "+p.String(), got, want)
		}
	}
}
