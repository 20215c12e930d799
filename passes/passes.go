// Package passes lowers algorithm-level IR to loop-level IR and transforms it. Each pass lives in its own
// file as one exported function with a doc comment stating what it assumes and guarantees; the pipeline
// is the data in List. The verifier runs after every pass, and every pass is tested to preserve the
// interpreted result.
package passes

import (
	"fmt"
	"slices"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/target"
)

// Context is what a pass may consult: the kernel's schedule for the target, and the machine model.
type Context struct {
	Machine target.Machine
	// Directives are the kernel's schedule directives that apply to this target.
	Directives []*ir.Directive
}

// directive returns the directives named name.
func (c *Context) directive(name string) []*ir.Directive {
	var out []*ir.Directive
	for _, d := range c.Directives {
		if d.Name == name {
			out = append(out, d)
		}
	}
	return out
}

// sizes returns the sizes given to index name by directive kind (nil if none).
func (c *Context) sizes(kind, name string) ([]int, bool) {
	for _, d := range c.directive(kind) {
		for _, a := range d.Args {
			if a.Name == name {
				return a.Sizes, true
			}
		}
	}
	return nil, false
}

// Pass is one named step of the pipeline. Run reports whether it changed the function.
type Pass struct {
	Name string
	Doc  string
	Run  func(f *ir.Func, c *Context) (changed bool, err error)
}

// List is the pipeline, in order. Lower (algorithm → loops) runs before it.
var List = []Pass{
	{"fusion", "merge consecutive statement nests over the same outer index (row-wise softmax, layernorm)", Fusion},
	{"tensorize", "turn GEMM-like contractions into cache-blocked loops around microkernel tiles", Tensorize},
	{"pack", "stage GEMM operands in BLIS panels (B per KC×NC block, A per MC×KC block)", Pack},
	{"precision", "choose accumulator types; convert 16-bit operands once, when they are packed or loaded", Precision},
	{"tile", "split loops named by tile directives into outer and inner loops", Tile},
	{"interchange", "move reductions over a strided axis outside the loop of an output index their operand is contiguous along", Interchange},
	{"vectorize", "group innermost loops into SIMD-width chunks, splitting reductions into per-lane accumulators", Vectorize},
	{"unroll", "replicate loop bodies named by unroll directives", Unroll},
	{"parallel", "run the outermost independent loop of each nest on the worker pool", Parallel},
	{"beta", "version the loops computing a scaled-output term beta·C on beta == 0, which then does not read C", Beta},
}

// Names returns the pass names in pipeline order, "lower" first.
func Names() []string {
	out := []string{"lower"}
	for _, p := range List {
		out = append(out, p.Name)
	}
	return out
}

// Options controls Compile.
type Options struct {
	// Skip lists passes not to run (for tests and debugging).
	Skip []string
	// After is called after lowering and after every pass, with whether the pass changed anything.
	After func(pass string, f *ir.Func, changed bool)
}

// Compile lowers k and runs the pipeline for machine m, verifying after each step.
func Compile(k *ir.Kernel, m target.Machine, opt Options) (*ir.Func, error) {
	if err := ir.VerifyKernel(k); err != nil {
		return nil, err
	}
	c := &Context{Machine: m, Directives: k.Directives(m.Name)}
	f, err := Lower(k, c)
	if err != nil {
		return nil, err
	}
	if err := ir.VerifyFunc(f); err != nil {
		return nil, fmt.Errorf("after lower: %v", err)
	}
	if opt.After != nil {
		opt.After("lower", f, true)
	}
	for _, p := range List {
		if slices.Contains(opt.Skip, p.Name) {
			continue
		}
		changed, err := p.Run(f, c)
		if err != nil {
			return nil, fmt.Errorf("%s: pass %s: %v", k.Name, p.Name, err)
		}
		if err := ir.VerifyFunc(f); err != nil {
			return nil, fmt.Errorf("%s: after pass %s: %v", k.Name, p.Name, err)
		}
		if opt.After != nil {
			opt.After(p.Name, f, changed)
		}
	}
	return f, nil
}

// fresh makes unique names for variables and locals within one function.
type namer map[string]int

func (n namer) name(base string) string {
	n[base]++
	if n[base] == 1 {
		return base
	}
	return fmt.Sprintf("%s%d", base, n[base])
}

// funcNamer collects the names already used in f.
func funcNamer(f *ir.Func) namer {
	n := namer{}
	for _, p := range f.Kernel.Params {
		n[p.Name]++
	}
	for _, t := range f.Kernel.Temps {
		n[t.Name]++
	}
	ir.WalkNodes(f.Body, func(x ir.Node) bool {
		switch x := x.(type) {
		case *ir.Loop:
			n[x.Var.Name]++
		case *ir.Decl:
			n[x.L.Name]++
		case *ir.Alloc:
			n[x.T.Name]++
		}
		return true
	})
	return n
}
