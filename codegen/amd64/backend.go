package amd64

import (
	"bytes"
	"fmt"
	"go/format"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/target"
)

// Backend is the amd64 backend: for every GEMM slot of the package it generates AVX-512 and AVX2+FMA
// microkernels (the register tiles of TileFor) and an init that, when the CPU has the features, registers
// them as the "avx512" and "avx2" variants ahead of the portable "go" one. The cache blocks of each
// variant come from the analytical model applied to that variant's tile.
type Backend struct{}

// Name implements codegen.Backend.
func (Backend) Name() string { return "amd64" }

// Generate implements codegen.Backend.
func (Backend) Generate(p *codegen.Package) ([]codegen.File, error) {
	slots := codegen.Slots(p)
	if len(slots) == 0 {
		return nil, nil
	}
	m, _ := target.Lookup("amd64")
	type entry struct {
		slot codegen.Slot
		isa  string
		k    GemmKernel
		b    target.Blocks
	}
	var entries []entry
	var gemms []GemmKernel
	have := map[string]bool{}
	for _, isa := range []string{AVX512, AVX2} {
		for _, s := range slots {
			elem := F32
			if s.Elem == ir.F64 {
				elem = F64
			}
			k := NewGemmKernel(elem, isa)
			mach := m
			if isa == AVX512 {
				mach.VecBytes, mach.VecRegs = 64, 32
			}
			e := entry{slot: s, isa: isa, k: k, b: blocksFor(mach, k, s.Elem.Size())}
			entries = append(entries, e)
			if !have[k.Name] {
				have[k.Name] = true
				gemms = append(gemms, k)
			}
		}
	}
	asm, stubs, err := Generate(p.Name, gemms)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("%s\n//go:build !purego\n\npackage %s\n\nimport (\n\t\"unsafe\"\n\n\t\"golang.org/x/sys/cpu\"\n)\n\n", codegen.Header, p.Name)
	for _, k := range gemms {
		t := "float32"
		if k.Elem == F64 {
			t = "float64"
		}
		w("// %sSlice adapts %s (docs/MICROKERNEL.md) to the slot's slice signature. The loop nest\n", k.Name, k.Name)
		w("// guarantees m, n >= 1 and that every touched element lies inside the slices.\n")
		w("func %sSlice(kc int, a, b, c []%s, ldc, m, n int, alpha, beta %s, bias []%s, ep int) {\n", k.Name, t, t, t)
		w("\t%s(kc, unsafe.SliceData(a), unsafe.SliceData(b), &c[0], ldc, m, n, alpha, beta, unsafe.SliceData(bias), ep)\n}\n\n", k.Name)
	}
	w("func init() {\n")
	for _, isa := range []string{AVX2, AVX512} {
		cond := "cpu.X86.HasAVX2 && cpu.X86.HasFMA"
		if isa == AVX512 {
			cond = "cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL"
		}
		w("\tif %s {\n", cond)
		w("\t\tvariants = append([]variant{{%q, func() {\n", isa)
		for _, e := range entries {
			if e.isa != isa {
				continue
			}
			w("\t\t\t*%s = %s{Name: %q, MR: %d, NR: %d, MC: %d, KC: %d, NC: %d, Micro: %sSlice}\n", e.slot.Var,
				map[ir.DType]string{ir.F32: "gemmSlot32", ir.F64: "gemmSlot64"}[e.slot.Elem], isa, e.k.MR, e.k.NR, e.b.MC, e.b.KC, e.b.NC, e.k.Name)
		}
		w("\t\t}}}, variants...)\n\t}\n")
	}
	w("\tselectVariant()\n}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("amd64 dispatch file: %v\n%s", err, b.String())
	}
	return []codegen.File{
		{Name: "kgen_amd64.s", Data: asm},
		{Name: "kgen_stub_amd64.go", Data: stubs},
		{Name: "kgen_amd64.go", Data: src},
	}, nil
}

// blocksFor starts from the analytical model and keeps KC at least 256: with a 6-row tile the model's
// one L1 way for Ã gives KC = 168, and measured here (docs/PERF.md) a longer KC, which halves the
// number of passes over C, wins over keeping B̃'s micro-panel strictly inside L1. MC is then resized so
// Ã keeps the same L2 footprint.
func blocksFor(m target.Machine, k GemmKernel, elem int) target.Blocks {
	b := target.GemmBlocks(m, k.MR, k.NR, elem)
	if b.KC < 256 {
		b.MC = max(k.MR, b.MC*b.KC/256/k.MR*k.MR)
		b.KC = 256
	}
	return b
}
