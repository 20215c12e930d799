package metal

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unsafe"
)

// fakeDriver stands in for Metal in tests on any system: Go memory for buffers, Go functions for
// kernels, and a ledger of every handle it hands out and every release, so tests can check that
// the portable layer passes arguments in index order, never calls the driver with a request it
// should have refused, and releases each object exactly once.
type fakeDriver struct {
	inf      DeviceInfo
	maxTotal int // the pipelines' maxTotalThreadsPerThreadgroup

	next     handle
	kinds    map[handle]string
	released map[handle]int
	mem      map[handle][]byte
	closed   int

	kernels    map[string]fakeKernel
	dispatches int // launches run
	runs       int // command buffers
}

// fakeKernel runs one dispatch: mem returns a bound buffer's bytes.
type fakeKernel func(grid, threads Size, args []binding, mem func(handle) []byte) error

func newFakeDevice() (*Device, *fakeDriver) {
	f := &fakeDriver{
		inf: DeviceInfo{Name: "fake", MaxThreadsPerThreadgroup: Size{Width: 1024, Height: 1024, Depth: 64},
			MaxBufferLength: 1 << 20},
		maxTotal: 512,
		kinds:    map[handle]string{}, released: map[handle]int{}, mem: map[handle][]byte{},
		kernels: map[string]fakeKernel{"vadd": fakeVadd},
	}
	return &Device{drv: f}, f
}

func (f *fakeDriver) handle(kind string) handle {
	f.next += 0x10
	f.kinds[f.next] = kind
	return f.next
}

func (f *fakeDriver) info() DeviceInfo { return f.inf }

func (f *fakeDriver) compile(src string, v LanguageVersion) (handle, string, error) {
	if i := strings.Index(src, "#error"); i >= 0 {
		return 0, "", &Error{Op: "newLibraryWithSource:options:error:", Domain: LibraryErrorDomain, Code: 3,
			Description: "program_source:1:2: error: " + strings.TrimSpace(src[i+6:])}
	}
	warn := ""
	if strings.Contains(src, "#warning") {
		warn = "program_source:1:2: warning: it warns"
	}
	return f.handle("library"), warn, nil
}

func (f *fakeDriver) pipeline(lib handle, name string) (handle, handle, PipelineInfo, error) {
	if f.kinds[lib] != "library" || f.released[lib] != 0 {
		return 0, 0, PipelineInfo{}, fmt.Errorf("fake: pipeline from %#x, not a live library", lib)
	}
	if _, ok := f.kernels[name]; !ok {
		return 0, 0, PipelineInfo{}, &Error{Op: "newFunctionWithName:", Description: fmt.Sprintf("the library has no function %q", name)}
	}
	return f.handle("function " + name), f.handle("pipeline " + name),
		PipelineInfo{MaxTotalThreadsPerThreadgroup: f.maxTotal, ThreadExecutionWidth: 32}, nil
}

func (f *fakeDriver) newBuffer(n int) (handle, unsafe.Pointer, error) {
	if n <= 0 {
		return 0, nil, fmt.Errorf("fake: newBuffer(%d) reached the driver", n)
	}
	h := f.handle("buffer")
	f.mem[h] = make([]byte, n)
	return h, unsafe.Pointer(&f.mem[h][0]), nil
}

func (f *fakeDriver) run(ls []launch) (Timing, error) {
	f.runs++
	for _, l := range ls {
		f.dispatches++
		name, ok := strings.CutPrefix(f.kinds[l.pso], "pipeline ")
		if !ok || f.released[l.pso] != 0 {
			return Timing{}, fmt.Errorf("fake: dispatch of %#x, not a live pipeline", l.pso)
		}
		for i, a := range l.args {
			if a.buf != 0 && (f.kinds[a.buf] != "buffer" || f.released[a.buf] != 0) {
				return Timing{}, fmt.Errorf("fake: argument %d is %#x, not a live buffer", i, a.buf)
			}
		}
		if err := f.kernels[name](l.grid, l.threads, l.args, func(h handle) []byte { return f.mem[h] }); err != nil {
			return Timing{}, err
		}
	}
	return Timing{GPUStart: 10, GPUEnd: 10.5}, nil
}

func (f *fakeDriver) release(h handle) { f.released[h]++ }

func (f *fakeDriver) close() { f.closed++ }

// leaks returns the handles not released exactly once.
func (f *fakeDriver) leaks() []string {
	var bad []string
	for h, kind := range f.kinds {
		if f.released[h] != 1 {
			bad = append(bad, fmt.Sprintf("%s %#x released %d times", kind, h, f.released[h]))
		}
	}
	return bad
}

// fakeVadd is what the MSL kernel vadd of gpu_test.go computes, thread by thread:
// c[i] = a[i] + b[i] for i = threadgroup*width + thread < n, with a, b, c = buffers 0, 1, 2 and
// n = the uint32 bytes at index 3.
func fakeVadd(grid, threads Size, args []binding, mem func(handle) []byte) error {
	if len(args) != 4 || args[3].buf != 0 || len(args[3].bytes) != 4 {
		return fmt.Errorf("vadd: want 3 buffers and 4 bytes, got %d arguments", len(args))
	}
	a, b, c := mem(args[0].buf), mem(args[1].buf), mem(args[2].buf)
	n := uint64(binary.LittleEndian.Uint32(args[3].bytes))
	for g := range grid.Width {
		for t := range threads.Width {
			i := g*threads.Width + t
			if i >= n {
				continue
			}
			if 4*i+4 > uint64(min(len(a), len(b), len(c))) {
				return fmt.Errorf("vadd: thread %d out of range", i)
			}
			x := *(*float32)(unsafe.Pointer(&a[4*i]))
			y := *(*float32)(unsafe.Pointer(&b[4*i]))
			*(*float32)(unsafe.Pointer(&c[4*i])) = x + y
		}
	}
	return nil
}
