//go:build linux && (amd64 || arm64) && !kgen_nocuda

package cuda

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func readVadd(t *testing.T) []byte { return append([]byte(nil), vaddPTX...) }

func u64(b []byte) uint64 { return binary.NativeEndian.Uint64(b) }
func u32(b []byte) uint32 { return binary.NativeEndian.Uint32(b) }

// The whole sequence generated code runs — device facts, context, module, buffers, launch, copy
// back — through the mock driver, which really adds the vectors on the host: the result and every
// recorded argument prove the purego calls pass what the C signatures expect.
func TestMockFullSequence(t *testing.T) {
	d, m := mockDriver(t)
	if v, err := d.Version(); err != nil || v != 12040 {
		t.Fatalf("Version() = %d, %v; want 12040", v, err)
	}
	if n, err := d.DeviceCount(); err != nil || n != 1 {
		t.Fatalf("DeviceCount() = %d, %v; want 1", n, err)
	}
	if _, err := d.Device(1); !errors.Is(err, ErrorInvalidDevice) {
		t.Errorf("Device(1) = %v, want CUDA_ERROR_INVALID_DEVICE", err)
	}
	dev, err := d.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := dev.Props()
	if err != nil {
		t.Fatal(err)
	}
	want := Props{Name: "kgen mock GPU (sm_90)", Major: 9, Minor: 0, Multiprocessors: 132, MaxThreadsPerBlock: 1024,
		WarpSize: 32, SharedMemoryPerBlock: 49152, SharedMemoryPerBlockOptin: 232448, SharedMemoryPerSM: 233472,
		RegistersPerBlock: 65536, TotalMemory: 141 << 30}
	if p != want || p.SM() != 90 {
		t.Errorf("Props() = %+v\nwant      %+v", p, want)
	}

	ctx, err := dev.PrimaryContext()
	if err != nil {
		t.Fatal(err)
	}
	m.check(t, "ctx_refs", 1)
	ptx := readVadd(t)
	mod, err := ctx.LoadModule(ptx)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.ptx(); got != string(ptx) {
		t.Errorf("the driver received %d bytes of PTX, want the %d of vadd.ptx", len(got), len(ptx))
	}
	if !strings.Contains(mod.InfoLog(), "1 entry function") {
		t.Errorf("InfoLog() = %q", mod.InfoLog())
	}
	if _, err := mod.Function("vsub"); !errors.Is(err, ErrorNotFound) || !strings.Contains(err.Error(), `"vsub"`) {
		t.Errorf("Function(vsub) = %v, want CUDA_ERROR_NOT_FOUND naming it", err)
	}
	fn, err := mod.Function("vadd")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := fn.Attribute(FuncNumRegs); err != nil || r != 16 { // the mock reports 12 + #params
		t.Errorf("Attribute(NumRegs) = %d, %v; want 16", r, err)
	}
	if err := fn.SetMaxDynamicSharedMemory(100000); err != nil {
		t.Fatal(err)
	}
	m.check(t, "attr", int64(FuncMaxDynamicSharedSizeBytes))
	m.check(t, "attr_value", 100000)
	if v, err := fn.Attribute(FuncMaxDynamicSharedSizeBytes); err != nil || v != 100000 {
		t.Errorf("Attribute(MaxDynamicSharedSizeBytes) = %d, %v; want 100000", v, err)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 7, 128, 1000, 4099} {
		a, b := make([]float32, n), make([]float32, n)
		for i := range a {
			a[i], b[i] = rng.Float32()*200-100, rng.Float32()*200-100
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
		block := 128
		grid := (n + block - 1) / block
		if err := fn.Launch(D1(grid), D1(block), 4096, ba, bb, bc.Ptr(), uint32(n)); err != nil {
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
		for k, key := range []string{"grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "smem", "nparams"} {
			m.check(t, key, []int64{int64(grid), 1, 1, int64(block), 1, 1, 4096, 4}[k])
		}
		for i, want := range []uint64{uint64(ba.Ptr()), uint64(bb.Ptr()), uint64(bc.Ptr())} {
			if got := u64(m.param(t, i)); got != want {
				t.Errorf("n=%d: parameter %d = %#x, want %#x", n, i, got, want)
			}
		}
		if got := u32(m.param(t, 3)); got != uint32(n) {
			t.Errorf("n=%d: parameter 3 = %d, want %d", n, got, n)
		}
		m.check(t, "allocs", 3)
		for _, buf := range []*Buffer{ba, bb, bc} {
			if err := buf.Free(); err != nil {
				t.Fatal(err)
			}
		}
		m.check(t, "allocs", 0)
	}
	m.check(t, "launches", 5)

	// A stream and two events: 2 launches of the mock's 1.5 ms each between the records.
	s, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	m.check(t, "stream_flags", 1)
	start, err := ctx.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	end, err := ctx.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	m.check(t, "event_flags", 0)
	buf, err := AllocCopy(ctx, []float32{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := start.Record(s); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := fn.LaunchOn(s, D1(1), D1(32), 0, buf, buf, buf, uint32(3)); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.get("launch_stream"); got != int64(s.h) || got == 0 {
		t.Errorf("launch stream = %#x, want %#x", got, s.h)
	}
	if err := end.Record(s); err != nil {
		t.Fatal(err)
	}
	if err := end.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if el, err := Elapsed(start, end); err != nil || el != 3*time.Millisecond {
		t.Errorf("Elapsed = %v, %v; want 3ms", el, err)
	}
	m.check(t, "elapsed_v2", 1)
	got := make([]float32, 3)
	if err := Download(got, buf); err != nil || got[0] != 4 || got[1] != 8 || got[2] != 12 {
		t.Errorf("after two in-place launches: %v, %v; want [4 8 12]", got, err)
	}

	for _, c := range []interface{ Close() error }{s, start, end} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	m.check(t, "streams", 0)
	m.check(t, "events", 0)
	if err := buf.Free(); err != nil {
		t.Fatal(err)
	}
	if err := mod.Unload(); err != nil {
		t.Fatal(err)
	}
	m.check(t, "modules", 0)
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	m.check(t, "ctx_refs", 0)
	m.check(t, "allocs", 0)
}

// probePTX declares one parameter of every kind Launch accepts, in an order that puts 1-, 2-, 4-,
// 8- and 128-byte parameters next to each other.
const probePTX = `.version 8.0
.target sm_90
.address_size 64
.visible .entry probe(
	.param .u8 p0, .param .u64 p1, .param .s32 p2, .param .u16 p3, .param .f32 p4,
	.param .align 64 .b8 p5[128], .param .f64 p6, .param .u64 .ptr .global .align 16 p7,
	.param .s16 p8, .param .u32 p9, .param .s64 p10, .param .s8 p11
)
{
	ret;
}
.visible .entry noargs()
{
	ret;
}
`

// Each parameter kind reaches the driver with the bytes the PTX declares, and the 11 arguments of
// cuLaunchKernel (6 in registers, 5 on the stack on amd64) arrive in order.
func TestMockLaunchABI(t *testing.T) {
	d, m := mockDriver(t)
	dev, _ := d.Device(0)
	ctx, err := dev.PrimaryContext()
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	mod, err := ctx.LoadModule([]byte(probePTX))
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Unload()
	fn, err := mod.Function("probe")
	if err != nil {
		t.Fatal(err)
	}
	tmap := make([]byte, 128)
	for i := range tmap {
		tmap[i] = byte(255 - i)
	}
	buf, err := ctx.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	args := []any{uint8(0xA5), DevicePtr(0x0102030405060708), int32(-123456), uint16(0xCAFE), float32(-0.375),
		Raw{Bytes: tmap, Align: 64}, math.Pi, buf, int16(-300), uint32(0xDEADBEEF), int64(-1 << 50), int8(-7)}
	if err := fn.Launch(D3(5, 6, 7), D3(8, 4, 2), 1234, args...); err != nil {
		t.Fatal(err)
	}
	for k, key := range []string{"grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "smem", "launch_stream"} {
		m.check(t, key, []int64{5, 6, 7, 8, 4, 2, 1234, 0}[k])
	}
	ne := binary.NativeEndian
	want := [][]byte{{0xA5}, ne.AppendUint64(nil, 0x0102030405060708), ne.AppendUint32(nil, uint32(0xFFFE1DC0)),
		ne.AppendUint16(nil, 0xCAFE), ne.AppendUint32(nil, math.Float32bits(-0.375)), tmap,
		ne.AppendUint64(nil, math.Float64bits(math.Pi)), ne.AppendUint64(nil, uint64(buf.Ptr())),
		ne.AppendUint16(nil, uint16(0xFED4)), ne.AppendUint32(nil, 0xDEADBEEF), ne.AppendUint64(nil, uint64(0xFFFC000000000000)), {0xF9}}
	m.check(t, "nparams", int64(len(want)))
	for i := range want {
		if got := m.param(t, i); string(got) != string(want[i]) {
			t.Errorf("parameter %d (%T): driver read % x, want % x", i, args[i], got, want[i])
		}
	}
	// The driver's parameter layout (cuFuncGetParamInfo) lets Launch refuse a wrong argument list.
	ps, ok := fn.Params()
	wantSizes := []int{1, 8, 4, 2, 4, 128, 8, 8, 2, 4, 8, 1}
	wantOffs := []int{0, 8, 16, 20, 24, 64, 192, 208, 216, 220, 224, 232} // p7 is .align 16
	if !ok || len(ps) != len(wantSizes) {
		t.Fatalf("Params() = %v, %v; want %d parameters", ps, ok, len(wantSizes))
	}
	for i, p := range ps {
		if p.Size != wantSizes[i] || p.Offset != wantOffs[i] {
			t.Errorf("parameter %d: %+v, want offset %d size %d", i, p, wantOffs[i], wantSizes[i])
		}
	}
	before := m.get("launches")
	if err := fn.Launch(D1(1), D1(1), 0, args[:11]...); err == nil || !strings.Contains(err.Error(), "11 arguments, the kernel has 12 parameters") {
		t.Errorf("Launch with 11 of 12 arguments = %v", err)
	}
	wrong := slices.Clone(args)
	wrong[2] = int64(-123456)
	if err := fn.Launch(D1(1), D1(1), 0, wrong...); err == nil || !strings.Contains(err.Error(), "argument 2 (int64) is 8 bytes, the kernel's parameter 2 is 4") {
		t.Errorf("Launch with an int64 for a .s32 = %v", err)
	}
	m.check(t, "launches", before)

	noargs, err := mod.Function("noargs")
	if err != nil {
		t.Fatal(err)
	}
	if ps, ok := noargs.Params(); !ok || len(ps) != 0 {
		t.Errorf("noargs.Params() = %v, %v; want none, known", ps, ok)
	}
	if err := noargs.Launch(D1(1), D1(1), 0); err != nil {
		t.Fatal(err)
	}
	m.check(t, "nparams", 0)
}

// Driver failures come back as named CUresults with the driver's log; bad arguments are refused
// before the driver sees them; nothing panics.
func TestMockErrors(t *testing.T) {
	d, m := mockDriver(t)

	m.fail("cuInit", 100)
	_, err := Open()
	if !errors.Is(err, ErrorNoDevice) || !IsNoDevice(err) || !strings.Contains(err.Error(), "cuInit: CUDA_ERROR_NO_DEVICE (100)") {
		t.Errorf("Open with cuInit failing = %v, want cuInit: CUDA_ERROR_NO_DEVICE (100)", err)
	}

	dev, _ := d.Device(0)
	ctx, err := dev.PrimaryContext()
	if err != nil {
		t.Fatal(err)
	}
	bad := []byte(".version 8.0\n.target sm_90\nMOCK_SYNTAX_ERROR\n")
	_, err = ctx.LoadModule(bad)
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != ErrorInvalidPTX || !strings.Contains(ce.Log, "line 3; error") ||
		!strings.Contains(err.Error(), "cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX (218)\nptxas application ptx input, line 3") {
		t.Errorf("LoadModule(syntax error on line 3) = %v", err)
	}
	_, err = ctx.LoadModule([]byte(".version 99.0\n.target sm_90\n"))
	if !errors.Is(err, ErrorUnsupportedPTXVersion) || !strings.Contains(err.Error(), "Unsupported .version 99.0") {
		t.Errorf("LoadModule(.version 99.0) = %v", err)
	}
	m.check(t, "modules", 0)
	for _, c := range []struct {
		ptx  string
		want string
	}{{" \n\t", "empty PTX"}, {".version 8.0\x00.target", "NUL byte at offset 12"}} {
		if _, err := ctx.LoadModule([]byte(c.ptx)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LoadModule(%q) = %v, want %q", c.ptx, err, c.want)
		}
	}
	if _, err := ctx.LoadModule(append(readVadd(t), 0)); err != nil {
		t.Errorf("LoadModule(PTX with its trailing NUL) = %v", err)
	}

	m.fail("cuMemAlloc_v2", 2)
	if _, err := ctx.Alloc(16); !errors.Is(err, ErrorOutOfMemory) {
		t.Errorf("Alloc with the driver out of memory = %v", err)
	}
	if _, err := ctx.Alloc(0); err == nil {
		t.Error("Alloc(0) succeeded")
	}
	b, err := ctx.Alloc(16)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n, off int
	}{{17, 0}, {1, 16}, {8, -1}, {0, 17}} {
		if err := b.WriteAt(make([]byte, c.n), c.off); err == nil || !strings.Contains(err.Error(), "do not fit a 16-byte buffer") {
			t.Errorf("WriteAt(%d bytes, %d) = %v", c.n, c.off, err)
		}
		if err := b.ReadAt(make([]byte, c.n), c.off); err == nil {
			t.Errorf("ReadAt(%d bytes, %d) succeeded", c.n, c.off)
		}
	}
	if err := b.WriteAt([]byte{1, 2, 3, 4}, 12); err != nil {
		t.Errorf("WriteAt(4 bytes, 12) = %v", err)
	}
	got := make([]byte, 2)
	if err := b.ReadAt(got, 13); err != nil || got[0] != 2 || got[1] != 3 {
		t.Errorf("ReadAt(2 bytes, 13) = %v, %v; want [2 3]", got, err)
	}
	all := make([]byte, 16)
	if err := b.Zero(); err != nil {
		t.Fatal(err)
	}
	if err := b.ReadAt(all, 0); err != nil || string(all) != string(make([]byte, 16)) {
		t.Errorf("after Zero: % x, %v", all, err)
	}

	mod, err := ctx.LoadModule(readVadd(t))
	if err != nil {
		t.Fatal(err)
	}
	fn, _ := mod.Function("vadd")
	for _, c := range []struct {
		grid, block Dim3
		smem        int
		args        []any
		want        string
	}{
		{D1(1), D1(32), 0, []any{b, b, b, 4}, "argument 3: int has no fixed width"},
		{D1(0), D1(32), 0, []any{b, b, b, uint32(4)}, "grid.X = 0"},
		{Dim3{X: 1}, D1(32), 0, []any{b, b, b, uint32(4)}, "grid.Y = 0"},
		{D1(1), D1(1 << 32), 0, []any{b, b, b, uint32(4)}, "block.X = 4294967296"},
		{D1(1), D1(32), -1, []any{b, b, b, uint32(4)}, "dynamic shared memory -1"},
		{D1(1), D1(32), 60000, []any{b, b, b, uint32(4)}, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (701)"},
		{D1(1), D1(2048), 0, []any{b, b, b, uint32(4)}, "CUDA_ERROR_INVALID_VALUE (1)"},
	} {
		err := fn.Launch(c.grid, c.block, c.smem, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Launch(%v, %v, %d) = %v, want %q", c.grid, c.block, c.smem, err, c.want)
		}
	}
	m.check(t, "launches", 0)

	// A kernel that reads past its buffers faults asynchronously: the next synchronizing call says so.
	if err := fn.Launch(D1(1), D1(64), 0, b, b, b, uint32(64)); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Synchronize(); !errors.Is(err, ErrorIllegalAddress) {
		t.Errorf("Synchronize after an out-of-bounds kernel = %v, want CUDA_ERROR_ILLEGAL_ADDRESS", err)
	}

	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if err := b.Free(); err != nil {
		t.Errorf("second Free = %v, want nil", err)
	}
	if err := Upload(b, []float32{1}); !errors.Is(err, ErrClosed) {
		t.Errorf("Upload to a freed buffer = %v, want ErrClosed", err)
	}
	if err := fn.Launch(D1(1), D1(1), 0, b, b, b, uint32(1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Launch with a freed buffer = %v, want ErrClosed", err)
	}
	if err := mod.Unload(); err != nil {
		t.Fatal(err)
	}
	if err := fn.Launch(D1(1), D1(1), 0, DevicePtr(0), DevicePtr(0), DevicePtr(0), uint32(0)); !errors.Is(err, ErrClosed) {
		t.Errorf("Launch of an unloaded module's function = %v, want ErrClosed", err)
	}
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ctx.Alloc(4); !errors.Is(err, ErrClosed) {
		t.Errorf("Alloc on a closed context = %v, want ErrClosed", err)
	}
	if err := ctx.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	m.check(t, "ctx_refs", 0)
	m.check(t, "allocs", 0)
}

// The context is current per OS thread (as in the real driver): every call from a goroutine on a
// fresh thread must still find it, because each method makes it current first.
func TestMockContextPerThread(t *testing.T) {
	d, m := mockDriver(t)
	dev, _ := d.Device(0)
	ctx, err := dev.PrimaryContext()
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	for i := range 4 {
		done := make(chan error)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread exits with the goroutine, so the next one is new
			b, err := AllocCopy(ctx, []int32{int32(i), 2, 3})
			if err != nil {
				done <- err
				return
			}
			got := make([]int32, 3)
			if err := Download(got, b); err != nil {
				done <- err
				return
			}
			if got[0] != int32(i) {
				t.Errorf("thread %d read %v", i, got)
			}
			done <- b.Free()
		}()
		if err := <-done; err != nil {
			t.Fatalf("goroutine %d on a new thread: %v", i, err)
		}
	}
	m.check(t, "allocs", 0)
}

// cuTensorMapEncodeTiled (12 arguments, a 64-byte aligned output) gets every field in its place,
// and the map reaches a kernel's .align 64 .b8 [128] parameter byte for byte.
func TestMockTensorMap(t *testing.T) {
	d, m := mockDriver(t)
	dev, _ := d.Device(0)
	ctx, err := dev.PrimaryContext()
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	buf, err := ctx.Alloc(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	spec := TiledMap{DataType: TensorBfloat16, Global: buf.Ptr(), Dims: []uint64{200, 96, 3}, Strides: []uint64{400, 38400},
		Box: []uint32{64, 32, 1}, ElementStrides: []uint32{1, 2, 1}, Swizzle: Swizzle128B, L2Promotion: 2, OOBFill: 1}
	tm, err := ctx.EncodeTiled(spec)
	if err != nil {
		t.Fatal(err)
	}
	ne := binary.NativeEndian
	if got := ne.Uint64(tm[0:]); got != uint64(buf.Ptr()) {
		t.Errorf("global address %#x, want %#x", got, buf.Ptr())
	}
	for i, want := range []uint32{uint32(TensorBfloat16), 3, 0, uint32(Swizzle128B), 2, 1} {
		if got := ne.Uint32(tm[8+4*i:]); got != want {
			t.Errorf("scalar argument %d = %d, want %d", i, got, want)
		}
	}
	for i := range 3 {
		if got := ne.Uint64(tm[32+8*i:]); got != spec.Dims[i] {
			t.Errorf("dims[%d] = %d, want %d", i, got, spec.Dims[i])
		}
		if i < 2 && ne.Uint64(tm[72+8*i:]) != spec.Strides[i] {
			t.Errorf("strides[%d] = %d, want %d", i, ne.Uint64(tm[72+8*i:]), spec.Strides[i])
		}
		if got := ne.Uint16(tm[104+2*i:]); uint32(got) != spec.Box[i] {
			t.Errorf("box[%d] = %d, want %d", i, got, spec.Box[i])
		}
		if tm[114+i] != byte(spec.ElementStrides[i]) {
			t.Errorf("element strides[%d] = %d, want %d", i, tm[114+i], spec.ElementStrides[i])
		}
	}
	// Default element strides are all 1; rank 1 passes no strides.
	tm1, err := ctx.EncodeTiled(TiledMap{DataType: TensorFloat32, Global: buf.Ptr(), Dims: []uint64{1000}, Box: []uint32{256}})
	if err != nil || tm1[114] != 1 || ne.Uint32(tm1[12:]) != 1 {
		t.Errorf("rank-1 map: %v, element stride %d", err, tm1[114])
	}

	mod, err := ctx.LoadModule([]byte(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry tma(.param .u32 n, .param .align 64 .b8 tmap[128])\n{\n\tret;\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Unload()
	fn, _ := mod.Function("tma")
	if err := fn.Launch(D1(1), D1(128), 0, uint32(5), &tm); err != nil {
		t.Fatal(err)
	}
	if got := m.param(t, 1); string(got) != string(tm[:]) {
		t.Errorf("the kernel received a different tensor map:\n% x\nwant\n% x", got, tm[:])
	}

	for _, c := range []struct {
		edit func(*TiledMap)
		want string
	}{
		{func(s *TiledMap) { s.Global += 8 }, "not 16-byte aligned"},
		{func(s *TiledMap) { s.Strides[0] = 200 }, "multiple of 16"},
		{func(s *TiledMap) { s.Box[0] = 128 }, "exceeds the 128-byte swizzle span"},
		{func(s *TiledMap) { s.Box[0] = 4 }, "multiple of 16"},
		{func(s *TiledMap) { s.Box[1] = 300 }, "Box[1] = 300"},
		{func(s *TiledMap) { s.Strides = s.Strides[:1] }, "needs 2 strides"},
		{func(s *TiledMap) { s.Dims = nil }, "rank 0"},
		{func(s *TiledMap) { s.DataType = 42 }, "unsupported data type 42"},
		{func(s *TiledMap) { s.ElementStrides[2] = 9 }, "ElementStrides[2] = 9"},
	} {
		s := spec
		s.Dims, s.Strides, s.Box, s.ElementStrides = slices.Clone(spec.Dims), slices.Clone(spec.Strides), slices.Clone(spec.Box), slices.Clone(spec.ElementStrides)
		c.edit(&s)
		if _, err := ctx.EncodeTiled(s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("EncodeTiled(bad map) = %v, want %q", err, c.want)
		}
	}
	m.fail("cuTensorMapEncodeTiled", 1)
	if _, err := ctx.EncodeTiled(spec); !errors.Is(err, ErrorInvalidValue) {
		t.Errorf("EncodeTiled with the driver refusing = %v, want CUDA_ERROR_INVALID_VALUE", err)
	}
}

// A driver without cuTensorMapEncodeTiled (before CUDA 12.0) still opens, and EncodeTiled says
// why it cannot work; a library without a required entry point is ErrNoDriver naming it.
func TestMockMissingSymbols(t *testing.T) {
	mockDriver(t) // skips or fails as the other mock tests do when clang is missing
	old, err := buildMock(t, "-DMOCK_OLD_DRIVER")
	if err != nil {
		t.Fatal(err)
	}
	d, err := OpenLibrary(old)
	if err != nil {
		t.Fatalf("OpenLibrary(driver without cuTensorMapEncodeTiled) = %v", err)
	}
	dev, _ := d.Device(0)
	ctx, err := dev.PrimaryContext()
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	_, err = ctx.EncodeTiled(TiledMap{DataType: TensorFloat32, Global: 1 << 20, Dims: []uint64{64}, Box: []uint32{64}})
	if err == nil || !strings.Contains(err.Error(), "needs CUDA 12.0") {
		t.Errorf("EncodeTiled on an old driver = %v", err)
	}
	// Without cuFuncGetParamInfo the layout is unknown, and Launch trusts its arguments.
	mod, err := ctx.LoadModule(vaddPTX)
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Unload()
	fn, err := mod.Function("vadd")
	if err != nil {
		t.Fatal(err)
	}
	if ps, ok := fn.Params(); ok || ps != nil {
		t.Errorf("Params() on an old driver = %v, %v; want unknown", ps, ok)
	}
	// cuEventElapsedTime_v2 is missing: Elapsed falls back to cuEventElapsedTime.
	e0, err := ctx.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer e0.Close()
	e1, _ := ctx.NewEvent()
	defer e1.Close()
	if err := e0.Record(nil); err != nil {
		t.Fatal(err)
	}
	if err := e1.Record(nil); err != nil {
		t.Fatal(err)
	}
	if el, err := Elapsed(e0, e1); err != nil || el != 0 {
		t.Errorf("Elapsed on an old driver = %v, %v; want 0", el, err)
	}

	broken, err := buildMock(t, "-DMOCK_NO_LAUNCH")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLibrary(broken); !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "no symbol cuLaunchKernel") {
		t.Errorf("OpenLibrary(library without cuLaunchKernel) = %v, want ErrNoDriver naming cuLaunchKernel", err)
	}
}

// BenchmarkMockLaunch is the host cost of Launch with the driver itself nearly free: argument
// packing, making the context current, and the purego calls.
func BenchmarkMockLaunch(b *testing.B) {
	if mockLibV == nil {
		b.Skip("run with -run Mock so that a test builds the mock driver first")
	}
	d, err := OpenLibrary(mockLibV.path)
	if err != nil {
		b.Fatal(err)
	}
	dev, _ := d.Device(0)
	ctx, err := dev.PrimaryContext()
	if err != nil {
		b.Fatal(err)
	}
	defer ctx.Close()
	mod, err := ctx.LoadModule([]byte(probePTX))
	if err != nil {
		b.Fatal(err)
	}
	defer mod.Unload()
	fn, _ := mod.Function("noargs")
	buf, _ := ctx.Alloc(64)
	defer buf.Free()
	vadd, _ := ctx.LoadModule(vaddPTX)
	defer vadd.Unload()
	fv, _ := vadd.Function("vadd")
	b.Run("noargs", func(b *testing.B) {
		for b.Loop() {
			if err := fn.Launch(D1(1), D1(1), 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("vadd4", func(b *testing.B) {
		for b.Loop() {
			if err := fv.Launch(D1(1), D1(1), 0, buf, buf, buf, uint32(0)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
