package cuda

import (
	_ "embed"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

// vaddPTX is embedded so that a test binary built with `go test -c` runs anywhere, without testdata.
//
//go:embed testdata/vadd.ptx
var vaddPTX []byte

// gpuContext opens the real driver (or the one LibraryEnv names) and device 0's primary context.
// Without a driver or a GPU it skips, saying why, unless KGEN_REQUIRE_GPU=1, where it fails.
func gpuContext(tb testing.TB) *Context {
	tb.Helper()
	d, err := Open()
	if err == nil {
		var n int
		if n, err = d.DeviceCount(); err == nil && n == 0 {
			err = ErrorNoDevice
		}
	}
	if IsNoDevice(err) {
		if os.Getenv("KGEN_REQUIRE_GPU") == "1" {
			tb.Fatalf("KGEN_REQUIRE_GPU=1 but no CUDA driver: %v", err)
		}
		tb.Skipf("no CUDA driver: %s", strings.TrimPrefix(err.Error(), ErrNoDriver.Error()+": "))
	}
	if err != nil {
		tb.Fatalf("the CUDA driver is present but failed: %v", err)
	}
	dev, err := d.Device(0)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, err := dev.PrimaryContext()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ctx.Close() })
	return ctx
}

// On a real GPU: the driver JITs the hand-written vadd.ptx, runs it on ragged sizes (1, a prime,
// not a multiple of the block, above 2^20) and the result equals the host's f32 sums exactly.
// Also checks that a broken PTX comes back with the real JIT compiler's log, and times a launch.
func TestGPUVectorAdd(t *testing.T) {
	ctx := gpuContext(t)
	v, _ := ctx.Device().d.Version()
	p, err := ctx.Device().Props()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("driver %d.%d, %s: sm_%d, %d SMs, %d KiB shared/block (%d KiB opt-in), %d GiB",
		v/1000, v%1000/10, p.Name, p.SM(), p.Multiprocessors, p.SharedMemoryPerBlock>>10, p.SharedMemoryPerBlockOptin>>10, p.TotalMemory>>30)

	mod, err := ctx.LoadModule(vaddPTX)
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Unload()
	fn, err := mod.Function("vadd")
	if err != nil {
		t.Fatal(err)
	}
	if ps, ok := fn.Params(); ok && !slices.Equal(ps, []Param{{0, 8}, {8, 8}, {16, 8}, {24, 4}}) {
		t.Errorf("vadd.Params() = %v, want offsets 0, 8, 16, 24 and sizes 8, 8, 8, 4", ps)
	} else {
		t.Logf("vadd.Params() = %v (known: %v)", ps, ok)
	}
	regs, _ := fn.Attribute(FuncNumRegs)
	bin, _ := fn.Attribute(FuncBinaryVersion)
	t.Logf("vadd: %d registers, SASS for sm_%d; JIT log: %q", regs, bin, mod.InfoLog())

	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 31, 1000, 65537, 1<<20 + 3} {
		a, b := make([]float32, n), make([]float32, n)
		for i := range a {
			a[i], b[i] = rng.Float32()*2e3-1e3, rng.Float32()*2e3-1e3
		}
		ba, err := AllocCopy(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		bb, err := AllocCopy(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		bc, err := ctx.Alloc(4 * n)
		if err != nil {
			t.Fatal(err)
		}
		if err := bc.Zero(); err != nil {
			t.Fatal(err)
		}
		const block = 256
		if err := fn.Launch(D1((n+block-1)/block), D1(block), 0, ba, bb, bc, uint32(n)); err != nil {
			t.Fatal(err)
		}
		if err := ctx.Synchronize(); err != nil {
			t.Fatal(err)
		}
		c := make([]float32, n)
		if err := Download(c, bc); err != nil {
			t.Fatal(err)
		}
		for i := range c {
			if c[i] != a[i]+b[i] {
				t.Fatalf("n=%d: c[%d] = %v, want %v", n, i, c[i], a[i]+b[i])
			}
		}
		for _, x := range []*Buffer{ba, bb, bc} {
			if err := x.Free(); err != nil {
				t.Fatal(err)
			}
		}
	}

	_, err = ctx.LoadModule([]byte(".version 7.0\n.target sm_50\n.address_size 64\n.visible .entry bad() { frobnicate.u32 %r1; }\n"))
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != ErrorInvalidPTX || ce.Log == "" {
		t.Errorf("LoadModule(bad PTX) = %v; want CUDA_ERROR_INVALID_PTX with the JIT log", err)
	} else {
		t.Logf("JIT error log of a bad PTX: %q", ce.Log)
	}

	// The real driver accepts a TMA descriptor of the kind the sm_90a GEMM uses (bf16, 128-byte
	// swizzle, 64x128 boxes) on a GPU that has TMA.
	if p.SM() >= 90 {
		g, err := ctx.Alloc(512 * 1024 * 2)
		if err != nil {
			t.Fatal(err)
		}
		tm, err := ctx.EncodeTiled(TiledMap{DataType: TensorBfloat16, Global: g.Ptr(), Dims: []uint64{1024, 512},
			Strides: []uint64{2048}, Box: []uint32{64, 128}, Swizzle: Swizzle128B})
		if err != nil {
			t.Errorf("EncodeTiled: %v", err)
		} else if tm == (TensorMap{}) {
			t.Error("EncodeTiled wrote an all-zero map")
		}
		g.Free()
	}

	// Time 100 launches of vadd on 1 element between two events.
	buf, err := AllocCopy(ctx, []float32{0})
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	start, _ := ctx.NewEvent()
	end, _ := ctx.NewEvent()
	defer start.Close()
	defer end.Close()
	if err := start.Record(nil); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if err := fn.Launch(D1(1), D1(32), 0, buf, buf, buf, uint32(1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := end.Record(nil); err != nil {
		t.Fatal(err)
	}
	if err := end.Synchronize(); err != nil {
		t.Fatal(err)
	}
	el, err := Elapsed(start, end)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("100 launches of a 1-element vadd: %v of GPU time", el)
}

// BenchmarkGPULaunch measures the host cost of one Launch (argument packing, context switch,
// purego call) of a 1-element kernel, synchronizing every 1000 launches.
func BenchmarkGPULaunch(b *testing.B) {
	ctx := gpuContext(b)
	mod, err := ctx.LoadModule(vaddPTX)
	if err != nil {
		b.Fatal(err)
	}
	defer mod.Unload()
	fn, err := mod.Function("vadd")
	if err != nil {
		b.Fatal(err)
	}
	buf, err := AllocCopy(ctx, []float32{0})
	if err != nil {
		b.Fatal(err)
	}
	defer buf.Free()
	for i := 0; b.Loop(); i++ {
		if err := fn.Launch(D1(1), D1(32), 0, buf, buf, buf, uint32(1)); err != nil {
			b.Fatal(err)
		}
		if i%1000 == 999 {
			if err := ctx.Synchronize(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := ctx.Synchronize(); err != nil {
		b.Fatal(err)
	}
}
