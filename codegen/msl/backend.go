package msl

import (
	"errors"
	"fmt"
	"go/format"
	"sort"
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

// Backend is the Metal backend: for the package's kernels compiled by the msl pipeline it writes
// NAME.metal (every launch of every kernel it supports, one `kernel void` function each) and
// metal.go, which embeds that source and lists the launches: function name, buffer bindings,
// threadgroup size and grid as a Go function of the dims. Kernels it cannot emit yet are listed with
// the reason instead, so the package still builds. metal.go also holds the host side (host.go):
// OpenMetal and, per kernel with a Metal version, methods with the CPU function's parameters and
// checks that run its launches through rt/metal. With Tests, it also writes metal_test.go.
type Backend struct {
	Tests bool
}

// Name implements codegen.Backend.
func (Backend) Name() string { return "msl" }

// Version is the Metal language version of a target spec ("msl" → 300, "msl:3.1" → 310).
func Version(spec string) (int, error) {
	_, sub, ok := strings.Cut(spec, ":")
	if !ok || sub == "" {
		return 300, nil
	}
	maj, min, ok := strings.Cut(sub, ".")
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if !ok || err1 != nil || err2 != nil || a < 1 || b < 0 || b > 9 {
		return 0, fmt.Errorf("msl: bad language version %q (want msl:3.0 or msl:3.1)", sub)
	}
	return a*100 + b*10, nil
}

// Source is the MSL of a package: the file, the launches it holds in order, and for every kernel it
// could not emit, the reason (an error starting with ErrNotSupported).
type Source struct {
	Text        string
	Launches    []*Launch
	Unsupported map[string]error
}

// Generate implements codegen.Backend.
func (b Backend) Generate(p *codegen.Package) ([]codegen.File, error) {
	src, err := BuildSource(p)
	if err != nil {
		return nil, err
	}
	goFile, err := goTable(p, src)
	if err != nil {
		return nil, err
	}
	files := []codegen.File{
		{Name: p.Name + ".metal", Data: []byte(src.Text)},
		{Name: "metal.go", Data: goFile},
	}
	if b.Tests {
		ks, _ := hostKernels(p, src)
		test, err := testFile(p, ks)
		if err != nil {
			return nil, err
		}
		files = append(files, codegen.File{Name: "metal_test.go", Data: test})
	}
	return files, nil
}

// BuildSource lowers every kernel of p (compiled by the msl pipeline) and prints one .metal file.
// A kernel that the backend cannot emit yet is left out and its error recorded; any other error
// fails the whole package.
func BuildSource(p *codegen.Package) (*Source, error) {
	version, err := Version(p.Target)
	if err != nil {
		return nil, err
	}
	file := &File{Header: []string{codegen.Header[3 : len(codegen.Header)-1], fmt.Sprintf("Metal %d.%d source of the kernels of %s.", version/100, version%100/10, p.Source)}}
	src := &Source{Unsupported: map[string]error{}}
	funcs := map[string]Func{}
	simdgroup := false
	for _, k := range p.Kernels {
		low, err := Lower(k.K, k.F, p.Source)
		if err == nil && version < 310 && usesBF16(k.K) {
			err = fmt.Errorf("kernel %s: %s: bf16 needs Metal 3.1 (target msl:3.1)", k.K.Name, ErrNotSupported)
		}
		if err != nil {
			if strings.Contains(err.Error(), ErrNotSupported) {
				src.Unsupported[k.K.Name] = err
				file.Header = append(file.Header, "left out: "+err.Error())
				continue
			}
			return nil, err
		}
		simdgroup = simdgroup || low.SimdgroupMatrices
		src.Launches = append(src.Launches, low.Launches...)
		file.Structs = append(file.Structs, low.Structs...)
		file.Kernels = append(file.Kernels, low.Kernels...)
		for n, f := range low.Funcs {
			funcs[n] = f
		}
	}
	names := make([]string, 0, len(funcs))
	for n := range funcs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		file.Funcs = append(file.Funcs, funcs[n])
	}
	if simdgroup {
		file.Includes = append(file.Includes, "metal_simdgroup_matrix") // Metal 2.3+, Apple7+ GPUs
	}
	src.Text = Print(file)
	return src, nil
}

func usesBF16(k *ir.Kernel) bool {
	for _, t := range append(append([]*ir.Tensor{}, k.Params...), k.Temps...) {
		if t.Type == ir.BF16 {
			return true
		}
	}
	return false
}

// IsNotSupported reports whether err is the backend's "not supported yet" error.
func IsNotSupported(err error) bool {
	return err != nil && strings.Contains(err.Error(), ErrNotSupported)
}

var errNoKernels = errors.New("msl: no kernel could be emitted")

// goTable writes metal.go: the embedded source and the launch table.
func goTable(p *codegen.Package, src *Source) ([]byte, error) {
	if len(src.Launches) == 0 && len(p.Kernels) > 0 {
		return nil, fmt.Errorf("%v: %v", errNoKernels, firstErr(src.Unsupported))
	}
	var b strings.Builder
	b.WriteString(codegen.Header)
	fmt.Fprintf(&b, "\npackage %s\n\nimport (\n\t_ \"embed\"\n\t\"errors\"\n\t\"fmt\"\n\t\"maps\"\n\t\"math\"\n\t\"slices\"\n\t\"unsafe\"\n\n\t%q\n\t%q\n\t%q\n)\n\n",
		p.Name, p.KgenModule()+"/f16", p.KgenModule()+"/rt", p.KgenModule()+"/rt/metal")
	fmt.Fprintf(&b, `// metalSource is the Metal Shading Language source of the package's kernels (%[1]s.metal). Compile
// it with fast math off (MTLCompileOptions mathMode safe): max, min and relu keep NaN as kgen's
// interpreter does.
//
//go:embed %[1]s.metal
var metalSource string

// metalBuffer is one [[buffer(i)]] binding of a Metal kernel function.
type metalBuffer struct {
	Name    string
	Kind    string // "tensor" (a device buffer), "scalar" (constant, by value), "dims" (int32 per dim, in Dims order)
	Elem    string   // element type of a tensor or scalar: f32, f16, bf16, i32
	Shape   []string // a tensor's dims, row major (its byte size is their product times the element size)
	Temp    bool     // a temporary of the kernel (let): the host allocates it, uninitialised
	Written bool
}

// metalLaunch is one kernel function; a kdsl kernel runs its launches in order.
type metalLaunch struct {
	Kernel   string
	Function string
	Buffers  []metalBuffer
	Dims     []string
	Threads  int                          // threads per threadgroup (x; y and z are 1)
	Grid     func(dims map[string]int) [3]int // threadgroups along x, y, z
}

var metalLaunches = []metalLaunch{
`, p.Name)
	for _, l := range src.Launches {
		fmt.Fprintf(&b, "\t{Kernel: %q, Function: %q, Threads: %d,\n\t\tBuffers: []metalBuffer{", l.Kernel.Name, l.Function, l.Threads)
		for _, prm := range l.Params {
			kind, elem := "tensor", ""
			switch prm.Kind {
			case ScalarParam:
				kind = "scalar"
			case DimsParam:
				kind = "dims"
			}
			var shape []string
			temp := false
			if prm.Tensor != nil {
				elem = prm.Tensor.Type.String()
				temp = prm.Tensor.Kind == ir.Temp
				for _, d := range prm.Tensor.Shape {
					shape = append(shape, d.Name)
				}
			}
			fmt.Fprintf(&b, "{Name: %q, Kind: %q, Elem: %q, Shape: %#v, Temp: %v, Written: %v}, ", prm.Name, kind, elem, shape, temp, prm.Written)
		}
		b.WriteString("},\n\t\tDims: []string{")
		for _, d := range l.Dims {
			fmt.Fprintf(&b, "%q, ", d.Name)
		}
		b.WriteString("},\n\t\tGrid: func(dims map[string]int) [3]int {\n")
		used := map[string]bool{}
		var g [3]string
		for i := range g {
			g[i] = "1"
			if i < len(l.Grid) {
				g[i] = goIExpr(l.Grid[i], used)
			}
		}
		var names []string
		for n := range used {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(&b, "\t\t\t%s := dims[%q]\n", goIdent(n), n)
		}
		fmt.Fprintf(&b, "\t\t\treturn [3]int{%s, %s, %s}\n\t\t}},\n", g[0], g[1], g[2])
	}
	b.WriteString("}\n\n// metalUnsupported lists the kernels without a Metal version, and why.\nvar metalUnsupported = map[string]string{\n")
	var ks []string
	for k := range src.Unsupported {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		fmt.Fprintf(&b, "\t%q: %q,\n", k, src.Unsupported[k].Error())
	}
	b.WriteString("}\n")
	version, err := Version(p.Target)
	if err != nil {
		return nil, err
	}
	lang := "metal.Metal30"
	if version >= 310 {
		lang = "metal.Metal31"
	}
	hks, why := hostKernels(p, src)
	if err := hostNames(p, hks); err != nil {
		return nil, err
	}
	fmt.Fprintf(&b, hostRuntime, lang, p.Name, methodList(hks, why))
	if err := hostMethods(&b, hks); err != nil {
		return nil, err
	}
	out, err := format.Source([]byte(b.String()))
	if err != nil {
		return nil, fmt.Errorf("msl: generated Go does not parse: %v", err)
	}
	return out, nil
}

func firstErr(m map[string]error) error {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	if len(ks) == 0 {
		return errors.New("no kernels")
	}
	return m[ks[0]]
}

// goIdent is the Go local holding dim name (dims are kdsl identifiers; the prefix keeps them clear of
// Go keywords and of "dims").
func goIdent(name string) string { return "d" + name }

// goIExpr prints a grid expression of dims in Go (dims are non-negative, so / is the floor division).
func goIExpr(e ir.IExpr, used map[string]bool) string {
	switch e := e.(type) {
	case ir.IConst:
		return strconv.Itoa(e.V)
	case ir.IDim:
		used[e.D.Name] = true
		return goIdent(e.D.Name)
	case ir.IBin:
		x, y := goIExpr(e.X, used), goIExpr(e.Y, used)
		switch e.Op {
		case 'm':
			return "min(" + x + ", " + y + ")"
		case 'M':
			return "max(" + x + ", " + y + ")"
		}
		return "(" + x + " " + ir.IOpString(e.Op) + " " + y + ")"
	}
	return "0 /* " + e.String() + " */"
}
