package tune

import (
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/kgen-dev/kgen/codegen/ptx"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
	"github.com/kgen-dev/kgen/passes"
)

// The GPU side of the tuner: the plan symbols of the production sm_90a GEMM (codegen/ptx ProdPlan:
// TMA-staged wgmma tiles, a producer warpgroup and gpu.WG consumer warpgroups), the candidates around
// the default, and the checks every candidate passes before it may be timed — ptxas (no spills,
// registers fit the block), the shared memory of the arch, and the PTX emulator against the reference
// interpreter on ragged shapes. The block tile is BM×BN×BK = 64·gpu.WG × gpu.wgN × 64, each consumer
// warpgroup's warp tile 64×gpu.wgN (four warps of 16 rows); BK and the 128-byte swizzle are fixed by
// the wgmma operand layout (64 16-bit elements a row, passes.WGMMALayout), so no candidate changes
// them. sm_80's mma.sync path has no plan symbol yet: its tiles and stages are constants of the passes.

// GPUSymbol is one tunable plan symbol of a GPU sub-target and the values it may take.
type GPUSymbol struct {
	Name   string
	Values []int // ascending; the neighbours of a value are the values beside it
	Doc    string
}

// GPUSymbols are the tunable plan symbols of each GPU sub-target (target/variant in kgen.lock).
var GPUSymbols = map[string][]GPUSymbol{
	"ptx/sm_90a": {
		{passes.PlanWG, []int{1, 2, 3}, "consumer warpgroups per block: block tile rows BM = 64·WG"},
		{passes.PlanWGN, []int{64, 128, 256}, "block tile columns BN, the wgmma N of each consumer warpgroup"},
		{passes.PlanStages, []int{2, 3, 4}, "TMA pipeline stages in dynamic shared memory"},
	},
}

// GPUArch are the resources of the arch a GPU sub-target's code runs on (sm_90a: Hopper).
type GPUArch struct {
	PtxasArch    string
	SharedMax    int // dynamic shared memory a block may opt in to, bytes
	RegsPerSM    int
	MaxRegs      int // per thread
	EmuSubTarget string
}

// GPUArchs are the archs of the tunable sub-targets.
var GPUArchs = map[string]GPUArch{
	"ptx/sm_90a": {PtxasArch: "sm_90a", SharedMax: 227 << 10, RegsPerSM: 65536, MaxRegs: 255, EmuSubTarget: "sm_90a"},
}

// IsGPUTarget reports whether a lock entry's target is a GPU's (its values are GPU plan symbols, its
// class a GPU's: GPUClass).
func IsGPUTarget(target string) bool { return target == "ptx" || target == "msl" }

// GPUPlan checks the values of a lock entry for target/variant (every symbol one of GPUSymbols, every
// value one it may take, the stages fitting the arch's shared memory) and returns them; the error says
// what is allowed.
func GPUPlan(target, variant string, values map[string]int) (map[string]int, error) {
	tv := target + "/" + variant
	if _, ok := GPUSymbols[tv]; !ok {
		return nil, gpuValue(tv, "", 0)
	}
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if err := gpuValue(tv, k, values[k]); err != nil {
			return nil, err
		}
	}
	plan := maps.Clone(ptx.ProdPlan)
	maps.Copy(plan, values)
	if need, max := ProdShared(plan), GPUArchs[tv].SharedMax; need > max {
		return nil, fmt.Errorf("%s: %d stages of a %d×%d×64 block tile need %d bytes of shared memory, more than the %d of %s",
			tv, plan[passes.PlanStages], 64*plan[passes.PlanWG], plan[passes.PlanWGN], need, max, variant)
	}
	return maps.Clone(values), nil
}

// gpuValue checks one symbol's value on target/variant tv (a key of GPUSymbols).
func gpuValue(tv, k string, v int) error {
	syms, ok := GPUSymbols[tv]
	if !ok {
		return fmt.Errorf("%s has no tunable GPU plan symbol (tunable: %s)", tv, strings.Join(slices.Sorted(maps.Keys(GPUSymbols)), ", "))
	}
	i := slices.IndexFunc(syms, func(s GPUSymbol) bool { return s.Name == k })
	if i < 0 {
		var names []string
		for _, s := range syms {
			names = append(names, s.Name)
		}
		return fmt.Errorf("%s is not a tunable plan symbol of %s (want %s)", k, tv, strings.Join(names, ", "))
	}
	if !slices.Contains(syms[i].Values, v) {
		return fmt.Errorf("%s=%d is out of range on %s: want one of %v (%s)", k, v, tv, syms[i].Values, syms[i].Doc)
	}
	return nil
}

// ProdShared is the dynamic shared memory of the production sm_90a GEMM under plan (ProdPlan's
// symbols), bytes: per stage a BM×64 tile of A and a 64×BN tile of B of 16-bit elements, each 1024-byte
// aligned, and 1024 bytes for the stages' mbarriers (full and empty) and the alignment of the extern
// array. TestGPUCandidates holds it to the lowered kernels' figure.
func ProdShared(plan map[string]int) int {
	st := plan[passes.PlanStages]
	a, b := 64*plan[passes.PlanWG]*64*2, 64*plan[passes.PlanWGN]*2
	return st*(a+b) + 1024
}

// GPUCandidates returns the default plan values of target/variant and their neighbours: every
// combination of each symbol's value and the values beside it, the default first, those whose stages
// do not fit the arch's shared memory left out.
func GPUCandidates(target, variant string) []map[string]int {
	tv := target + "/" + variant
	syms := GPUSymbols[tv]
	def := map[string]int{}
	for _, s := range syms {
		def[s.Name] = ptx.ProdPlan[s.Name]
	}
	out := []map[string]int{def}
	var walk func(i int, cur map[string]int)
	walk = func(i int, cur map[string]int) {
		if i == len(syms) {
			if !maps.Equal(cur, def) {
				if _, err := GPUPlan(target, variant, cur); err == nil {
					out = append(out, maps.Clone(cur))
				}
			}
			return
		}
		s := syms[i]
		at := slices.Index(s.Values, def[s.Name])
		for j := max(at-1, 0); j <= min(at+1, len(s.Values)-1); j++ {
			cur[s.Name] = s.Values[j]
			walk(i+1, cur)
		}
	}
	walk(0, map[string]int{})
	return out
}

// PlanString prints plan values sorted: gpu.WG=2 gpu.tmaS=4 gpu.wgN=256.
func PlanString(values map[string]int) string {
	var s []string
	for _, k := range slices.Sorted(maps.Keys(values)) {
		s = append(s, fmt.Sprintf("%s=%d", k, values[k]))
	}
	return strings.Join(s, " ")
}

// GPUCheck is the check of GPU candidates before any timing.
type GPUCheck struct {
	Target, Variant string
	// Ptxas is the ptxas to assemble each candidate with (CUDA 12 or later for sm_90a).
	Ptxas string
	// Shapes are the emulated GEMM shapes (M, N, K); nil: RaggedShapes of each candidate's block tile.
	Shapes [][3]int
	// Plant, when set (tests), edits each lowered candidate before it is checked.
	Plant func(*ptx.Kernel)
}

// GPUVerdict is the outcome of one candidate's check.
type GPUVerdict struct {
	Values map[string]int
	Kernel *ptx.Kernel // the lowered candidate (nil when it did not compile)
	Regs   int         // ptxas's registers per thread of the GEMM entry
	Shared int         // dynamic shared memory, bytes
	Err    error       // nil: the candidate may be timed
}

// RaggedShapes are the emulated shapes of a production candidate with a BM×BN block tile: one row;
// then two blocks each way with ragged edges (M = BM+9, N = BN+8: the tensor maps need rows of 16
// bytes, so N and K stay multiples of 8) and K = 200, four 64-deep K tiles (the last ragged), which
// refills every stage of a 2- or 3-stage ring and wraps a 4-stage one once.
func RaggedShapes(values map[string]int) [][3]int {
	bm, bn := 64*values[passes.PlanWG], values[passes.PlanWGN]
	return [][3]int{{1, 8, 8}, {bm + 9, bn + 8, 200}}
}

// Check compiles kernel k with one candidate's values, assembles it, and runs it in the emulator
// against the interpreter.
func (c GPUCheck) Check(k *ir.Kernel, values map[string]int) GPUVerdict {
	v := GPUVerdict{Values: values}
	arch := GPUArchs[c.Target+"/"+c.Variant]
	plan, err := GPUPlan(c.Target, c.Variant, values)
	if err != nil {
		v.Err = err
		return v
	}
	pk, err := ptx.ProdCandidate(k, prodPlan(plan))
	if err != nil {
		v.Err = fmt.Errorf("does not compile: %v", err)
		return v
	}
	if pk == nil {
		v.Err = fmt.Errorf("kernel %s has no production %s version (no GEMM whose tiles TMA loads)", k.Name, c.Variant)
		return v
	}
	if c.Plant != nil {
		c.Plant(pk)
	}
	v.Kernel = pk
	v.Shared = pk.Launches[0].DynSharedBytes
	if v.Shared > arch.SharedMax {
		v.Err = fmt.Errorf("%d bytes of shared memory, more than the %d of %s", v.Shared, arch.SharedMax, c.Variant)
		return v
	}
	threads := 1
	for _, d := range pk.Launches[0].Block {
		if n, ok := d.(ir.IConst); ok {
			threads *= n.V
		}
	}
	st := ptx.SubTargets[arch.EmuSubTarget]
	text := (&ptx.Module{Version: st.Version, Target: st.Target, Entries: pk.Entries}).Print()
	stats, err := Assemble(c.Ptxas, arch.PtxasArch, text)
	if err != nil {
		v.Err = err
		return v
	}
	for name, s := range stats {
		if s.SpillBytes() > 0 {
			v.Err = fmt.Errorf("ptxas: %s spills %d bytes (%d registers)", name, s.SpillBytes(), s.Regs)
			return v
		}
		if s.Regs*threads > arch.RegsPerSM {
			v.Err = fmt.Errorf("ptxas: %s uses %d registers a thread: %d threads need %d, more than the %d of an SM", name, s.Regs, threads, s.Regs*threads, arch.RegsPerSM)
			return v
		}
		v.Regs = max(v.Regs, s.Regs)
	}
	shapes := c.Shapes
	if shapes == nil {
		shapes = RaggedShapes(values)
	}
	f := &ir.Func{Kernel: k}
	rng := rand.New(rand.NewPCG(15, uint64(len(k.Name))))
	for si, s := range shapes {
		dims := map[string]int{}
		for _, d := range k.Dims {
			dims[d.Name] = map[string]int{"M": s[0], "N": s[1], "K": s[2]}[d.Name]
		}
		args := kgentest.RandomArgs(k, dims, rng, si)
		ref := args.Clone()
		if err := ir.RunKernel(k, ir.Storage, ref); err != nil {
			v.Err = fmt.Errorf("interpreter at %dx%dx%d: %v", s[0], s[1], s[2], err)
			return v
		}
		mag := kgentest.Magnitude(k, args)
		got := args.Clone()
		if err := ptx.Emulate(pk, f, got); err != nil {
			v.Err = fmt.Errorf("emulated at %dx%dx%d: %v", s[0], s[1], s[2], err)
			return v
		}
		for _, p := range k.Params {
			if p.Kind == ir.Out || p.Kind == ir.InOut {
				if err := kgentest.Compare(k, dims, p, got.Tensors[p.Name], ref.Tensors[p.Name], mag[p.Name]); err != nil {
					v.Err = fmt.Errorf("wrong result at %dx%dx%d: %v", s[0], s[1], s[2], err)
					return v
				}
			}
		}
	}
	return v
}

// prodPlan is ProdPlan with values over it.
func prodPlan(values map[string]int) map[string]int {
	p := maps.Clone(ptx.ProdPlan)
	maps.Copy(p, values)
	return p
}

// PtxasStats are ptxas -v's figures for one entry (codegen/ptx reads them).
type PtxasStats = ptx.PtxasStats

// Assemble runs ptxas -v for arch on a PTX module and returns each entry's registers and spill bytes;
// an error carries ptxas's message.
func Assemble(ptxas, arch, text string) (map[string]PtxasStats, error) {
	stats, err := ptx.RunPtxas(ptxas, arch, text)
	if err == nil && len(stats) == 0 {
		err = fmt.Errorf("ptxas -arch=%s -v printed no entry statistics", arch)
	}
	return stats, err
}

// FindTool finds one of NVIDIA's tools: $env, then PATH, then .tools/ in dir or a directory above it
// (scripts/setup.sh puts ptxas there).
func FindTool(name, env, dir string) (string, error) { return ptx.FindTool(name, env, dir) }

// GPUShapes are the default timing shapes of the GPU tuner (M×N×K): square, large, skinny and a
// short K; N and K multiples of 8 as the tensor maps need.
var GPUShapes = []Shape{{1024, 1024, 1024}, {4096, 4096, 4096}, {128, 4096, 4096}, {8192, 8192, 512}}

// GPUTimer times two lowered candidates of one kernel on a device: pairs interleaved runs of each at
// dims, their times in ns a call.
type GPUTimer interface {
	Time(k *ir.Kernel, a, b *ptx.Kernel, dims map[string]int, pairs int) (ta, tb []float64, err error)
}

// GPUOptions control RunGPU.
type GPUOptions struct {
	Check   GPUCheck
	Kernels []*ir.Kernel // to tune; those without a production version are skipped with a note
	Shapes  []Shape      // timing shapes (nil: GPUShapes)
	Budget  time.Duration
	Timer   GPUTimer // nil: no device; candidates are checked, not timed
	// Candidates replace GPUCandidates when not nil (the first is the incumbent).
	Candidates []map[string]int
	Log        io.Writer
}

// GPUResult is what RunGPU found for one kernel.
type GPUResult struct {
	Kernel    string
	Verdicts  []GPUVerdict // every candidate checked, the default first
	Unchecked int          // candidates the budget left unchecked
	// Best are the winner's values, faster than the default beyond noise (nil: none, or not timed),
	// with its speed-up and noise over Shapes.
	Best           map[string]int
	Speedup, Noise float64
	Shapes         []string
}

// Verified counts the candidates that passed every check.
func (r GPUResult) Verified() int {
	n := 0
	for _, v := range r.Verdicts {
		if v.Err == nil {
			n++
		}
	}
	return n
}

// RunGPU checks every candidate of each kernel (GPUCandidates) and, with a timer, times the verified
// ones against the incumbent (the default first), a candidate replacing it only when faster beyond
// noise (the CPU tuner's sign test on interleaved pairs, verdict.add); the winner is timed against the
// default once more on every shape for the entry's speed-up.
func RunGPU(opt GPUOptions) []GPUResult {
	deadline := time.Now().Add(opt.Budget)
	shapes := opt.Shapes
	if shapes == nil {
		shapes = GPUShapes
	}
	logf := func(format string, a ...any) {
		if opt.Log != nil {
			fmt.Fprintf(opt.Log, format, a...)
		}
	}
	var out []GPUResult
	for _, k := range opt.Kernels {
		res := GPUResult{Kernel: k.Name}
		cands := opt.Candidates
		if cands == nil {
			cands = GPUCandidates(opt.Check.Target, opt.Check.Variant)
		}
		for i, c := range cands {
			if i > 0 && time.Now().After(deadline) {
				res.Unchecked = len(cands) - i
				logf("kgen tune: %s: budget spent; %d candidates not checked\n", k.Name, res.Unchecked)
				break
			}
			v := opt.Check.Check(k, c)
			if i == 0 && v.Kernel == nil {
				logf("kgen tune: %s: skipped: %v\n", k.Name, v.Err)
				res.Verdicts = nil
				break
			}
			res.Verdicts = append(res.Verdicts, v)
			if v.Err != nil {
				logf("kgen tune: %s: {%s} rejected: %v\n", k.Name, PlanString(c), firstLine(v.Err.Error()))
			} else {
				logf("kgen tune: %s: {%s} verified: %d registers, %d bytes shared memory, right on %d ragged shapes\n", k.Name, PlanString(c), v.Regs, v.Shared, len(shapesOf(opt.Check, c)))
			}
		}
		if len(res.Verdicts) == 0 {
			continue
		}
		if opt.Timer != nil && res.Verdicts[0].Err == nil {
			if err := timeGPU(opt, k, shapes, &res); err != nil {
				logf("kgen tune: %s: timing: %v\n", k.Name, err)
			}
		}
		out = append(out, res)
	}
	return out
}

func shapesOf(c GPUCheck, values map[string]int) [][3]int {
	if c.Shapes != nil {
		return c.Shapes
	}
	return RaggedShapes(values)
}

// timeGPU times res's verified candidates against the incumbent and records the winner.
func timeGPU(opt GPUOptions, k *ir.Kernel, shapes []Shape, res *GPUResult) error {
	compare := func(a, b *ptx.Kernel) (verdict, error) {
		var v verdict
		for _, sh := range shapes {
			ta, tb, err := opt.Timer.Time(k, a, b, shapeDims(k, sh), 8)
			if err != nil {
				return v, fmt.Errorf("shape %s: %v", sh, err)
			}
			v.add(sh.String(), ta, tb)
		}
		v.finish()
		return v, nil
	}
	def := res.Verdicts[0]
	best := def
	for _, c := range res.Verdicts[1:] {
		if c.Err != nil {
			continue
		}
		v, err := compare(best.Kernel, c.Kernel)
		if err != nil {
			return err
		}
		if v.win {
			best = c
		}
	}
	if best.Kernel == def.Kernel {
		return nil
	}
	v, err := compare(def.Kernel, best.Kernel)
	if err != nil {
		return err
	}
	if v.win {
		res.Best, res.Speedup, res.Noise = best.Values, v.speedup, v.noise
		for _, sh := range shapes {
			res.Shapes = append(res.Shapes, sh.String())
		}
	}
	return nil
}

// GPUEntries are the lock entries of results that found a winner, for the GPU of the given class.
func GPUEntries(results []GPUResult, hashes map[string]string, target, variant, class string) []Entry {
	var out []Entry
	for _, r := range results {
		if r.Best != nil {
			out = append(out, Entry{Kernel: r.Kernel, Hash: hashes[r.Kernel], Target: target, Variant: variant, Class: class,
				Values: r.Best, Speedup: r.Speedup, Noise: r.Noise, Shapes: r.Shapes})
		}
	}
	return out
}
