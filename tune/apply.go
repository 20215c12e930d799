package tune

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kgen-dev/kgen/ir"
)

// Tuned returns the plan values of l's fresh entries for kernel (whose current hash is hash) on target,
// as passes.Options.Tuned wants them (variant → machine class → symbol → value), and the entries for
// kernel and target that are stale (the kernel changed since it was tuned).
func (l *Lock) Tuned(kernel, hash, target string) (map[string]map[string]map[string]int, []Entry) {
	var out map[string]map[string]map[string]int
	var stale []Entry
	for _, e := range l.Entries {
		if e.Kernel != kernel || e.Target != target {
			continue
		}
		if e.Hash != hash {
			stale = append(stale, e)
			continue
		}
		if out == nil {
			out = map[string]map[string]map[string]int{}
		}
		if out[e.Variant] == nil {
			out[e.Variant] = map[string]map[string]int{}
		}
		out[e.Variant][e.Class] = e.Values
	}
	return out, stale
}

// Check says which fresh entry of l for f's kernel on target names a symbol that the compiled f does not
// carry as a tuned value of that variant (a variant without that slot, a symbol that is neither a
// run-time one, passes.TunedSymbols, nor a kernel field, ir.KernelFields).
func (l *Lock) Check(f *ir.Func, hash, target string) error {
	for _, e := range l.Entries {
		if e.Kernel != f.Kernel.Name || e.Target != target || e.Hash != hash || IsGPUTarget(target) {
			continue
		}
		i := slices.IndexFunc(f.Variants, func(pv ir.PlanVariant) bool { return pv.Name == e.Variant })
		if i < 0 {
			return fmt.Errorf("%s:%d: kernel %s has no %s variant plan on %s", l.Path, e.Line, e.Kernel, e.Variant, target)
		}
		for k, v := range e.Values {
			if got, ok := f.Variants[i].Tuned[e.Class][k]; !ok || got != v {
				return fmt.Errorf("%s:%d: %s is not a tuned plan symbol of kernel %s (variant %s): want a GEMM slot's MC, KC, NC, SmallWork, SmallDeep, RowsMax, RowsNB or RowBlocks, or a kernel field (%s)",
					l.Path, e.Line, k, e.Kernel, e.Variant, strings.Join(ir.KernelFields, ", "))
			}
		}
	}
	return nil
}

// Verify lists what makes l stale for a kdsl file with the given kernel hashes: a kernel that changed or
// is gone, and, when class is not empty, an entry for another machine class (a GPU entry's class must be
// one of gpuClasses: probe.GPU.Class of the profile's GPUs). Each message starts with the entry's
// file:line.
func Verify(l *Lock, file string, hashes map[string]string, class string, gpuClasses ...string) []string {
	var out []string
	for _, e := range l.Entries {
		at := fmt.Sprintf("%s:%d: %s %s/%s %s", l.Path, e.Line, e.Kernel, e.Target, e.Variant, e.Class)
		h, ok := hashes[e.Kernel]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: kernel %s is not in %s any more: remove the entry or run kgen tune", at, e.Kernel, file))
		case h != e.Hash:
			out = append(out, fmt.Sprintf("%s: kernel %s changed since it was tuned (hash %s, now %s): run kgen tune again", at, e.Kernel, e.Hash, h))
		case class != "" && IsGPUTarget(e.Target) && !slices.Contains(gpuClasses, e.Class):
			out = append(out, fmt.Sprintf("%s: GPU class %s is not one of the profile's (%s)", at, e.Class, cmp.Or(strings.Join(gpuClasses, ", "), "it has no GPU")))
		case class != "" && !IsGPUTarget(e.Target) && e.Class != class:
			out = append(out, fmt.Sprintf("%s: machine class %s is not the profile's (%s)", at, e.Class, class))
		}
	}
	return out
}

// Targets lists the targets l has entries for kernel on, sorted: a CPU target by its name (amd64), a
// GPU one with its sub-target (ptx:sm_90a), whose variant the entry's is.
func (l *Lock) Targets(kernel string) []string {
	var out []string
	for _, e := range l.Entries {
		t := e.Target
		if IsGPUTarget(t) {
			t += ":" + e.Variant
		}
		if e.Kernel == kernel && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}
