// Command kgen-demo calls the generated kernels package: it prints a few results and the speed of
// sgemm under every variant this machine has.
package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/kgen-dev/kgen/kernels"
)

func main() {
	rng := rand.New(rand.NewPCG(1, 2))
	// A row softmax.
	X := []float32{1, 2, 3, 4, -1, 0, 1, 2}
	Y := make([]float32, len(X))
	if err := kernels.Softmax(2, 4, X, Y); err != nil {
		panic(err)
	}
	fmt.Printf("softmax rows of %v:\n  %v\n  %v\n", X, Y[:4], Y[4:])
	// A bad call is an error, not a crash.
	fmt.Printf("wrong length: %v\n", kernels.Softmax(2, 4, X[:7], Y))

	fmt.Printf("\nsgemm C = A·B on %d cores (GOMAXPROCS), variants available: %v\n", runtime.GOMAXPROCS(0), kernels.Variants())
	for _, n := range []int{256, 512, 1024} {
		A, B := make([]float32, n*n), make([]float32, n*n)
		for i := range A {
			A[i], B[i] = rng.Float32()*2-1, rng.Float32()*2-1
		}
		ref := make([]float32, n*n)
		for _, v := range kernels.Variants() {
			kernels.Use(v)
			C := make([]float32, n*n)
			best := time.Duration(math.MaxInt64)
			for r := 0; r < 3; r++ {
				start := time.Now()
				if err := kernels.Sgemm(n, n, n, A, B, C, 1, 0); err != nil {
					panic(err)
				}
				best = min(best, time.Since(start))
				if v == "go" && n > 512 {
					break
				}
			}
			diff := 0.0
			if v == kernels.Variants()[0] {
				copy(ref, C)
			} else {
				for i := range C {
					diff = max(diff, math.Abs(float64(C[i]-ref[i])))
				}
			}
			fmt.Printf("  n=%4d  %-6s %8.2f GFLOP/s  (max |diff| vs %s: %.2g)\n", n, v, 2*float64(n*n*n)/best.Seconds()/1e9, kernels.Variants()[0], diff)
		}
	}
	kernels.Use("")
}
