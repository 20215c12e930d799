package kernels

import (
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
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
