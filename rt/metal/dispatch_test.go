package metal

import (
	"errors"
	"strings"
	"testing"
	"unsafe"
)

// fakeVaddFunction compiles and looks up vadd on a fake device.
func fakeVaddFunction(t *testing.T) (*Device, *fakeDriver, *Library, *Function) {
	t.Helper()
	d, f := newFakeDevice()
	lib, err := d.Compile(vaddMSL, Metal30)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := lib.Function("vadd")
	if err != nil {
		t.Fatal(err)
	}
	return d, f, lib, fn
}

// The whole sequence generated code runs, against the fake: arguments reach the kernel in index
// order (a swapped a/c or a lost n would change the sums), buffers round-trip through contents,
// and after closing everything each handle was released exactly once.
func TestFakeVectorAdd(t *testing.T) {
	d, f, lib, fn := fakeVaddFunction(t)
	checkVadd(t, d, fn)
	if f.dispatches != 4 {
		t.Errorf("%d dispatches, want 4", f.dispatches)
	}
	fn.Close()
	fn.Close()
	lib.Close()
	lib.Close()
	d.Close()
	d.Close()
	if bad := f.leaks(); len(bad) > 0 {
		t.Errorf("handles not released exactly once: %v", bad)
	}
	if f.closed != 1 {
		t.Errorf("driver closed %d times, want 1", f.closed)
	}
}

// Every bad dispatch is refused with a clear error before the driver sees it.
func TestDispatchChecks(t *testing.T) {
	d, f, _, fn := fakeVaddFunction(t)
	buf, err := d.NewBuffer(64)
	if err != nil {
		t.Fatal(err)
	}
	freed, _ := d.NewBuffer(4)
	freed.Free()
	other, _ := newFakeDevice()
	foreign, _ := other.NewBuffer(4)
	n := Value(uint32(1))
	args := func(extra ...Arg) []Arg { return append([]Arg{buf, buf, buf}, extra...) }
	one := [3]int{1, 1, 1}
	for _, c := range []struct {
		name          string
		grid, threads [3]int
		args          []Arg
		want          string
	}{
		{"zero threads", one, [3]int{0, 1, 1}, args(n), "threads per threadgroup [0 1 1]: component 0 is 0, want >= 1"},
		{"negative grid", [3]int{1, -2, 1}, one, args(n), "grid [1 -2 1]: component 1 is -2, want >= 0"},
		{"above the pipeline", one, [3]int{513, 1, 1}, args(n), "513 threads per threadgroup [513 1 1] above the pipeline's maxTotalThreadsPerThreadgroup 512"},
		{"product above the pipeline", one, [3]int{32, 32, 1}, args(n), "1024 threads per threadgroup"},
		{"above the device", one, [3]int{1, 1, 65}, args(n), "above the device's maxThreadsPerThreadgroup [1024 1024 64]"},
		{"too many", one, one, make([]Arg, 32), "32 arguments, at most 31"},
		{"empty bytes", one, one, args(Bytes{}), "argument 3: 0 bytes, want 1..4096"},
		{"big bytes", one, one, args(make(Bytes, 4097)), "argument 3: 4097 bytes"},
		{"nil", one, one, []Arg{buf, nil}, "argument 1 is nil"},
		{"nil buffer", one, one, []Arg{(*Buffer)(nil)}, "argument 0: metal: nil *Buffer"},
		{"freed", one, one, []Arg{buf, freed}, "argument 1: " + ErrClosed.Error()},
		{"foreign", one, one, []Arg{foreign}, "argument 0: buffer of another device"},
	} {
		err := fn.Dispatch(c.grid, c.threads, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Dispatch = %v, want an error containing %q", c.name, err, c.want)
		}
	}
	if f.dispatches != 0 {
		t.Errorf("the driver saw %d dispatches of bad requests", f.dispatches)
	}
	if err := fn.Dispatch([3]int{0, 1, 1}, [3]int{64, 1, 1}, args(n)...); err != nil || f.dispatches != 0 {
		t.Errorf("empty grid: Dispatch = %v with %d driver dispatches, want nil and none", err, f.dispatches)
	}
	tm, err := fn.DispatchTimed([3]int{1, 1, 1}, [3]int{16, 1, 1}, args(n)...)
	if err != nil || tm.Duration().Seconds() != 0.5 {
		t.Errorf("DispatchTimed = %+v (%v), %v; want the fake's 0.5 s", tm, tm.Duration(), err)
	}
}

// Closed objects refuse use with ErrClosed, and objects of a closed device do too.
func TestClosed(t *testing.T) {
	d, f, lib, fn := fakeVaddFunction(t)
	buf, _ := d.NewBuffer(16)
	fn.Close()
	if err := fn.Dispatch([3]int{1, 1, 1}, [3]int{1, 1, 1}); !errors.Is(err, ErrClosed) {
		t.Errorf("Dispatch after Close = %v, want ErrClosed", err)
	}
	fn2, err := lib.Function("vadd")
	if err != nil {
		t.Fatal(err)
	}
	lib.Close()
	if _, err := lib.Function("vadd"); !errors.Is(err, ErrClosed) {
		t.Errorf("Function after Library.Close = %v, want ErrClosed", err)
	}
	d.Close()
	for name, err := range map[string]error{
		"Compile":   func() error { _, err := d.Compile(vaddMSL, Metal30); return err }(),
		"NewBuffer": func() error { _, err := d.NewBuffer(4); return err }(),
		"Dispatch":  fn2.Dispatch([3]int{1, 1, 1}, [3]int{1, 1, 1}),
		"WriteAt":   buf.WriteAt([]byte{1}, 0),
		"Zero":      buf.Zero(),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Device.Close = %v, want ErrClosed", name, err)
		}
	}
	fn2.Close()
	buf.Free()
	if bad := f.leaks(); len(bad) > 0 {
		t.Errorf("handles not released exactly once: %v", bad)
	}
}

// Source the compiler or NSString would misread is refused before the driver; compiler errors
// and warnings come back from it.
func TestCompile(t *testing.T) {
	d, f := newFakeDevice()
	for src, want := range map[string]string{
		"":                       "empty source",
		" \n\t":                  "empty source",
		"kernel void k() {}\xff": "not valid UTF-8",
		"kernel\x00 void":        "NUL byte at offset 6",
	} {
		if _, err := d.Compile(src, Metal30); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Compile(%q) = %v, want %q", src, err, want)
		}
	}
	if _, err := d.Compile(vaddMSL, 0); err == nil || !strings.Contains(err.Error(), "language version") {
		t.Errorf("Compile with version 0 = %v", err)
	}
	if len(f.kinds) != 0 {
		t.Errorf("the driver compiled refused sources: %v", f.kinds)
	}
	_, err := d.Compile("#error no such type\n", Metal31)
	var me *Error
	if !errors.As(err, &me) || err.Error() != "metal: newLibraryWithSource:options:error:: MTLLibraryErrorCompileFailure (3): program_source:1:2: error: no such type" {
		t.Errorf("compile error = %v", err)
	}
	lib, err := d.Compile("#warning w\n"+vaddMSL, Metal31)
	if err != nil || !strings.Contains(lib.Warnings(), "warning") {
		t.Errorf("Compile with a warning = %v, %v", lib, err)
	}
	if _, err := lib.Function("missing"); err == nil || !strings.Contains(err.Error(), `no function "missing"`) {
		t.Errorf("Function(missing) = %v", err)
	}
	if _, err := lib.Function(""); err == nil {
		t.Error("Function(\"\") succeeded")
	}
}

// Value is the scalar's in-memory (little-endian) bytes, checked by hand.
func TestValue(t *testing.T) {
	for _, c := range []struct {
		got  Bytes
		want string
	}{
		{Value(int32(-2)), "\xfe\xff\xff\xff"},
		{Value(uint32(1000)), "\xe8\x03\x00\x00"},
		{Value(float32(1)), "\x00\x00\x80\x3f"},
		{Value(float64(-2)), "\x00\x00\x00\x00\x00\x00\x00\xc0"},
		{Value(uint16(0x3c00)), "\x00\x3c"}, // half 1.0
	} {
		if string(c.got) != c.want {
			t.Errorf("Value = % x, want % x", []byte(c.got), []byte(c.want))
		}
	}
	// Value copies: later changes to the variable do not reach the argument.
	v := int64(5)
	b := Value(v)
	v = 6
	if *(*int64)(unsafe.Pointer(&b[0])) != 5 {
		t.Error("Value aliases its argument")
	}
}

// Run encodes several launches in one command buffer, in order: the second reads what the first
// wrote. It checks every launch before running any.
func TestRun(t *testing.T) {
	d, f, _, fn := fakeVaddFunction(t)
	a := []float32{1, 2, 3, 4, 5}
	b := []float32{0.5, 0.25, 8, -4, 1e7}
	da, _ := NewBufferFrom(d, a)
	db, _ := NewBufferFrom(d, b)
	dc, _ := d.NewBuffer(4 * len(a))
	de, _ := d.NewBuffer(4 * len(a))
	n := Value(uint32(len(a)))
	// 2 threadgroups of 4 threads cover 5 elements.
	first := Launch{Func: fn, Grid: [3]int{2, 1, 1}, Threads: [3]int{4, 1, 1}, Args: []Arg{da, db, dc, n}}
	second := Launch{Func: fn, Grid: [3]int{2, 1, 1}, Threads: [3]int{4, 1, 1}, Args: []Arg{dc, db, de, n}}
	empty := Launch{Func: fn, Grid: [3]int{0, 1, 1}, Threads: [3]int{4, 1, 1}}
	if _, err := d.Run(first, empty, second); err != nil {
		t.Fatal(err)
	}
	if f.runs != 1 || f.dispatches != 2 {
		t.Errorf("%d command buffers, %d dispatches; want 1 and 2", f.runs, f.dispatches)
	}
	e := make([]float32, len(a))
	Download(e, de)
	for i := range a {
		if want := (a[i] + b[i]) + b[i]; e[i] != want {
			t.Errorf("e[%d] = %v, want %v", i, e[i], want)
		}
	}

	bad := second
	bad.Threads = [3]int{1024, 1, 1}
	other, _ := newFakeDevice()
	for name, ls := range map[string][]Launch{
		"bad second": {first, bad},
		"nil func":   {first, {Grid: [3]int{1, 1, 1}, Threads: [3]int{1, 1, 1}}},
		"foreign":    {first},
	} {
		dev := d
		if name == "foreign" {
			dev = other
		}
		if _, err := dev.Run(ls...); err == nil {
			t.Errorf("%s: Run succeeded", name)
		}
	}
	if f.dispatches != 2 {
		t.Errorf("a failed Run dispatched: %d dispatches, want still 2", f.dispatches)
	}
	if _, err := d.Run(empty); err != nil || f.runs != 1 {
		t.Errorf("Run(empty) = %v with %d command buffers, want nil and no new one", err, f.runs)
	}
	if got, want := Values(int32(3), int32(-1)), "\x03\x00\x00\x00\xff\xff\xff\xff"; string(got) != want {
		t.Errorf("Values(3, -1) = % x, want % x", []byte(got), []byte(want))
	}
}
