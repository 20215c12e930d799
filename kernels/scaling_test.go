package kernels

import (
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// scalingFloor is the least share of the host's two-core speed-up that Sgemm's must reach in
// TestTwoCoreScaling (KGEN_SCALING_FLOOR overrides it). It is set from the figures at hand, not from a
// quiet-host run of this test (session 5's host was loaded throughout, docs/PERF.md "Zen 5 (issue 14,
// session 5)"): a GEMM that stops running in parallel reaches 0.5 on a host whose threads scale 2×, and
// the 1.68× that sgemm 2048 had on two idle Zen 5 cores in session 3 is 0.84; 0.7 (1.4×) leaves room
// for a shared CI host.
const scalingFloor = 0.7

// refSpeedupMin is the host's two-core speed-up below which TestTwoCoreScaling skips: other jobs hold
// the second core, and no GEMM figure could be read from the run.
const refSpeedupMin = 1.5

// TestTwoCoreScaling guards two-core scaling of the packed GEMM. Each round it times, alternating, a
// reference job on one goroutine and on two (independent arithmetic, no memory traffic, no
// synchronisation: what the host gives two threads right now) and Sgemm 2048³ and 40 × 256³ on one worker and on two
// (GOMAXPROCS 1 and 2); each figure is the fastest of the rounds. The GEMM's speed-up must be at least
// scalingFloor times the reference's, in one of three attempts: a ratio measured in one run against the
// host's own parallelism, never an absolute time, so a busy CI host that gives the second core to others
// lowers both. Below refSpeedupMin for the reference it skips, saying so. It also checks that the
// two-core product is the one-core product.
func TestTwoCoreScaling(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test: skipped with -short")
	}
	if emulated() {
		t.Skip("user-mode emulation (qemu): a timing ratio measures the emulator, not the kernels")
	}
	if runtime.NumCPU() < 2 {
		t.Skipf("two-core scaling needs two CPUs; this machine has %d", runtime.NumCPU())
	}
	floor := scalingFloor
	if s := os.Getenv("KGEN_SCALING_FLOOR"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("KGEN_SCALING_FLOOR=%q: %v", s, err)
		}
		floor = f
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	// 2048³ is the size of the session-3 figure (the row blocks); 256³ takes the jr-parallel nest with
	// three fork/joins per call in about 0.2 ms, where a parked pool's wake-ups had made two cores slower
	// than one (0.9×, docs/PERF.md "Session 8"): the spinning team's guard. Its floor: 1.1× on a host
	// whose threads scale 2× (0.55); this test on the Xeon read shares of 0.94 with the team and 0.45
	// (three attempts) without it.
	cases := []struct {
		n, calls int
		floor    float64
	}{{2048, 1, floor}, {256, 40, floor * 0.55 / scalingFloor}}
	rng := rand.New(rand.NewPCG(14, 5))
	type operands struct{ a, b, c1, c2 []float32 }
	ops := make([]operands, len(cases))
	for i, cs := range cases {
		n := cs.n
		ops[i] = operands{randSlice(n*n, rng), randSlice(n*n, rng), make([]float32, n*n), make([]float32, n*n)}
	}
	gemm := func(i, procs int, c []float32) time.Duration {
		runtime.GOMAXPROCS(procs)
		n, o := cases[i].n, ops[i]
		start := time.Now()
		for r := 0; r < cases[i].calls; r++ {
			if err := Sgemm(n, n, n, o.a, o.b, c, 1, 0); err != nil {
				t.Fatal(err)
			}
		}
		return time.Since(start)
	}
	// ref runs one spinWork on each of procs goroutines (procs times one's work) and returns the wall time.
	ref := func(procs int) time.Duration {
		runtime.GOMAXPROCS(2)
		start := time.Now()
		var wg sync.WaitGroup
		for g := 1; g < procs; g++ {
			wg.Go(func() { spinWork(g) })
		}
		spinWork(0)
		wg.Wait()
		return time.Since(start)
	}
	for i := range cases {
		gemm(i, 2, ops[i].c2) // warm the team, the scratch buffers and the pages of C
	}
	qs := make([][]float64, len(cases))
	var sRef float64
	for attempt := 0; attempt < 3; attempt++ {
		bestRef := [2]time.Duration{math.MaxInt64, math.MaxInt64}
		best := make([][2]time.Duration, len(cases))
		for i := range best {
			best[i] = [2]time.Duration{math.MaxInt64, math.MaxInt64}
		}
		for round := 0; round < 7; round++ {
			bestRef[0] = min(bestRef[0], ref(1))
			bestRef[1] = min(bestRef[1], ref(2))
			for i := range cases {
				best[i][0] = min(best[i][0], gemm(i, 1, ops[i].c1))
				best[i][1] = min(best[i][1], gemm(i, 2, ops[i].c2))
			}
		}
		// ref(2) does twice ref(1)'s work (one spinWork per goroutine): its speed-up is 2·t1/t2
		sRef = 2 * float64(bestRef[0]) / float64(bestRef[1])
		passed := sRef >= refSpeedupMin
		for i, cs := range cases {
			sGemm := float64(best[i][0]) / float64(best[i][1])
			qs[i] = append(qs[i], sGemm/sRef)
			t.Logf("reference: one job on one goroutine %v, two jobs on two %v, speed-up %.2f; sgemm %d³ ×%d: one core %v, two %v, speed-up %.2f; share %.2f (floor %.2f)",
				bestRef[0], bestRef[1], sRef, cs.n, cs.calls, best[i][0], best[i][1], sGemm, sGemm/sRef, cs.floor)
			passed = passed && slices.Max(qs[i]) >= cs.floor
		}
		if passed || sRef < 1.2 {
			break // passed, or the host is too busy for another attempt to be worth its time
		}
	}
	for i := range cases {
		c1, c2 := ops[i].c1, ops[i].c2
		for j := range c1 {
			if d := math.Abs(float64(c1[j] - c2[j])); d > 1e-4*(1+math.Abs(float64(c1[j]))) {
				t.Fatalf("sgemm %d³ C[%d]: one core %v, two cores %v", cases[i].n, j, c1[j], c2[j])
			}
		}
	}
	if sRef < refSpeedupMin {
		t.Skipf("the host gives two threads only %.2f× one thread's speed (other jobs hold the second core): scaling not measurable", sRef)
	}
	for i, cs := range cases {
		if slices.Max(qs[i]) < cs.floor {
			t.Errorf("sgemm %d³ on two cores reaches at best %.2f of the host's two-core speed-up over %d attempts (%.2f), below %.2f", cs.n, slices.Max(qs[i]), len(qs[i]), qs[i], cs.floor)
		}
	}
}

// spinSink keeps spinWork's result alive.
var spinSink [2]float64

// spinWork is TestTwoCoreScaling's reference job: about 30 ms of dependent floating-point arithmetic
// on one core, touching no memory.
func spinWork(g int) {
	x, y := 1.0, 0.5
	for i := 0; i < 1<<24; i++ {
		x = x*0.9999999 + y
		y = y*0.9999998 + 1e-9
	}
	spinSink[g&1] = x + y
}

// TestParallelRowBlocks runs Sgemm and Dgemm on shapes that take the parallel row-block version on two
// and three workers (RowBlocks·M ≥ W·MC; ragged M, N and K, K over several K blocks, beta ≠ 0) and on one
// worker (the serial nest, or the row-block version inline where M ≥ RowBlocks·MC), and checks every
// element against a float64 reference.
func TestParallelRowBlocks(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewPCG(14, 6))
	for _, sh := range [][3]int{{777, 531, 100}, {1000, 300, 67}, {390, 257, 33}} {
		m, k, n := sh[0], sh[1], sh[2]
		a, b, c0 := randSlice(m*k, rng), randSlice(k*n, rng), randSlice(m*n, rng)
		const alpha, beta = 0.75, -1.5
		want := make([]float64, m*n)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				s := 0.0
				for p := 0; p < k; p++ {
					s += float64(a[i*k+p]) * float64(b[p*n+j])
				}
				want[i*n+j] = alpha*s + beta*float64(c0[i*n+j])
			}
		}
		a64, b64, c064 := make([]float64, m*k), make([]float64, k*n), make([]float64, m*n)
		for i, v := range a {
			a64[i] = float64(v)
		}
		for i, v := range b {
			b64[i] = float64(v)
		}
		for i, v := range c0 {
			c064[i] = float64(v)
		}
		for _, procs := range []int{1, 2, 3} {
			runtime.GOMAXPROCS(procs)
			c := slices.Clone(c0)
			if err := Sgemm(m, k, n, a, b, c, alpha, beta); err != nil {
				t.Fatal(err)
			}
			d := slices.Clone(c064)
			if err := Dgemm(m, k, n, a64, b64, d, alpha, beta); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if e := math.Abs(float64(c[i]) - want[i]); e > 1e-4*float64(k) {
					t.Fatalf("sgemm %v on %d workers: C[%d] = %v, want %v", sh, procs, i, c[i], want[i])
				}
				if e := math.Abs(d[i] - want[i]); e > 1e-12*float64(k) {
					t.Fatalf("dgemm %v on %d workers: C[%d] = %v, want %v", sh, procs, i, d[i], want[i])
				}
			}
		}
	}
}

// TestRowBlocksHalfRule checks which packed parallel version Sgemm takes below the R·M ≥ W·MC line (MC
// raised to 1000 so that no shape here reaches it): on exactly two workers the row blocks (each worker
// its own rows and its own B̃) when M ≥ N − M, else jr parallel (the column panels split between the
// workers); one and three workers keep jr parallel, and RowBlocks = 0 holds the row blocks off. The
// microkernel calls of C's first row tile come from one goroutine in the row-block version and from
// every worker in the jr-parallel one. Every result is checked against a float64 reference.
func TestRowBlocksHalfRule(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer Use("")
	rng := rand.New(rand.NewPCG(31, 37))
	for _, v := range Variants() {
		if err := Use(v); err != nil {
			t.Fatal(err)
		}
		s0 := *sgemmSlot
		var c0 uintptr // &C[0] of the current call
		var rowLen uintptr
		var firstRow goroutines // those that ran a tile of C's first rows
		micro := s0.Micro
		sgemmSlot.Micro = func(kc int, a, b, c []float32, ldc, m, n int, alpha, beta float32, bias []float32, ep int) {
			if uintptr(unsafe.Pointer(&c[0]))-c0 < rowLen {
				firstRow.note()
			}
			micro(kc, a, b, c, ldc, m, n, alpha, beta, bias, ep)
		}
		sgemmSlot.SmallWork, sgemmSlot.SmallDeep, sgemmSlot.RowsMax, sgemmSlot.MC = 1, 1, 0, 1000
		// above the few-tiles limit on any worker count (the packed nest), and work enough per worker
		// that no parallel loop runs inline (rt.MinParallelWork)
		tiles := max(6*s0.MR, 96)
		for _, c := range []struct{ procs, rowBlocks, m, n int }{
			{2, 4, tiles + 1, 2*tiles + 2}, {2, 4, tiles + 1, 2*tiles + 3}, {2, 4, 2 * tiles, tiles}, {2, 0, 2 * tiles, tiles},
			{1, 4, 2 * tiles, tiles}, {3, 4, 2 * tiles, tiles}, {2, 4, tiles + 5, 3 * tiles},
		} {
			runtime.GOMAXPROCS(c.procs)
			sgemmSlot.RowBlocks = c.rowBlocks
			m, k, n := c.m, min(s0.KC, 256), c.n
			A, B, C := randSlice(m*k, rng), randSlice(k*n, rng), make([]float32, m*n)
			firstRow.reset()
			c0, rowLen = uintptr(unsafe.Pointer(&C[0])), uintptr(4*n)
			if err := Sgemm(m, k, n, A, B, C, 1, 0); err != nil {
				t.Fatal(err)
			}
			if err := checkBatch(A, B, C, 1, m, k, n); err != nil {
				t.Errorf("%s, W = %d, %d×%d×%d: %v", v, c.procs, m, k, n, err)
			}
			rows := c.procs == 2 && c.rowBlocks > 0 && m >= n-m
			want := min(c.procs, (n+s0.NR-1)/s0.NR)
			if rows {
				want = 1
			}
			if got := firstRow.count(); got != want {
				t.Errorf("%s, W = %d, RowBlocks %d, M = %d, N = %d: C's first row tile computed on %d goroutines, want %d (%s)", v, c.procs, c.rowBlocks, m, n, got, want,
					map[bool]string{true: "row blocks", false: "jr parallel"}[rows])
			}
		}
		*sgemmSlot = s0
	}
}

// TestSmallGemmStaysInline checks the cost model's microkernel weight (passes.microMACsPerUnit): on two
// workers, the unpacked version of a small GEMM runs on the calling goroutine (sgemm 40³, dgemm 48³:
// about 1–2 µs of work, less than a fork/join costs) and a larger one on both (sgemm 128³, dgemm 96³).
func TestSmallGemmStaysInline(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	defer Use("")
	rng := rand.New(rand.NewPCG(41, 43))
	for _, v := range Variants() {
		if err := Use(v); err != nil {
			t.Fatal(err)
		}
		s0, d0 := *sgemmSlot, *dgemmSlot
		var ids goroutines
		note := ids.note
		sgemmSlot.MicroU = func(kc int, a []float32, ars, acs int, b []float32, ldb int, c []float32, ldc, m, n int, alpha, beta float32, bias []float32, ep int) {
			note()
			s0.MicroU(kc, a, ars, acs, b, ldb, c, ldc, m, n, alpha, beta, bias, ep)
		}
		dgemmSlot.MicroU = func(kc int, a []float64, ars, acs int, b []float64, ldb int, c []float64, ldc, m, n int, alpha, beta float64, bias []float64, ep int) {
			note()
			d0.MicroU(kc, a, ars, acs, b, ldb, c, ldc, m, n, alpha, beta, bias, ep)
		}
		sgemmSlot.SmallWork, sgemmSlot.RowsMax = 1<<40, 0 // the whole-K unpacked version at every size
		dgemmSlot.SmallWork, dgemmSlot.RowsMax = 1<<40, 0
		for _, c := range []struct {
			f64     bool
			n, want int
		}{{false, 40, 1}, {false, 128, 2}, {true, 48, 1}, {true, 96, 2}} {
			n := c.n
			A, B, C := randSlice(n*n, rng), randSlice(n*n, rng), make([]float32, n*n)
			ids.reset()
			if c.f64 {
				a, b, d := make([]float64, n*n), make([]float64, n*n), make([]float64, n*n)
				for i := range A {
					a[i], b[i] = float64(A[i]), float64(B[i])
				}
				if err := Dgemm(n, n, n, a, b, d, 1, 0); err != nil {
					t.Fatal(err)
				}
				for i := range d {
					C[i] = float32(d[i])
				}
			} else if err := Sgemm(n, n, n, A, B, C, 1, 0); err != nil {
				t.Fatal(err)
			}
			if err := checkBatch(A, B, C, 1, n, n, n); err != nil {
				t.Errorf("%s, f64 %v, %d³: %v", v, c.f64, n, err)
			}
			if got := ids.count(); got != c.want {
				t.Errorf("%s, f64 %v, %d³ on two workers: microkernels called from %d goroutines, want %d", v, c.f64, n, got, c.want)
			}
		}
		*sgemmSlot, *dgemmSlot = s0, d0
	}
}

// goroutines is the set of goroutines that called note, safe for concurrent use.
type goroutines struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (g *goroutines) note() {
	id := goid()
	g.mu.Lock()
	if g.ids == nil {
		g.ids = map[string]bool{}
	}
	g.ids[id] = true
	g.mu.Unlock()
}

func (g *goroutines) reset() { g.mu.Lock(); clear(g.ids); g.mu.Unlock() }

func (g *goroutines) count() int { g.mu.Lock(); defer g.mu.Unlock(); return len(g.ids) }

// goid names the calling goroutine (the number in runtime.Stack's "goroutine 7 [running]:").
func goid() string {
	var buf [64]byte
	return strings.Fields(string(buf[:runtime.Stack(buf[:], false)]))[1]
}

// TestRowBlocksBalanced checks that the two workers of the private-B̃ row-block version get shares of C's
// rows that differ by one row tile at most (Dgemm 1030×64×64, MC 224: a worker's share is split into
// blocks of at most MC rows, the last one shorter). Before session 13 a share was a whole number of
// blocks rounded up to MR each: 546 rows against 478 at MR 14. The rows are counted from the
// microkernel calls of C's first column panel, per goroutine.
func TestRowBlocksBalanced(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	defer Use("")
	rng := rand.New(rand.NewPCG(47, 53))
	const m, k, n = 1030, 64, 64
	A, B := randSlice(m*k, rng), randSlice(k*n, rng)
	for _, v := range Variants() {
		if err := Use(v); err != nil {
			t.Fatal(err)
		}
		d0 := *dgemmSlot
		var mu sync.Mutex
		var c0 uintptr
		rows := map[string]int{}
		dgemmSlot.Micro = func(kc int, a, b, c []float64, ldc, mm, nn int, alpha, beta float64, bias []float64, ep int) {
			if (uintptr(unsafe.Pointer(&c[0]))-c0)/8%n == 0 {
				id := goid()
				mu.Lock()
				rows[id] += mm
				mu.Unlock()
			}
			d0.Micro(kc, a, b, c, ldc, mm, nn, alpha, beta, bias, ep)
		}
		dgemmSlot.SmallWork, dgemmSlot.SmallDeep, dgemmSlot.RowsMax, dgemmSlot.MC, dgemmSlot.RowBlocks = 1, 1, 0, 224, 4
		a, b, c := make([]float64, m*k), make([]float64, k*n), make([]float64, m*n)
		for i := range a {
			a[i] = float64(A[i])
		}
		for i := range b {
			b[i] = float64(B[i])
		}
		c0 = uintptr(unsafe.Pointer(&c[0]))
		if err := Dgemm(m, k, n, a, b, c, 1, 0); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, m*n)
		for i := range c {
			got[i] = float32(c[i])
		}
		if err := checkBatch(A, B, got, 1, m, k, n); err != nil {
			t.Errorf("%s: %v", v, err)
		}
		var shares []int
		for _, r := range rows {
			shares = append(shares, r)
		}
		if len(shares) != 2 || shares[0]+shares[1] != m || max(shares[0]-shares[1], shares[1]-shares[0]) > d0.MR {
			t.Errorf("%s (MR %d): rows per worker %v, want two shares of %d rows within %d of each other", v, d0.MR, shares, m, d0.MR)
		}
		*dgemmSlot = d0
	}
}
