package amd64

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

// Microkernels chosen by kgen.lock. A lock entry may set a GEMM slot's kernel fields (ir.KernelFields:
// MR, NR, KU, PFA, PFB, PFC, PFU) for a machine class; the backend then generates that class's microkernels
// beside the plan's and the dispatch file installs them when the class is the machine's
// (codegen.SlotKernel.Classes). kgen tune times such candidates in one process through the same route
// (classes of its own, tune/kernels.go).

// classKernels returns the packed and unpacked microkernels of fields (a class's kernel fields; a field
// it lacks keeps the default: the plan's tile mr×nr, unroll 4, the default prefetch distances), named
// after the values that differ from the defaults. ok is false when fields sets no kernel field.
func classKernels(elem, isa string, mr, nr int, fields map[string]int) (k, ku GemmKernel, ok bool) {
	for f := range fields {
		ok = ok || ir.IsKernelField(f)
	}
	if !ok {
		return k, ku, false
	}
	get := func(f string, def int) int {
		if v, set := fields[f]; set {
			return v
		}
		return def
	}
	k = NewGemmKernelTile(elem, isa, get("MR", mr), get("NR", nr))
	k.KUnroll = get("KU", k.KUnroll)
	k.PrefetchA, k.PrefetchB, k.PrefetchC = get("PFA", 0), get("PFB", 0), get("PFC", 0)
	suffix := ""
	for _, f := range []struct {
		tag string
		v   int
		def int
	}{{"u", k.KUnroll, 4}, {"pa", k.PrefetchA, 0}, {"pb", k.PrefetchB, 0}, {"pc", k.PrefetchC, 0}} {
		if f.v != f.def {
			suffix += "_" + f.tag + knobValue(f.v)
		}
	}
	k.Name += suffix
	ku = NewGemmKernelTile(elem, isa, k.MR, k.NR)
	ku.Unpacked, ku.PrefetchB = true, get("PFU", 0)
	ku.Name += "U"
	if ku.PrefetchB != 0 {
		ku.Name += "_pu" + knobValue(ku.PrefetchB)
	}
	return k, ku, true
}

// knobValue spells a kernel field's value in a Go identifier: "off" for a negative one.
func knobValue(v int) string {
	if v < 0 {
		return "off"
	}
	return fmt.Sprint(v)
}

// addClassKernels generates the microkernels of sk's classes whose kgen.lock values set kernel fields
// and records them in sk.Classes; add appends a kernel to the file's list once.
func addClassKernels(sk *codegen.SlotKernel, elem, isa string, add func(GemmKernel)) error {
	for _, class := range slices.Sorted(maps.Keys(sk.Tuned)) {
		k, ku, ok := classKernels(elem, isa, sk.MR, sk.NR, sk.Tuned[class])
		if !ok {
			continue
		}
		if elem == BF16 {
			return fmt.Errorf("slot %s, class %s: kernel fields of bf16 pair kernels are not tuned", sk.Slot.Name, class)
		}
		if err := k.Validate(); err != nil {
			return fmt.Errorf("slot %s, class %s: kgen.lock's kernel: %v", sk.Slot.Name, class, err)
		}
		ck := codegen.ClassKernel{Kernel: k.Name, MR: k.MR, NR: k.NR}
		add(k)
		if ku.Validate() == nil {
			ck.KernelU = ku.Name
			add(ku)
		}
		if sk.Classes == nil {
			sk.Classes = map[string]codegen.ClassKernel{}
		}
		sk.Classes[class] = ck
	}
	return nil
}

// KernelCandidates are the microkernels kgen tune tries for elem (F32, F64) on isa, as kernel fields
// that differ from the defaults: the four tiles nearest the default one by accumulator count (at least
// 80% of its registers; packed and unpacked both generable, so a small problem keeps an assembly
// kernel), k unrolls 2 and 8, packed prefetch distances 4 and 16 k steps or off for Ã and B̃, the late C
// prefetch 32 or 512 k steps before the end or off, and the
// unpacked kernel's B distance 16 or 128 rows or off.
func KernelCandidates(elem, isa string) []map[string]int {
	mr, nr := TileFor(elem, isa)
	vl := vecLen(elem, isa)
	if mr == 0 || vl == 0 {
		return nil
	}
	acc := mr * nr / vl
	type tile struct{ mr, nr, acc int }
	var tiles []tile
	for n := vl; n < 64; n += vl {
		for m := 1; m <= 14; m++ {
			a := m * n / vl
			if (m == mr && n == nr) || a*5 < acc*4 {
				continue
			}
			k, ku := NewGemmKernelTile(elem, isa, m, n), NewGemmKernelTile(elem, isa, m, n)
			ku.Unpacked = true
			if k.Validate() == nil && ku.Validate() == nil {
				tiles = append(tiles, tile{m, n, a})
			}
		}
	}
	slices.SortStableFunc(tiles, func(x, y tile) int {
		return cmp.Compare(abs(acc-x.acc), abs(acc-y.acc))
	})
	var out []map[string]int
	for _, t := range tiles[:min(4, len(tiles))] {
		c := map[string]int{"MR": t.mr}
		if t.nr != nr {
			c["NR"] = t.nr
		}
		out = append(out, c)
	}
	for _, f := range []struct {
		field string
		vals  []int
	}{{"KU", []int{2, 8}}, {"PFA", []int{4, 16, -1}}, {"PFB", []int{4, 16, -1}}, {"PFC", []int{32, 512, -1}}, {"PFU", []int{16, 128, -1}}} {
		for _, v := range f.vals {
			out = append(out, map[string]int{f.field: v})
		}
	}
	return out
}

func abs(a int) int { return max(a, -a) }
