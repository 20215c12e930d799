package arm64

import (
	"fmt"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

// Backend is the arm64 backend: for every GEMM slot of the package it generates the NEON by-element
// FMLA microkernel of the slot's element type (the register tile of the neon variant's plan: ir.Func.Variants), for every vector-loop slot
// it can vectorize a NEON vector loop (vloop.go), for every transpose slot the NEON transpose tile of
// its element type (transpose.go), the rows kernel of its element type for GEMMs of at most RowsMax
// rows (rows.go), the panel-packing routines of f32 and f64 (pack.go), and an init that registers them as the "neon" variant
// ahead of the portable "go" one. ASIMD is mandatory on arm64, so the variant has no
// feature check; within it, the vector loops that have an FP16 routine (fp16.go) install it when
// FP16Cond holds at run time and the FCVTL/FCVTN routine otherwise. The cache blocks come from the plan too (the analytical model of the arm64 machine applied to the tile, sized again at init from the caches of the machine that runs it).
type Backend struct{}

// Name implements codegen.Backend.
func (Backend) Name() string { return "arm64" }

// variantName is the name the backend's implementation level registers under.
const variantName = "neon"

// Generate implements codegen.Backend.
func (Backend) Generate(p *codegen.Package) ([]codegen.File, error) {
	slots := codegen.Slots(p)
	vloops, vimpls := VLoopKernels(p, NEON)
	tslots := codegen.TransposeSlots(p)
	if len(slots) == 0 && len(vloops) == 0 && len(tslots) == 0 {
		return nil, nil
	}
	v := codegen.Variant{Name: variantName, VLoops: vimpls}
	var gemms []GemmKernel
	var rows []RowsKernel
	var packs []PackKernel
	have := map[string]bool{}
	if len(slots) > 0 {
		// The panel-packing routines (pack.go) of both element types, as on amd64: the generated support
		// file always has packD/packPB of f32 and f64.
		for _, e := range []ir.DType{ir.F32, ir.F64} {
			elem := "f32"
			if e == ir.F64 {
				elem = "f64"
			}
			for _, d := range []bool{true, false} {
				k := NewPackKernel(elem, d)
				packs = append(packs, k)
				v.Packs = append(v.Packs, codegen.PackImpl{D: d, Elem: e, Func: k.Name})
			}
		}
	}
	for _, s := range slots {
		// The tile and blocks are the plan's (the target table's, or a schedule's for arm64).
		sp, err := codegen.VariantSlotPlan(p, s.Name, variantName)
		if err != nil {
			return nil, fmt.Errorf("arm64: %v", err)
		}
		k, err := kernelFor(s.Elem, sp.MR, sp.NR)
		if err != nil {
			return nil, fmt.Errorf("arm64: slot %s: %v", s.Name, err)
		}
		if _, err := Plan(k); err != nil {
			return nil, fmt.Errorf("arm64: slot %s, variant %s: the planned tile %dx%d: %v", s.Name, variantName, sp.MR, sp.NR, err)
		}
		kr := NewRowsKernel(k.Elem)
		v.Slots = append(v.Slots, codegen.SlotKernel{Slot: s, Kernel: k.Name, KernelR: kr.Name, RowsMax: RowsMax,
			MR: sp.MR, NR: sp.NR, MC: sp.MC, KC: sp.KC, NC: sp.NC, HostBlocks: sp.Host, ElemSize: s.Elem.Size(), Knobs: sp.Knobs, Tuned: sp.Tuned})
		if !have[k.Name] {
			have[k.Name] = true
			gemms = append(gemms, k)
		}
		if !have[kr.Name] {
			have[kr.Name] = true
			rows = append(rows, kr)
		}
	}
	var transposes []TransposeKernel
	for _, s := range tslots {
		elem := "f32"
		if s.Elem == ir.F64 {
			elem = "f64"
		}
		k := NewTransposeKernel(elem)
		v.Transposes = append(v.Transposes, codegen.TransposeKernel{Slot: s, Kernel: k.Name})
		if !have[k.Name] {
			have[k.Name] = true
			transposes = append(transposes, k)
		}
	}
	asm, stubs, err := GenerateAll(p.Name, gemms, vloops, transposes, rows, packs...)
	if err != nil {
		return nil, err
	}
	var imports []string
	for _, i := range vimpls {
		if i.Alt.Func != "" {
			imports = append(imports, "golang.org/x/sys/cpu") // FP16Cond
			break
		}
	}
	if codegen.ImplsNeedF16(vimpls) {
		imports = append(imports, p.KgenModule()+"/f16") // adapters of the f16 vector loops
	}
	if codegen.HostBlocks([]codegen.Variant{v}) {
		imports = append(imports, p.KgenModule()+"/target") // HostGemmBlocks: caches probed at init
	}
	if codegen.Tuned([]codegen.Variant{v}) {
		imports = append(imports, p.KgenModule()+"/probe") // the machine class of kgen.lock values
	}
	src, err := codegen.DispatchFile(p.Name, imports, []codegen.Variant{v})
	if err != nil {
		return nil, fmt.Errorf("arm64 %v", err)
	}
	return []codegen.File{
		{Name: "kgen_arm64.s", Data: asm},
		{Name: "kgen_stub_arm64.go", Data: stubs},
		{Name: "kgen_arm64.go", Data: src},
	}, nil
}

// kernelFor returns the microkernel of an element type with register tile mr×nr (the plan's), k
// unrolled by 4, named like sgemm8x12NEON.
func kernelFor(t ir.DType, mr, nr int) (GemmKernel, error) {
	elem, prefix := "f32", "sgemm"
	switch t {
	case ir.F32:
	case ir.F64:
		elem, prefix = "f64", "dgemm"
	default:
		return GemmKernel{}, fmt.Errorf("no NEON microkernel for element type %v", t)
	}
	return GemmKernel{Name: fmt.Sprintf("%s%dx%dNEON", prefix, mr, nr), Elem: elem, MR: mr, NR: nr, KUnroll: 4}, nil
}
