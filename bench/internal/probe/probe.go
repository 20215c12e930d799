// Package probe describes the machine: CPU model, cores, caches (from sysfs),
// FMA peaks (kgen-generated register-only kernels) and streaming bandwidth
// (a plain Go loop, and kgen's vectorized sdot for loads as wide as the GEMM kernels use).
package probe

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/kgen-dev/kgen/bench/internal/peak"
	"github.com/kgen-dev/kgen/kernels"
)

// Cache is one cache level as sysfs describes it for cpu0.
type Cache struct {
	Level      int
	Type       string // Data, Instruction, Unified
	Size       string // e.g. "32K"
	SharedCPUs string // shared_cpu_list
}

// CPU identifies the processor.
type CPU struct {
	Model    string
	Cores    int // runtime.NumCPU
	Features []string
	Caches   []Cache
}

// ReadCPU reads /proc/cpuinfo and /sys/devices/system/cpu/cpu0/cache.
func ReadCPU() CPU {
	c := CPU{Model: "unknown", Cores: runtime.NumCPU()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if ok && strings.TrimSpace(k) == "model name" {
				c.Model = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	for _, f := range []struct {
		name string
		on   bool
	}{
		{"avx2", cpu.X86.HasAVX2}, {"fma", cpu.X86.HasFMA}, {"avx512f", cpu.X86.HasAVX512F},
		{"avx512bw", cpu.X86.HasAVX512BW}, {"avx512vl", cpu.X86.HasAVX512VL},
	} {
		if f.on {
			c.Features = append(c.Features, f.name)
		}
	}
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cache/index*")
	for _, d := range dirs {
		rd := func(n string) string {
			b, _ := os.ReadFile(filepath.Join(d, n))
			return strings.TrimSpace(string(b))
		}
		lvl, _ := strconv.Atoi(rd("level"))
		c.Caches = append(c.Caches, Cache{Level: lvl, Type: rd("type"), Size: rd("size"), SharedCPUs: rd("shared_cpu_list")})
	}
	sort.Slice(c.Caches, func(i, j int) bool {
		if c.Caches[i].Level != c.Caches[j].Level {
			return c.Caches[i].Level < c.Caches[j].Level
		}
		return c.Caches[i].Type < c.Caches[j].Type
	})
	return c
}

// Peak is one measured FMA peak.
type Peak struct {
	ISA, Elem string
	Cores     int
	GFLOPS    float64
}

// Peaks measures every runnable peak kernel on each worker count in cores
// (duplicates removed).
func Peaks(cores ...int) []Peak {
	var out []Peak
	seen := map[int]bool{}
	for _, n := range cores {
		if seen[n] || n < 1 {
			continue
		}
		seen[n] = true
		for _, k := range peak.Kernels() {
			out = append(out, Peak{ISA: k.ISA, Elem: k.Elem, Cores: n, GFLOPS: peak.Measure(k, n)})
		}
	}
	return out
}

// Best returns the highest peak for elem on cores cores (0 if none measured).
func Best(ps []Peak, elem string, cores int) float64 {
	b := 0.0
	for _, p := range ps {
		if p.Elem == elem && p.Cores == cores {
			b = max(b, p.GFLOPS)
		}
	}
	return b
}

// Bandwidth is one streaming measurement.
type Bandwidth struct {
	Op      string // "sum" (read only, scalar), "vsum" (read only, vector loads) or "copy" (read + write, both counted)
	Bytes   int    // working set per worker
	Workers int
	GBps    float64
}

// sumWords adds the words of x with 8 independent accumulators (plain Go:
// 8-byte scalar loads, so it understates what vector loads get from L1/L2).
func sumWords(x []uint64) uint64 {
	var s0, s1, s2, s3, s4, s5, s6, s7 uint64
	for len(x) >= 8 {
		s0 += x[0]
		s1 += x[1]
		s2 += x[2]
		s3 += x[3]
		s4 += x[4]
		s5 += x[5]
		s6 += x[6]
		s7 += x[7]
		x = x[8:]
	}
	for _, v := range x {
		s0 += v
	}
	return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7
}

var sink uint64

// vsumWords reads x with vector loads: kgen's sdot of its two halves (AVX2 or NEON where present). The
// roofline uses it, because the scalar loop cannot keep enough loads in flight to saturate a core's
// bandwidth and read 20–40% low.
func vsumWords(x []uint64) uint64 {
	f := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(x))), 2*len(x))
	h := len(f) / 2
	var r [1]float32
	kernels.Sdot(h, f[:h], f[h:2*h], r[:])
	return uint64(int64(r[0]))
}

// Stream measures sum and copy over a working set of size bytes on workers
// goroutines (each with its own buffers, locked to its own thread), the best
// of 5 timed runs of at least 20 ms each.
func Stream(size, workers int) []Bandwidth {
	workers = max(workers, 1)
	old := runtime.GOMAXPROCS(max(workers, runtime.GOMAXPROCS(0)))
	defer runtime.GOMAXPROCS(old)
	words := size / 8
	bufs := make([][]uint64, workers)
	for i := range bufs {
		bufs[i] = make([]uint64, words)
		for j := range bufs[i] {
			bufs[i][j] = uint64(j)
		}
	}
	ops := []struct {
		name  string
		bytes float64 // counted per pass per worker
		pass  func(b []uint64) uint64
	}{
		{"sum", float64(words * 8), sumWords},
		{"vsum", float64(words * 8), vsumWords},
		{"copy", float64(words/2*8) * 2, func(b []uint64) uint64 { copy(b[words/2:], b[:words/2]); return b[0] }},
	}
	var out []Bandwidth
	for _, op := range ops {
		// Passes per timed run: enough for 20 ms on one worker.
		passes := 1
		for {
			t0 := time.Now()
			for p := 0; p < passes; p++ {
				atomic.AddUint64(&sink, op.pass(bufs[0]))
			}
			if time.Since(t0) > 20*time.Millisecond {
				break
			}
			passes *= 2
		}
		best := 0.0
		for r := 0; r < 5; r++ {
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
					var s uint64
					for p := 0; p < passes; p++ {
						s += op.pass(bufs[w])
					}
					atomic.AddUint64(&sink, s) // keeps the passes from being optimized away
					done.Done()
				}()
			}
			ready.Wait()
			t0 := time.Now()
			start.Done()
			done.Wait()
			el := time.Since(t0).Seconds()
			best = max(best, float64(workers)*float64(passes)*op.bytes/el/1e9)
		}
		out = append(out, Bandwidth{Op: op.name, Bytes: size, Workers: workers, GBps: best})
	}
	return out
}
