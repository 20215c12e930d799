package main

import (
	"fmt"
	"runtime"
	"time"

	"github.com/kgen-dev/kgen/codegen/ptx"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/probe/gpuprobe"
	"github.com/kgen-dev/kgen/rt/cuda"
)

// cudaTimer times lowered PTX candidates (tune.GPUTimer) on one CUDA device through rt/cuda: each
// candidate's module is loaded once, its launches run as the generated launcher runs them (the
// grid from the dims, the dynamic shared memory allowed first, tensor maps encoded for its
// tensor-map parameters), between two events on the default stream.
type cudaTimer struct {
	ctx  *cuda.Context
	mods map[*ptx.Kernel]*cudaCandidate
}

type cudaCandidate struct {
	mod *cuda.Module
	fns []*cuda.Function // one a launch
}

func newCUDATimer(dev *cuda.Device) (*cudaTimer, error) {
	// A context is current per OS thread: keep the timing goroutine on one.
	runtime.LockOSThread()
	ctx, err := dev.PrimaryContext()
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	return &cudaTimer{ctx: ctx, mods: map[*ptx.Kernel]*cudaCandidate{}}, nil
}

func (t *cudaTimer) Close() {
	for _, c := range t.mods {
		c.mod.Unload()
	}
	t.ctx.Close()
	runtime.UnlockOSThread()
}

func (t *cudaTimer) load(pk *ptx.Kernel) (*cudaCandidate, error) {
	if c, ok := t.mods[pk]; ok {
		return c, nil
	}
	st := ptx.SubTargets["sm_90a"]
	text := (&ptx.Module{Version: st.Version, Target: st.Target, Entries: pk.Entries}).Print()
	mod, err := t.ctx.LoadModule([]byte(text))
	if err != nil {
		return nil, err
	}
	c := &cudaCandidate{mod: mod}
	for _, l := range pk.Launches {
		fn, err := mod.Function(l.Entry)
		if err != nil {
			mod.Unload()
			return nil, err
		}
		if l.DynSharedBytes > ptx.MaxStaticShared {
			if err := fn.SetMaxDynamicSharedMemory(l.DynSharedBytes); err != nil {
				mod.Unload()
				return nil, fmt.Errorf("%s: %d bytes of dynamic shared memory: %v", l.Entry, l.DynSharedBytes, err)
			}
		}
		c.fns = append(c.fns, fn)
	}
	t.mods[pk] = c
	return c, nil
}

// cudaRun is one candidate ready to launch at one shape.
type cudaRun struct {
	c     *cudaCandidate
	pk    *ptx.Kernel
	args  []any
	grids [][3]int
}

func (r *cudaRun) launch() error {
	for i, l := range r.pk.Launches {
		g := r.grids[i]
		if g[0] == 0 || g[1] == 0 || g[2] == 0 {
			continue
		}
		var b [3]int
		for j, e := range l.Block {
			b[j] = e.(ir.IConst).V
		}
		if err := r.c.fns[i].Launch(cuda.D3(g[0], g[1], g[2]), cuda.D3(b[0], b[1], b[2]), l.DynSharedBytes, r.args...); err != nil {
			return err
		}
	}
	return nil
}

// prepare binds pk's parameters to bufs (one per tensor, by name) at dims.
func (t *cudaTimer) prepare(k *ir.Kernel, pk *ptx.Kernel, bufs map[string]*cuda.Buffer, dims map[string]int) (*cudaRun, error) {
	c, err := t.load(pk)
	if err != nil {
		return nil, err
	}
	env := ir.IEnv{Dims: map[*ir.Dim]int{}}
	dims64 := map[string]int64{}
	for _, d := range k.Dims {
		env.Dims[d] = dims[d.Name]
		dims64[d.Name] = int64(dims[d.Name])
	}
	r := &cudaRun{c: c, pk: pk}
	for _, p := range pk.Params {
		switch p.Kind {
		case ptx.PTensor:
			r.args = append(r.args, bufs[p.Name])
		case ptx.PTemp:
			return nil, fmt.Errorf("parameter %s: the timer allocates no temporaries", p.Name)
		case ptx.PScalar:
			switch p.Elem {
			case ir.F32:
				r.args = append(r.args, float32(1))
			case ir.F64:
				r.args = append(r.args, float64(1))
			case ir.F16, ir.BF16:
				r.args = append(r.args, uint16(0))
			default:
				return nil, fmt.Errorf("parameter %s: scalar of type %s", p.Name, p.Elem)
			}
		case ptx.PDim:
			r.args = append(r.args, dims64[p.Name])
		case ptx.PTensorMap:
			m, err := ptx.TMAMapOf(p, dims64)
			if err != nil {
				return nil, err
			}
			tm, err := t.ctx.EncodeTiled(cuda.TiledMap{DataType: cuda.TensorMapDataType(m.DataType), Global: bufs[p.Name].Ptr(),
				Dims: m.Dims[:], Strides: []uint64{m.RowStride}, Box: m.Box[:], Swizzle: cuda.TensorMapSwizzle(m.Swizzle)})
			if err != nil {
				return nil, err
			}
			r.args = append(r.args, tm)
		}
	}
	for _, l := range pk.Launches {
		var g [3]int
		for j, e := range l.Grid {
			if g[j], err = ir.EvalIndex(e, env); err != nil {
				return nil, fmt.Errorf("%s: grid: %v", l.Entry, err)
			}
		}
		r.grids = append(r.grids, g)
	}
	return r, nil
}

// Time implements tune.GPUTimer: buffers of k's tensors at dims (zero-filled), one warm-up call of
// each candidate, then pairs rounds of a timed batch of a and one of b, a batch being as many calls as
// take about 20 ms.
func (t *cudaTimer) Time(k *ir.Kernel, a, b *ptx.Kernel, dims map[string]int, pairs int) (ta, tb []float64, err error) {
	bufs := map[string]*cuda.Buffer{}
	defer func() {
		for _, b := range bufs {
			b.Free()
		}
	}()
	for _, p := range k.Params {
		if p.Kind == ir.Scalar {
			continue
		}
		n := p.Type.Size()
		for _, d := range p.Shape {
			n *= dims[d.Name]
		}
		buf, err := t.ctx.Alloc(max(n, 16))
		if err != nil {
			return nil, nil, err
		}
		bufs[p.Name] = buf
		if err := buf.Zero(); err != nil {
			return nil, nil, err
		}
	}
	ra, err := t.prepare(k, a, bufs, dims)
	if err != nil {
		return nil, nil, err
	}
	rb, err := t.prepare(k, b, bufs, dims)
	if err != nil {
		return nil, nil, err
	}
	ev, err := gpuprobe.NewEvents(t.ctx)
	if err != nil {
		return nil, nil, err
	}
	defer ev.Close()
	batch := func(r *cudaRun, calls int) (time.Duration, error) {
		return ev.Time(func() error {
			for i := 0; i < calls; i++ {
				if err := r.launch(); err != nil {
					return err
				}
			}
			return nil
		})
	}
	one, err := batch(ra, 1) // warm-up of a, and its time for the batch size
	if err != nil {
		return nil, nil, err
	}
	if _, err := batch(rb, 1); err != nil {
		return nil, nil, err
	}
	if one <= 0 {
		return nil, nil, gpuprobe.ErrNoTime
	}
	calls := max(1, min(1000, int(20*time.Millisecond/one)))
	for i := 0; i < pairs; i++ {
		da, err := batch(ra, calls)
		if err != nil {
			return nil, nil, err
		}
		db, err := batch(rb, calls)
		if err != nil {
			return nil, nil, err
		}
		ta = append(ta, float64(da.Nanoseconds())/float64(calls))
		tb = append(tb, float64(db.Nanoseconds())/float64(calls))
	}
	return ta, tb, nil
}
