package metal_test

import (
	"fmt"
	"log"

	"github.com/kgen-dev/kgen/rt/metal"
)

// The sequence a generated package runs for one kernel: open, compile the embedded MSL, copy in,
// dispatch, copy out. (Compiled, not run: it needs a Mac.)
func Example() {
	src := `#include <metal_stdlib>
using namespace metal;
kernel void vadd(device const float *a [[buffer(0)]], device const float *b [[buffer(1)]],
                 device float *c [[buffer(2)]], constant uint &n [[buffer(3)]],
                 uint i [[thread_position_in_grid]]) {
    if (i < n) c[i] = a[i] + b[i];
}`
	d, err := metal.Open()
	if metal.IsNoDevice(err) {
		fmt.Println("no Metal device, using the CPU kernels:", err)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	lib, err := d.Compile(src, metal.Metal30)
	if err != nil {
		log.Fatal(err) // includes the compiler's diagnostics
	}
	defer lib.Close()
	vadd, err := lib.Function("vadd")
	if err != nil {
		log.Fatal(err)
	}
	defer vadd.Close()
	a, b := []float32{1, 2, 3}, []float32{10, 20, 30}
	da, _ := metal.NewBufferFrom(d, a)
	db, _ := metal.NewBufferFrom(d, b)
	dc, _ := d.NewBuffer(4 * len(a))
	defer da.Free()
	defer db.Free()
	defer dc.Free()
	threads := 256
	grid := (len(a) + threads - 1) / threads
	if err := vadd.Dispatch([3]int{grid, 1, 1}, [3]int{threads, 1, 1}, da, db, dc, metal.Value(uint32(len(a)))); err != nil {
		log.Fatal(err)
	}
	c := make([]float32, len(a))
	if err := metal.Download(c, dc); err != nil {
		log.Fatal(err)
	}
	fmt.Println(c)
}
