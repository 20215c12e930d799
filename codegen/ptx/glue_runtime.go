package ptx

// glueRuntime is the package-independent part of ptx_cuda.go: the CUDA handle, OpenCUDA, the typed
// device tensor and the table-driven launcher. PKG is replaced by the package name (error prefixes).
const glueRuntime = `// CUDA runs this package's PTX kernels on one NVIDIA GPU (device 0). Its methods have the
// parameters, checks and errors of the CPU functions, on device tensors (Name) or on host slices
// (NameHost: upload, launch, download). A method returns after its launches finished; they run in
// order on one stream. Methods may be called from several goroutines (calls are serialized).
type CUDA struct {
	ctx    *cuda.Context
	mod    *cuda.Module
	stream *cuda.Stream
	table  *ptxModule
	props  cuda.Props
	fns    map[string]*cuda.Function
	mu     sync.Mutex
	// tmaRuns counts the calls that ran a kernel's TMA version (sm_90a), prodRuns those that ran its
	// production version, for the tests.
	tmaRuns, prodRuns int
	// dynSet holds the entries whose dynamic shared memory limit was raised (cuFuncSetAttribute).
	dynSet map[string]bool
}

// OpenCUDA opens the CUDA driver, picks device 0 and loads the best PTX module of this package for
// its compute capability (sm_90a only on 9.0, sm_80 on 8.0 and later). It returns a clear error,
// never a crash, when there is no driver (cuda.ErrNoDriver), no GPU, a GPU below compute capability
// 8.0, or a module the driver's JIT refuses (the error carries the JIT log).
func OpenCUDA() (*CUDA, error) {
	d, err := cuda.Open()
	if err != nil {
		return nil, fmt.Errorf("PKG: OpenCUDA: %w", err)
	}
	dev, err := d.Device(0)
	if err != nil {
		return nil, fmt.Errorf("PKG: OpenCUDA: %w", err)
	}
	props, err := dev.Props()
	if err != nil {
		return nil, fmt.Errorf("PKG: OpenCUDA: %w", err)
	}
	m, err := ptxChoose(props)
	if err != nil {
		return nil, err
	}
	ctx, err := dev.PrimaryContext()
	if err != nil {
		return nil, fmt.Errorf("PKG: OpenCUDA: %w", err)
	}
	c := &CUDA{ctx: ctx, table: m, props: props, fns: map[string]*cuda.Function{}}
	if err := c.load(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// load JIT-compiles the chosen module and looks up every entry of its table.
func (c *CUDA) load() error {
	mod, err := c.ctx.LoadModule([]byte(c.table.text))
	if err != nil {
		return fmt.Errorf("PKG: OpenCUDA: loading the %s module: %w", c.table.target, err)
	}
	c.mod = mod
	for _, k := range c.table.kernels {
		ls := k.launches
		if k.tma != nil {
			ls = append(append([]ptxLaunch{}, ls...), k.tma.launches...)
		}
		if k.prod != nil {
			ls = append(append([]ptxLaunch{}, ls...), k.prod.launches...)
		}
		for _, l := range ls {
			f, err := mod.Function(l.entry)
			if err != nil {
				return fmt.Errorf("PKG: OpenCUDA: %w", err)
			}
			c.fns[l.entry] = f
		}
	}
	s, err := c.ctx.NewStream()
	if err != nil {
		return fmt.Errorf("PKG: OpenCUDA: %w", err)
	}
	c.stream = s
	return nil
}

// ptxChoose returns the module of ptxModules that a GPU with props runs and that is written for the
// newest architecture (highest minCC; the first of equals): sm_90a on 9.0, sm_80 on other 8.0+ GPUs.
// KGEN_PTX_TARGET=sm_80 (any module's target) restricts the choice to that module, so that a Hopper
// GPU can run and time the sm_80 (mma.sync) kernels; an error if the GPU cannot run it.
func ptxChoose(props cuda.Props) (*ptxModule, error) {
	want := os.Getenv("KGEN_PTX_TARGET")
	var have []string
	var best *ptxModule
	for i := range ptxModules {
		m := &ptxModules[i]
		have = append(have, m.target)
		if want != "" && m.target != want {
			continue
		}
		if props.SM() >= m.minCC && cuda.CheckTarget(props, m.target) == nil && (best == nil || m.minCC > best.minCC) {
			best = m
		}
	}
	if best != nil {
		return best, nil
	}
	if want != "" {
		return nil, fmt.Errorf("PKG: OpenCUDA: KGEN_PTX_TARGET=%s, but %s (compute capability %d.%d) cannot run it or there is no such module (modules: %s)",
			want, props.Name, props.Major, props.Minor, strings.Join(have, ", "))
	}
	return nil, fmt.Errorf("PKG: OpenCUDA: %s (compute capability %d.%d) cannot run this package's PTX (modules: %s; sm_80 needs compute capability 8.0 or later, sm_90a exactly 9.0)",
		props.Name, props.Major, props.Minor, strings.Join(have, ", "))
}

// Target returns the sub-target of the loaded module ("sm_90a", "sm_80").
func (c *CUDA) Target() string { return c.table.target }

// Props returns the device's properties.
func (c *CUDA) Props() cuda.Props { return c.props }

// Context returns the CUDA context the kernels run in.
func (c *CUDA) Context() *cuda.Context { return c.ctx }

// Close unloads the module and releases the stream and the context. Tensors must be freed first.
func (c *CUDA) Close() error {
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	if c.stream != nil {
		keep(c.stream.Close())
	}
	if c.mod != nil {
		keep(c.mod.Unload())
	}
	keep(c.ctx.Close())
	return first
}

// CUDAElem is the element types of device tensors.
type CUDAElem interface {
	float32 | float64 | f16.F16 | f16.BF16 | int32 | int8
}

// CUDATensor is device memory holding Len() elements of T, row-major like the CPU functions'
// slices. An empty tensor holds no memory.
type CUDATensor[T CUDAElem] struct {
	c   *CUDA
	buf *cuda.Buffer
	n   int
}

// NewCUDATensor allocates n zeroed elements on c's device.
func NewCUDATensor[T CUDAElem](c *CUDA, n int) (*CUDATensor[T], error) {
	var z T
	size := int(unsafe.Sizeof(z))
	if n < 0 || n > math.MaxInt/size {
		return nil, fmt.Errorf("PKG: NewCUDATensor: %d elements", n)
	}
	t := &CUDATensor[T]{c: c, n: n}
	if n == 0 {
		return t, nil
	}
	b, err := c.ctx.Alloc(n * size)
	if err != nil {
		return nil, err
	}
	if err := b.Zero(); err != nil {
		b.Free()
		return nil, err
	}
	t.buf = b
	return t, nil
}

// CUDATensorFrom allocates a device tensor holding a copy of src.
func CUDATensorFrom[T CUDAElem](c *CUDA, src []T) (*CUDATensor[T], error) {
	t := &CUDATensor[T]{c: c, n: len(src)}
	if len(src) == 0 {
		return t, nil
	}
	b, err := cuda.AllocCopy(c.ctx, src)
	if err != nil {
		return nil, err
	}
	t.buf = b
	return t, nil
}

// Len returns the number of elements.
func (t *CUDATensor[T]) Len() int { return t.n }

// Buffer returns the device memory (nil when empty).
func (t *CUDATensor[T]) Buffer() *cuda.Buffer { return t.buf }

// Upload copies src, which must have Len() elements, to the device.
func (t *CUDATensor[T]) Upload(src []T) error {
	if len(src) != t.n {
		return fmt.Errorf("PKG: CUDATensor.Upload: %d elements into a tensor of %d", len(src), t.n)
	}
	if t.n == 0 {
		return nil
	}
	return cuda.Upload(t.buf, src)
}

// Download copies the tensor into dst, which must have Len() elements.
func (t *CUDATensor[T]) Download(dst []T) error {
	if len(dst) != t.n {
		return fmt.Errorf("PKG: CUDATensor.Download: a tensor of %d elements into %d", t.n, len(dst))
	}
	if t.n == 0 {
		return nil
	}
	return cuda.Download(dst, t.buf)
}

// Free releases the device memory.
func (t *CUDATensor[T]) Free() error {
	if t.buf == nil {
		return nil
	}
	err := t.buf.Free()
	t.buf = nil
	return err
}

func (t *CUDATensor[T]) ptr() cuda.DevicePtr {
	if t.buf == nil {
		return 0
	}
	return t.buf.Ptr()
}

// ptxOwn reports an error for a nil tensor or one of another CUDA handle.
func ptxOwn[T CUDAElem](c *CUDA, kernel, name string, t *CUDATensor[T]) error {
	if t == nil {
		return rt.Errorf(kernel, "tensor %s is nil", name)
	}
	if t.c != c {
		return rt.Errorf(kernel, "tensor %s belongs to another CUDA handle", name)
	}
	if t.n > 0 && t.buf == nil {
		return rt.Errorf(kernel, "tensor %s was freed", name)
	}
	return nil
}

// tensorMaps encodes the TMA tensor maps kernel k takes (one per ptxTensorMap parameter: the 2-D
// row-major tensor as dims {cols, rows}, its row stride, a box×box box, 128-byte swizzle, zero fill
// out of bounds; codegen/ptx's TMAMapOf); false when one cannot be encoded.
func (c *CUDA) tensorMaps(k *ptxKernel, a ptxArgs) (map[string]cuda.TensorMap, bool) {
	maps := map[string]cuda.TensorMap{}
	for _, p := range k.params {
		if p.kind != ptxTensorMap {
			continue
		}
		ptr, ok := a.tensors[p.name]
		dt := map[string]cuda.TensorMapDataType{"f16": cuda.TensorFloat16, "bf16": cuda.TensorBfloat16}[p.elem]
		if !ok || dt == 0 || len(p.shape) != 2 {
			return nil, false
		}
		rows, cols := a.dims[p.shape[0]], a.dims[p.shape[1]]
		stride := uint64(cols) * uint64(p.elemBytes)
		if rows <= 0 || cols <= 0 || stride%16 != 0 || ptr%16 != 0 {
			return nil, false
		}
		m, err := c.ctx.EncodeTiled(cuda.TiledMap{DataType: dt, Global: ptr, Dims: []uint64{uint64(cols), uint64(rows)},
			Strides: []uint64{stride}, Box: []uint32{uint32(p.box), uint32(p.box)}, Swizzle: cuda.Swizzle128B})
		if err != nil {
			return nil, false
		}
		maps[p.name] = m
	}
	return maps, true
}

// ptxArgs is what a method passes to ptxRun: the kernel's dims, tensors and scalars by name.
type ptxArgs struct {
	dims    map[string]int64
	tensors map[string]cuda.DevicePtr
	scalars map[string]any
}

// ptxRun launches kernel's entries in order on c's stream and waits for them. Grids, temporaries and
// arguments are all prepared before the first launch, so an error there writes nothing.
func (c *CUDA) ptxRun(kernel string, a ptxArgs) error {
	var k *ptxKernel
	for i := range c.table.kernels {
		if c.table.kernels[i].name == kernel {
			k = &c.table.kernels[i]
		}
	}
	if k == nil {
		if why, ok := c.table.unsupported[kernel]; ok {
			return rt.Errorf(kernel, "no PTX version for %s: %s", c.table.target, why)
		}
		return rt.Errorf(kernel, "no PTX version for %s", c.table.target)
	}
	// sm_90a: the version whose tiles TMA loads, when every tensor map it takes can be encoded (rows
	// of a multiple of 16 bytes, 16-byte aligned tensors); KGEN_PTX_TMA=0 turns it off.
	// The production version (128×256 tiles, dynamic shared memory) instead when its maps encode
	// too, its grid has a block for every SM at least and the device's opt-in shared memory holds its
	// stages; KGEN_PTX_PROD=0 turns it off, KGEN_PTX_PROD=1 drops the grid condition (tests).
	var tmaps map[string]cuda.TensorMap
	prod := false
	if k.tma != nil && os.Getenv("KGEN_PTX_TMA") != "0" {
		if p := k.prod; p != nil && os.Getenv("KGEN_PTX_PROD") != "0" && c.prodFits(p, a) {
			if m, ok := c.tensorMaps(p, a); ok {
				k, tmaps, prod = p, m, true
			}
		}
		if !prod {
			if m, ok := c.tensorMaps(k.tma, a); ok {
				k, tmaps = k.tma, m
			}
		}
	}
	tma := tmaps != nil
	d := make([]int64, len(k.dims))
	for i, n := range k.dims {
		v, ok := a.dims[n]
		if !ok {
			return rt.Errorf(kernel, "launch table names dim %s, which the kernel lacks", n)
		}
		d[i] = v
	}
	grids := make([][3]int64, len(k.launches))
	for i, l := range k.launches {
		g := l.grid(d)
		for j, v := range g {
			lim := int64(65535)
			if j == 0 {
				lim = 1<<31 - 1
			}
			if v < 0 || v > lim {
				return rt.Errorf(kernel, "launch %s: grid %v exceeds the hardware limit (x < 2^31, y and z <= 65535)", l.entry, g)
			}
		}
		grids[i] = g
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if tma {
		c.tmaRuns++
	}
	if prod {
		c.prodRuns++
	}
	args := make([]any, len(k.params))
	var temps []*cuda.Buffer
	defer func() {
		for _, b := range temps {
			b.Free()
		}
	}()
	for i, p := range k.params {
		switch p.kind {
		case ptxTensor:
			v, ok := a.tensors[p.name]
			if !ok {
				return rt.Errorf(kernel, "launch table names tensor %s, which the kernel lacks", p.name)
			}
			args[i] = v
		case ptxTemp:
			n := int64(p.elemBytes)
			for _, s := range p.shape {
				v := a.dims[s]
				if v != 0 && n > math.MaxInt64/v {
					return rt.Errorf(kernel, "temporary %s is too large", p.name)
				}
				n *= v
			}
			args[i] = cuda.DevicePtr(0)
			if n > 0 {
				b, err := c.ctx.Alloc(int(n))
				if err != nil {
					return fmt.Errorf("%s: temporary %s: %w", kernel, p.name, err)
				}
				temps = append(temps, b)
				args[i] = b.Ptr()
			}
		case ptxScalar:
			v, ok := a.scalars[p.name]
			if !ok {
				return rt.Errorf(kernel, "launch table names scalar %s, which the kernel lacks", p.name)
			}
			args[i] = v
		case ptxDim:
			args[i] = a.dims[p.name]
		case ptxTensorMap:
			args[i] = tmaps[p.name]
		}
	}
	for i, l := range k.launches {
		g := grids[i]
		if g[0] == 0 || g[1] == 0 || g[2] == 0 {
			continue
		}
		// Static shared memory is declared in the PTX (l.sharedBytes); an entry with an extern array
		// takes l.dynShared bytes of dynamic shared memory, allowed once per entry beforehand.
		if err := c.allowDynShared(kernel, l); err != nil {
			return err
		}
		err := c.fns[l.entry].LaunchOn(c.stream, cuda.D3(int(g[0]), int(g[1]), int(g[2])),
			cuda.D3(l.block[0], l.block[1], l.block[2]), l.dynShared, args...)
		if err != nil {
			return fmt.Errorf("%s: %w", kernel, err)
		}
	}
	if err := c.stream.Synchronize(); err != nil {
		return fmt.Errorf("%s: %w", kernel, err)
	}
	return nil
}

// prodFits reports whether kernel version p suits the call: every launch's grid has a block for each
// multiprocessor at least (smaller GEMMs keep more, smaller blocks) and its dynamic shared memory fits
// the device's opt-in limit.
func (c *CUDA) prodFits(p *ptxKernel, a ptxArgs) bool {
	d := make([]int64, len(p.dims))
	for i, n := range p.dims {
		d[i] = a.dims[n]
	}
	for _, l := range p.launches {
		g := l.grid(d)
		small := g[0]*g[1]*g[2] < int64(max(c.props.Multiprocessors, 1)) && os.Getenv("KGEN_PTX_PROD") != "1"
		if small || l.sharedBytes+l.dynShared > c.props.SharedMemoryPerBlockOptin {
			return false
		}
	}
	return true
}

// allowDynShared raises the dynamic shared memory limit of l's entry to l.dynShared (once), with a
// clear error when the device's opt-in limit is smaller. Called with c.mu held.
func (c *CUDA) allowDynShared(kernel string, l ptxLaunch) error {
	if l.dynShared == 0 || c.dynSet[l.entry] {
		return nil
	}
	if lim := c.props.SharedMemoryPerBlockOptin; l.sharedBytes+l.dynShared > lim {
		return rt.Errorf(kernel, "launch %s needs %d bytes of shared memory, more than the %d bytes a block of %s may opt in to", l.entry, l.sharedBytes+l.dynShared, lim, c.props.Name)
	}
	if err := c.fns[l.entry].SetMaxDynamicSharedMemory(l.dynShared); err != nil {
		return fmt.Errorf("%s: %w", kernel, err)
	}
	if c.dynSet == nil {
		c.dynSet = map[string]bool{}
	}
	c.dynSet[l.entry] = true
	return nil
}
`
