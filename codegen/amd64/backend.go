package amd64

import (
	"fmt"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

// Backend is the amd64 backend: for every GEMM slot of the package it generates AVX-512 and AVX2+FMA
// microkernels (the register tile each variant's plan gives the slot: ir.Func.Variants), for every transpose slot the AVX-512 and AVX2 transpose
// tiles of its element type (transpose.go), for every vector loop its AVX-512 and AVX2 routines
// (vloop.go), AVX-512 and AVX2 rows kernels (rows.go), the AVX2 packing routines (both variants install
// them: pack.go), and an init that, when the CPU has the features, registers them as the "avx512" and "avx2"
// variants ahead of the portable "go" one. The cache blocks of each variant come from the analytical
// model applied to that variant's tile.
type Backend struct{}

// Name implements codegen.Backend.
func (Backend) Name() string { return "amd64" }

// Generate implements codegen.Backend.
func (Backend) Generate(p *codegen.Package) ([]codegen.File, error) {
	slots := codegen.Slots(p)
	vloops, vimpls := VLoopKernels(p, AVX2)
	vloopsZ, vimplsZ := VLoopKernels(p, AVX512)
	// The avx512 variant runs the AVX-512 routine of every loop that has one, the AVX2 one otherwise.
	zimpl := map[string]codegen.VLoopImpl{}
	for _, i := range vimplsZ {
		zimpl[i.VLoop.Var] = i
	}
	var vimpls512 []codegen.VLoopImpl
	for _, i := range vimpls {
		if z, ok := zimpl[i.VLoop.Var]; ok {
			i = z
		}
		vimpls512 = append(vimpls512, i)
	}
	vloops = append(vloops, vloopsZ...)
	tslots := codegen.TransposeSlots(p)
	if len(slots) == 0 && len(vloops) == 0 && len(tslots) == 0 {
		return nil, nil
	}
	// Transpose slots: the AVX2 routines in the avx2 variant, the AVX-512 ones in the avx512 variant.
	var transposes []TransposeKernel
	timpls := map[string][]codegen.TransposeKernel{}
	haveT := map[string]bool{}
	for _, isa := range []string{AVX512, AVX2} {
		for _, s := range tslots {
			elem := F32
			if s.Elem == ir.F64 {
				elem = F64
			}
			k := NewTransposeKernelISA(elem, isa)
			timpls[isa] = append(timpls[isa], codegen.TransposeKernel{Slot: s, Kernel: k.Name})
			if !haveT[k.Name] {
				haveT[k.Name] = true
				transposes = append(transposes, k)
			}
		}
	}
	f16c := ""
	if codegen.ImplsNeedF16(vimpls) {
		f16c = " && cpu.X86.HasF16C"
	}
	var variants []codegen.Variant
	var gemms []GemmKernel
	have := map[string]bool{}
	var packs []PackKernel
	var rows []RowsKernel
	var packImpls []codegen.PackImpl
	if len(slots) > 0 {
		for _, e := range []ir.DType{ir.F32, ir.F64} {
			elem := F32
			if e == ir.F64 {
				elem = F64
			}
			for _, d := range []bool{true, false} {
				k := NewPackKernel(elem, d)
				packs = append(packs, k)
				packImpls = append(packImpls, codegen.PackImpl{D: d, Elem: e, Func: k.Name})
			}
		}
	}
	// GEMMs with bf16 operands pack B through packPBBF16: f32 panels in the avx2 and avx512 variants,
	// pair panels in avx512bf16 (below); both are generated routines (packbf16.go).
	var pairPB PackKernel
	if codegen.HasPairSlots(p) {
		widen := NewBF16PackKernel(false)
		pairPB = NewBF16PackKernel(true)
		packs = append(packs, widen, pairPB)
		packImpls = append(packImpls, bf16PackImpl(widen))
	}
	for _, isa := range []string{AVX512, AVX2} {
		// The vector loops with f16 accesses use F16C (VCVTPH2PS/VCVTPS2PH), which every AVX2 CPU has
		// (Intel since Ivy Bridge, AMD since Piledriver); their zmm forms are AVX-512F. F16C joins the
		// conditions rather than gating single loops. The avx512 variant's AVX-512 routines (vector loops,
		// transposes) use AVX-512F only (zmm, opmasks, VPTERNLOG, VSCALEFPS, VRNDSCALEPS, VSHUFF32X4); its
		// GEMM kernels need DQ and VL too, and the AVX2 routines it keeps need AVX2 and FMA.
		v := codegen.Variant{Name: isa, Cond: "cpu.X86.HasAVX2 && cpu.X86.HasFMA" + f16c, VLoops: vimpls, Transposes: timpls[isa], Packs: packImpls}
		if isa == AVX512 {
			v.VLoops = vimpls512
			v.Cond = "cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL && cpu.X86.HasAVX2 && cpu.X86.HasFMA" + f16c
		}
		for _, s := range slots {
			elem := F32
			if s.Elem == ir.F64 {
				elem = F64
			}
			// The tile and blocks are the plan's (the target table's, or a schedule's for amd64).
			sp, err := codegen.VariantSlotPlan(p, s.Name, isa)
			if err != nil {
				return nil, fmt.Errorf("amd64: %v", err)
			}
			k, kr := NewGemmKernelTile(elem, isa, sp.MR, sp.NR), NewRowsKernelISA(elem, isa)
			if err := k.Validate(); err != nil {
				return nil, fmt.Errorf("amd64: slot %s, variant %s: the planned tile %dx%d: %v", s.Name, isa, sp.MR, sp.NR, err)
			}
			ku := k
			ku.Name, ku.Unpacked = k.Name+"U", true
			sk := codegen.SlotKernel{Slot: s, Kernel: k.Name, KernelU: ku.Name, KernelR: kr.Name, RowsMax: RowsMax,
				MR: sp.MR, NR: sp.NR, MC: sp.MC, KC: sp.KC, NC: sp.NC, HostBlocks: sp.Host, ElemSize: s.Elem.Size(), Knobs: sp.Knobs, Tuned: sp.Tuned}
			kernels := []GemmKernel{k, ku}
			if ku.Validate() != nil {
				// a tile the unpacked generator cannot address (MR > 14): the portable unpacked kernel runs it
				sk.KernelU, kernels = "", kernels[:1]
			}
			v.Slots = append(v.Slots, sk)
			for _, g := range kernels {
				if !have[g.Name] {
					have[g.Name] = true
					gemms = append(gemms, g)
				}
			}
			if !have[kr.Name] {
				have[kr.Name] = true
				rows = append(rows, kr)
			}
		}
		variants = append(variants, v)
	}
	if codegen.HasPairSlots(p) {
		// GEMMs with bf16 operands on AVX512_BF16: the avx512 variant with the VDPBF16PS microkernel in
		// their slots and the bf16 pair packers (codegen/bf16.go) that feed it, ahead of the others.
		v := variants[0]
		v.Name = AVX512 + "bf16"
		v.Cond += " && cpu.X86.HasAVX512BF16"
		v.Slots = append([]codegen.SlotKernel(nil), v.Slots...)
		v.Packs = nil
		for _, pk := range variants[0].Packs {
			if pk.Elem != ir.BF16 { // the f32-panel bf16 routine gives way to the pair ones
				v.Packs = append(v.Packs, pk)
			}
		}
		v.Packs = append(v.Packs,
			codegen.PackImpl{D: true, Elem: ir.BF16, Func: codegen.PackPairBF16(true), Slice: true},
			bf16PackImpl(pairPB))
		for i, s := range v.Slots {
			if !s.Slot.BF16Pairs {
				continue
			}
			// The avx512bf16 plan: the bf16 MMA tile in f32 columns, blocks for 2-byte elements; the
			// unpacked and rows kernels are never called (a bf16 GEMM is always packed).
			sp, err := codegen.VariantSlotPlan(p, s.Slot.Name, v.Name)
			if err != nil {
				return nil, fmt.Errorf("amd64: %v", err)
			}
			k := NewGemmKernelTile(BF16, AVX512, sp.MR, sp.NR)
			if err := k.Validate(); err != nil {
				return nil, fmt.Errorf("amd64: slot %s, variant %s: the planned tile %dx%d: %v", s.Slot.Name, v.Name, sp.MR, sp.NR, err)
			}
			v.Slots[i] = codegen.SlotKernel{Slot: s.Slot, Kernel: k.Name, MR: sp.MR, NR: sp.NR, MC: sp.MC, KC: sp.KC, NC: sp.NC,
				HostBlocks: sp.Host, ElemSize: 2, Knobs: sp.Knobs, Tuned: sp.Tuned}
			if !have[k.Name] {
				have[k.Name] = true
				gemms = append(gemms, k)
			}
		}
		variants = append([]codegen.Variant{v}, variants...)
	}
	asm, stubs, err := GenerateAll(p.Name, gemms, vloops, transposes, rows, packs...)
	if err != nil {
		return nil, err
	}
	imports := []string{"golang.org/x/sys/cpu"}
	if codegen.ImplsNeedF16(vimpls) || codegen.HasPairSlots(p) {
		imports = append(imports, p.KgenModule()+"/f16") // adapters of the f16 vector loops and bf16 packers
	}
	if codegen.HostBlocks(variants) {
		imports = append(imports, p.KgenModule()+"/target") // HostGemmBlocks
	}
	if codegen.Tuned(variants) {
		imports = append(imports, p.KgenModule()+"/probe") // the machine class of kgen.lock values
	}
	src, err := codegen.DispatchFile(p.Name, imports, variants)
	if err != nil {
		return nil, fmt.Errorf("amd64 %v", err)
	}
	return []codegen.File{
		{Name: "kgen_amd64.s", Data: asm},
		{Name: "kgen_stub_amd64.go", Data: stubs},
		{Name: "kgen_amd64.go", Data: src},
	}, nil
}
