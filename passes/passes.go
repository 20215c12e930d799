// Package passes lowers algorithm-level IR to loop-level IR and transforms it. Each pass lives in its own
// file as one exported function with a doc comment stating what it assumes and guarantees; the pipeline
// is data: the pass list of each target (Pipeline), with ordering constraints. The verifier runs after every pass, and every pass is tested to preserve the
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
	// Portable are those that apply to the portable code every package carries (untargeted and
	// `for go`): they set the default plan, which is the portable variant's on every target.
	Portable []*ir.Directive
	// Tuned are kgen.lock's plan values for this kernel (Options.Tuned).
	Tuned map[string]map[string]map[string]int
}

// own returns the directives of a `for <target>` block of c's target only (nil for the portable
// target, whose blocks are Portable's).
func (c *Context) own() []*ir.Directive {
	var out []*ir.Directive
	for _, d := range c.Directives {
		if d.Target != "" && d.Target != "go" && d.Target == c.Machine.Name {
			out = append(out, d)
		}
	}
	return out
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
func (c *Context) sizes(kind, name string) ([]int, bool) { return sizesIn(c.Directives, kind, name) }

// sizesIn returns the sizes given to index name by a directive kind of dirs (nil if none).
func sizesIn(dirs []*ir.Directive, kind, name string) ([]int, bool) {
	for _, d := range dirs {
		if d.Name != kind {
			continue
		}
		for _, a := range d.Args {
			if a.Name == name {
				return a.Sizes, true
			}
		}
	}
	return nil, false
}

// Pass is one named step of a pipeline. Run reports whether it changed the function. After lists the
// passes that must have run before it when both are in a pipeline (Pipeline checks the order, and
// TestPipelineOrder checks every target's).
type Pass struct {
	Name  string
	Doc   string
	Run   func(f *ir.Func, c *Context) (changed bool, err error)
	After []string
}

// passes are all the passes, by name. Lower (algorithm → loops) runs before every pipeline.
var passes = map[string]Pass{
	"fusion": {"fusion", "merge consecutive statement nests over the same outer index (row-wise softmax, layernorm)", Fusion, nil},
	// tensorize matches single-statement nests and consumes the tile directives of GEMM indices as
	// block sizes: point-loop tiling would hide the contraction from it.
	"tensorize": {"tensorize", "turn GEMM-like contractions into cache-blocked loops around microkernel tiles, with each variant's tile and blocks in the plan", Tensorize, []string{"fusion"}},
	// bindmicro turns tensorize's MMA triples into the Micro calls every later CPU pass reads.
	"bindmicro": {"bindmicro", "bind each MMA triple that matches the microkernel contract to a microkernel call (else expand it into register-tile loops)", BindMicro, []string{"tensorize"}},
	"pack":      {"pack", "stage GEMM operands in BLIS panels (B per KC×NC block, A per MC×KC block)", Pack, []string{"tensorize", "bindmicro"}},
	"precision": {"precision", "choose accumulator types; convert 16-bit operands once, when they are packed or loaded", Precision, []string{"pack"}},
	"tile":      {"tile", "split loops named by tile directives into outer and inner loops", Tile, []string{"tensorize"}},
	// interchange splits fused nests again, on the loops tile leaves, before they are vectorized.
	"interchange": {"interchange", "move reductions over a strided axis outside the loop of an output index their operand is contiguous along", Interchange, []string{"fusion", "tensorize", "tile"}},
	// vectorize groups the innermost loops that tiling and interchange leave.
	"vectorize": {"vectorize", "group innermost loops into SIMD-width chunks, splitting reductions into per-lane accumulators", Vectorize, []string{"tile", "interchange", "precision"}},
	"unroll":    {"unroll", "replicate loop bodies named by unroll directives", Unroll, []string{"vectorize"}},
	// parallel versions the packed ic loop (it looks for pack's nest) and picks the outermost loop of
	// the final structure.
	"parallel": {"parallel", "run the outermost independent loop of each nest on the worker pool", Parallel, []string{"pack", "interchange", "vectorize", "unroll"}},
	// batch strip-mines the product loops parallel has already split (or kept serial).
	"batch": {"batch", "run chunks of a batch of small one-column-tile products as one batched microkernel call each", Batch, []string{"pack", "parallel"}},
	// beta versions whole nests: every other pass must see a single nest.
	"beta": {"beta", "version the loops computing a scaled-output term beta·C on beta == 0, which then does not read C", Beta,
		[]string{"fusion", "tensorize", "pack", "precision", "tile", "interchange", "vectorize", "unroll", "parallel", "batch"}},
	// The GPU passes (gpumap.go, staging.go) take the lowered, fused nests; the CPU passes do not run
	// in a GPU pipeline.
	"mmaform": {"mmaform", "turn GEMM-like statements into tile loops around MMA nodes of the target's shape (accumulators across K, the statement's epilogue)", MMAForm, []string{"fusion"}},
	"gpumap":  {"gpumap", "map each statement nest onto a grid of thread blocks (independent output loops become grid and thread loops; MMA tiles onto threads, warps or warpgroups by scope)", GPUMap, []string{"fusion", "mmaform"}},
	"staging": {"staging", "stage GEMM operands through shared memory with multi-stage async copies and block barriers", Staging, []string{"gpumap"}},
	// mmalower expands the MMA nodes mmaform made into scalar register-tile loops (targets without an
	// MMA instruction: the LLVM backend, whose optimiser vectorises them).
	// microtomma and packlower give the LLVM target the CPU pipeline's BLIS structure in loops.
	"microtomma":     {"microtomma", "write each microkernel call as the MMA nodes it is an instance of (packed panels, the contract's epilogue)", MicroToMMA, []string{"pack", "precision"}},
	"transposelower": {"transposelower", "expand transpose tiles into copy loops", TransposeLower, []string{"tensorize"}},
	"mmaplan":        {"mmaplan", "size each microkernel slot's register tile by the target's MMA shape and its cache blocks by the target's caches", MMAPlan, []string{"tensorize"}},
	"packlower":      {"packlower", "expand panel packs into copy loops (zero-padded last panel)", PackLower, []string{"pack", "precision"}},
	"rowsjam":        {"rowsjam", "unroll the reduction loop of a rows-form accumulator (run-time length, in memory) and jam it into the row and column loops", RowsJam, []string{"mmalower", "vectorize"}},
	"mmalower":       {"mmalower", "expand MMA nodes into scalar register-tile loops (accumulator tile, rank-1 updates, epilogue versioned on beta)", MMALower, []string{"mmaform"}},
}

// gpuPipeline is the pass order of the GPU targets.
var gpuPipeline = []string{"fusion", "mmaform", "gpumap", "staging"}

// cpuPipeline is the pass order of the CPU targets.
var cpuPipeline = []string{"fusion", "tensorize", "bindmicro", "pack", "precision", "tile", "interchange", "vectorize", "unroll", "parallel", "batch", "beta"}

// llvmPipeline is the pass order of the LLVM IR target: the CPU pipeline's cache blocking and packing
// (with llvm's register tile, mmaplan), written as loops that LLVM's optimiser vectorises and schedules
// (microtomma + mmalower for the microkernel calls, packlower and transposelower for the copies), since
// only an assembly backend implements Micro, Pack and Transpose. No parallel: LLVM code runs serially.
var llvmPipeline = []string{"fusion", "tensorize", "bindmicro", "mmaplan", "pack", "precision", "microtomma", "mmalower", "packlower", "transposelower", "tile", "interchange", "vectorize", "rowsjam", "beta"}

// pipelines are the pass lists per target.
var pipelines = map[string][]string{
	"go": cpuPipeline, "amd64": cpuPipeline, "arm64": cpuPipeline, "llvm": llvmPipeline,
	"ptx": gpuPipeline, "msl": gpuPipeline,
}

// Pipeline returns the passes target m runs after lowering, in order. It fails for a target without a
// pipeline or a list that breaks an ordering constraint.
func Pipeline(m target.Machine) ([]Pass, error) {
	names, ok := pipelines[m.Name]
	if !ok {
		return nil, fmt.Errorf("no pass pipeline for target %q", m.Name)
	}
	return pipelineOf(names)
}

// pipelineOf resolves names and checks each pass's After constraints.
func pipelineOf(names []string) ([]Pass, error) {
	var out []Pass
	pos := map[string]int{}
	for i, n := range names {
		p, ok := passes[n]
		if !ok {
			return nil, fmt.Errorf("unknown pass %q", n)
		}
		if _, dup := pos[n]; dup {
			return nil, fmt.Errorf("pass %s listed twice", n)
		}
		pos[n] = i
		out = append(out, p)
	}
	for i, p := range out {
		for _, before := range p.After {
			if j, ok := pos[before]; ok && j > i {
				return nil, fmt.Errorf("pass %s must run after %s", p.Name, before)
			}
		}
	}
	return out, nil
}

// Names returns the pass names target m runs, "lower" first (the CPU list for an unknown target).
func Names(m target.Machine) []string {
	list, ok := pipelines[m.Name]
	if !ok {
		list = cpuPipeline
	}
	return append([]string{"lower"}, list...)
}

// Options controls Compile.
type Options struct {
	// Skip lists passes not to run (for tests and debugging).
	Skip []string
	// After is called after lowering and after every pass, with whether the pass changed anything.
	After func(pass string, f *ir.Func, changed bool)
	// Tuned are measured plan values for the kernel (kgen.lock, package tune): variant name → machine
	// class → plan symbol → value. tensorize records those of each GEMM slot's run-time symbols (TunedSymbols)
	// in the variant's plan (ir.PlanVariant.Tuned); the generated package installs them at init on a
	// machine of that class. Symbols tensorize does not plan are ignored here (tune.Apply reports them).
	Tuned map[string]map[string]map[string]int
	// Plan are plan values set on the function after lowering, before the pipeline's passes (for
	// example PlanTMA = 1: the sm_90a wgmma tiles staged by TMA, tma.go).
	Plan map[string]int
}

// Compile lowers k and runs the pipeline of target m, verifying after each step.
func Compile(k *ir.Kernel, m target.Machine, opt Options) (*ir.Func, error) {
	if err := ir.VerifyKernel(k); err != nil {
		return nil, err
	}
	list, err := Pipeline(m)
	if err != nil {
		return nil, err
	}
	c := &Context{Machine: m, Directives: k.Directives(m.Name), Portable: k.Directives("go"), Tuned: opt.Tuned}
	f, err := Lower(k, c)
	if err != nil {
		return nil, err
	}
	if err := ir.VerifyFunc(f); err != nil {
		return nil, fmt.Errorf("after lower: %v", err)
	}
	for k, v := range opt.Plan {
		f.Plan[k] = v
	}
	if opt.After != nil {
		opt.After("lower", f, true)
	}
	for _, p := range list {
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
