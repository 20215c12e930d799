package ptx

import (
	"bytes"
	"fmt"
	"go/format"
	"strings"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

// Backend is the PTX backend: for each requested sub-target (ptx:sm_80, ptx:sm_90a) it writes the
// package's kernels as one PTX module, ptx_<sub>.ptx, embedded (//go:embed) by ptx_kernels.go, which
// also holds the table a launcher needs (ptxModules; see tableDoc). Kernels the lowering does not
// handle yet are listed in the table with the reason instead of failing the package. ptx_cuda.go
// (glueFile) runs them through the CUDA driver binding (rt/cuda): OpenCUDA and one method per kernel;
// ptx_cuda_test.go (when Tests) checks those methods against the reference interpreter on a GPU.
type Backend struct {
	Tests bool // also write ptx_cuda_test.go
}

// Name implements codegen.Backend.
func (Backend) Name() string { return "ptx" }

// Generate implements codegen.Backend for one sub-target.
func (b Backend) Generate(p *codegen.Package) ([]codegen.File, error) {
	return b.GenerateAll([]*codegen.Package{p})
}

// GenerateAll implements codegen.MultiBackend: ps holds one package per sub-target, each compiled by
// that sub-target's pipeline.
func (b Backend) GenerateAll(ps []*codegen.Package) ([]codegen.File, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	var files []codegen.File
	var mods []modInfo
	seen := map[string]bool{}
	for _, p := range ps {
		st, err := SubTargetOf(p.Target)
		if err != nil {
			return nil, err
		}
		if seen[st.Name] {
			return nil, fmt.Errorf("ptx: sub-target %s given twice", st.Name)
		}
		seen[st.Name] = true
		mod, ks, unsup, err := buildModule(p, st)
		if err != nil {
			return nil, err
		}
		name := "ptx_" + st.Name + ".ptx"
		files = append(files, codegen.File{Name: name, Data: []byte(mod.Print())})
		mods = append(mods, modInfo{st: st, file: name, kernels: ks, unsup: unsup})
	}
	src, err := goTable(ps[0].Name, ps[0].Source, mods)
	if err != nil {
		return nil, err
	}
	files = append(files, codegen.File{Name: "ptx_kernels.go", Data: src})
	glue, err := glueFile(ps[0], mods)
	if err != nil {
		return nil, err
	}
	files = append(files, codegen.File{Name: "ptx_cuda.go", Data: glue})
	if b.Tests {
		test, err := glueTestFile(ps[0], mods)
		if err != nil {
			return nil, err
		}
		files = append(files, codegen.File{Name: "ptx_cuda_test.go", Data: test})
	}
	return files, nil
}

// buildModule compiles p's kernels into sub-target st's module: the entries of Build and, on sm_90a,
// the TMA and production versions of the wgmma GEMMs after them (the module kgen gen writes).
func buildModule(p *codegen.Package, st SubTarget) (*Module, []*Kernel, []Unsupported, error) {
	var fs []*ir.Func
	for _, k := range p.Kernels {
		fs = append(fs, k.F)
	}
	mod, ks, unsup := Build(fs, st, p.Source)
	var prodEntries []*Entry // after every other entry: the module's earlier text stays as it was
	if st.Name == "sm_90a" {
		// the TMA versions of the wgmma GEMMs, which the launcher prefers where it can (tma.go)
		for i, k := range ks {
			for _, pk := range p.Kernels {
				if pk.K.Name != k.Name {
					continue
				}
				tk, err := tmaVariant(pk.K)
				if err != nil {
					return nil, nil, nil, fmt.Errorf("ptx: kernel %s, TMA version: %v", k.Name, err)
				}
				if tk != nil {
					ks[i].TMA = tk
					mod.Entries = append(mod.Entries, tk.Entries...)
				}
				pv, err := prodVariant(pk.K, prodPlanOf(pk.GPUPlan))
				if err != nil {
					return nil, nil, nil, fmt.Errorf("ptx: kernel %s, production version: %v", k.Name, err)
				}
				if pv != nil && tk != nil {
					ks[i].Prod = pv
					prodEntries = append(prodEntries, pv.Entries...)
				}
			}
		}
	}
	mod.Entries = append(mod.Entries, prodEntries...)
	return mod, ks, unsup, nil
}

type modInfo struct {
	st      SubTarget
	file    string
	kernels []*Kernel
	unsup   []Unsupported
}

// tableDoc documents the generated table (printed into the generated file).
const tableDoc = `// ptxModules holds one PTX module per sub-target kgen generated, in the order given to kgen gen.
// A launcher (ptx_cuda.go's OpenCUDA and methods):
//   - picks, of the modules the device runs (minCC at most its compute capability major·10+minor,
//     and an sm_XYa target only on exactly X.Y), the one with the highest minCC, and loads text
//     with cuModuleLoadData (the driver JIT-compiles it for the device);
//   - for a kernel, finds its ptxKernel by name (a kernel listed in unsupported has no PTX version:
//     report the reason);
//   - allocates every parameter of kind ptxTemp (elements: the product of its shape's dims, in
//     bytes elemBytes each) for the duration of the call;
//   - runs the launches in order on one stream (each depends on the previous), each as
//     cuLaunchKernel(entry, grid..., block..., dynShared, stream, params) — sharedBytes is the entry's
//     static shared memory, declared in the PTX; dynShared > 0 is the dynamic shared memory the entry
//     uses (its extern array), which needs cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) first
//     above 48 KiB and a device whose opt-in limit allows it; params[i] points at
//     the value of parameter i of the kernel, in order: a device address (8 bytes) for ptxTensor and
//     ptxTemp, the scalar's bits (bytes bytes: f32 4, f64 8, f16/bf16 2) for ptxScalar, an int64 for
//     ptxDim;
//   - grid(dims) takes the dims in the order of ptxKernel.dims; it skips a launch whose grid has a
//     zero dim, and reports an error when a grid dim exceeds the hardware limit (x: 2^31−1, y and z:
//     65535). Block dims and shared memory sizes are constants.`

// goTable writes ptx_kernels.go.
func goTable(pkg, source string, mods []modInfo) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(codegen.Header)
	fmt.Fprintf(&b, "// Source: %s. PTX kernels and their launch table (kgen's ptx backend).\n\npackage %s\n\nimport _ \"embed\"\n\n", source, pkg)
	for _, m := range mods {
		fmt.Fprintf(&b, "//go:embed %s\nvar ptxText_%s string\n\n", m.file, m.st.Name)
	}
	b.WriteString(`// ptxParamKind says what a kernel parameter is.
type ptxParamKind uint8

const (
	ptxTensor ptxParamKind = iota // a tensor parameter of the kernel: its device address
	ptxTemp                       // a temporary: device memory the launcher allocates
	ptxScalar                     // a scalar parameter, by value
	ptxDim                        // a dim's size, int64
	ptxTensorMap                  // a TMA tensor map of a tensor parameter (128 bytes), encoded at launch
)

// ptxParam is one parameter of every entry of a kernel.
type ptxParam struct {
	name      string
	kind      ptxParamKind
	elem      string   // element type: f64, f32, f16, bf16, i32 (tensors, temps, scalars)
	elemBytes int      // bytes of one element
	shape     []string // dims of a tensor or temp, row-major; empty for one element
	bytes     int      // bytes of the parameter's value
	box       int      // ptxTensorMap: the box side (elements; the map is the 2-D tensor's, 128-byte swizzle)
}

// ptxLaunch is one kernel launch.
type ptxLaunch struct {
	entry       string
	grid        func(d []int64) [3]int64 // blocks along x, y, z
	block       [3]int                   // threads along x, y, z
	sharedBytes int
	dynShared   int // dynamic shared memory to pass (0: none; the entry opts in above 48 KiB)
}

// ptxKernel is the PTX version of one kernel.
type ptxKernel struct {
	name     string
	params   []ptxParam
	dims     []string
	launches []ptxLaunch
	tma      *ptxKernel // sm_90a: the version whose tiles TMA loads, run when its tensor maps encode
	prod     *ptxKernel // sm_90a: the production TMA version, run instead for GEMMs that fill the GPU
}

// ptxModule is the PTX of one sub-target.
type ptxModule struct {
	target      string // kgen sub-target
	minCC       int    // lowest compute capability that runs it
	text        string
	kernels     []ptxKernel
	unsupported map[string]string // kernels without a PTX version, and why
}

`)
	b.WriteString(tableDoc)
	b.WriteString("\nvar ptxModules = []ptxModule{\n")
	for _, m := range mods {
		cc := 80
		if m.st.Name == "sm_90a" {
			cc = 90
		}
		fmt.Fprintf(&b, "{target: %q, minCC: %d, text: ptxText_%s,\nkernels: []ptxKernel{\n", m.st.Name, cc, m.st.Name)
		for _, k := range m.kernels {
			if err := writeKernel(&b, k, "{"); err != nil {
				return nil, err
			}
			b.WriteString(",\n")
		}
		b.WriteString("},\nunsupported: map[string]string{\n")
		for _, u := range m.unsup {
			fmt.Fprintf(&b, "%q: %q,\n", u.Kernel, u.Reason)
		}
		b.WriteString("}},\n")
	}
	b.WriteString("}\n\n")
	b.WriteString(`// ptxFloorDiv is floor(a / b) for b > 0 (the IR's index division).
func ptxFloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

var _ = ptxFloorDiv
`)
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("ptx: generated Go does not format: %v", err)
	}
	return out, nil
}

// writeKernel writes the ptxKernel literal of k after open ("{" in the table, "&ptxKernel{" for a
// TMA version), without a trailing comma.
func writeKernel(b *bytes.Buffer, k *Kernel, open string) error {
	var dims []string
	for _, p := range k.Params {
		if p.Kind == PDim {
			dims = append(dims, p.Name)
		}
	}
	fmt.Fprintf(b, "%sname: %q, dims: %#v,\nparams: []ptxParam{\n", open, k.Name, dims)
	for _, p := range k.Params {
		kind := [...]string{"ptxTensor", "ptxTemp", "ptxScalar", "ptxDim", "ptxTensorMap"}[p.Kind]
		bytes, box := 8, 0
		switch p.Kind {
		case PScalar:
			bytes = p.Elem.Size()
		case PTensorMap:
			bytes, box = 128, TMABox
		}
		elem, eb := "", 0
		if p.Kind != PDim {
			elem, eb = p.Elem.String(), p.Elem.Size()
		}
		if box > 0 {
			fmt.Fprintf(b, "{name: %q, kind: %s, elem: %q, elemBytes: %d, shape: %#v, bytes: %d, box: %d},\n", p.Name, kind, elem, eb, p.Shape, bytes, box)
		} else {
			fmt.Fprintf(b, "{name: %q, kind: %s, elem: %q, elemBytes: %d, shape: %#v, bytes: %d},\n", p.Name, kind, elem, eb, p.Shape, bytes)
		}
	}
	b.WriteString("},\nlaunches: []ptxLaunch{\n")
	for _, l := range k.Launches {
		g := make([]string, 3)
		for i, e := range l.Grid {
			s, err := goIExpr(e, dims)
			if err != nil {
				return fmt.Errorf("ptx: kernel %s launch %s: %v", k.Name, l.Entry, err)
			}
			g[i] = s
		}
		var bl [3]int
		for i, e := range l.Block {
			bl[i] = e.(ir.IConst).V
		}
		dyn := ""
		if l.DynSharedBytes > 0 {
			dyn = fmt.Sprintf(", dynShared: %d", l.DynSharedBytes)
		}
		fmt.Fprintf(b, "{entry: %q, sharedBytes: %d%s, block: [3]int{%d, %d, %d},\ngrid: func(d []int64) [3]int64 { return [3]int64{%s} }},\n",
			l.Entry, l.SharedBytes, dyn, bl[0], bl[1], bl[2], strings.Join(g, ", "))
	}
	b.WriteString("}")
	if k.TMA != nil {
		b.WriteString(",\ntma: ")
		if err := writeKernel(b, k.TMA, "&ptxKernel{"); err != nil {
			return err
		}
	}
	if k.Prod != nil {
		b.WriteString(",\nprod: ")
		if err := writeKernel(b, k.Prod, "&ptxKernel{"); err != nil {
			return err
		}
	}
	b.WriteString("}")
	return nil
}

// goIExpr writes a grid expression (plan already substituted) as Go over d, the dims in order.
func goIExpr(e ir.IExpr, dims []string) (string, error) {
	switch x := e.(type) {
	case ir.IConst:
		return fmt.Sprint(x.V), nil
	case ir.IDim:
		for i, d := range dims {
			if d == x.D.Name {
				return fmt.Sprintf("d[%d]", i), nil
			}
		}
		return "", fmt.Errorf("grid uses dim %s, not a dim of the kernel", x.D.Name)
	case ir.IBin:
		a, err := goIExpr(x.X, dims)
		if err != nil {
			return "", err
		}
		c, err := goIExpr(x.Y, dims)
		if err != nil {
			return "", err
		}
		switch x.Op {
		case '+', '-', '*', '^', '&':
			return "(" + a + " " + string(x.Op) + " " + c + ")", nil
		case 'm':
			return "min(" + a + ", " + c + ")", nil
		case 'M':
			return "max(" + a + ", " + c + ")", nil
		case '/':
			return "ptxFloorDiv(" + a + ", " + c + ")", nil
		}
		return "", fmt.Errorf("grid expression operator %q", x.Op)
	}
	return "", fmt.Errorf("grid expression %s depends on more than dims", e)
}
