package gpuprobe

import (
	"fmt"
	"math"
	"strings"

	"github.com/kgen-dev/kgen/rt/cuda"
)

// mmaChains is the number of independent accumulators each warp of the peak kernel keeps: enough
// mma.sync in flight to cover the tensor cores' latency.
const mmaChains = 8

// mmaFlops is one mma.sync.m16n8k16's work: 2·16·8·16 flops.
const mmaFlops = 2 * 16 * 8 * 16

// mmaPeakPTX is the tensor-core peak kernel (sm_80 and later): every warp runs iters rounds of
// mmaChains independent mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 on operands made from
// %tid.x (so nothing folds), then stores the sum of its accumulators, one f32 a thread, into out.
func mmaPeakPTX() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w(".version 7.0\n.target sm_80\n.address_size 64\n")
	w(".visible .entry kgen_mma_peak(.param .u64 out, .param .u32 iters)\n{")
	w("\t.reg .b32 a<4>, b<2>, t, i, n;\n\t.reg .f32 c<%d>, s;\n\t.reg .pred p;\n\t.reg .u64 o, off;", 4*mmaChains)
	w("\tmov.u32 t, %%tid.x;")
	for i := 0; i < 4; i++ {
		w("\txor.b32 a%d, t, %d;", i, 0x3f803f80+i)
	}
	for i := 0; i < 2; i++ {
		w("\txor.b32 b%d, t, %d;", i, 0x3f003f00+i)
	}
	for i := 0; i < 4*mmaChains; i++ {
		w("\tmov.f32 c%d, 0f00000000;", i)
	}
	w("\tld.param.u32 n, [iters];\n\tmov.u32 i, 0;\nLOOP:\n\t.pragma \"nounroll\";")
	for c := 0; c < mmaChains; c++ {
		d := fmt.Sprintf("{c%d, c%d, c%d, c%d}", 4*c, 4*c+1, 4*c+2, 4*c+3)
		w("\tmma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 %s, {a0, a1, a2, a3}, {b0, b1}, %s;", d, d)
	}
	w("\tadd.u32 i, i, 1;\n\tsetp.lt.u32 p, i, n;\n\t@p bra LOOP;")
	w("\tmov.f32 s, c0;")
	for i := 1; i < 4*mmaChains; i++ {
		w("\tadd.f32 s, s, c%d;", i)
	}
	w("\tld.param.u64 o, [out];\n\tcvta.to.global.u64 o, o;\n\tmov.u32 t, %%ctaid.x;\n\tmov.u32 i, %%ntid.x;\n\tmov.u32 n, %%tid.x;\n\tmad.lo.u32 t, t, i, n;")
	w("\tmul.wide.u32 off, t, 4;\n\tadd.u64 o, o, off;\n\tst.global.f32 [o], s;\n\tret;\n}")
	return b.String()
}

// mmaPeak measures the bf16 mma.sync throughput of dev, TFLOP/s, the best of 3: 4 blocks of 8 warps
// per multiprocessor, each warp issuing mmaChains mma.sync a round.
func mmaPeak(dev *cuda.Device, sms int, quick bool) (float64, error) {
	blocks, threads, iters := 4*sms, 256, 4096
	if quick {
		iters = 1024
	}
	return bench(dev, mmaPeakPTX(), "kgen_mma_peak", func(ctx *cuda.Context, fn *cuda.Function, ev *Events) (float64, error) {
		out, err := ctx.Alloc(4 * blocks * threads)
		if err != nil {
			return 0, err
		}
		defer out.Free()
		best, err := ev.Best(3, func() error { return fn.Launch(cuda.D1(blocks), cuda.D1(threads), 0, out, uint32(iters)) })
		if err != nil {
			return 0, err
		}
		flops := float64(blocks) * float64(threads/32) * float64(iters) * mmaChains * mmaFlops
		return math.Round(1000*flops/best.Seconds()/1e12) / 1000, nil
	})
}
