package gpuprobe

import (
	"math"

	"github.com/kgen-dev/kgen/rt/cuda"
)

// copyPTX is the device-memory copy kernel (sm_80 and later): a grid-stride loop over n16 16-byte
// chunks, each read with ld.global.v4 from src and written with st.global.v4 to dst.
const copyPTX = `.version 7.0
.target sm_80
.address_size 64

.visible .entry kgen_copy(.param .u64 dst, .param .u64 src, .param .u64 n16)
{
	.reg .u64 i, stride, d, s, n, off, a;
	.reg .u32 t, c, nt, nc;
	.reg .b32 x<4>;
	.reg .pred p;
	mov.u32 t, %tid.x;
	mov.u32 c, %ctaid.x;
	mov.u32 nt, %ntid.x;
	mov.u32 nc, %nctaid.x;
	mul.wide.u32 i, c, nt;
	cvt.u64.u32 off, t;
	add.u64 i, i, off;
	mul.wide.u32 stride, nt, nc;
	ld.param.u64 d, [dst];
	ld.param.u64 s, [src];
	ld.param.u64 n, [n16];
	cvta.to.global.u64 d, d;
	cvta.to.global.u64 s, s;
LOOP:
	setp.ge.u64 p, i, n;
	@p bra DONE;
	shl.b64 off, i, 4;
	add.u64 a, s, off;
	ld.global.v4.b32 {x0, x1, x2, x3}, [a];
	add.u64 a, d, off;
	st.global.v4.b32 [a], {x0, x1, x2, x3};
	add.u64 i, i, stride;
	bra LOOP;
DONE:
	ret;
}
`

// copyBandwidth times copyPTX from one memSize buffer to another, 8 blocks of 256 threads
// per multiprocessor: the device-memory copy bandwidth, GB/s, counting the bytes read plus the bytes
// written (as the CPU profile's copy figures do), the best of 5.
func copyBandwidth(dev *cuda.Device, sms int, quick bool) (float64, error) {
	size := memSize(quick)
	return bench(dev, copyPTX, "kgen_copy", func(ctx *cuda.Context, fn *cuda.Function, ev *Events) (float64, error) {
		var bufs [2]*cuda.Buffer
		for i := range bufs {
			b, err := ctx.Alloc(size)
			if err != nil {
				return 0, err
			}
			defer b.Free()
			bufs[i] = b
		}
		best, err := ev.Best(5, func() error { return fn.Launch(cuda.D1(8*sms), cuda.D1(256), 0, bufs[0], bufs[1], uint64(size/16)) })
		if err != nil {
			return 0, err
		}
		return math.Round(1000*2*float64(size)/best.Seconds()/1e9) / 1000, nil
	})
}
