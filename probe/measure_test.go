package probe

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var (
	quickOnce    sync.Once
	quickProfile *Profile
	quickLog     bytes.Buffer
)

// quick measures this machine once per test binary with Options.Quick.
func quick(t *testing.T) *Profile {
	t.Helper()
	quickOnce.Do(func() {
		var err error
		noGPU := func(bool) ([]GPU, string) { return nil, "no CUDA GPU (test)" }
		quickProfile, err = Measure(Options{Quick: true, GPUs: noGPU, Progress: NewProgress(&quickLog, false)})
		if err != nil {
			t.Fatal(err)
		}
	})
	if quickProfile == nil {
		t.Fatal("Measure failed")
	}
	return quickProfile
}

// TestQuickProfileSane: every peak is positive and at most the bound a core's pipes allow at the
// measured clock (2 flops per FMA lane, fmaPorts vector FMAs per cycle; the bf16 dot does 4 flops per
// f32 lane; the portable loop at most 4 scalar FMAs per cycle), all-core peaks at most cores × that, with 20% for an error of the clock measured on a
// shared machine; bandwidth falls from L1 to L2 to DRAM and latency
// rises, within slack for a shared machine; the profile round-trips.
func TestQuickProfileSane(t *testing.T) {
	p := quick(t)
	t.Logf("%s", quickLog.String())
	if len(p.Peak) == 0 || len(p.Bandwidth) == 0 || len(p.LatencyNS) == 0 {
		t.Fatalf("empty measurements: %+v", p)
	}
	if p.GPU != "none (no CUDA GPU (test))" || len(p.GPUs) != 0 {
		t.Errorf("gpu: %q, %d GPUs; want \"none (no CUDA GPU (test))\" and none", p.GPU, len(p.GPUs))
	}
	emulated := emulated()
	for _, k := range hostPeaks() {
		for _, w := range workerCounts(runtime.NumCPU()) {
			key := k.isa + "/" + k.typ + "/" + itoa(w) + "c"
			got, ok := p.Peak[key]
			if !ok || got <= 0 {
				t.Errorf("peak %s = %v (present %v)", key, got, ok)
				continue
			}
			if p.ClockGHz == 0 || emulated {
				continue
			}
			// Flops per cycle: the kernel's flops per instruction times the instructions a core
			// can start per cycle.
			perCycle := float64(k.flops) / float64(k.instr) * float64(k.issue)
			bound := perCycle * p.ClockGHz * float64(w) * 1.2
			// The clock, measured once, may have been slowed by a neighbour (2.57 GHz was seen on a
			// 3.4 GHz Zen 5 under a load of 10 on 2 cores): before failing, measure it again a few
			// times; the fastest measurement is the nearest to the true clock.
			for try := 0; got > bound && try < 5; try++ {
				if c := measureClock(); c > p.ClockGHz {
					p.ClockGHz = c
					bound = perCycle * p.ClockGHz * float64(w) * 1.2
				}
			}
			if got > bound {
				t.Errorf("peak %s = %.1f GFLOP/s exceeds the bound %.1f (%.0f flops/cycle at %.2f GHz × %d)",
					key, got, bound, perCycle, p.ClockGHz, w)
			}
		}
	}
	bw := func(level string) float64 { return p.Bandwidth[level+"/read/1c"] }
	if bw("L1") <= 0 || bw("DRAM") <= 0 {
		t.Fatalf("bandwidth missing: %v", p.Bandwidth)
	}
	// Slack: a neighbour's burst can halve one short run; a real inversion (L1 slower than DRAM) cannot
	// come from noise.
	if _, ok := p.Bandwidth["L2/read/1c"]; ok && !emulated {
		if !(bw("L1") > 0.8*bw("L2") && bw("L2") > 0.8*bw("DRAM")) {
			t.Errorf("read bandwidth not ordered L1 > L2 > DRAM: %v", p.Bandwidth)
		}
	}
	if !emulated && !(bw("L1") > 1.5*bw("DRAM")) {
		t.Errorf("L1 read bandwidth %.1f is not clearly above DRAM's %.1f", bw("L1"), bw("DRAM"))
	}
	// Latency rises L1 < L2 < DRAM (slack as above). L3 is left out of the order: its working set (half
	// of L3 per core) is the one a VM's share of a large L3 may not hold, where it reads like DRAM.
	last := 0.0
	for _, lv := range memLevels(p.Caches, runtime.NumCPU()) {
		ns := p.LatencyNS[lv.name]
		if ns <= 0 {
			t.Errorf("latency %s = %v", lv.name, ns)
		}
		if lv.name == "L3" || emulated {
			continue
		}
		if ns < 0.8*last {
			t.Errorf("latency %s = %.2f ns after %.2f: not increasing (%v)", lv.name, ns, last, p.LatencyNS)
		}
		last = max(last, ns)
	}
	if l1, dram := p.LatencyNS["L1"], p.LatencyNS["DRAM"]; !emulated && dram < 3*l1 {
		t.Errorf("DRAM latency %.2f ns is not clearly above L1's %.2f ns", dram, l1)
	}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "p.json")
	os.WriteFile(path, b, 0o644)
	q, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, q) {
		t.Errorf("round trip differs:\n%s", b)
	}
	b2, _ := q.Marshal()
	if !bytes.Equal(b, b2) {
		t.Errorf("Marshal is not deterministic")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// emulated reports whether this linux/arm64 test binary runs under user-mode emulation (qemu-user
// passes the host's /proc/cpuinfo through, which lacks the "CPU implementer" field of every arm64
// kernel): timings then measure the emulator.
func emulated() bool {
	if runtime.GOARCH != "arm64" || runtime.GOOS != "linux" {
		return false
	}
	b, err := os.ReadFile("/proc/cpuinfo")
	return err == nil && !strings.Contains(string(b), "CPU implementer")
}

// TestCopyKernels: the copy loops copy (random bytes, every size step the loops take, several passes),
// and the read loops run over the same buffers without touching them.
func TestCopyKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, mem := range []memKernel{hostMem(), goMem} {
		for _, steps := range []int{1, 2, 7} {
			n := steps * mem.step
			src, dst := make([]byte, n), make([]byte, n+mem.step)
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			for i := range dst {
				dst[i] = 0xee
			}
			keep := bytes.Clone(src)
			mem.copy(dst[:n], src, 2)
			mem.read(src, 3)
			if !bytes.Equal(dst[:n], src) || !bytes.Equal(src, keep) {
				t.Errorf("%s: copy of %d bytes wrong", mem.name, n)
			}
			for i := n; i < len(dst); i++ {
				if dst[i] != 0xee {
					t.Fatalf("%s: copy of %d bytes wrote byte %d past the end", mem.name, n, i)
				}
			}
		}
	}
}

// TestKernelsRun runs every peak kernel and the clock loop for a few iterations (under qemu too, where
// TestQuickProfileSane's timings mean nothing): they return, and CPUs without a kernel's ISA never get
// it from hostPeaks.
func TestKernelsRun(t *testing.T) {
	for _, k := range hostPeaks() {
		k.run(3)
		k.run(0)
	}
	if run, adds := hostClock(); run != nil {
		run(3)
		if adds <= 0 {
			t.Errorf("clock loop with %d adds", adds)
		}
	}
}

// TestChaseIsOneCycle: the chase visits every other line of the working set once before it returns to
// the start, for sizes below, at and above a 64 KiB group, and stays within one group for a group's
// worth of loads.
func TestChaseIsOneCycle(t *testing.T) {
	for _, size := range []int{512, 4096, 64 << 10, 3 * 64 << 10} {
		buf := make([]uint64, size/8)
		start := buildChase(buf, 64, rand.New(rand.NewPCG(1, 2)))
		visits := size / 128
		seen := map[int]bool{}
		i := start
		for step := 0; step < visits; step++ {
			if i%16 != 0 || seen[i] {
				t.Fatalf("size %d: step %d reaches word %d (seen %v)", size, step, i, seen[i])
			}
			if size > 64<<10 && i/8192 != start/8192 && step < 512 {
				t.Fatalf("size %d: step %d leaves the first 64 KiB group", size, step)
			}
			seen[i] = true
			i = chase(buf, i, 1)
		}
		if i != start || len(seen) != visits {
			t.Errorf("size %d: after %d steps at %d, not back at %d (%d lines seen)", size, visits, i, start, len(seen))
		}
	}
}

// TestEstimateCaches: hand-made latency curves (a 32 KiB L1, 1 MiB L2 with a two-step transition,
// 16 MiB L3, then memory) give the three levels; noise below 30% does not add one.
func TestEstimateCaches(t *testing.T) {
	var sizes []int
	for s := 4 << 10; s <= 256<<20; s *= 2 {
		sizes = append(sizes, s)
	}
	lat := func(s int) float64 {
		switch {
		case s <= 32<<10:
			return 1.2
		case s <= 1<<20:
			return 4.4 + float64(s%3)*0.3 // noise within a plateau
		case s <= 2<<20:
			return 7
		case s <= 16<<20:
			return 20
		case s <= 32<<20:
			return 50
		}
		return 90
	}
	var ns []float64
	for _, s := range sizes {
		ns = append(ns, lat(s))
	}
	got := estimateCaches(sizes, ns)
	want := []Cache{{1, 32 << 10, 0, 64, "measured"}, {2, 1 << 20, 0, 64, "measured"}, {3, 16 << 20, 0, 64, "measured"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("estimateCaches = %+v, want %+v", got, want)
	}
}

// TestMemLevels: the working sets are half of L1 and L2, half of L3 per core, and 4× L3.
func TestMemLevels(t *testing.T) {
	got := memLevels([]Cache{{Level: 1, Size: 48 << 10}, {Level: 2, Size: 2 << 20}, {Level: 3, Size: 64 << 20}}, 4)
	want := []memLevel{{"L1", 24 << 10, 24 << 10}, {"L2", 1 << 20, 1 << 20}, {"L3", 8 << 20, 8 << 20}, {"DRAM", 256 << 20, 256 << 20}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("memLevels = %+v, want %+v", got, want)
	}
	if got := memLevels(nil, 1); len(got) != 1 || got[0].single != 64<<20 {
		t.Errorf("memLevels without caches = %+v, want one 64 MiB DRAM level", got)
	}
}
