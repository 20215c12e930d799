package cuda

import (
	"fmt"
	"math"
)

// Dim3 is a grid (in blocks) or block (in threads) shape. Every component must be at least 1.
type Dim3 struct{ X, Y, Z int }

// D1, D2 and D3 build a Dim3, setting the components not given to 1.
func D1(x int) Dim3       { return Dim3{x, 1, 1} }
func D2(x, y int) Dim3    { return Dim3{x, y, 1} }
func D3(x, y, z int) Dim3 { return Dim3{x, y, z} }

func (d Dim3) check(what string) error {
	for _, c := range []struct {
		n string
		v int
	}{{"X", d.X}, {"Y", d.Y}, {"Z", d.Z}} {
		if c.v < 1 || c.v > math.MaxUint32 {
			return fmt.Errorf("cuda: %s.%s = %d: must be in [1, 2^32)", what, c.n, c.v)
		}
	}
	return nil
}

// Launch queues f on the context's default stream (cuLaunchKernel) with grid blocks of block
// threads and sharedBytes of dynamic shared memory. args are the kernel's parameters in order:
// *Buffer or DevicePtr for pointers (.u64), int32/uint32/float32 (.s32/.u32/.f32), int64/uint64/
// float64, int8..uint16, or Raw bytes; each must match the width the PTX declares (checked when
// the driver reports the layout, see Function.Params). The launch is asynchronous: errors inside
// the kernel surface at the next synchronizing call.
func (f *Function) Launch(grid, block Dim3, sharedBytes int, args ...any) error {
	return f.LaunchOn(nil, grid, block, sharedBytes, args...)
}

// LaunchOn is Launch on stream s (nil: the default stream). s must belong to f's context.
func (f *Function) LaunchOn(s *Stream, grid, block Dim3, sharedBytes int, args ...any) error {
	if err := grid.check("grid"); err != nil {
		return err
	}
	if err := block.check("block"); err != nil {
		return err
	}
	if sharedBytes < 0 || sharedBytes > math.MaxUint32 {
		return fmt.Errorf("cuda: launch of %s: dynamic shared memory %d out of range", f.name, sharedBytes)
	}
	var stream uintptr
	if s != nil {
		if s.ctx != f.mod.ctx {
			return fmt.Errorf("cuda: launch of %s on a stream of another context", f.name)
		}
		if err := s.live(); err != nil {
			return err
		}
		stream = s.h
	}
	if err := f.mod.live(); err != nil {
		return err
	}
	p, err := packParams(args)
	if err != nil {
		return fmt.Errorf("launch of %s: %w", f.name, err)
	}
	if err := f.checkArgs(p); err != nil {
		return err
	}
	return f.mod.ctx.do(func(a *api) error {
		r := p.call(func(kp *uintptr) int32 {
			return a.cuLaunchKernel(f.h, uint32(grid.X), uint32(grid.Y), uint32(grid.Z),
				uint32(block.X), uint32(block.Y), uint32(block.Z), uint32(sharedBytes), stream, kp, nil)
		})
		if r != 0 {
			return checkf(r, "cuLaunchKernel(%s, grid %v, block %v, shared %d)", f.name, grid, block, sharedBytes)
		}
		return nil
	})
}

// checkArgs compares the packed arguments with the kernel's parameters when the driver reported
// them: the driver reads exactly as many pointers from kernelParams as the kernel has, and as many
// bytes through each as the parameter's size, so a short list or a narrow value would make it read
// past Go's memory instead of failing.
func (f *Function) checkArgs(p *params) error {
	if f.params == nil {
		return nil
	}
	if len(p.sizes) != len(f.params) {
		return fmt.Errorf("cuda: launch of %s: %d arguments, the kernel has %d parameters", f.name, len(p.sizes), len(f.params))
	}
	for i, q := range f.params {
		if p.sizes[i] != q.Size {
			return fmt.Errorf("cuda: launch of %s: argument %d (%T) is %d bytes, the kernel's parameter %d is %d",
				f.name, i, p.args[i], p.sizes[i], i, q.Size)
		}
	}
	return nil
}
