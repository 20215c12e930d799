package arm64

import (
	"fmt"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/target"
)

// Backend is the arm64 backend: for every GEMM slot of the package it generates the NEON by-element
// FMLA microkernel of the slot's element type (the register tile of TileFor), for every vector-loop slot
// it can vectorize a NEON vector loop (vloop.go), for every transpose slot the NEON transpose tile of
// its element type (transpose.go), the rows kernel of its element type for GEMMs of at most RowsMax
// rows (rows.go), the panel-packing routines of f32 and f64 (pack.go), and an init that registers them as the "neon" variant
// ahead of the portable "go" one. ASIMD is mandatory on arm64, so the variant has no
// feature check; within it, the vector loops that have an FP16 routine (fp16.go) install it when
// FP16Cond holds at run time and the FCVTL/FCVTN routine otherwise. The cache blocks come from the analytical model of the arm64 machine applied to the tile.
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
	m, _ := target.Lookup("arm64")
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
		k, err := kernelFor(s.Elem)
		if err != nil {
			return nil, fmt.Errorf("arm64: slot %s: %v", s.Name, err)
		}
		kr := NewRowsKernel(k.Elem)
		b := target.GemmBlocks(m, k.MR, k.NR, s.Elem.Size())
		v.Slots = append(v.Slots, codegen.SlotKernel{Slot: s, Kernel: k.Name, KernelR: kr.Name, RowsMax: RowsMax,
			MR: k.MR, NR: k.NR, MC: b.MC, KC: b.KC, NC: b.NC, HostBlocks: true, ElemSize: s.Elem.Size()})
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
	if len(v.Slots) > 0 {
		imports = append(imports, p.KgenModule()+"/target") // HostGemmBlocks: caches probed at init
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

// kernelFor returns the microkernel of an element type: TileFor's tile, k unrolled by 4, named like
// sgemm8x12NEON.
func kernelFor(t ir.DType) (GemmKernel, error) {
	elem, prefix := "f32", "sgemm"
	switch t {
	case ir.F32:
	case ir.F64:
		elem, prefix = "f64", "dgemm"
	default:
		return GemmKernel{}, fmt.Errorf("no NEON microkernel for element type %v", t)
	}
	mr, nr := TileFor(elem)
	return GemmKernel{Name: fmt.Sprintf("%s%dx%dNEON", prefix, mr, nr), Elem: elem, MR: mr, NR: nr, KUnroll: 4}, nil
}
