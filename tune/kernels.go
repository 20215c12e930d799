package tune

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kgen-dev/kgen/codegen/amd64"
	"github.com/kgen-dev/kgen/ir"
)

// Microkernel candidates. The run-time symbols (MC, KC, NC, thresholds) are slot fields the driver sets
// in place; the microkernel's own fields (ir.KernelFields: tile, unroll, prefetch) are generated code.
// The scratch package is therefore generated with a lock of its own whose entries, one per candidate,
// set those fields for a made-up machine class ("tune-<slot>-k<i>"): kgen gen generates every
// candidate's kernels and installs them under that class (codegen.SlotKernel.Classes), and the driver
// times candidate i by running Use under its class (the cfg symbol <slot>.Kernel = i, 0 being the
// plan's kernel). The lock entry of a winner carries its kernel fields, which kgen gen then generates for
// the machine's class. Only amd64's variants have such candidates (the NEON generator's kernels are not
// parameterised yet).

// kernelField is the cfg symbol (slot.Kernel) choosing a slot's microkernel candidate.
const kernelField = "Kernel"

// candidateClassFormat spells the made-up machine class of a slot's candidate i (i >= 1); the driver
// installs candidates by the same format.
const candidateClassFormat = "tune-%s-k%d"

func candidateClass(slot string, i int) string { return fmt.Sprintf(candidateClassFormat, slot, i) }

// kernelISA returns the amd64 variant whose kernels are the candidates' base: the forced variant, else
// the one the class's vector level runs ("" where there is none: another architecture, the portable
// variant).
func kernelISA(target, variant, class string) string {
	if target != "amd64" {
		return ""
	}
	isa := variant
	if isa == "" {
		isa, _, _ = strings.Cut(strings.TrimPrefix(class, "amd64-"), "-")
	}
	switch {
	case strings.HasPrefix(isa, amd64.AVX512):
		return amd64.AVX512
	case isa == amd64.AVX2:
		return amd64.AVX2
	}
	return ""
}

// slotCandidates returns the microkernel candidates of each GEMM slot of fn on isa (slot → candidate
// i-1's kernel fields), none for slots with bf16 operands (their pair kernels take no kernel fields).
func slotCandidates(fn *ir.Func, isa string) map[string][]map[string]int {
	if isa == "" {
		return nil
	}
	for _, p := range fn.Kernel.Params {
		if p.Type == ir.BF16 {
			return nil
		}
	}
	out := map[string][]map[string]int{}
	ir.WalkNodes(fn.Body, func(n ir.Node) bool {
		if m, ok := n.(*ir.Micro); ok && out[m.Slot] == nil {
			elem := amd64.F32
			if m.Elem == ir.F64 {
				elem = amd64.F64
			}
			out[m.Slot] = amd64.KernelCandidates(elem, isa)
		}
		return true
	})
	return out
}

// candidateLock is the scratch package's lock: one entry per candidate of every slot of the kernels.
func candidateLock(path string, hashes map[string]string, isa string, cands map[string]map[string][]map[string]int) *Lock {
	l := &Lock{Path: path}
	for _, kernel := range slices.Sorted(maps.Keys(cands)) {
		for _, slot := range slices.Sorted(maps.Keys(cands[kernel])) {
			for i, c := range cands[kernel][slot] {
				vals := map[string]int{}
				for f, v := range c {
					vals[slot+"."+f] = v
				}
				l.Set(Entry{Kernel: kernel, Hash: hashes[kernel], Target: "amd64", Variant: isa, Class: candidateClass(slot, i+1),
					Values: vals, Speedup: 1, Shapes: []string{"1x1x1"}})
			}
		}
	}
	return l
}

// kernelValues replaces each slot.Kernel of cfg by that candidate's kernel fields.
func kernelValues(cfg map[string]int, cands map[string][]map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range cfg {
		slot, f, _ := strings.Cut(k, ".")
		if f != kernelField {
			out[k] = v
			continue
		}
		if v >= 1 && v <= len(cands[slot]) {
			for kf, kv := range cands[slot][v-1] {
				out[slot+"."+kf] = kv
			}
		}
	}
	return out
}
