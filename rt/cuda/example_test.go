package cuda_test

import (
	"fmt"
	"log"

	"github.com/kgen-dev/kgen/rt/cuda"
)

// The sequence a generated package runs for one kernel: open, check the device, load the PTX,
// copy in, launch, copy out. (Compiled, not run: it needs a GPU.)
func Example() {
	ptx := []byte("...PTX text with .visible .entry vadd(.u64, .u64, .u64, .u32)...")
	d, err := cuda.Open()
	if cuda.IsNoDevice(err) {
		fmt.Println("no GPU, using the CPU kernels:", err)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	dev, err := d.Device(0)
	if err != nil {
		log.Fatal(err)
	}
	props, err := dev.Props()
	if err != nil {
		log.Fatal(err)
	}
	if err := cuda.CheckTarget(props, "sm_80"); err != nil {
		log.Fatal(err)
	}
	ctx, err := dev.PrimaryContext()
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	mod, err := ctx.LoadModule(ptx)
	if err != nil {
		log.Fatal(err) // includes the JIT compiler's log
	}
	defer mod.Unload()
	vadd, err := mod.Function("vadd")
	if err != nil {
		log.Fatal(err)
	}
	a, b := []float32{1, 2, 3}, []float32{10, 20, 30}
	da, _ := cuda.AllocCopy(ctx, a)
	db, _ := cuda.AllocCopy(ctx, b)
	dc, _ := ctx.Alloc(4 * len(a))
	defer da.Free()
	defer db.Free()
	defer dc.Free()
	if err := vadd.Launch(cuda.D1(1), cuda.D1(128), 0, da, db, dc, uint32(len(a))); err != nil {
		log.Fatal(err)
	}
	c := make([]float32, len(a))
	if err := cuda.Download(c, dc); err != nil { // waits for the kernel
		log.Fatal(err)
	}
	fmt.Println(c)
}
