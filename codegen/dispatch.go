package codegen

import (
	"bytes"
	"fmt"
	"go/format"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/ir"
)

// SlotKernel points one slot at an assembly microkernel in a variant: Kernel is the Go name of a function
// with the pointer signature of docs/MICROKERNEL.md (declared in the backend's stub file), and MR..NC are
// the slot fields the variant installs (the kernel's register tile and its cache blocks).
type SlotKernel struct {
	Slot               Slot
	Kernel             string
	MR, NR, MC, KC, NC int
	// KernelU is the unpacked microkernel (docs/MICROKERNEL.md, "Unpacked operands") with the same
	// tile, KernelU + BatchSuffix its batched twin ("Batched products"); "" keeps the portable ones.
	KernelU string
	// KernelR is the rows kernel (docs/MICROKERNEL.md, "Rows kernels"), pointer signature
	// func(kc int, a *T, ars, acs int, b *T, ldb int, c *T, ldc, m, n int) for m <= RowsMax; "" keeps
	// the portable one.
	KernelR string
	RowsMax int
	// HostBlocks sizes MC, KC and NC at init from the caches of the machine the program runs on
	// (target.HostGemmBlocks) instead of the constants above; the importer must list the target package.
	HostBlocks bool
	// Elem is the element size in bytes (for HostBlocks).
	ElemSize int
	// Knobs are the slot's thresholds in this variant's plan (installed with the kernels).
	Knobs Knobs
	// Tuned are kgen.lock's values of slot fields (MC, KC, NC and the Knobs) per machine class, set over
	// the plan's at install when that class is the one chosen for the machine (MachineClass: the nearest
	// of the file's classes, probe.Nearest; for MC, KC and NC only when its caches match this machine's,
	// CacheClass); the importer must list kgen's probe package.
	Tuned map[string]map[string]int
	// Classes are the microkernels generated for the machine classes whose kgen.lock values set kernel
	// fields (ir.KernelFields: tile, unroll, prefetch): installed with their tile (and, with HostBlocks,
	// their own probed blocks) in that class's case before its other values.
	Classes map[string]ClassKernel
}

// ClassKernel is a slot's microkernel pair for one machine class (SlotKernel.Classes).
type ClassKernel struct {
	Kernel, KernelU string // KernelU "": the portable unpacked kernel
	MR, NR          int
}

// kernels lists the packed microkernels s installs: its own, then its classes' in class order, with
// their unpacked twins and tiles.
func (s SlotKernel) kernels() []ClassKernel {
	out := []ClassKernel{{Kernel: s.Kernel, KernelU: s.KernelU, MR: s.MR, NR: s.NR}}
	for _, c := range slices.Sorted(maps.Keys(s.Classes)) {
		out = append(out, s.Classes[c])
	}
	return out
}

// Variant is one implementation level an assembly backend registers: its name (Use/Variants), the Go
// expression that must hold at init for it to be registered ("" registers it unconditionally), and the
// kernel of every slot.
type Variant struct {
	Name  string
	Cond  string
	Slots []SlotKernel
	// VLoops are the vector-loop slots (see VLoop) the variant implements; the others stay nil (the
	// portable loop runs). An implementation with an Alt installs Alt.Func instead when Alt.Cond holds
	// (checked each time the variant is installed), so one variant can use an optional extension loop
	// by loop without a variant of its own.
	VLoops []VLoopImpl
	// Transposes are the transpose slots (see TransposeSlot) the variant installs a routine in; the
	// others keep the portable one.
	Transposes []TransposeKernel
	// Packs are the panel-packing routines (packD/packPB of the generated support file) the variant
	// replaces; the others stay portable.
	Packs []PackImpl
}

// PackImpl points one packing variable (packD32, packPB32 and their 64-bit twins) at an assembly routine
// Func with the pointer signature func(dst, src *T, ld, w, panel, depth int) (packPB: w is the block's
// column count n); the adapter DispatchFile writes checks the bounds first and runs the portable routine
// when they do not hold.
type PackImpl struct {
	// D: packD (dst[d*panel+q] = src[q*ld+d]); otherwise packPB (all the panels of a block, row by row:
	// dst[(q/panel)*panel*depth + d*panel + q%panel] = src[d*ld+q]).
	D    bool
	Elem ir.DType
	Func string
	// Slice: Func is a Go function with the slot variable's own slice signature (the bf16 pair packers
	// of the support file), installed as it is, without an adapter.
	Slice bool
	// Pair: for Elem BF16, Func packs bf16 pair panels (bf16.go), and the adapter falls back to the
	// portable pair routine; otherwise a bf16 routine packs f32 panels.
	Pair bool
}

// Var is the generated variable the routine replaces.
func (p PackImpl) Var() string { return PackVar(p.D, p.Elem) } // bf16: f32 or pair panels (bf16.go)

func writePackAdapter(b *bytes.Buffer, p PackImpl) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	t := goFloat(p.Elem)
	cond := "w < 1 || panel < 1 || depth < 1 || ld < 0 || len(dst) < (w+panel-1)/panel*panel*depth || (depth-1)*ld+w > len(src)"
	if p.D {
		cond = "w < 1 || w > panel || depth < 1 || ld < 0 || len(dst) < panel*depth || (w-1)*ld+depth > len(src)"
	}
	// A bf16 routine takes its source as 16-bit words (f16.BF16's underlying type) and writes f32 or
	// pair panels into float32 words; a pair panel uses a part of the room of the f32 one, so the f32
	// bounds cover it.
	params, src, fallback := fmt.Sprintf("dst, src []%s", t), "&src[0]", PackGo(p.D, p.Elem)
	if p.Elem == ir.BF16 {
		params, src = "dst []float32, src []f16.BF16", "(*uint16)(&src[0])"
		if p.Pair {
			fallback = PackPairBF16(p.D)
		}
	}
	w("// %sSlice checks what %s needs and runs it; anything else goes to the portable routine.\n", p.Func, p.Func)
	w("func %sSlice(%s, ld, w, panel, depth int) {\n", p.Func, params)
	w("\tif %s {\n", cond)
	w("\t\t%s(dst, src, ld, w, panel, depth)\n\t\treturn\n\t}\n", fallback)
	w("\t%s(&dst[0], %s, ld, w, panel, depth)\n}\n\n", p.Func, src)
}

// DispatchFile emits the Go half of an assembly backend (build tag !purego; the caller gives it an
// architecture-specific name): one slice adapter per distinct kernel, turning the slot's slice signature
// into the kernel's pointer one with unsafe.SliceData, and registerVariants, run as a variable initializer
// (before kgen.go's init selects a variant), which prepends the variants (given best first; a condition
// gates each) to the package's variant list. imports are
// the non-standard packages the conditions need (for example golang.org/x/sys/cpu).
func DispatchFile(pkg string, imports []string, variants []Variant) ([]byte, error) {
	var b bytes.Buffer
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("%s\n//go:build !purego\n\npackage %s\n\n", Header, pkg)
	var imps []string
	for _, v := range variants {
		if len(v.Slots) > 0 {
			imps = append(imps, "\"unsafe\"", "")
			break
		}
	}
	for _, imp := range imports {
		imps = append(imps, fmt.Sprintf("%q", imp))
	}
	if len(imps) > 0 {
		w("import (\n%s\n)\n\n", strings.Join(imps, "\n"))
	}
	// Adapters in order of first use, best variant first.
	adapted := map[string]bool{}
	for _, v := range variants {
		for _, s := range v.Slots {
			for _, k := range s.kernels() {
				if adapted[k.Kernel] {
					continue
				}
				adapted[k.Kernel] = true
				t := goFloat(s.Slot.Elem)
				w("// %sSlice adapts %s (docs/MICROKERNEL.md) to the slot's slice signature. The loop nest\n", k.Kernel, k.Kernel)
				w("// guarantees m, n >= 1 and that every touched element lies inside the slices.\n")
				w("func %sSlice(kc int, a, b, c []%s, ldc, m, n int, alpha, beta %s, bias []%s, ep int) {\n", k.Kernel, t, t, t)
				w("\t%s(kc, unsafe.SliceData(a), unsafe.SliceData(b), &c[0], ldc, m, n, alpha, beta, unsafe.SliceData(bias), ep)\n}\n\n", k.Kernel)
			}
		}
	}
	for _, v := range variants {
		for _, s := range v.Slots {
			for _, k := range s.kernels() {
				if k.KernelU == "" || adapted[k.KernelU] {
					continue
				}
				adapted[k.KernelU] = true
				t := goFloat(s.Slot.Elem)
				w("// %sSlice adapts the unpacked microkernel %s to the slot's slice signature; the loop nest\n", k.KernelU, k.KernelU)
				w("// guarantees m, n >= 1 and that every element of the m×n tile and its operands is inside the slices.\n")
				w("func %sSlice(kc int, a []%s, ars, acs int, b []%s, ldb int, c []%s, ldc, m, n int, alpha, beta %s, bias []%s, ep int) {\n", k.KernelU, t, t, t, t, t)
				w("\t%s(kc, unsafe.SliceData(a), ars, acs, unsafe.SliceData(b), ldb, &c[0], ldc, m, n, alpha, beta, unsafe.SliceData(bias), ep)\n}\n\n", k.KernelU)
				kb := k.KernelU + BatchSuffix
				w("// %sSlice adapts the batched unpacked microkernel %s to the slot's slice signature; the loop\n", kb, kb)
				w("// nest guarantees m, n, cnt >= 1 and that every element of the cnt products is inside the slices.\n")
				w("func %sSlice(kc int, a []%s, ars, acs int, b []%s, ldb int, c []%s, ldc, m, n int, alpha, beta %s, bias []%s, ep, cnt, sa, sb, sc int) {\n", kb, t, t, t, t, t)
				w("\t%s(kc, unsafe.SliceData(a), ars, acs, unsafe.SliceData(b), ldb, &c[0], ldc, m, n, alpha, beta, unsafe.SliceData(bias), ep, cnt, sa, sb, sc)\n}\n\n", kb)
			}
		}
	}
	for _, v := range variants {
		for _, s := range v.Slots {
			if s.KernelR == "" || adapted[s.KernelR] {
				continue
			}
			adapted[s.KernelR] = true
			t := goFloat(s.Slot.Elem)
			w("// %sSlice runs the rows kernel %s under %s, which applies alpha, beta and the epilogue;\n", s.KernelR, s.KernelR, RowsVia(s.Slot.Elem))
			w("// the loop nest guarantees every element it names is inside the slices.\n")
			w("func %sSlice(kc int, a []%s, ars, acs int, b []%s, ldb int, c []%s, ldc, m, n int, alpha, beta %s, bias []%s, ep int) {\n", s.KernelR, t, t, t, t, t)
			w("\t%s(%sPtr, kc, a, ars, acs, b, ldb, c, ldc, m, n, alpha, beta, bias, ep)\n}\n\n", RowsVia(s.Slot.Elem), s.KernelR)
			// More rows than the assembly takes (a tuned RowsMax above it) run as groups, each streaming B
			// once: the portable rows core had run them at a tenth of the speed (sgemm 8×4096×4096: 48 ms).
			w("// %sPtr runs %s on groups of at most %d rows of A and C, each streaming B once.\n", s.KernelR, s.KernelR, s.RowsMax)
			w("func %sPtr(kc int, a []%s, ars, acs int, b []%s, ldb int, c []%s, ldc, m, n int) {\n", s.KernelR, t, t, t)
			w("\tfor i := 0; i < m; i += %d {\n", s.RowsMax)
			w("\t\t%s(kc, unsafe.SliceData(a[min(i*ars, len(a)):]), ars, acs, unsafe.SliceData(b), ldb, &c[i*ldc], ldc, min(%d, m-i), n)\n\t}\n}\n\n", s.KernelR, s.RowsMax)
		}
	}
	for _, v := range variants {
		for _, i := range v.VLoops {
			if adapted[i.Func] {
				continue
			}
			adapted[i.Func] = true
			writeVLoopAdapter(&b, i)
			if i.Alt.Func != "" && !adapted[i.Alt.Func] {
				adapted[i.Alt.Func] = true
				writeVLoopAdapter(&b, i.alt())
			}
		}
	}
	for _, v := range variants {
		for _, k := range v.Transposes {
			if adapted[k.Kernel] {
				continue
			}
			adapted[k.Kernel] = true
			writeTransposeAdapter(&b, k)
		}
		for _, p := range v.Packs {
			if !adapted[p.Func] && !p.Slice {
				adapted[p.Func] = true
				writePackAdapter(&b, p)
			}
		}
	}
	// Cache blocks probed at init, one per kernel that asks for them.
	probed := map[string]bool{}
	for _, v := range variants {
		for _, s := range v.Slots {
			for _, k := range s.kernels() {
				if s.HostBlocks && !probed[k.Kernel] {
					probed[k.Kernel] = true
					w("// %sBlocks are %s's cache blocks for the caches of this machine, probed at init.\n", k.Kernel, k.Kernel)
					w("var %sBlocks = target.HostGemmBlocks(%d, %d, %d)\n\n", k.Kernel, k.MR, k.NR, s.ElemSize)
				}
			}
			for class, fields := range s.Tuned {
				for f := range fields {
					if _, ok := s.Classes[class]; ir.IsKernelField(f) && !ok {
						return nil, fmt.Errorf("dispatch file: variant %s, slot %s: kgen.lock sets %s for class %s, but the backend generated no kernel for it (kernel fields are tuned on amd64 only)",
							v.Name, s.Slot.Name, f, class)
					}
				}
			}
		}
	}
	if Tuned(variants) {
		w("// %s are the machine classes kgen.lock has values for in this file.\n", MachineClasses)
		w("var %s = []string{%s}\n\n", MachineClasses, quoteList(TunedClasses(variants)))
		w("// %s is the class of %s nearest this machine's (probe.Nearest), whose kgen.lock values are\n", MachineClass, MachineClasses)
		w("// installed below; \"\" when none shares this machine's architecture and vector level.\n")
		w("var %s = probe.NearestHost(%s)\n\n", MachineClass, MachineClasses)
		if tunedCacheBlocks(variants) {
			w("// %s is %s when its L1 and L2 are this machine's within a factor √2 (probe.MatchingCaches),\n", CacheClass, MachineClass)
			w("// else \"\": the class whose kgen.lock cache blocks (MC, KC, NC) are installed below.\n")
			w("var %s = probe.MatchingCaches(%s)\n\n", CacheClass, MachineClass)
		}
	}
	// Each registration prepends, so the worst variant registers first and the best ends up first. It
	// runs as a package variable's initializer, so before every init function: kgen.go's init then picks
	// among all the variants (and reports an unusable KGEN_VARIANT once).
	w("var _ = %s()\n\n", RegisterVariants)
	w("// %s prepends this architecture's variants that the CPU supports to %s.\n", RegisterVariants, VariantList)
	w("func %s() bool {\n", RegisterVariants)
	for i := len(variants) - 1; i >= 0; i-- {
		v := variants[i]
		ind := "\t"
		if v.Cond != "" {
			w("\tif %s {\n", v.Cond)
			ind = "\t\t"
		}
		w("%s%s = append([]%s{{%q, func() {\n", ind, VariantList, VariantType, v.Name)
		w("%s\t%s()\n%s\t%s()\n", ind, ResetVLoops, ind, ResetPacks)
		for _, p := range v.Packs {
			if p.Slice {
				w("%s\t%s = %s\n", ind, p.Var(), p.Func)
				continue
			}
			w("%s\t%s = %sSlice\n", ind, p.Var(), p.Func)
		}
		for _, s := range v.Slots {
			microU, microB := MicroUGo(s.Slot.Elem), MicroBGo(s.Slot.Elem)
			if s.KernelU != "" {
				microU, microB = s.KernelU+"Slice", s.KernelU+BatchSuffix+"Slice"
			}
			rows := RowsGo(s.Slot.Elem)
			if s.KernelR != "" {
				rows = s.KernelR + "Slice"
			}
			mc, kc, nc := fmt.Sprint(s.MC), fmt.Sprint(s.KC), fmt.Sprint(s.NC)
			if s.HostBlocks {
				mc, kc, nc = s.Kernel+"Blocks.MC", s.Kernel+"Blocks.KC", s.Kernel+"Blocks.NC"
			}
			if s.Knobs.RowsNB < 1 || s.Knobs.RowsMax < 0 || s.Knobs.RowBlocks < 1 {
				return nil, fmt.Errorf("dispatch file: variant %s, slot %s: thresholds %+v not planned", v.Name, s.Slot.Name, s.Knobs)
			}
			kn := s.Knobs
			if s.KernelU == "" {
				// the unpacked kernel is the portable Go one: products past SmallWork stay packed
				// (the deep version pays only with an assembly kernel: passes.deepGemm)
				kn.SmallDeep = 0
			}
			w("%s\t*%s = %s{Name: %q, MR: %d, NR: %d, MC: %s, KC: %s, NC: %s, %s, Micro: %sSlice, MicroU: %s, MicroB: %s, Rows: %s}\n", ind, s.Slot.Var,
				GemmSlotType(s.Slot.Elem), v.Name, s.MR, s.NR, mc, kc, nc, kn.Fields(), s.Kernel, microU, microB, rows)
			writeTuned(&b, ind+"\t", s)
		}
		for _, i := range v.VLoops {
			w("%s\t%s = %s\n", ind, i.VLoop.Var, i.adapter())
			if i.Alt.Func != "" {
				w("%s\tif %s {\n%s\t\t%s = %s\n%s\t}\n", ind, i.Alt.Cond, ind, i.VLoop.Var, i.alt().adapter(), ind)
			}
		}
		for _, k := range v.Transposes {
			w("%s\t%s.Name, %s.T = %q, %sSlice\n", ind, k.Slot.Var, k.Slot.Var, v.Name, k.Kernel)
		}
		w("%s}}}, %s...)\n", ind, VariantList)
		if v.Cond != "" {
			w("\t}\n")
		}
	}
	w("\treturn true\n}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("dispatch file: %v\n%s", err, b.String())
	}
	return src, nil
}

// writeTuned writes the switches on the machine class that install a slot's kgen.lock values: the cache
// blocks (ir.CacheBlockFields) on CacheClass, the other fields on MachineClass.
func writeTuned(b *bytes.Buffer, ind string, s SlotKernel) {
	for _, sw := range []struct {
		on    string
		cache bool
	}{{MachineClass, false}, {CacheClass, true}} {
		var cases []string
		for _, class := range slices.Sorted(maps.Keys(s.Tuned)) {
			var body string
			if k, ok := s.Classes[class]; ok && !sw.cache {
				// The class's own microkernels first, with their tile and blocks; its values below.
				microU, microB := MicroUGo(s.Slot.Elem), MicroBGo(s.Slot.Elem)
				if k.KernelU != "" {
					microU, microB = k.KernelU+"Slice", k.KernelU+BatchSuffix+"Slice"
				}
				body += fmt.Sprintf("%s	%s.MR, %s.NR, %s.Micro, %s.MicroU, %s.MicroB = %d, %d, %sSlice, %s, %s\n", ind, s.Slot.Var, s.Slot.Var, s.Slot.Var, s.Slot.Var, s.Slot.Var,
					k.MR, k.NR, k.Kernel, microU, microB)
				if s.HostBlocks {
					body += fmt.Sprintf("%s	%s.MC, %s.KC, %s.NC = %sBlocks.MC, %sBlocks.KC, %sBlocks.NC\n", ind, s.Slot.Var, s.Slot.Var, s.Slot.Var,
						k.Kernel, k.Kernel, k.Kernel)
				}
			}
			var lhs, rhs []string
			for _, f := range slices.Sorted(maps.Keys(s.Tuned[class])) {
				if ir.IsCacheBlock(f) != sw.cache || ir.IsKernelField(f) {
					continue
				}
				lhs = append(lhs, s.Slot.Var+"."+f)
				rhs = append(rhs, fmt.Sprint(s.Tuned[class][f]))
			}
			if len(lhs) > 0 {
				body += fmt.Sprintf("%s\t%s = %s\n", ind, strings.Join(lhs, ", "), strings.Join(rhs, ", "))
			}
			if body != "" {
				cases = append(cases, fmt.Sprintf("%scase %q:\n%s", ind, class, body))
			}
		}
		if len(cases) > 0 {
			fmt.Fprintf(b, "%sswitch %s {\n%s%s}\n", ind, sw.on, strings.Join(cases, ""), ind)
		}
	}
}

// tunedCacheBlocks reports whether some slot of variants has kgen.lock values of a cache field.
func tunedCacheBlocks(variants []Variant) bool {
	for _, v := range variants {
		for _, s := range v.Slots {
			for _, fields := range s.Tuned {
				for f := range fields {
					if ir.IsCacheBlock(f) {
						return true
					}
				}
			}
		}
	}
	return false
}

// TunedClasses lists the machine classes of variants' kgen.lock values, sorted.
func TunedClasses(variants []Variant) []string {
	set := map[string]bool{}
	for _, v := range variants {
		for _, s := range v.Slots {
			for c := range s.Tuned {
				set[c] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// Tuned reports whether a slot of variants has kgen.lock values (its dispatch file then imports kgen's
// probe package).
func Tuned(variants []Variant) bool {
	return anySlot(variants, func(s SlotKernel) bool { return len(s.Tuned) > 0 })
}

// HostBlocks reports whether a slot of variants sizes its cache blocks at init (its dispatch file then
// imports kgen's target package).
func HostBlocks(variants []Variant) bool {
	return anySlot(variants, func(s SlotKernel) bool { return s.HostBlocks })
}

func anySlot(variants []Variant, f func(SlotKernel) bool) bool {
	for _, v := range variants {
		if slices.ContainsFunc(v.Slots, f) {
			return true
		}
	}
	return false
}

func goFloat(t ir.DType) string {
	if t == ir.F64 {
		return "float64"
	}
	return "float32"
}
