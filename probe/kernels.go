package probe

import "unsafe"

// peakKernel is one register-only throughput loop: run(iters) does iters × flops floating-point
// operations in at least instr instructions.
type peakKernel struct {
	isa, typ string // Profile.Peak key parts: "avx512", "f32"
	flops    int    // per iteration
	instr    int    // the fewest instructions an iteration's arithmetic can take
	// issue bounds how many of those instructions a core starts per cycle (TestQuickProfileSane's
	// bound: flops/instr × issue × clock).
	issue int
	run   func(iters int)
}

// memKernel reads or copies whole steps of step bytes (buffers are multiples of it).
type memKernel struct {
	name string
	step int
	read func(p []byte, reps int)
	copy func(dst, src []byte, reps int)
}

// The portable kernels every platform can run (and the only ones under -tags purego).

// goPeak32 runs 12 independent multiply-add chains (24 flops per iteration), as kernels' scalarBound.
func goPeak32(iters int) {
	var a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11 float32 = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12
	x, y := float32(0.999), float32(0.001)
	for i := 0; i < iters; i++ {
		a0, a1, a2, a3 = a0*x+y, a1*x+y, a2*x+y, a3*x+y
		a4, a5, a6, a7 = a4*x+y, a5*x+y, a6*x+y, a7*x+y
		a8, a9, a10, a11 = a8*x+y, a9*x+y, a10*x+y, a11*x+y
	}
	sink32 = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11
}

func goPeak64(iters int) {
	var a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11 float64 = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12
	x, y := 0.999, 0.001
	for i := 0; i < iters; i++ {
		a0, a1, a2, a3 = a0*x+y, a1*x+y, a2*x+y, a3*x+y
		a4, a5, a6, a7 = a4*x+y, a5*x+y, a6*x+y, a7*x+y
		a8, a9, a10, a11 = a8*x+y, a9*x+y, a10*x+y, a11*x+y
	}
	sink64 = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11
}

var (
	sink32 float32
	sink64 float64
	sinkU  uint64
)

// goPeaks: 12 multiply-adds per iteration, fused into 12 FMAs at best (arm64, GOAMD64=v3); scalar FP
// issues at most 4 per cycle on any core to date (Golden Cove: 2 FMA + 2 FADD pipes; Apple: 4).
var goPeaks = []peakKernel{
	{isa: "go", typ: "f32", flops: 24, instr: 12, issue: 4, run: goPeak32},
	{isa: "go", typ: "f64", flops: 24, instr: 12, issue: 4, run: goPeak64},
}

// goRead sums p as 64-bit words in 4 independent chains (the portable code cannot issue vector loads).
func goRead(p []byte, reps int) {
	w := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(p))), len(p)/8)
	var s0, s1, s2, s3 uint64
	for r := 0; r < reps; r++ {
		for i := 0; i+4 <= len(w); i += 4 {
			s0 += w[i]
			s1 += w[i+1]
			s2 += w[i+2]
			s3 += w[i+3]
		}
	}
	sinkU = s0 + s1 + s2 + s3
}

func goCopy(dst, src []byte, reps int) {
	for r := 0; r < reps; r++ {
		copy(dst, src)
	}
}

var goMem = memKernel{name: "go", step: 256, read: goRead, copy: goCopy}

// heapBuffer returns n bytes from the Go heap starting at a 4 KiB boundary.
func heapBuffer(n int) []byte {
	const align = 4096
	words := make([]uint64, (n+align)/8)
	base := int((align - uintptr(unsafe.Pointer(&words[0]))%align) % align)
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)[base : base+n]
}
