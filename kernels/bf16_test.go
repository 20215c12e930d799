package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/f16"
	"github.com/kgen-dev/kgen/kgentest"
)

// bf16 GEMMs across variants. The generated TestBgemm/TestBgemmBf16 run the interpreter's shapes (ones,
// primes, K past the K block, NaN/Inf, guard pages); these add what they do not: bf16 denormal inputs,
// whose behaviour differs by variant (docs/LANGUAGE.md): the f32-panel variants widen them exactly and
// keep their products, the avx512bf16 variant (VDPBF16PS) reads them as zeros; and a GEMM large enough
// for several blocks of the loops, with an odd K (an odd last K block on every variant).

// TestBgemmDenormal: C = A·B where each row of A holds one denormal bf16 d (2^-130 · (1 + m/128)) and
// B scales it by 2^100, so the product d·2^100 is a normal f32. Every variant but avx512bf16 must give
// it exactly; avx512bf16 must give zero (DAZ).
func TestBgemmDenormal(t *testing.T) {
	defer Use("")
	const M, K, N = 20, 37, 40
	A := make([]f16.BF16, M*K)
	B := make([]f16.BF16, K*N)
	for i := 0; i < M; i++ {
		A[i*K+(i*7)%K] = f16.BF16(0x0008 | uint16(i)) // exponent 0: denormal
	}
	for p := 0; p < K; p++ {
		for j := 0; j < N; j++ {
			B[p*N+j] = f16.BF16FromFloat64(0x1p100)
		}
	}
	for _, v := range Variants() {
		if err := Use(v); err != nil {
			t.Fatal(err)
		}
		C := make([]float32, M*N)
		if err := Bgemm(M, K, N, A, B, C, 1, 0); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < M; i++ {
			d := A[i*K+(i*7)%K].Float32()
			want := float32(float64(d) * 0x1p100)
			if v == "avx512bf16" {
				want = 0
			}
			for j := 0; j < N; j++ {
				if C[i*N+j] != want {
					t.Fatalf("%s: C[%d,%d] = %v, want %v (A holds the denormal %v)", v, i, j, C[i*N+j], want, d)
				}
			}
		}
	}
}

// TestBgemmLarge: 230×1001×300 (several MC, NC and K blocks on every variant, odd K) against float64,
// bgemm with alpha and beta, bgemm_bf16 within one bf16 rounding more.
func TestBgemmLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large")
	}
	defer Use("")
	const M, K, N = 230, 1001, 300
	rng := rand.New(rand.NewPCG(3, 1))
	A := make([]f16.BF16, M*K)
	B := make([]f16.BF16, K*N)
	for i := range A {
		A[i] = f16.BF16FromFloat64(rng.Float64()*2 - 1)
	}
	for i := range B {
		B[i] = f16.BF16FromFloat64(rng.Float64()*2 - 1)
	}
	C0 := make([]float32, M*N)
	c0 := make([]float64, M*N)
	for i := range C0 {
		C0[i] = float32(rng.Float64()*2 - 1)
		c0[i] = float64(C0[i])
	}
	a := func(i, p int) float64 { return float64(A[i*K+p].Float32()) }
	b := func(p, j int) float64 { return float64(B[p*N+j].Float32()) }
	want, mag := refGemm(M, K, N, a, b, c0, 1.5, -0.5)
	want1, mag1 := refGemm(M, K, N, a, b, make([]float64, M*N), 1, 0)
	for _, v := range Variants() {
		Use(v)
		C := slices.Clone(C0)
		if err := Bgemm(M, K, N, A, B, C, 1.5, -0.5); err != nil {
			t.Fatal(err)
		}
		checkClose(t, v+" bgemm", func(x int) float64 { return float64(C[x]) }, want, mag, K, 0x1p-24)
		H := make([]f16.BF16, M*N)
		if err := BgemmBf16(M, K, N, A, B, H); err != nil {
			t.Fatal(err)
		}
		for x := range want1 {
			g := float64(H[x].Float32())
			if d := math.Abs(g - want1[x]); d > 4*float64(K+2)*0x1p-24*mag1[x]+0x1p-7*math.Abs(want1[x]) {
				t.Fatalf("%s bgemm_bf16: element %d = %v, want %v", v, x, g, want1[x])
			}
		}
	}
}

// TestPairPackers checks the bf16 pair packers (codegen/bf16.go) on any CPU against their definitions:
// every word of every panel for odd and even depths and partial panels, zero padding included, and no
// word past ⌈depth/2⌉ rows of a panel written.
func TestPairPackers(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	const sentinel = 0xdeadbeef
	for _, depth := range []int{1, 2, 3, 8, 11} {
		for _, panel := range []int{1, 4, 14} {
			for _, n := range []int{1, panel - 1, panel, 2*panel + 3} {
				if n < 1 {
					continue
				}
				ld := n + rng.IntN(3)
				src := make([]f16.BF16, (depth-1)*ld+n+ld*n) // room for both layouts
				for i := range src {
					src[i] = f16.BF16(rng.Uint32())
				}
				pair := func(lo, hi int, has bool) uint32 {
					w := uint32(src[lo])
					if has {
						w |= uint32(src[hi]) << 16
					}
					return w
				}
				h := (depth + 1) / 2
				np := (n + panel - 1) / panel
				// packPB: B rows along the panel, all panels of the block.
				dst := make([]float32, np*panel*depth)
				for i := range dst {
					dst[i] = math.Float32frombits(sentinel)
				}
				packPBPairBF16(dst, src, ld, n, panel, depth)
				for p := 0; p < np; p++ {
					for d2 := 0; d2 < depth; d2++ {
						for q := 0; q < panel; q++ {
							got := math.Float32bits(dst[p*panel*depth+d2*panel+q])
							want := uint32(sentinel)
							col := p*panel + q
							switch {
							case d2 < h && col < n:
								want = pair(2*d2*ld+col, (2*d2+1)*ld+col, 2*d2+1 < depth)
							case d2 < h:
								want = 0
							}
							if got != want {
								t.Fatalf("packPB depth %d panel %d n %d: panel %d word (%d, %d) = %08x, want %08x", depth, panel, n, p, d2, q, got, want)
							}
						}
					}
				}
				// packD: one panel of A rows along the depth, w = min(n, panel) rows.
				w := min(n, panel)
				dst = dst[:panel*depth]
				for i := range dst {
					dst[i] = math.Float32frombits(sentinel)
				}
				packDPairBF16(dst, src, ld, w, panel, depth)
				for d2 := 0; d2 < depth; d2++ {
					for q := 0; q < panel; q++ {
						got := math.Float32bits(dst[d2*panel+q])
						want := uint32(sentinel)
						switch {
						case d2 < h && q < w:
							want = pair(q*ld+2*d2, q*ld+2*d2+1, 2*d2+1 < depth)
						case d2 < h:
							want = 0
						}
						if got != want {
							t.Fatalf("packD depth %d panel %d w %d: word (%d, %d) = %08x, want %08x", depth, panel, w, d2, q, got, want)
						}
					}
				}
			}
		}
	}
}

// BenchmarkBgemm: bgemm n³ (n = 512, 1024, 2048) under every variant, interleaved per size: on CPUs with
// AVX512_BF16, avx512bf16 (VDPBF16PS on pair panels) against avx512 (the same tile on f32 panels).
// docs/PERF.md has the command and figures.
func BenchmarkBgemm(b *testing.B) {
	defer Use("")
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{512, 1024, 2048} {
		A, B := make([]f16.BF16, n*n), make([]f16.BF16, n*n)
		for i := range A {
			A[i] = f16.BF16FromFloat64(rng.Float64()*2 - 1)
			B[i] = f16.BF16FromFloat64(rng.Float64()*2 - 1)
		}
		C := make([]float32, n*n)
		for _, v := range Variants() {
			if v == "go" && n > 512 {
				continue
			}
			b.Run(fmt.Sprintf("%s/%d", v, n), func(b *testing.B) {
				Use(v)
				b.ResetTimer()
				for range b.N {
					if err := Bgemm(n, n, n, A, B, C, 1, 0); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkBgemmRatio times avx512bf16 and avx512 call by call, alternating, for n = 512, 1024, 2048
// (11, 7, 5 rounds per b.N), and reports each variant's best and median GFLOP/s and the ratio of the
// best times: on a shared host the fastest of interleaved calls is the least disturbed comparison.
func BenchmarkBgemmRatio(b *testing.B) {
	if !slices.Contains(Variants(), "avx512bf16") {
		b.Skip("no avx512bf16 variant on this CPU")
	}
	defer Use("")
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{512, 1024, 2048} {
		A, B := make([]f16.BF16, n*n), make([]f16.BF16, n*n)
		for i := range A {
			A[i] = f16.BF16FromFloat64(rng.Float64()*2 - 1)
			B[i] = f16.BF16FromFloat64(rng.Float64()*2 - 1)
		}
		C := make([]float32, n*n)
		rounds := map[int]int{512: 11, 1024: 7, 2048: 5}[n]
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			vs := []string{"avx512bf16", "avx512"}
			times := make([][]float64, len(vs))
			b.ResetTimer()
			for range b.N {
				for r := 0; r < rounds; r++ {
					for i, v := range vs {
						Use(v)
						t0 := time.Now()
						if err := Bgemm(n, n, n, A, B, C, 1, 0); err != nil {
							b.Fatal(err)
						}
						times[i] = append(times[i], time.Since(t0).Seconds())
					}
				}
			}
			flop := 2 * float64(n) * float64(n) * float64(n)
			for i, v := range vs {
				slices.Sort(times[i])
				b.ReportMetric(flop/times[i][0]/1e9, v+"-best-GFLOP/s")
				b.ReportMetric(flop/times[i][len(times[i])/2]/1e9, v+"-median-GFLOP/s")
			}
			b.ReportMetric(times[1][0]/times[0][0], "ratio-best")
			b.ReportMetric(times[1][len(times[1])/2]/times[0][len(times[0])/2], "ratio-median")
		})
	}
}

// TestBF16PackPB checks the packPBBF16 each variant installs (f32 panels, or bf16 pair panels in the
// variants named …bf16, whose microkernels take pairs) against its definition: every panel word for
// panel widths with and without an 8-column tail, partial last panels, odd and even depths and padded
// rows, the source ending at a guard page (a read past it faults), the destination pre-filled with a
// sentinel that only the words the format defines may overwrite.
func TestBF16PackPB(t *testing.T) {
	defer Use("")
	rng := rand.New(rand.NewPCG(3, 9))
	const sentinel = 0xdeadbeef
	for _, v := range Variants() {
		if err := Use(v); err != nil {
			t.Fatal(err)
		}
		pair := strings.HasSuffix(v, "bf16")
		for _, panel := range []int{1, 3, 8, 14, 16, 17, 32} {
			for _, n := range []int{1, 7, panel - 1, panel, panel + 1, 3*panel + 5, 41} {
				if n < 1 {
					continue
				}
				np := (n + panel - 1) / panel
				for _, depth := range []int{1, 2, 3, 8, 33} {
					for _, pad := range []int{0, 5} {
						ld := n + pad
						src, freeSrc := kgentest.Guarded[f16.BF16]((depth-1)*ld+n, true)
						for i := range src {
							src[i] = f16.BF16(rng.Uint32())
						}
						dst := make([]float32, np*panel*depth)
						for i := range dst {
							dst[i] = math.Float32frombits(sentinel)
						}
						packPBBF16(dst, src, ld, n, panel, depth)
						h := (depth + 1) / 2
						for p := 0; p < np; p++ {
							for d := 0; d < depth; d++ {
								for q := 0; q < panel; q++ {
									col := p*panel + q
									want := uint32(sentinel)
									switch {
									case pair && d < h && col < n:
										want = uint32(src[2*d*ld+col])
										if 2*d+1 < depth {
											want |= uint32(src[(2*d+1)*ld+col]) << 16
										}
									case pair && d < h:
										want = 0
									case !pair && col < n:
										want = uint32(src[d*ld+col]) << 16
									case !pair:
										want = 0
									}
									if got := math.Float32bits(dst[p*panel*depth+d*panel+q]); got != want {
										t.Fatalf("%s (pair %v): packPBBF16 panel %d n %d depth %d ld %d: panel %d row %d col %d = %08x, want %08x",
											v, pair, panel, n, depth, ld, p, d, q, got, want)
									}
								}
							}
						}
						freeSrc()
					}
				}
			}
		}
	}
}
