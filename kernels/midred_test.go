package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/f16"
	"github.com/kgen-dev/kgen/rt"
)

// The strided reductions (colsum, sum_mid, max_mid, ...): the interchange pass makes their loops over the
// contiguous output axis unit-stride, so they run as vector loops (docs/DESIGN.md, passes/interchange.go).

var stridedReductions = []string{"colsum", "dcolsum", "colsum_acc", "sum_mid", "max_mid", "hsum_mid", "batch_stats"}

// TestStridedReductionSlots is a static check of the generated files, whatever GOARCH runs it: every
// vector loop of the strided reductions has an AVX2, an AVX-512 and a NEON routine that the avx2, the
// avx512 (and avx512bf16) and the neon variants install, and the row update (the loop that adds U rows of A at once, vloop_<kernel>_1) reads
// its rows from memory in vector instructions.
func TestStridedReductionSlots(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	amdS, amdGo, armS, armGo := read("kgen_amd64.s"), read("kgen_amd64.go"), read("kgen_arm64.s"), read("kgen_arm64.go")
	body := func(src, name string) string {
		i := strings.Index(src, "TEXT ·"+name+"(SB)")
		if i < 0 {
			return ""
		}
		s := src[i:]
		if j := strings.Index(s[1:], "\nTEXT "); j >= 0 {
			s = s[:j+1]
		}
		return s
	}
	for _, k := range stridedReductions {
		src := read(k + ".go")
		slots := regexp.MustCompile(`(?m)^var (vloop_`+k+`_\d+) func`).FindAllStringSubmatch(src, -1)
		if len(slots) < 3 {
			t.Errorf("%s: %d vector-loop slots, want at least 3 (initialise, update, remainder rows)", k, len(slots))
		}
		for _, s := range slots {
			v := s[1]
			if body(amdS, v+"AVX2") == "" {
				t.Errorf("%s: no AVX2 routine %sAVX2", k, v)
			}
			if n := strings.Count(amdGo, v+" = "+v+"AVX2Slot"); n != 1 {
				t.Errorf("%s: %sAVX2Slot installed by %d amd64 variants, want 1 (avx2)", k, v, n)
			}
			if body(amdS, v+"AVX512") == "" {
				t.Errorf("%s: no AVX-512 routine %sAVX512", k, v)
			}
			if n := strings.Count(amdGo, v+" = "+v+"AVX512Slot"); n != 2 {
				t.Errorf("%s: %sAVX512Slot installed by %d amd64 variants, want 2 (avx512, avx512bf16)", k, v, n)
			}
			if body(armS, v+"NEON") == "" {
				t.Errorf("%s: no NEON routine %sNEON", k, v)
			}
			if !strings.Contains(armGo, v+" = "+v+"NEONSlot") {
				t.Errorf("%s: %sNEONSlot not installed by the neon variant", k, v)
			}
		}
	}
	// The update of colsum adds 8 rows per pass over the block: 8 VADDPS from memory per 8 lanes (AVX2);
	// per 4 lanes 8 post-incremented row loads and 8 FADD .4S (NEON).
	upd := body(amdS, "vloop_colsum_1AVX2")
	if n := len(regexp.MustCompile(`VADDPS\s+\(\w+\)\(AX\*1\), Y\d+, Y\d+`).FindAllString(upd, -1)); n < 8 {
		t.Errorf("vloop_colsum_1AVX2: %d VADDPS from memory at offset 0, want 8:\n%s", n, upd)
	}
	upd = body(armS, "vloop_colsum_1NEON")
	ld := len(regexp.MustCompile(`VLD1\.P\s+16\(R\d+\), \[V\d+\.S4\]`).FindAllString(upd, -1))
	add := len(regexp.MustCompile(`// fadd v\d+\.4s, v\d+\.4s, v\d+\.4s`).FindAllString(upd, -1))
	if ld < 8 || add < 8 {
		t.Errorf("vloop_colsum_1NEON: %d post-incremented loads and %d FADD .4S, want at least 8 of each:\n%s", ld, add, upd)
	}
	if !regexp.MustCompile(`VMAXPS|// fmax v`).MatchString(body(amdS, "vloop_max_mid_1AVX2") + body(armS, "vloop_max_mid_1NEON")) {
		t.Errorf("max_mid's update has no vector max")
	}
}

// midredCase is one strided reduction with its inputs and a plain Go reference that sums in the
// definition's order (j ascending from the identity) in the storage precision.
type midredCase struct {
	name string
	run  func() ([]float64, error)
	ref  []float64
	tol  float64 // 0: bit-identical (NaN as NaN, ±0 as equal)
}

func midredCases(rng *rand.Rand, m, n, k int, special bool) []midredCase {
	gen := func(size int) []float32 {
		s := make([]float32, size)
		for i := range s {
			s[i] = float32(rng.NormFloat64())
			if special && rng.IntN(97) == 0 {
				s[i] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1))}[rng.IntN(4)]
			}
		}
		return s
	}
	f64s := func(s []float32) []float64 {
		out := make([]float64, len(s))
		for i, v := range s {
			out[i] = float64(v)
		}
		return out
	}
	A2 := gen(m * n)     // [m, n]
	A3 := gen(m * n * k) // [m, n, k]
	var cs []midredCase

	colsum := make([]float32, n)
	for j := range n {
		var acc float32
		for i := range m {
			acc += A2[i*n+j]
		}
		colsum[j] = acc
	}
	cs = append(cs, midredCase{name: "colsum", ref: f64s(colsum), run: func() ([]float64, error) {
		s := gen(n)
		err := Colsum(m, n, A2, s)
		return f64s(s), err
	}})

	D := make([]float64, m*n)
	for i := range D {
		D[i] = float64(A2[i]) * 1.25
	}
	dref := make([]float64, n)
	for j := range n {
		var acc float64
		for i := range m {
			acc += D[i*n+j]
		}
		dref[j] = acc
	}
	cs = append(cs, midredCase{name: "dcolsum", ref: dref, run: func() ([]float64, error) {
		s := make([]float64, n)
		err := Dcolsum(m, n, D, s)
		return s, err
	}})

	s0 := gen(n)
	accRef := make([]float32, n)
	for j := range n {
		accRef[j] = s0[j] + colsum[j]
	}
	cs = append(cs, midredCase{name: "colsum_acc", ref: f64s(accRef), run: func() ([]float64, error) {
		s := slices.Clone(s0)
		err := ColsumAcc(m, n, A2, s)
		return f64s(s), err
	}})

	sum, mx := make([]float32, m*k), make([]float32, m*k)
	h := make([]f16.F16, m*n*k)
	for i := range h {
		h[i] = f16.FromFloat32(A3[i])
	}
	hs := make([]float64, m*k)
	for i := range m {
		for kk := range k {
			var acc, hacc float32
			best := float32(math.Inf(-1))
			for j := range n {
				x := A3[(i*n+j)*k+kk]
				acc += x
				hacc += h[(i*n+j)*k+kk].Float32()
				if x != x || best != best {
					best = float32(math.NaN())
				} else {
					best = max(best, x)
				}
			}
			sum[i*k+kk], mx[i*k+kk] = acc, best
			hs[i*k+kk] = float64(f16.FromFloat32(hacc).Float32())
		}
	}
	cs = append(cs, midredCase{name: "sum_mid", ref: f64s(sum), run: func() ([]float64, error) {
		o := gen(m * k)
		err := SumMid(m, n, k, A3, o)
		return f64s(o), err
	}})
	cs = append(cs, midredCase{name: "max_mid", ref: f64s(mx), run: func() ([]float64, error) {
		o := gen(m * k)
		err := MaxMid(m, n, k, A3, o)
		return f64s(o), err
	}})
	cs = append(cs, midredCase{name: "hsum_mid", ref: hs, run: func() ([]float64, error) {
		o := make([]f16.F16, m*k)
		err := HsumMid(m, n, k, h, o)
		out := make([]float64, len(o))
		for i, v := range o {
			out[i] = float64(v.Float32())
		}
		return out, err
	}})

	// batch_stats over the m rows of A2: the mean is exact; the variance's (x-mean)² + acc may contract
	// to one FMA on the SIMD variants.
	mean, vr := make([]float32, n), make([]float32, n)
	for c := range n {
		var acc float32
		for b := range m {
			acc += A2[b*n+c]
		}
		mean[c] = acc / float32(m)
		var v float32
		for b := range m {
			d := A2[b*n+c] - mean[c]
			v += float32(d * d)
		}
		vr[c] = v / float32(m)
	}
	stats := func() ([]float32, []float32, error) {
		mu, v := gen(n), gen(n)
		err := BatchStats(m, n, A2, mu, v)
		return mu, v, err
	}
	cs = append(cs, midredCase{name: "batch_stats.mean", ref: f64s(mean), run: func() ([]float64, error) {
		mu, _, err := stats()
		return f64s(mu), err
	}})
	cs = append(cs, midredCase{name: "batch_stats.vr", ref: f64s(vr), tol: 1e-5 * math.Sqrt(float64(m)), run: func() ([]float64, error) {
		_, v, err := stats()
		return f64s(v), err
	}})
	return cs
}

// TestStridedReductionVariants runs every variant (avx512, avx2, go on amd64; neon, go on arm64; go
// under purego) on shapes that span several output blocks (N = 4099 columns, K = 2051) with ragged row
// counts, with NaN, ±Inf and -0 sprinkled in, and checks each against a plain Go loop summing in the
// definition's order: bit-identical (all but batch_stats' variance, which may use FMA). The second
// round forces every parallel loop onto 3 workers (column blocks of colsum, rows of sum_mid).
func TestStridedReductionVariants(t *testing.T) {
	defer Use("")
	work, procs := rt.MinParallelWork, runtime.GOMAXPROCS(0)
	restore := func() { rt.MinParallelWork = work; runtime.GOMAXPROCS(procs) }
	defer restore()
	for _, sh := range []struct{ m, n, k int }{{1, 1, 1}, {7, 9, 5}, {9, 4099, 3}, {37, 33, 2051}, {3, 17, 2049}, {2, 6151, 1}} {
		for round := range 4 {
			special := round%2 == 1
			if round == 2 {
				rt.MinParallelWork = 1
				runtime.GOMAXPROCS(3)
			}
			seed := uint64(sh.m*1000003 + sh.n*1009 + sh.k)
			for _, v := range Variants() {
				rng := rand.New(rand.NewPCG(seed, 5))
				for _, c := range midredCases(rng, sh.m, sh.n, sh.k, special) {
					if err := Use(v); err != nil {
						t.Fatal(err)
					}
					got, err := c.run()
					if err != nil {
						t.Fatal(err)
					}
					if err := sameValues(got, c.ref, c.tol); err != nil {
						t.Errorf("%s, variant %s, m=%d n=%d k=%d special=%v parallel=%v: %v", c.name, v, sh.m, sh.n, sh.k, special, round >= 2, err)
					}
				}
			}
		}
		restore()
	}
}

func sameValues(got, want []float64, tol float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d values, want %d", len(got), len(want))
	}
	for i := range want {
		x, y := got[i], want[i]
		switch {
		case x != x || y != y:
			if (x != x) != (y != y) {
				return fmt.Errorf("[%d] = %v, want %v", i, x, y)
			}
		case tol == 0 || math.IsInf(x, 0) || math.IsInf(y, 0):
			if x != y {
				return fmt.Errorf("[%d] = %v, want %v", i, x, y)
			}
		case math.Abs(x-y) > tol*max(1, math.Abs(y)):
			return fmt.Errorf("[%d] = %v, want %v (tolerance %g)", i, x, y, tol)
		}
	}
	return nil
}
