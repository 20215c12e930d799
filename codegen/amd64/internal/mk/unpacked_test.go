//go:build amd64 && !purego

package mk

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kgen-dev/kgen/codegen/amd64"
	"github.com/kgen-dev/kgen/codegen/amd64/emu"
)

// kernFuncU is the unpacked (strided) microkernel contract of docs/MICROKERNEL.md.
type kernFuncU[T float] func(kc int, a *T, ars, acs int, b *T, ldb int, c *T, ldc int, m, n int, alpha, beta T, bias *T, ep int)

type kernelU[T float] struct {
	name   string
	isa    string
	mr, nr int
	fn     kernFuncU[T]

	bind func(rs ...emu.Region) // as in kernel
}

func (k kernelU[T]) runnable() bool { return amd64.HostSupports(k.isa) }

var f32KernelsU = []kernelU[float32]{
	{name: "sgemm6x16AVX2U", isa: amd64.AVX2, mr: 6, nr: 16, fn: sgemm6x16AVX2U},
	{name: "sgemm14x32AVX512U", isa: amd64.AVX512, mr: 14, nr: 32, fn: sgemm14x32AVX512U},
	{name: "sgemm13x8AVX2U", isa: amd64.AVX2, mr: 13, nr: 8, fn: sgemm13x8AVX2U}, // test shape: AVX-512 row addressing on AVX2
}

var f64KernelsU = []kernelU[float64]{
	{name: "dgemm6x8AVX2U", isa: amd64.AVX2, mr: 6, nr: 8, fn: dgemm6x8AVX2U},
	{name: "dgemm14x16AVX512U", isa: amd64.AVX512, mr: 14, nr: 16, fn: dgemm14x16AVX512U},
	{name: "dgemm12x4AVX2U", isa: amd64.AVX2, mr: 12, nr: 4, fn: dgemm12x4AVX2U}, // test shape
}

// testShapesU are the unpacked kernels that gen adds for testing only
// (gen.TestKernelsU): AVX2 tiles taller than 6 rows, which run the row
// addressing of the AVX-512 14-row tiles on AVX2 machines.
var testShapesU = []amd64.GemmKernel{
	{Name: "sgemm13x8AVX2U", Elem: amd64.F32, ISA: amd64.AVX2, MR: 13, NR: 8, Unpacked: true},
	{Name: "dgemm12x4AVX2U", Elem: amd64.F64, ISA: amd64.AVX2, MR: 12, NR: 4, Unpacked: true},
}

// TestTablesU checks that the tables above match the generator's defaults
// plus testShapesU.
func TestTablesU(t *testing.T) {
	want := map[string]amd64.GemmKernel{}
	def := map[string]bool{}
	for _, k := range amd64.DefaultKernelsU() {
		want[k.Name], def[k.Name] = k, true
	}
	for _, k := range testShapesU {
		want[k.Name] = k
	}
	check := func(name, isa string, mr, nr int) {
		k, ok := want[name]
		if !ok || !k.Unpacked || k.ISA != isa || k.MR != mr || k.NR != nr {
			t.Errorf("%s: table says unpacked %s %dx%d, generator %+v", name, isa, mr, nr, k)
		}
		if pm, pn := amd64.TileFor(k.Elem, k.ISA); def[name] && (pm != mr || pn != nr) {
			t.Errorf("%s: tile %dx%d, TileFor says %dx%d", name, mr, nr, pm, pn)
		}
		delete(want, name)
	}
	for _, k := range f32KernelsU {
		check(k.name, k.isa, k.mr, k.nr)
	}
	for _, k := range f64KernelsU {
		check(k.name, k.isa, k.mr, k.nr)
	}
	for name := range want {
		t.Errorf("unpacked kernel %s is generated but not tested", name)
	}
}

// Layouts of the unpacked A operand.
const (
	layoutRow     = iota // ars = K' >= kc, acs = 1 (row-major A, the acs == 1 path)
	layoutTrans          // ars = 1, acs = M' >= m (transposed A)
	layoutStrided        // ars = 2K', acs = 2 (a strided view; generic path, row-major order)
	numLayouts
)

// problemU is one unpacked call. The embedded problem holds the same
// operands in packed form (the reference of check); ua and ub are the user's
// matrices, exactly as long as the strides require (the last element read is
// the last element of the slice), with NaN in the gaps between rows/columns.
type problemU[T float] struct {
	*problem[T]
	layout        int
	ars, acs, ldb int
	ua, ub        []T
}

func newProblemU[T float](rng *rand.Rand, mr, nr, kc, m, n, ldc, ldb, layout int) *problemU[T] {
	ars, acs := layoutStrides(rng, layout, kc, m)
	return newProblemUStrides[T](rng, mr, nr, kc, m, n, ldc, ldb, layout, ars, acs)
}

// layoutStrides draws A's strides for layout (an m×kc A): row-major, transposed or strided, each with a
// few elements of gap.
func layoutStrides(rng *rand.Rand, layout, kc, m int) (ars, acs int) {
	switch layout {
	case layoutRow:
		return kc + rng.IntN(4), 1
	case layoutTrans:
		return 1, m + rng.IntN(4)
	}
	return 2 * (kc + rng.IntN(4)), 2
}

// newProblemUStrides is newProblemU with A's strides given (layout only names them).
func newProblemUStrides[T float](rng *rand.Rand, mr, nr, kc, m, n, ldc, ldb, layout, ars, acs int) *problemU[T] {
	p := &problemU[T]{problem: newProblem[T](rng, mr, nr, kc, m, n, ldc), layout: layout, ldb: ldb, ars: ars, acs: acs}
	nan := T(math.NaN())
	la, lb := 1, 1 // kc == 0: nothing is read, but the pointers must be valid
	if kc > 0 {
		la = (m-1)*p.ars + (kc-1)*p.acs + 1
		lb = (kc-1)*ldb + n
	}
	p.ua, p.ub = make([]T, la), make([]T, lb)
	for i := range p.ua {
		p.ua[i] = nan
	}
	for i := range p.ub {
		p.ub[i] = nan
	}
	for q := 0; q < kc; q++ {
		for i := 0; i < m; i++ {
			p.ua[i*p.ars+q*p.acs] = p.a[q*mr+i]
		}
		for j := 0; j < n; j++ {
			p.ub[q*ldb+j] = p.b[q*nr+j]
		}
	}
	return p
}

func (p *problemU[T]) String() string {
	return fmt.Sprintf("%v ars=%d acs=%d ldb=%d", p.problem, p.ars, p.acs, p.ldb)
}

// setA and setB write one element of both copies.
func (p *problemU[T]) setA(q, i int, v T) {
	p.a[q*p.mr+i] = v
	p.ua[i*p.ars+q*p.acs] = v
}

func (p *problemU[T]) setB(q, j int, v T) {
	p.b[q*p.nr+j] = v
	p.ub[q*p.ldb+j] = v
}

// runU calls fn on the given operands (nil: p's own; C: a fresh copy of c0).
func (p *problemU[T]) runU(k kernelU[T], a, b, c, bias []T) []T {
	if a == nil {
		a = p.ua
	}
	if b == nil {
		b = p.ub
	}
	if c == nil {
		c = append([]T(nil), p.c0...)
	}
	if bias == nil {
		bias = p.bias
	}
	if k.bind != nil {
		k.bind(emu.Slice("a", a), emu.Slice("b", b), emu.Slice("c", c), emu.Slice("bias", bias))
	}
	k.fn(p.kc, &a[0], p.ars, p.acs, &b[0], p.ldb, &c[0], p.ldc, p.m, p.n, p.alpha, p.beta, &bias[0], p.ep)
	return c
}

var kcsU = []int{0, 1, 2, 3, 4, 5, 7, 17, 64, 255}

func testDifferentialU[T float](t *testing.T, k kernelU[T]) {
	rng := rand.New(rand.NewPCG(uint64(k.mr), uint64(k.nr)+100))
	for _, kc := range kcsU {
		for trial := 0; trial < 36; trial++ {
			m, n := 1+rng.IntN(k.mr), 1+rng.IntN(k.nr)
			switch trial % 12 {
			case 0, 1, 2, 3:
				m, n = k.mr, k.nr // full tile, each ep
			case 4:
				m, n = 1, 1
			case 5:
				m, n = k.mr, 1
			case 6:
				m, n = 1, k.nr
			case 7:
				m = k.mr // edge columns only
			case 8:
				n = k.nr // edge rows only
			}
			ldc := n + 1 + rng.IntN(7)
			ldb := n + 1 + rng.IntN(7)
			p := newProblemU[T](rng, k.mr, k.nr, kc, m, n, ldc, ldb, trial%numLayouts)
			p.ep = trial % 4
			switch trial % 5 {
			case 0: // beta == 0: C must not be read, NaN must not leak
				p.beta = 0
				if trial%2 == 0 {
					p.beta = T(math.Copysign(0, -1))
				}
				for i := 0; i < m; i++ {
					for j := 0; j < n; j++ {
						p.c0[i*ldc+j] = T(math.NaN())
					}
				}
			case 1:
				p.beta = 1
			}
			if trial%7 == 3 {
				p.alpha = 1
			}
			p.check(t, k.name+" "+p.String(), p.runU(k, nil, nil, nil, nil))
		}
	}
}

func TestDifferentialUF32(t *testing.T) {
	for _, k := range f32KernelsU {
		forModes(t, k.name, k.isa, func(t *testing.T, mode string) { testDifferentialU(t, k.in(t, mode)) })
	}
}

func TestDifferentialUF64(t *testing.T) {
	for _, k := range f64KernelsU {
		forModes(t, k.name, k.isa, func(t *testing.T, mode string) { testDifferentialU(t, k.in(t, mode)) })
	}
}

// testEveryRowU runs every row count m of the tile against every column class (one element, a vector
// minus one, one, plus one, the tile minus one, the whole tile) and k depths around the unroll factor,
// each with a NaN or an infinity in the last row of A (which a loop that stopped a row early would
// miss) or in B: the AVX-512 kernels have one edge k loop per m (and per column vector count), with
// accumulator sets for a few rows, which random shapes do not all reach.
func testEveryRowU[T float](t *testing.T, k kernelU[T], vl int) {
	rng := rand.New(rand.NewPCG(11, uint64(k.mr*100+k.nr)))
	var ns []int
	for _, n := range []int{1, vl - 1, vl, vl + 1, k.nr - 1, k.nr} {
		if n >= 1 && n <= k.nr && !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	trial := 0
	for m := 1; m <= k.mr; m++ {
		for _, n := range ns {
			for _, kc := range []int{0, 1, 3, 4, 5, 8, 9, 13} {
				trial++
				p := newProblemU[T](rng, k.mr, k.nr, kc, m, n, n+rng.IntN(3), n+rng.IntN(3), trial%numLayouts)
				p.ep = trial % 4
				if trial%3 == 0 {
					p.beta = 0
				}
				if trial%2 == 0 {
					p.alpha = 1
				}
				p.plantSpecial(rng, trial)
				p.check(t, k.name+" "+p.String(), p.runU(k, nil, nil, nil, nil))
			}
		}
	}
}

// plantSpecial puts, on three trials of four, a NaN, +Inf or −Inf (by trial) into B or into the last row
// of A (which a loop that stopped a row early would miss).
func (p *problemU[T]) plantSpecial(rng *rand.Rand, trial int) {
	if p.kc == 0 || trial%4 == 0 {
		return
	}
	s := T([]float64{math.NaN(), math.Inf(1), math.Inf(-1)}[trial%3])
	if trial%4 == 1 {
		p.setB(rng.IntN(p.kc), rng.IntN(p.n), s)
	} else {
		p.setA(rng.IntN(p.kc), p.m-1, s)
	}
}

func TestEveryRowU(t *testing.T) {
	for _, k := range f32KernelsU {
		forModes(t, k.name, k.isa, func(t *testing.T, mode string) { testEveryRowU(t, k.in(t, mode), amd64.VecLen(amd64.F32, k.isa)) })
	}
	for _, k := range f64KernelsU {
		forModes(t, k.name, k.isa, func(t *testing.T, mode string) { testEveryRowU(t, k.in(t, mode), amd64.VecLen(amd64.F64, k.isa)) })
	}
}

// testSpecialU injects NaN and ±Inf into A, B, C and bias.
func testSpecialU[T float](t *testing.T, k kernelU[T]) {
	rng := rand.New(rand.NewPCG(8, uint64(k.nr)))
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1)}
	for trial := 0; trial < 300; trial++ {
		kc := kcsU[rng.IntN(len(kcsU))]
		m, n := 1+rng.IntN(k.mr), 1+rng.IntN(k.nr)
		if trial%5 == 0 {
			m, n = k.mr, k.nr
		}
		p := newProblemU[T](rng, k.mr, k.nr, kc, m, n, n+1+rng.IntN(3), n+rng.IntN(3), trial%numLayouts)
		p.ep = rng.IntN(4)
		if trial%4 == 0 {
			p.beta = 0
		}
		s := T(specials[rng.IntN(len(specials))])
		switch where := rng.IntN(4); {
		case where == 0 && kc > 0:
			p.setA(rng.IntN(kc), rng.IntN(m), s)
		case where == 1 && kc > 0:
			p.setB(rng.IntN(kc), rng.IntN(n), s)
		case where == 2:
			p.c0[rng.IntN(m)*p.ldc+rng.IntN(n)] = s
		default:
			p.bias[rng.IntN(n)] = s
		}
		p.check(t, k.name+" "+p.String(), p.runU(k, nil, nil, nil, nil))
	}
}

func TestSpecialUF32(t *testing.T) {
	for _, k := range f32KernelsU {
		forModes(t, k.name, k.isa, func(t *testing.T, mode string) { testSpecialU(t, k.in(t, mode)) })
	}
}

func TestSpecialUF64(t *testing.T) {
	for _, k := range f64KernelsU {
		forModes(t, k.name, k.isa, func(t *testing.T, mode string) { testSpecialU(t, k.in(t, mode)) })
	}
}

// benchMicroU times full-tile calls with kc = 256, A row-major (ars = kc,
// acs = 1) or transposed (ars = 1, acs = MR), B with ldb = NR: the same
// L1/L2-resident data as benchMicro, read in place.
func benchMicroU[T float](b *testing.B, k kernelU[T], trans bool) {
	skipUnlessRunnable(b, k.isa)
	const kc = 256
	var z T
	_, isF64 := any(z).(float64)
	pk := measuredPeak(peakFor(k.isa, isF64))
	rng := rand.New(rand.NewPCG(1, 1))
	a, bp, c := alignedSlice[T](kc*k.mr), alignedSlice[T](kc*k.nr), alignedSlice[T](k.mr*k.nr)
	for i := range a {
		a[i] = T(rng.Float64())
	}
	for i := range bp {
		bp[i] = T(rng.Float64())
	}
	ars, acs := kc, 1
	if trans {
		ars, acs = 1, k.mr
	}
	b.ResetTimer()
	for b.Loop() {
		k.fn(kc, &a[0], ars, acs, &bp[0], k.nr, &c[0], k.nr, k.mr, k.nr, 1, 1, nil, 0)
	}
	g := float64(b.N) * float64(2*k.mr*k.nr*kc) / b.Elapsed().Seconds() / 1e9
	b.ReportMetric(g, "GFLOP/s")
	b.ReportMetric(100*g/pk, "%peak")
}

// BenchmarkMicroU runs the default unpacked kernels (not testShapesU).
func BenchmarkMicroU(b *testing.B) {
	def := map[string]bool{}
	for _, k := range amd64.DefaultKernelsU() {
		def[k.Name] = true
	}
	for _, trans := range []bool{false, true} {
		layout := "rowA"
		if trans {
			layout = "transA"
		}
		for _, k := range f32KernelsU {
			if def[k.name] {
				b.Run(k.name+"/"+layout, func(b *testing.B) { benchMicroU(b, k, trans) })
			}
		}
		for _, k := range f64KernelsU {
			if def[k.name] {
				b.Run(k.name+"/"+layout, func(b *testing.B) { benchMicroU(b, k, trans) })
			}
		}
	}
}
