package msl

// hostRuntime is the package-independent part of the generated metal.go after the launch table:
// the Metal type, OpenMetal, MetalTensor and the launch runner the kernel methods share. %[1]s is
// the Metal language version constant of rt/metal, %[2]s the package name, %[3]s the
// method list of the doc comment (methodList).
const hostRuntime = `
// Metal runs this package's kernels on a Metal GPU (macOS): the embedded source compiled once, a
// compute pipeline per kernel function. Its methods take the CPU functions' parameters, check them
// the same way (same errors) before anything reaches the device, and write nothing when they return
// an error. The methods on *MetalTensor arguments work on device memory; the ...Host methods take
// slices and upload, run and download. Calls are synchronous: results are there on return.
// A Metal may be used by several goroutines at once; Close it once they are done.
%[3]stype Metal struct {
	dev  *metal.Device
	lib  *metal.Library
	fns  map[string]*metal.Function
	errs map[string]error // kernel functions whose pipeline could not be built, and why
}

// OpenMetal opens the system's default Metal device, compiles the package's Metal source for
// %[1]s and builds every kernel function's pipeline. Without Metal (another system, no GPU, a
// darwin build with -tags kgen_nometal) it returns an error wrapping metal.ErrNoDevice that says
// why (metal.IsNoDevice); a compile failure is a *metal.Error with the compiler's diagnostics. A
// function whose pipeline cannot be built (say, beyond this GPU's threadgroup memory) does not fail
// OpenMetal: the methods of its kernel return that error.
func OpenMetal() (*Metal, error) {
	dev, err := metal.Open()
	if err != nil {
		return nil, fmt.Errorf("%[2]s: OpenMetal: %%w", err)
	}
	m := &Metal{dev: dev, fns: map[string]*metal.Function{}, errs: map[string]error{}}
	if m.lib, err = dev.Compile(metalSource, %[1]s); err != nil {
		m.Close()
		return nil, fmt.Errorf("%[2]s: OpenMetal: %%w", err)
	}
	for _, l := range metalLaunches {
		fn, err := m.lib.Function(l.Function)
		if err != nil {
			m.errs[l.Function] = err
			continue
		}
		m.fns[l.Function] = fn
	}
	return m, nil
}

// Device returns the Metal device (nil for a nil Metal).
func (m *Metal) Device() *metal.Device {
	if m == nil {
		return nil
	}
	return m.dev
}

// Close releases the pipelines, the library and the device; tensors made from m should be freed
// first. Closing twice, or a nil Metal, is a no-op.
func (m *Metal) Close() error {
	if m == nil || m.dev == nil {
		return nil
	}
	for _, f := range m.fns {
		f.Close()
	}
	m.lib.Close()
	err := m.dev.Close()
	m.dev, m.lib, m.fns, m.errs = nil, nil, nil, nil
	return err
}

var errMetalNil = errors.New("%[2]s: no Metal device: nil or closed *Metal (use OpenMetal)")

// metalElem is the element types of MetalTensor: those of kdsl's f32, f16, bf16, i32 and i8.
type metalElem interface {
	float32 | f16.F16 | f16.BF16 | int32 | int8
}

// MetalTensor is a tensor of n elements of type T in Metal device memory (shared storage), row
// major like the CPU functions' slices.
type MetalTensor[T metalElem] struct {
	buf *metal.Buffer
	n   int
}

// NewMetalTensor allocates a zero-filled tensor of n elements on m's device.
func NewMetalTensor[T metalElem](m *Metal, n int) (*MetalTensor[T], error) {
	if m == nil || m.dev == nil {
		return nil, errMetalNil
	}
	var z T
	size := int(unsafe.Sizeof(z))
	if n < 0 || n > math.MaxInt/size {
		return nil, fmt.Errorf("%[2]s: NewMetalTensor(%%d): bad length", n)
	}
	b, err := m.dev.NewBuffer(n * size)
	if err != nil {
		return nil, err
	}
	return &MetalTensor[T]{buf: b, n: n}, nil
}

// MetalTensorFrom allocates a tensor of len(src) elements on m's device holding a copy of src.
func MetalTensorFrom[T metalElem](m *Metal, src []T) (*MetalTensor[T], error) {
	t, err := NewMetalTensor[T](m, len(src))
	if err != nil {
		return nil, err
	}
	if err := metal.Upload(t.buf, src); err != nil {
		t.Free()
		return nil, err
	}
	return t, nil
}

// Len returns the number of elements (0 for a nil tensor).
func (t *MetalTensor[T]) Len() int {
	if t == nil {
		return 0
	}
	return t.n
}

// Buffer returns the tensor's Metal buffer (nil for a nil tensor).
func (t *MetalTensor[T]) Buffer() *metal.Buffer {
	if t == nil {
		return nil
	}
	return t.buf
}

// Upload copies src, which must have exactly Len elements, into the tensor.
func (t *MetalTensor[T]) Upload(src []T) error {
	if len(src) != t.Len() {
		return fmt.Errorf("%[2]s: MetalTensor.Upload: %%d elements into a tensor of %%d", len(src), t.Len())
	}
	return metal.Upload(t.buf, src)
}

// Download copies the tensor into dst, which must have exactly Len elements.
func (t *MetalTensor[T]) Download(dst []T) error {
	if len(dst) != t.Len() {
		return fmt.Errorf("%[2]s: MetalTensor.Download: a tensor of %%d elements into %%d", t.Len(), len(dst))
	}
	return metal.Download(dst, t.buf)
}

// Free releases the tensor's buffer; freeing twice, or a nil tensor, is a no-op.
func (t *MetalTensor[T]) Free() error {
	if t == nil {
		return nil
	}
	return t.buf.Free()
}

// metalMaxElems bounds every dim and tensor length a Metal kernel takes: the kernels index with
// 32-bit ints and receive the dims as int32.
const metalMaxElems = math.MaxInt32

// metalLimits refuses dims and tensor lengths beyond metalMaxElems.
func metalLimits(kernel string, dims map[string]int, lens map[string]int) error {
	for _, n := range slices.Sorted(maps.Keys(dims)) {
		if dims[n] > metalMaxElems {
			return rt.Errorf(kernel, "dim %%s = %%d: above %%d, the largest a Metal kernel takes", n, dims[n], metalMaxElems)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(lens)) {
		if lens[n] > metalMaxElems {
			return rt.Errorf(kernel, "tensor %%s has %%d elements: above %%d, the largest a Metal kernel indexes", n, lens[n], metalMaxElems)
		}
	}
	return nil
}

// metalElemSize is the byte size of a launch table element type.
func metalElemSize(elem string) int {
	switch elem {
	case "f16", "bf16":
		return 2
	case "i8":
		return 1
	}
	return 4
}

// run runs the launches of kernel, in order, in one command buffer: tensors bound by name from
// bufs (the kernel's temporaries allocated here, once per call), scalars from vals, the dims
// struct from dims. The caller has checked every argument.
func (m *Metal) run(kernel string, dims map[string]int, bufs map[string]*metal.Buffer, vals map[string]metal.Bytes) error {
	if m == nil || m.dev == nil {
		return errMetalNil
	}
	temps := map[string]*metal.Buffer{}
	defer func() {
		for _, b := range temps {
			b.Free()
		}
	}()
	var ls []metal.Launch
	for _, l := range metalLaunches {
		if l.Kernel != kernel {
			continue
		}
		fn := m.fns[l.Function]
		if fn == nil {
			return fmt.Errorf("%[2]s: %%s: Metal function %%s: %%w", kernel, l.Function, m.errs[l.Function])
		}
		args := make([]metal.Arg, len(l.Buffers))
		for i, p := range l.Buffers {
			switch {
			case p.Kind == "dims":
				ds := make([]int32, len(l.Dims))
				for j, d := range l.Dims {
					ds[j] = int32(dims[d])
				}
				if len(ds) == 0 {
					ds = append(ds, 0) // an empty struct still takes a byte; bind one int
				}
				args[i] = metal.Values(ds...)
			case p.Kind == "scalar":
				args[i] = vals[p.Name]
			case p.Temp:
				b := temps[p.Name]
				if b == nil {
					n := metalElemSize(p.Elem)
					for _, d := range p.Shape {
						n *= dims[d]
					}
					var err error
					if b, err = m.dev.NewBuffer(n); err != nil {
						return fmt.Errorf("%[2]s: %%s: temporary %%s: %%w", kernel, p.Name, err)
					}
					temps[p.Name] = b
				}
				args[i] = b
			default:
				b := bufs[p.Name]
				if b == nil { // a nil tensor of length 0 (checked): bind an empty buffer
					key := "\x00" + p.Name
					if b = temps[key]; b == nil {
						var err error
						if b, err = m.dev.NewBuffer(0); err != nil {
							return fmt.Errorf("%[2]s: %%s: tensor %%s: %%w", kernel, p.Name, err)
						}
						temps[key] = b
					}
				}
				args[i] = b
			}
		}
		t := l.Threads
		ls = append(ls, metal.Launch{Func: fn, Grid: l.Grid(dims), Threads: [3]int{t, 1, 1}, Args: args})
	}
	if len(ls) == 0 {
		return fmt.Errorf("%[2]s: %%s has no Metal version", kernel)
	}
	if _, err := m.dev.Run(ls...); err != nil {
		return fmt.Errorf("%[2]s: %%s: %%w", kernel, err)
	}
	return nil
}

// metalUpload returns a new buffer of src's size, holding src unless fill is false.
func metalUpload[T metalElem](m *Metal, src []T, fill bool) (*metal.Buffer, error) {
	if !fill {
		var z T
		return m.dev.NewBuffer(len(src) * int(unsafe.Sizeof(z)))
	}
	return metal.NewBufferFrom(m.dev, src)
}
`
