package probe

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"sync"
	"time"
	"unsafe"
)

// Options controls Measure.
type Options struct {
	// Quick shortens every timing (about 2 ms per run, best of 5) and caps the DRAM working set at
	// 256 MiB (quickDRAM) so the whole probe takes a few seconds: for tests and CI. The default (about
	// 10 ms per run, best of 15) takes well under a minute.
	Quick bool
	// Cores is the number of workers of the all-core figures (0: runtime.NumCPU()).
	Cores int
	// MeasureCaches estimates the cache sizes from the latency curve even where sysfs lists them.
	MeasureCaches bool
	// Progress receives one call per step (nil: silent).
	Progress *Progress
	// GPUs finds the accelerators (nil: none is looked for). Package gpuprobe's CUDA is the one kgen
	// probe uses; it lives apart so that the generated packages, which import probe for the machine
	// class, do not link a GPU driver binding.
	GPUs func(quick bool) ([]GPU, string)
}

// timer runs a measurement: a unit count calibrated to about target per run, best of reps runs.
type timer struct {
	target time.Duration
	reps   int
}

func (o Options) timer() timer {
	// Short runs, best of several: on a shared machine a short run fits between two preemptions far
	// more often than a long one, and a disturbed run only lowers a rate.
	if o.Quick {
		return timer{2 * time.Millisecond, 5}
	}
	return timer{10 * time.Millisecond, 15}
}

// rate returns the best throughput, in units per second summed over the workers, of fn(w, n) (worker w
// runs n units) run on workers goroutines at once, each locked to its own OS thread and released
// together. n is calibrated on worker 0 alone so that one run takes about t.target.
func (t timer) rate(workers int, fn func(w, n int)) float64 {
	n := 1
	for {
		t0 := time.Now()
		fn(0, n)
		d := time.Since(t0)
		if d >= t.target/8 {
			n = max(1, int(float64(n)*float64(t.target)/float64(d)))
			break
		}
		n *= 8
	}
	if old := runtime.GOMAXPROCS(0); old < workers {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(workers))
	}
	best := 0.0
	for r := 0; r < t.reps; r++ {
		var ready, start, done sync.WaitGroup
		ready.Add(workers)
		done.Add(workers)
		start.Add(1)
		for w := 0; w < workers; w++ {
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				ready.Done()
				start.Wait()
				fn(w, n)
				done.Done()
			}()
		}
		ready.Wait()
		t0 := time.Now()
		start.Done()
		done.Wait()
		best = max(best, float64(workers)*float64(n)/time.Since(t0).Seconds())
	}
	return best
}

// step is one measurement; run returns its result as text for the progress line.
type step struct {
	what string
	run  func() string
}

// measureClock measures the core clock in GHz with the dependent-add loop (0 where there is none). Many
// short runs: a run slowed by a neighbour only lowers the clock (and a low clock makes the peak bound of
// the tests too tight), and on a loaded machine a 0.5 ms run fits between two preemptions far more often
// than a 10 ms one.
func measureClock() float64 {
	run, adds := hostClock()
	if run == nil {
		return 0
	}
	return round3(timer{500 * time.Microsecond, 60}.rate(1, func(_, n int) { run(n) }) * float64(adds) / 1e9)
}

// Measure probes this machine: Static's facts, then the clock, the FMA peaks, the bandwidth and latency
// per cache level and DRAM, and the GPUs. Steps run one after the other (the figures of one would be
// disturbed by another running beside it).
func Measure(o Options) (*Profile, error) {
	p := Static()
	cores := o.Cores
	if cores <= 0 {
		cores = runtime.NumCPU()
	}
	t := o.timer()
	var steps []step
	if run, _ := hostClock(); run != nil {
		steps = append(steps, step{"clock", func() string {
			p.ClockGHz = measureClock()
			return fmt.Sprintf("%.2f GHz", p.ClockGHz)
		}})
	}
	if len(p.Caches) == 0 || o.MeasureCaches {
		steps = append(steps, step{"cache sizes from the latency curve", func() string {
			sizes, ns := latencyCurve(t, o.Quick)
			p.Caches = estimateCaches(sizes, ns)
			return fmt.Sprintf("%d levels", len(p.Caches))
		}})
	}
	p.Peak = map[string]float64{}
	for _, k := range hostPeaks() {
		for _, w := range workerCounts(cores) {
			key := fmt.Sprintf("%s/%s/%dc", k.isa, k.typ, w)
			steps = append(steps, step{"peak " + key, func() string {
				p.Peak[key] = round3(t.rate(w, func(_, n int) { k.run(n) }) * float64(k.flops) / 1e9)
				return fmt.Sprintf("%.1f GFLOP/s", p.Peak[key])
			}})
		}
	}
	p.Bandwidth, p.LatencyNS = map[string]float64{}, map[string]float64{}
	mem := hostMem()
	// The levels are planned when the steps run: the cache sizes may come from a step above.
	steps = append(steps, step{"memory levels", func() string {
		levels := memLevels(p.Caches, runtime.NumCPU())
		o.Progress.grow(len(levels) * (2*len(workerCounts(cores)) + 1))
		for _, lv := range levels {
			if lv.name == "DRAM" && o.Quick {
				lv.single = min(lv.single, quickDRAM)
				lv.multi = lv.single
			}
			measureLevel(p, t, mem, lv, cores, o.Progress)
		}
		debug.FreeOSMemory()
		return fmt.Sprintf("%s loops", mem.name)
	}})
	steps = append(steps, step{"gpu", func() string {
		gpus, note := []GPU(nil), "no GPU prober given"
		if o.GPUs != nil {
			gpus, note = o.GPUs(o.Quick)
		}
		p.GPUs = gpus
		if len(gpus) == 0 {
			p.GPU = "none (" + note + ")"
			o.Progress.Note(note + ": the profile lists no GPU")
			return "none"
		}
		p.GPU = note
		return note
	}})
	o.Progress.grow(len(steps))
	for _, s := range steps {
		o.Progress.step(s.what, s.run())
	}
	o.Progress.finish()
	return p, nil
}

// quickDRAM caps the DRAM working set of a quick probe: touching 4× a large L3 takes seconds of page
// faults alone (7 s for 1 GiB on a loaded VM), so on CPUs with more than 64 MiB of L3 the quick DRAM
// figures may include L3 hits.
const quickDRAM = 256 << 20

// workerCounts is 1 and cores (once when cores is 1).
func workerCounts(cores int) []int {
	if cores == 1 {
		return []int{1}
	}
	return []int{1, cores}
}

// memLevel is one level of the memory measurement: the working set of one worker measured alone, and
// of each of the all-core workers.
type memLevel struct {
	name          string
	single, multi int // bytes
}

// memLevels sizes the working sets from the caches: half of L1, half of L2, half of L3 per core (L3 is
// shared by the cores), 4× L3 for DRAM (4× the largest cache, at least 64 MiB, without an L3).
func memLevels(caches []Cache, ncpu int) []memLevel {
	var out []memLevel
	largest := 0
	for _, c := range caches {
		largest = max(largest, c.Size)
		switch c.Level {
		case 1, 2:
			out = append(out, memLevel{fmt.Sprintf("L%d", c.Level), c.Size / 2, c.Size / 2})
		case 3:
			out = append(out, memLevel{"L3", c.Size / 2 / ncpu, c.Size / 2 / ncpu})
		}
	}
	dram := max(4*largest, 64<<20)
	return append(out, memLevel{"DRAM", dram, dram})
}

// measureLevel measures read and copy bandwidth on 1 and on cores workers, and the latency on one.
func measureLevel(p *Profile, t timer, mem memKernel, lv memLevel, cores int, pr *Progress) {
	multi := lv.multi
	if lv.name == "DRAM" {
		multi = lv.single / cores // the all-core workers share the 4× L3 set
	}
	per := max(lv.single, multi)
	per -= per % (2 * mem.step)
	multi -= multi % (2 * mem.step)
	workers := workerCounts(cores)
	// One allocation: worker w's buffer at w·per (the DRAM set is split instead).
	n := per
	if lv.name != "DRAM" {
		n = per * cores
	}
	all := heapBuffer(n)
	fill(all)
	buf := func(w, size int) []byte {
		off := w * per
		if lv.name == "DRAM" {
			off = w * multi
		}
		return all[off : off+size]
	}
	for _, w := range workers {
		size := lv.single - lv.single%(2*mem.step)
		if w > 1 {
			size = multi
		}
		key := fmt.Sprintf("%s/read/%dc", lv.name, w)
		p.Bandwidth[key] = round3(t.rate(w, func(w, n int) { mem.read(buf(w, size), n) }) * float64(size) / 1e9)
		pr.step("bandwidth "+key, fmt.Sprintf("%.1f GB/s", p.Bandwidth[key]))
		key = fmt.Sprintf("%s/copy/%dc", lv.name, w)
		h := size / 2
		p.Bandwidth[key] = round3(t.rate(w, func(w, n int) { b := buf(w, size); mem.copy(b[h:], b[:h], n) }) * float64(size) / 1e9)
		pr.step("bandwidth "+key, fmt.Sprintf("%.1f GB/s", p.Bandwidth[key]))
	}
	size := lv.single - lv.single%8
	chain := unsafe.Slice((*uint64)(unsafe.Pointer(&all[0])), size/8)
	start := buildChase(chain, lineSize(p.Caches), rand.New(rand.NewPCG(1, uint64(size))))
	// As the clock: many short runs. Each run goes on from where the last one stopped, so short runs
	// do not revisit (and find cached) the first lines of the cycle.
	lt := timer{500 * time.Microsecond, 6 * t.reps}
	pos := start
	p.LatencyNS[lv.name] = round3(1e9 / lt.rate(1, func(_, n int) { pos = chase(chain, pos, n) }))
	pr.step("latency "+lv.name, fmt.Sprintf("%.2f ns", p.LatencyNS[lv.name]))
}

// fill writes a byte pattern over b (touching every page before it is timed), doubling a filled prefix.
func fill(b []byte) {
	for i := range min(len(b), 4096) {
		b[i] = byte(i * 7)
	}
	for n := 4096; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}

func lineSize(caches []Cache) int {
	for _, c := range caches {
		if c.Line > 0 {
			return c.Line
		}
	}
	return 64
}

// round3 keeps 3 decimals: the figures are not more precise, and the JSON stays readable.
func round3(x float64) float64 {
	return float64(int64(x*1000+0.5)) / 1000
}
