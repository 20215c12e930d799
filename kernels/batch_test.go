package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kgen-dev/kgen/rt"
)

// TestBmmParallelBatch runs Bmm on every variant with every loop forced parallel (MinParallelWork 1)
// on 1, 2 and 3 workers, over batch counts that take the batch-parallel version (whole products per
// worker: Bt = 2, 4, 5, 16 on two workers) and the per-product one (Bt = 1, 3), and product shapes that
// take each inner version (few rows, unpacked, packed), with a NaN and an Inf in one product. Each
// product is checked against a float64 loop, relative to Σ|a·b| with the f32 bound 2·K·2⁻²⁴.
func TestBmmParallelBatch(t *testing.T) {
	defer Use("")
	work, procs := rt.MinParallelWork, runtime.GOMAXPROCS(0)
	defer func() { rt.MinParallelWork = work; runtime.GOMAXPROCS(procs) }()
	rt.MinParallelWork = 1
	rng := rand.New(rand.NewPCG(17, 19))
	shapes := [][3]int{{2, 7, 5}, {1, 1, 1}, {8, 8, 8}, {13, 29, 31}, {33, 17, 40}, {90, 85, 97}}
	for _, w := range []int{1, 2, 3} {
		runtime.GOMAXPROCS(w)
		for _, v := range Variants() {
			if err := Use(v); err != nil {
				t.Fatal(err)
			}
			for _, bt := range []int{1, 2, 3, 4, 5, 16} {
				for si, s := range shapes {
					m, k, n := s[0], s[1], s[2]
					if bt == 16 && m*n*k > 100000 {
						continue
					}
					A, B := make([]float32, bt*m*k), make([]float32, bt*k*n)
					for i := range A {
						A[i] = rng.Float32()*2 - 1
					}
					for i := range B {
						B[i] = rng.Float32()*2 - 1
					}
					if si == 3 && bt > 1 {
						A[m*k+1] = float32(math.NaN()) // product 1, row 0
						B[k*n+n-1] = float32(math.Inf(1))
					}
					C := make([]float32, bt*m*n)
					for i := range C {
						C[i] = 12345 // bmm writes every element: none may stay
					}
					if err := Bmm(bt, m, k, n, A, B, C); err != nil {
						t.Fatal(err)
					}
					what := fmt.Sprintf("W = %d, %s, Bt = %d, %d×%d×%d", w, v, bt, m, k, n)
					if err := checkBatch(A, B, C, bt, m, k, n); err != nil {
						t.Errorf("%s: %v", what, err)
					}
				}
			}
		}
	}
}

func checkBatch(A, B, C []float32, bt, m, k, n int) error {
	for p := 0; p < bt; p++ {
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var sum, mag float64
				for q := 0; q < k; q++ {
					x := float64(A[(p*m+i)*k+q]) * float64(B[(p*k+q)*n+j])
					sum += x
					mag += math.Abs(x)
				}
				got := float64(C[(p*m+i)*n+j])
				switch {
				case math.IsNaN(sum):
					if !math.IsNaN(got) {
						return fmt.Errorf("C[%d][%d,%d] = %v, want NaN", p, i, j, got)
					}
				case math.IsInf(sum, 0): // one Inf term per sum: no Inf − Inf
					if got != sum {
						return fmt.Errorf("C[%d][%d,%d] = %v, want %v", p, i, j, got, sum)
					}
				case math.Abs(got-sum) > 2*float64(k)*0x1p-24*mag+1e-30:
					return fmt.Errorf("C[%d][%d,%d] = %v, want %v (|Σ|a·b|| = %g)", p, i, j, got, sum, mag)
				}
			}
		}
	}
	return nil
}

// TestFewRowTilesUnpacked checks the version rule of the packed GEMMs, on one worker and on two. With
// SmallWork 1 (no product is small), a product of at most 3·MR rows on one worker, 6·MR on two (three
// row tiles per worker, passes.unpackedTiles), runs the unpacked microkernel whatever its work, in K
// blocks of KC, one of more rows the packed one; with SmallWork above every product's work, all run
// unpacked with the whole K per call. All compute the product (checked as in checkBatch), with beta 0
// and with beta 0.5 (C read in the first K block only).
func TestFewRowTilesUnpacked(t *testing.T) {
	defer Use("")
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2} {
		runtime.GOMAXPROCS(procs)
		fewTilesRule(t, procs)
	}
}

// countMicros wraps the sgemm slot's packed and unpacked microkernels in counters of their calls (atomic:
// the workers call them concurrently); the caller restores the slot.
func countMicros() (packed, unpacked *atomic.Int64) {
	packed, unpacked = new(atomic.Int64), new(atomic.Int64)
	micro, microU := sgemmSlot.Micro, sgemmSlot.MicroU
	sgemmSlot.Micro = func(kc int, a, b, c []float32, ldc, m, n int, alpha, beta float32, bias []float32, ep int) {
		packed.Add(1)
		micro(kc, a, b, c, ldc, m, n, alpha, beta, bias, ep)
	}
	sgemmSlot.MicroU = func(kc int, a []float32, ars, acs int, b []float32, ldb int, c []float32, ldc, m, n int, alpha, beta float32, bias []float32, ep int) {
		unpacked.Add(1)
		microU(kc, a, ars, acs, b, ldb, c, ldc, m, n, alpha, beta, bias, ep)
	}
	return packed, unpacked
}

func fewTilesRule(t *testing.T, procs int) {
	tiles := 3 * min(procs, 2)
	for _, v := range Variants() {
		if err := Use(v); err != nil {
			t.Fatal(err)
		}
		s0 := *sgemmSlot
		packedN, unpackedN := countMicros()
		sgemmSlot.SmallWork, sgemmSlot.SmallDeep, sgemmSlot.RowsMax = 1, 1, 0
		rng := rand.New(rand.NewPCG(23, 29))
		for _, small := range []bool{false, true} {
			sgemmSlot.SmallWork = map[bool]int{false: 1, true: 1 << 40}[small]
			for _, c := range []struct{ m, k, n int }{
				{1, 37, 70}, {s0.MR - 1, 37, 70}, {s0.MR, 37, 70}, {s0.MR + 1, 37, 70}, {3 * s0.MR, 37, 70},
				{3*s0.MR + 1, 37, 70}, {s0.MR + 1, 2049, 1024}, {3 * s0.MR, 2*s0.KC + 3, 45}, {3*s0.MR + 1, 2*s0.KC + 3, 45},
				{tiles * s0.MR, 37, 70}, {tiles*s0.MR + 1, 37, 70}, {tiles * s0.MR, 2*s0.KC + 3, 45}, {tiles*s0.MR + 1, 2*s0.KC + 3, 45},
			} {
				m, k, n := c.m, c.k, c.n
				if m < 1 {
					continue
				}
				A, B, C, C0 := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n), make([]float32, m*n)
				for i := range A {
					A[i] = rng.Float32()*2 - 1
				}
				for i := range B {
					B[i] = rng.Float32()*2 - 1
				}
				for i := range C0 {
					C0[i] = rng.Float32()*2 - 1
				}
				for _, beta := range []float32{0, 0.5} {
					copy(C, C0)
					packedN.Store(0)
					unpackedN.Store(0)
					if err := Sgemm(m, k, n, A, B, C, 1, beta); err != nil {
						t.Fatal(err)
					}
					packed, unpacked := int(packedN.Load()), int(unpackedN.Load())
					for i := range C {
						C[i] -= beta * C0[i] // exact enough: |beta·C0| ≤ 0.5, within checkBatch's bound
					}
					if err := checkBatch(A, B, C, 1, m, k, n); err != nil {
						t.Errorf("%s, M = %d (MR = %d), beta %v: %v", v, m, s0.MR, beta, err)
					}
					if few := m <= tiles*s0.MR || small; few != (unpacked > 0) || few == (packed > 0) {
						t.Errorf("W = %d, %s, M = %d (MR = %d), small %v: %d packed and %d unpacked microkernel calls, want only %s ones", procs, v, m, s0.MR, small, packed, unpacked, map[bool]string{true: "unpacked", false: "packed"}[few])
					}
					kBlocks := (k + s0.KC - 1) / s0.KC
					if small {
						kBlocks = 1
					}
					if want := kBlocks * ((m + s0.MR - 1) / s0.MR) * ((n + s0.NR - 1) / s0.NR); unpacked > 0 && unpacked != want {
						t.Errorf("%s, %d×%d×%d, small %v: %d unpacked calls, want %d (%d K blocks × row tiles × column tiles)", v, m, k, n, small, unpacked, want, kBlocks)
					}
				}
			}
		}
		*sgemmSlot = s0
	}
}

// TestBmmBatched checks Bmm's batched version (passes.Batch) on every variant and one worker: a batch of
// products that are small (M·N·K ≤ SmallWork), one column tile wide (1 ≤ N ≤ NR) and above RowsMax
// rows goes through the slot's batched kernel, ⌈Bt/4⌉ calls and no unpacked one; a product one column
// wider goes through the unpacked kernel. Every product is checked against a float64 loop (checkBatch,
// NaN and Inf included) and is bit for bit the product Bmm computes alone (Bt = 1): a product's result
// does not depend on its place in the batch or on the batch count.
func TestBmmBatched(t *testing.T) {
	defer Use("")
	procs := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(procs)
	rng := rand.New(rand.NewPCG(23, 29))
	for _, v := range Variants() {
		if err := Use(v); err != nil {
			t.Fatal(err)
		}
		s := *bmmSlot
		var batched, unpacked atomic.Int64
		bmmSlot.MicroB = func(kc int, a []float32, ars, acs int, b []float32, ldb int, c []float32, ldc, m, n int, alpha, beta float32, bias []float32, ep, cnt, sa, sb, sc int) {
			batched.Add(1)
			s.MicroB(kc, a, ars, acs, b, ldb, c, ldc, m, n, alpha, beta, bias, ep, cnt, sa, sb, sc)
		}
		bmmSlot.MicroU = func(kc int, a []float32, ars, acs int, b []float32, ldb int, c []float32, ldc, m, n int, alpha, beta float32, bias []float32, ep int) {
			unpacked.Add(1)
			s.MicroU(kc, a, ars, acs, b, ldb, c, ldc, m, n, alpha, beta, bias, ep)
		}
		for trial := 0; trial < 40; trial++ {
			bt := 1 + rng.IntN(11)
			m := s.RowsMax + 1 + rng.IntN(3*s.MR)
			n := 1 + rng.IntN(s.NR)
			k := rng.IntN(40)
			wide := trial%8 == 7 // one column past the tile: the unpacked version
			if wide {
				n = s.NR + 1
			}
			if m*n*k > s.SmallWork {
				continue
			}
			A, B := make([]float32, bt*m*k), make([]float32, bt*k*n)
			for i := range A {
				A[i] = rng.Float32()*2 - 1
			}
			for i := range B {
				B[i] = rng.Float32()*2 - 1
			}
			if k > 0 && trial%5 == 0 {
				A[rng.IntN(len(A))] = float32(math.NaN())
				B[rng.IntN(len(B))] = float32(math.Inf(-1))
			}
			C := make([]float32, bt*m*n)
			for i := range C {
				C[i] = 12345
			}
			batched.Store(0)
			unpacked.Store(0)
			if err := Bmm(bt, m, k, n, A, B, C); err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("%s, Bt = %d, %d×%d×%d", v, bt, m, k, n)
			if got, want := batched.Load(), int64((bt+3)/4); !wide && (got != want || unpacked.Load() != 0) {
				t.Errorf("%s: %d batched and %d unpacked calls, want %d and 0", what, got, unpacked.Load(), want)
			}
			if wide && (batched.Load() != 0 || unpacked.Load() == 0) {
				t.Errorf("%s: %d batched and %d unpacked calls, want 0 and some", what, batched.Load(), unpacked.Load())
			}
			if err := checkBatch(A, B, C, bt, m, k, n); err != nil {
				t.Errorf("%s: %v", what, err)
			}
			one := make([]float32, m*n)
			for p := 0; p < bt; p++ {
				if err := Bmm(1, m, k, n, A[p*m*k:(p+1)*m*k], B[p*k*n:(p+1)*k*n], one); err != nil {
					t.Fatal(err)
				}
				for i, x := range one {
					if y := C[p*m*n+i]; math.Float32bits(x) != math.Float32bits(y) {
						t.Errorf("%s: product %d, C[%d] = %v in the batch, %v alone", what, p, i, y, x)
						break
					}
				}
			}
		}
		*bmmSlot = s
	}
}

// TestDeepUnpacked checks the deep version's rule (passes.deepGemm) on sgemm under every variant, on one
// and two workers: a product past SmallWork and the few-tiles limit runs the whole-K unpacked kernel
// (one call per row tile and column tile) when M·N·K ≤ SmallDeep and M·N ≤ 1024·K, else only packed
// kernels, with results within checkBatch's bound of the float64 product.
func TestDeepUnpacked(t *testing.T) {
	const deepWork = 1 << 22
	defer Use("")
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	// the deep version is on for the AVX-512 variants (target.Variant.SmallDeepWork) and never where the
	// unpacked kernel is the portable Go one
	for _, v := range Variants() {
		if err := Use(v); err != nil {
			t.Fatal(err)
		}
		goU := strings.Contains(runtime.FuncForPC(reflect.ValueOf(sgemmSlot.MicroU).Pointer()).Name(), "kernels.microUGo")
		if on, want := sgemmSlot.SmallDeep > 0, strings.HasPrefix(v, "avx512") && !goU; on != want {
			t.Errorf("%s: sgemm SmallDeep %d (portable unpacked kernel %v), want it on: %v", v, sgemmSlot.SmallDeep, goU, want)
		}
		// f64 slots take the cube whose operands have the same bytes: (4/8)^1.5 of the f32 work
		// (passes.deepWorkFor; sgemm 448³, dgemm about 317³)
		if s, d := float64(sgemmSlot.SmallDeep), float64(dgemmSlot.SmallDeep); s > 0 && math.Abs(d*math.Sqrt(8)-s) > 4 {
			t.Errorf("%s: dgemm SmallDeep %v, want sgemm's %v / √8", v, d, s)
		}
	}
	for _, procs := range []int{1, 2} {
		runtime.GOMAXPROCS(procs)
		for _, v := range Variants() {
			if err := Use(v); err != nil {
				t.Fatal(err)
			}
			s0 := *sgemmSlot
			packedN, unpackedN := countMicros()
			sgemmSlot.SmallWork, sgemmSlot.SmallDeep, sgemmSlot.RowsMax = 1, deepWork, 0
			rng := rand.New(rand.NewPCG(31, 37))
			m0 := 6*s0.MR + 1 // past the few-tiles limit on any worker count
			for _, c := range []struct {
				m, k, n int
				deep    bool
			}{
				{m0, 600, 24, true},                     // M·N ≤ 1024·K, work ≤ SmallDeep
				{m0, 2*s0.KC + 3, s0.NR + 5, true},      // K past two K blocks: still one call per tile
				{m0, 10, 1300 / m0 * 10, false},         // shallow: M·N > 1024·K
				{m0, 300, deepWork/(m0*300) + 1, false}, // work > SmallDeep
			} {
				m, k, n := c.m, c.k, c.n
				A, B, C := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
				for i := range A {
					A[i] = rng.Float32()*2 - 1
				}
				for i := range B {
					B[i] = rng.Float32()*2 - 1
				}
				packedN.Store(0)
				unpackedN.Store(0)
				if err := Sgemm(m, k, n, A, B, C, 1, 0); err != nil {
					t.Fatal(err)
				}
				if err := checkBatch(A, B, C, 1, m, k, n); err != nil {
					t.Errorf("W = %d, %s, %d×%d×%d: %v", procs, v, m, k, n, err)
				}
				packed, unpacked := int(packedN.Load()), int(unpackedN.Load())
				want := 0
				if c.deep {
					want = ((m + s0.MR - 1) / s0.MR) * ((n + s0.NR - 1) / s0.NR)
				}
				if unpacked != want || (packed > 0) == c.deep {
					t.Errorf("W = %d, %s, %d×%d×%d (deep %v): %d packed and %d unpacked calls, want %d unpacked and %s packed",
						procs, v, m, k, n, c.deep, packed, unpacked, want, map[bool]string{true: "no", false: "some"}[c.deep])
				}
			}
			*sgemmSlot = s0
		}
	}
}
