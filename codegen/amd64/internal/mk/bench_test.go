//go:build amd64 && !purego

package mk

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/kgen-dev/kgen/codegen/amd64/emu"
)

// Run, e.g.:
//
//	go test ./codegen/amd64/internal/mk -run '^$' -bench . -benchtime 200ms

// alignedSlice returns n zeroed elements of T starting on a 64-byte boundary.
func alignedSlice[T float](n int) []T {
	var z T
	esz := int(unsafe.Sizeof(z))
	buf := make([]T, n+64/esz)
	off := 0
	for uintptr(unsafe.Pointer(&buf[off]))%64 != 0 {
		off++
	}
	return buf[off : off+n : off+n]
}

func peakFor(isa string, f64 bool) peak {
	for _, p := range peaks {
		if p.ISA == isa && (p.Elem == "f64") == f64 {
			return p
		}
	}
	panic("no peak kernel for " + isa)
}

var (
	peakMu    sync.Mutex
	peakCache = map[string]float64{}
)

// measuredPeak returns the FMA peak in GFLOP/s of p on this core, measured
// once per process (best of 5 runs of about 20 ms).
func measuredPeak(p peak) float64 {
	peakMu.Lock()
	defer peakMu.Unlock()
	if g, ok := peakCache[p.Name]; ok {
		return g
	}
	iters := 1 << 16
	for {
		t0 := time.Now()
		p.fn(iters)
		if time.Since(t0) > 20*time.Millisecond {
			break
		}
		iters *= 2
	}
	best := 0.0
	for r := 0; r < 5; r++ {
		t0 := time.Now()
		p.fn(iters)
		g := float64(iters) * float64(p.FlopsPerIter()) / time.Since(t0).Seconds() / 1e9
		best = math.Max(best, g)
	}
	peakCache[p.Name] = best
	return best
}

func BenchmarkPeak(b *testing.B) {
	for _, p := range peaks {
		b.Run(p.Name, func(b *testing.B) {
			skipUnlessRunnable(b, p.ISA)
			const iters = 1 << 12
			for b.Loop() {
				p.fn(iters)
			}
			b.ReportMetric(float64(b.N)*iters*float64(p.FlopsPerIter())/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// benchMicro times full-tile calls with kc = 256 on L1/L2-resident panels.
func benchMicro[T float](b *testing.B, k kernel[T]) {
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
	b.ResetTimer()
	for b.Loop() {
		k.fn(kc, &a[0], &bp[0], &c[0], k.nr, k.mr, k.nr, 1, 1, nil, 0)
	}
	g := float64(b.N) * float64(2*k.mr*k.nr*kc) / b.Elapsed().Seconds() / 1e9
	b.ReportMetric(g, "GFLOP/s")
	b.ReportMetric(100*g/pk, "%peak")
}

func BenchmarkMicro(b *testing.B) {
	for _, k := range f32Kernels {
		b.Run(k.name, func(b *testing.B) { benchMicro(b, k) })
	}
	for _, k := range f64Kernels {
		b.Run(k.name, func(b *testing.B) { benchMicro(b, k) })
	}
	// The bf16 kernel: kc = 256 k steps are 128 pair words (its %peak is against the f32 FMA peak: two
	// k steps per VDPBF16PS can reach 200%).
	for _, k := range bf16Kernels {
		b.Run(k.name, func(b *testing.B) {
			skipUnlessBF16(b)
			benchMicro(b, k)
		})
	}
}

// blocking holds BLIS cache-block sizes (MC multiple of MR, NC multiple of NR).
type blocking struct{ mc, kc, nc int }

func blockingFor[T float](k kernel[T]) blocking {
	var z T
	if _, ok := any(z).(float64); ok {
		return blocking{mc: k.mr * (96 / k.mr), kc: 256, nc: 4096}
	}
	return blocking{mc: k.mr * (144 / k.mr), kc: 256, nc: 4096}
}

// workspace holds the 64-byte aligned packing buffers, reused across calls.
type workspace[T float] struct{ ap, bp []T }

func (w *workspace[T]) get(k kernel[T], bl blocking) (ap, bp []T) {
	na := ((bl.mc + k.mr - 1) / k.mr) * k.mr * bl.kc
	nb := ((bl.nc + k.nr - 1) / k.nr) * k.nr * bl.kc
	if len(w.ap) < na {
		w.ap = alignedSlice[T](na)
	}
	if len(w.bp) < nb {
		w.bp = alignedSlice[T](nb)
	}
	return w.ap, w.bp
}

// gemmBLIS computes C = A·B (row-major, m×k times k×n, strides lda, ldb, ldc)
// with the five BLIS loops in Go around the microkernel: B packed into
// kc×NR panels, A into MR×kc panels, both 64-byte aligned.
func gemmBLIS[T float](k kernel[T], bl blocking, ws *workspace[T], m, n, kk int, A []T, lda int, B []T, ldb int, C []T, ldc int) {
	mr, nr := k.mr, k.nr
	ap, bp := ws.get(k, bl)
	if k.bind != nil { // emulated: the packed panels and C are what it may touch
		k.bind(emu.Slice("ap", ap), emu.Slice("bp", bp), emu.Slice("C", C))
	}
	for jc := 0; jc < n; jc += bl.nc {
		nc := min(bl.nc, n-jc)
		for pc := 0; pc < kk; pc += bl.kc {
			kc := min(bl.kc, kk-pc)
			packB(bp, B, ldb, pc, jc, kc, nc, nr)
			var beta T
			if pc > 0 {
				beta = 1
			}
			for ic := 0; ic < m; ic += bl.mc {
				mc := min(bl.mc, m-ic)
				packA(ap, A, lda, ic, pc, mc, kc, mr)
				for jr := 0; jr < nc; jr += nr {
					for ir := 0; ir < mc; ir += mr {
						k.fn(kc, &ap[ir*kc], &bp[jr*kc], &C[(ic+ir)*ldc+jc+jr], ldc,
							min(mr, mc-ir), min(nr, nc-jr), 1, beta, nil, 0)
					}
				}
			}
		}
	}
}

// packA packs A[ic:ic+mc, pc:pc+kc] into MR×kc column-major micro-panels,
// zero-padding the last panel's rows.
func packA[T float](ap, A []T, lda, ic, pc, mc, kc, mr int) {
	for ir := 0; ir < mc; ir += mr {
		panel := ap[ir*kc : ir*kc+mr*kc]
		rows := min(mr, mc-ir)
		for i := 0; i < mr; i++ {
			if i >= rows {
				for p := 0; p < kc; p++ {
					panel[p*mr+i] = 0
				}
				continue
			}
			src := A[(ic+ir+i)*lda+pc : (ic+ir+i)*lda+pc+kc]
			for p, x := range src {
				panel[p*mr+i] = x
			}
		}
	}
}

// packB packs B[pc:pc+kc, jc:jc+nc] into kc×NR row-major micro-panels,
// zero-padding the last panel's columns.
func packB[T float](bp, B []T, ldb, pc, jc, kc, nc, nr int) {
	for jr := 0; jr < nc; jr += nr {
		panel := bp[jr*kc : jr*kc+nr*kc]
		cols := min(nr, nc-jr)
		for p := 0; p < kc; p++ {
			dst := panel[p*nr : p*nr+nr]
			copy(dst, B[(pc+p)*ldb+jc+jr:(pc+p)*ldb+jc+jr+cols])
			clear(dst[cols:])
		}
	}
}

// testBLIS checks the Go driver + microkernel against a naive GEMM on odd sizes.
func testBLIS[T float](t *testing.T, k kernel[T]) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, sz := range [][3]int{{1, 1, 1}, {k.mr + 1, k.nr + 3, 300}, {37, 53, 519}, {100, 100, 100}} {
		m, n, kk := sz[0], sz[1], sz[2]
		A, B, C := make([]T, m*kk), make([]T, kk*n), make([]T, m*n)
		for i := range A {
			A[i] = T(rng.Float64()*2 - 1)
		}
		for i := range B {
			B[i] = T(rng.Float64()*2 - 1)
		}
		for i := range C {
			C[i] = T(math.NaN()) // beta = 0 on the first k block
		}
		bl := blocking{mc: 2 * k.mr, kc: 64, nc: 2 * k.nr} // small blocks: exercise every loop
		gemmBLIS(k, bl, new(workspace[T]), m, n, kk, A, kk, B, n, C, n)
		u := unitRoundoff[T]()
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var r, g float64
				for p := 0; p < kk; p++ {
					x, y := float64(A[i*kk+p]), float64(B[p*n+j])
					r += x * y
					g += math.Abs(x * y)
				}
				if got := float64(C[i*n+j]); !(math.Abs(got-r) <= 2*float64(kk+4)*u*g) {
					t.Fatalf("%s %dx%dx%d: C[%d,%d] = %v, want %v", k.name, m, n, kk, i, j, got, r)
				}
			}
		}
	}
}

func TestBLISDriver(t *testing.T) {
	for _, k := range f32Kernels {
		forModes(t, k.name, k.isa, func(t *testing.T, mode string) { testBLIS(t, k.in(t, mode)) })
	}
	for _, k := range f64Kernels {
		forModes(t, k.name, k.isa, func(t *testing.T, mode string) { testBLIS(t, k.in(t, mode)) })
	}
}

func benchGEMM[T float](b *testing.B, k kernel[T], n int) {
	skipUnlessRunnable(b, k.isa)
	var z T
	_, isF64 := any(z).(float64)
	pk := measuredPeak(peakFor(k.isa, isF64))
	rng := rand.New(rand.NewPCG(1, 2))
	A, B, C := make([]T, n*n), make([]T, n*n), make([]T, n*n)
	for i := range A {
		A[i] = T(rng.Float64())
		B[i] = T(rng.Float64())
	}
	bl := blockingFor(k)
	ws := new(workspace[T])
	gemmBLIS(k, bl, ws, n, n, n, A, n, B, n, C, n) // warm up, allocate buffers
	b.ResetTimer()
	for b.Loop() {
		gemmBLIS(k, bl, ws, n, n, n, A, n, B, n, C, n)
	}
	g := float64(b.N) * 2 * float64(n) * float64(n) * float64(n) / b.Elapsed().Seconds() / 1e9
	b.ReportMetric(g, "GFLOP/s")
	b.ReportMetric(100*g/pk, "%peak")
}

func BenchmarkGEMM(b *testing.B) {
	for _, n := range []int{512, 1024} {
		for _, k := range f32Kernels {
			b.Run(fmt.Sprintf("%s/n=%d", k.name, n), func(b *testing.B) { benchGEMM(b, k, n) })
		}
		for _, k := range f64Kernels {
			b.Run(fmt.Sprintf("%s/n=%d", k.name, n), func(b *testing.B) { benchGEMM(b, k, n) })
		}
	}
}
