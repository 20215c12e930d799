package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// BenchmarkParallelVersions compares, in one process and call by call, the packed GEMM's two parallel
// versions on two workers against one worker: Sgemm and Dgemm n³ on one core, on two with the row
// blocks held off (RowBlocks = 0: jr parallel, the shared Ã packed by both workers, two fork/joins per
// MC block) and on two with the slot's RowBlocks (each worker packs and multiplies its own row blocks).
// Sizes: KGEN_BENCH_SIZES (default 512,2048). Each b.N iteration is one round of the three; it reports each mode's fastest call (GFLOP/s) and its
// least process CPU time per call over one core's (cpu-x: the work the parallel version adds, which a
// loaded host disturbs much less than wall time).
//
//	GOMAXPROCS=2 KGEN_BENCH_SIZES=1024,2048 go test -run '^$' -bench ParallelVersions -benchtime 9x ./kernels
func BenchmarkParallelVersions(b *testing.B) {
	if runtime.NumCPU() < 2 {
		b.Skip("needs two CPUs")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
			return 0
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	rng := rand.New(rand.NewPCG(14, 7))
	for _, op := range []string{"sgemm", "dgemm"} {
		for _, n := range benchSizes() {
			b.Run(fmt.Sprintf("%s/%d", op, n), func(b *testing.B) {
				a, bb, c := randSlice(n*n, rng), randSlice(n*n, rng), make([]float32, n*n)
				a64, b64, c64 := make([]float64, n*n), make([]float64, n*n), make([]float64, n*n)
				for i := range a {
					a64[i], b64[i] = float64(a[i]), float64(bb[i])
				}
				rb := &sgemmSlot.RowBlocks
				if op == "dgemm" {
					rb = &dgemmSlot.RowBlocks
				}
				orig := *rb
				defer func() { *rb = orig }()
				modes := []struct {
					name             string
					procs, rowBlocks int
				}{{"1core", 1, orig}, {"2core-jr", 2, 0}, {"2core-rows", 2, orig}}
				wall := make([]time.Duration, len(modes))
				cpus := make([]time.Duration, len(modes))
				for i := range wall {
					wall[i], cpus[i] = 1<<62, 1<<62
				}
				b.ResetTimer()
				for range b.N {
					for i, m := range modes {
						runtime.GOMAXPROCS(m.procs)
						*rb = m.rowBlocks
						c0, t0 := cpu(), time.Now()
						if op == "sgemm" {
							Sgemm(n, n, n, a, bb, c, 1, 0)
						} else {
							Dgemm(n, n, n, a64, b64, c64, 1, 0)
						}
						wall[i], cpus[i] = min(wall[i], time.Since(t0)), min(cpus[i], cpu()-c0)
					}
				}
				fl := 2 * float64(n) * float64(n) * float64(n)
				for i, m := range modes {
					b.ReportMetric(fl/wall[i].Seconds()/1e9, m.name+"-GFLOP/s")
					if i > 0 {
						b.ReportMetric(float64(cpus[i])/float64(cpus[0]), m.name+"-cpu-x")
					}
				}
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// BenchmarkSmallSquare times Sgemm and Dgemm n³ from 40 to 320, one call per op: with -cpu 1,2 it shows
// where a second worker pays for its fork/join (the cost model's microkernel weight, the row-block
// version test; docs/PERF.md, "Session 13").
//
//	go test -run '^$' -bench SmallSquare -cpu 1,2 -count 6 ./kernels | tee out.txt
func BenchmarkSmallSquare(b *testing.B) {
	rng := rand.New(rand.NewPCG(15, 8))
	for _, n := range []int{40, 56, 64, 72, 80, 96, 112, 160, 192, 224, 256, 320, 384, 448} {
		a, bb, c := randSlice(n*n, rng), randSlice(n*n, rng), make([]float32, n*n)
		a64, b64, c64 := make([]float64, n*n), make([]float64, n*n), make([]float64, n*n)
		for i := range a {
			a64[i], b64[i] = float64(a[i]), float64(bb[i])
		}
		b.Run(fmt.Sprintf("sgemm/%d", n), func(b *testing.B) {
			b.ResetTimer()
			for range b.N {
				if err := Sgemm(n, n, n, a, bb, c, 1, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("dgemm/%d", n), func(b *testing.B) {
			b.ResetTimer()
			for range b.N {
				if err := Dgemm(n, n, n, a64, b64, c64, 1, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
