package metal

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/kgen-dev/kgen/rt"
)

// MaxArgs is the number of buffer argument-table entries a compute kernel has ([[buffer(0)]] to
// [[buffer(30)]]).
const MaxArgs = 31

// MaxBytes is the largest Bytes argument: setBytes:length:atIndex: is for data under 4 KiB.
const MaxBytes = 4096

// Arg is one kernel argument: a *Buffer (bound with setBuffer:offset:atIndex:, offset 0) or Bytes
// (copied into the command with setBytes:length:atIndex:, for `constant T& x [[buffer(i)]]`).
type Arg interface{ metalArg() }

func (*Buffer) metalArg() {}

// Bytes is an Arg copied by value into the command: 1 to MaxBytes bytes.
type Bytes []byte

func (Bytes) metalArg() {}

// Value returns the bytes of one scalar as an Arg, e.g. Value(int32(n)) for `constant int& n`.
func Value[T Scalar](v T) Bytes {
	return Bytes(append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v))...))
}

// Values returns the bytes of several scalars, in order, as one Arg: e.g. a kernel's dims struct of
// int32 fields, `constant K_dims& dims [[buffer(i)]]`. (A C struct of fields of one type has no
// padding between them.)
func Values[T Scalar](vs ...T) Bytes { return Bytes(append([]byte(nil), rt.Bytes(vs)...)) }

// Timing is a command buffer's GPUStartTime and GPUEndTime: seconds in the host's
// CACurrentMediaTime timebase (CFTimeInterval).
type Timing struct{ GPUStart, GPUEnd float64 }

// Duration returns how long the GPU ran the command buffer.
func (t Timing) Duration() time.Duration {
	return time.Duration((t.GPUEnd - t.GPUStart) * float64(time.Second))
}

// Dispatch runs f on grid threadgroups of threadsPerGroup threads each (x, y, z):
// dispatchThreadgroups:threadsPerThreadgroup:, in a command buffer of its own that it commits and
// waits for. grid counts threadgroups, not threads; a grid with a zero component runs nothing and
// returns nil.
//
// The argument convention kgen's MSL backend follows: args[i] binds the kernel parameter declared
// [[buffer(i)]], and the generated kernel declares its buffer parameters in order, so parameter
// position = buffer index = position in args. A *Buffer binds device memory (`device T* p`), Bytes
// a small constant (`constant T& n`).
//
// Dispatch checks before encoding anything: every threadsPerGroup component >= 1 and within the
// device's MaxThreadsPerThreadgroup, their product within the pipeline's
// MaxTotalThreadsPerThreadgroup, grid components >= 0, at most MaxArgs arguments, every *Buffer
// live and of f's device, every Bytes 1..MaxBytes long. A GPU-side failure (a page fault, a
// timeout) is an *Error with the command buffer's NSError.
func (f *Function) Dispatch(grid, threadsPerGroup [3]int, args ...Arg) error {
	_, err := f.DispatchTimed(grid, threadsPerGroup, args...)
	return err
}

// DispatchTimed is Dispatch that also returns the command buffer's GPU start and end times.
func (f *Function) DispatchTimed(grid, threadsPerGroup [3]int, args ...Arg) (Timing, error) {
	if err := f.live(); err != nil {
		return Timing{}, err
	}
	return f.dev.Run(Launch{Func: f, Grid: grid, Threads: threadsPerGroup, Args: args})
}

// Launch is one dispatch of Run: Func on Grid threadgroups of Threads threads, with Args bound as
// Dispatch binds them.
type Launch struct {
	Func          *Function
	Grid, Threads [3]int
	Args          []Arg
}

// Run encodes the launches, in order, into one compute command encoder of one command buffer,
// commits it and waits for it: cheaper than one Dispatch each when a kernel needs several
// launches (softmax's passes, say). The encoder is the default serial one
// (MTLDispatchTypeSerial) and the buffers track hazards (their default), so each launch sees what
// the previous ones wrote. Every launch is checked as Dispatch checks it before anything is
// encoded; launches with an empty grid are left out, and if none remains Run returns at once.
// The Timing covers the whole command buffer.
func (d *Device) Run(launches ...Launch) (Timing, error) {
	if err := d.live(); err != nil {
		return Timing{}, err
	}
	ls := make([]launch, 0, len(launches))
	for i, l := range launches {
		f := l.Func
		if err := f.live(); err != nil {
			return Timing{}, fmt.Errorf("metal: Run: launch %d: %w", i, err)
		}
		if f.dev != d {
			return Timing{}, fmt.Errorf("metal: Run: launch %d: %s belongs to another device", i, f.name)
		}
		g, t, err := f.checkShape(l.Grid, l.Threads)
		if err != nil {
			return Timing{}, err
		}
		bs, err := f.bind(l.Args)
		if err != nil {
			return Timing{}, err
		}
		if n, _ := g.Count(); n > 0 {
			ls = append(ls, launch{pso: f.pso, grid: g, threads: t, args: bs})
		}
	}
	if len(ls) == 0 {
		return Timing{}, nil
	}
	return d.drv.run(ls)
}

// checkShape converts grid and threadsPerGroup to Sizes within the device's and the pipeline's limits.
func (f *Function) checkShape(grid, threadsPerGroup [3]int) (g, t Size, err error) {
	if g, err = SizeOf("grid", grid, 0); err != nil {
		return
	}
	if t, err = SizeOf("threads per threadgroup", threadsPerGroup, 1); err != nil {
		return
	}
	max := f.dev.Info().MaxThreadsPerThreadgroup
	if t.Width > max.Width || t.Height > max.Height || t.Depth > max.Depth {
		return g, t, fmt.Errorf("metal: %s: threads per threadgroup %v above the device's maxThreadsPerThreadgroup %v",
			f.name, threadsPerGroup, [3]uint64{max.Width, max.Height, max.Depth})
	}
	if n, _ := t.Count(); n > uint64(f.info.MaxTotalThreadsPerThreadgroup) {
		return g, t, fmt.Errorf("metal: %s: %d threads per threadgroup %v above the pipeline's maxTotalThreadsPerThreadgroup %d",
			f.name, n, threadsPerGroup, f.info.MaxTotalThreadsPerThreadgroup)
	}
	return g, t, nil
}

// bind checks args and turns them into bindings at indices 0, 1, ...
func (f *Function) bind(args []Arg) ([]binding, error) {
	if len(args) > MaxArgs {
		return nil, fmt.Errorf("metal: %s: %d arguments, at most %d buffer indices exist", f.name, len(args), MaxArgs)
	}
	bs := make([]binding, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case *Buffer:
			if err := a.live(); err != nil {
				return nil, fmt.Errorf("metal: %s: argument %d: %w", f.name, i, err)
			}
			if a.dev != f.dev {
				return nil, fmt.Errorf("metal: %s: argument %d: buffer of another device", f.name, i)
			}
			bs[i] = binding{buf: a.h}
		case Bytes:
			if len(a) == 0 || len(a) > MaxBytes {
				return nil, fmt.Errorf("metal: %s: argument %d: %d bytes, want 1..%d (setBytes:length:atIndex:)", f.name, i, len(a), MaxBytes)
			}
			bs[i] = binding{bytes: a}
		case nil:
			return nil, fmt.Errorf("metal: %s: argument %d is nil", f.name, i)
		default:
			return nil, fmt.Errorf("metal: %s: argument %d: unsupported type %T", f.name, i, a)
		}
	}
	return bs, nil
}
