//go:build !purego

package probe

import (
	"github.com/kgen-dev/kgen/target/hostcpu"
	"golang.org/x/sys/cpu"
)

// The flops per iteration of the generated peak kernels (the doc comments of fma_amd64.go and
// kern_amd64.go; TestPeakTable checks them against codegen/amd64 and the EVEX table).
const (
	avx2Chains, avx512Chains = 12, 24
	zmmChains                = 24
)

func hostPeaks() []peakKernel {
	var ks []peakKernel
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks,
			peakKernel{isa: "avx2", typ: "f32", flops: 2 * 8 * avx2Chains, instr: avx2Chains, issue: fmaPorts, run: fmaPeakAVX2F32},
			peakKernel{isa: "avx2", typ: "f64", flops: 2 * 4 * avx2Chains, instr: avx2Chains, issue: fmaPorts, run: fmaPeakAVX2F64})
	}
	if cpu.X86.HasAVX512F {
		ks = append(ks,
			peakKernel{isa: "avx512", typ: "f32", flops: 2 * 16 * avx512Chains, instr: avx512Chains, issue: fmaPorts, run: fmaPeakAVX512F32},
			peakKernel{isa: "avx512", typ: "f64", flops: 2 * 8 * avx512Chains, instr: avx512Chains, issue: fmaPorts, run: fmaPeakAVX512F64})
		if cpu.X86.HasAVX512BF16 {
			ks = append(ks, peakKernel{isa: "avx512bf16", typ: "bf16", flops: 64 * zmmChains, instr: zmmChains, issue: fmaPorts, run: dotPeakBF16})
		}
		if hasAVX512FP16() {
			ks = append(ks, peakKernel{isa: "avx512fp16", typ: "f16", flops: 64 * zmmChains, instr: zmmChains, issue: fmaPorts, run: fmaPeakFP16})
		}
	}
	return append(ks, goPeaks...)
}

// hasAVX512FP16 reads CPUID leaf 7 sub-leaf 0, EDX bit 23 (AVX512_FP16), which golang.org/x/sys/cpu
// does not expose; the zmm state being enabled by the OS is what cpu.X86.HasAVX512F already checks.
func hasAVX512FP16() bool {
	if !cpu.X86.HasAVX512F {
		return false
	}
	if maxLeaf, _, _, _ := hostcpu.CPUID(0, 0); maxLeaf < 7 {
		return false
	}
	_, _, _, edx := hostcpu.CPUID(7, 0)
	return edx&(1<<23) != 0
}

func extraFeatures() []string {
	if hasAVX512FP16() {
		return []string{"avx512fp16"}
	}
	return nil
}

func hostMem() memKernel {
	switch {
	case cpu.X86.HasAVX512F:
		return memKernel{name: "avx512", step: 512,
			read: func(p []byte, reps int) { readAVX512(&p[0], len(p), reps) },
			copy: func(d, s []byte, reps int) { copyAVX512(&d[0], &s[0], len(s), reps) }}
	case cpu.X86.HasAVX2:
		return memKernel{name: "avx2", step: 256,
			read: func(p []byte, reps int) { readAVX2(&p[0], len(p), reps) },
			copy: func(d, s []byte, reps int) { copyAVX2(&d[0], &s[0], len(s), reps) }}
	}
	return goMem
}

// hostClock returns a loop of adds dependent adds per iteration, one cycle each.
func hostClock() (run func(iters int), adds int) { return clockLoop, 64 }

// The bound on vector FMA pipes: no x86 core to date issues more than two FMAs per cycle.
const fmaPorts = 2
