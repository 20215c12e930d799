//go:build !purego

package probe

func hostPeaks() []peakKernel {
	return append([]peakKernel{
		{isa: "neon", typ: "f32", flops: 2 * 4 * 24, instr: 24, issue: fmaPorts, run: fmaPeakNEONF32},
		{isa: "neon", typ: "f64", flops: 2 * 2 * 24, instr: 24, issue: fmaPorts, run: fmaPeakNEONF64},
	}, goPeaks...)
}

func extraFeatures() []string { return nil }

func hostMem() memKernel {
	return memKernel{name: "neon", step: 256,
		read: func(p []byte, reps int) { readNEON(&p[0], len(p), reps) },
		copy: func(d, s []byte, reps int) { copyNEON(&d[0], &s[0], len(s), reps) }}
}

func hostClock() (run func(iters int), adds int) { return clockLoop, 64 }

// The bound on vector FMA pipes: Apple's P-cores issue four 128-bit FMLAs per cycle, the most of any
// arm64 core to date.
const fmaPorts = 4
