package ptx

import (
	"math"
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/f16"
)

// sm_90a instructions of the emulator (emu.go): wgmma.fence, wgmma.mma_async with both
// operands in shared memory, wgmma.commit_group / wait_group, and fence.proxy.async. Written from the
// PTX ISA (wgmma "Matrix Descriptor Format", "Shared Memory Matrix Layout", "Register Fragments";
// "Async Proxy"), independently of the backend's wgmma.go:
//
//   - a descriptor holds the start address, the leading and stride byte offsets (bits 0–13, 16–29,
//     32–45, each in 16-byte units), the base offset (49–51: not modelled, must be 0) and the swizzle
//     mode (62–63: 0 none, 1 128-byte, 2 64-byte, 3 32-byte). The canonical layouts (16-bit elements;
//     x the M or N index, k the K index; W the swizzle width in bytes), as CUTLASS's make_gmma_desc
//     states them in its comments (cute/atom/mma_traits_sm90_gmma.hpp):
//     K-major, no swizzle:  (x%8)·16 + (x/8)·SBO + (k%8)·2 + (k/8)·LBO
//     K-major, swizzled:    (x%8)·W  + (x/8)·SBO + k·2
//     MN-major, no swizzle: (x%8)·2  + (x/8)·SBO + (k%8)·16 + (k/8)·LBO
//     MN-major, swizzled:   (x%(W/2))·2 + (x/(W/2))·LBO + (k%8)·W + (k/8)·SBO
//     then, when swizzled, the address (start + that) has its 16-byte chunk bits [4, 4+b) XORed with
//     bits [7, 7+b) (b = log2(W/16)): the swizzle works on absolute shared addresses, which is why
//     the emulator places shared arrays at addresses that are only as aligned as declared;
//   - imm-trans-a/b 0 is K-major, 1 MN-major; imm-scale ±1 negates; scale-d false drops D;
//   - the D fragment of m64nNk16: thread t of the warpgroup, register i holds row 16·(t/32) + (t%32)/4 +
//     8·((i>>1)&1), column 8·(i>>2) + 2·(t%4) + (i&1);
//   - wgmma.mma_async is asynchronous: its D registers read as NaN until a wgmma.wait_group retires
//     its group; a D register written by another instruction since the thread's last wgmma.fence is an
//     error (the fence the ISA requires); the warpgroup's 128 threads must all reach the instruction,
//     with the same descriptors;
//   - shared bytes written through the generic proxy (st.shared, cp.async) are readable by wgmma only
//     after the writing thread's fence.proxy.async (and a barrier, which the race check enforces);
//     the operands a wgmma reads stay in flight until a wgmma.wait_group of the warpgroup retires its
//     group, and a write to them before that is an error.
//
// Products are summed exactly (f64) per instruction and added to D, rounded once to f32.

// wgThread is the wgmma state of one thread.
type wgThread struct {
	written  [7][]bool // registers written since the last wgmma.fence
	open     []wgResult
	pending  [][]wgResult   // committed groups, oldest first
	latest   map[Reg]uint64 // the newest in-flight result of each D register
	unfenced [][2]int       // shared (array, byte) written through the generic proxy, not yet fenced
	// the shared (array, byte) pairs read by the warpgroup's wgmmas (kept by its first thread): issued
	// since the last commit, and per committed group; they stay in flight until a wait retires them
	readOpen    [][2]int
	readPending [][][2]int
}

// wgResult is the value an issued wgmma will leave in one D register.
type wgResult struct {
	r Reg
	v uint64
}

// usesWGMMA reports whether the entry issues wgmma (the emulator then tracks proxies and fences).
func usesWGMMA(e *Entry) bool {
	for _, it := range e.body {
		if in, ok := it.(*Instr); ok && strings.HasPrefix(in.Op, "wgmma.") {
			return true
		}
	}
	return false
}

// newWGThread allocates th's wgmma state.
func newWGThread(th *emuThread) *wgThread {
	w := &wgThread{latest: map[Reg]uint64{}}
	for c := range w.written {
		w.written[c] = make([]bool, len(th.regs[c]))
	}
	return w
}

// wgThreadOp runs the per-thread sm_90a instructions; false when in is not one of them.
func (m *emulator) wgThreadOp(th *emuThread, in *Instr) bool {
	switch in.Op {
	case "fence.proxy.async.shared::cta":
		if th.wg != nil {
			for _, x := range th.wg.unfenced {
				if m.generic[x[0]][x[1]] == int32(th.id+1) {
					m.generic[x[0]][x[1]] = 0
				}
			}
			th.wg.unfenced = th.wg.unfenced[:0]
		}
	case "wgmma.fence.sync.aligned":
		for c := range th.wg.written {
			clear(th.wg.written[c])
		}
	case "wgmma.commit_group.sync.aligned":
		th.wg.pending = append(th.wg.pending, th.wg.open)
		th.wg.open = nil
		th.wg.readPending = append(th.wg.readPending, th.wg.readOpen)
		th.wg.readOpen = nil
	case "wgmma.wait_group.sync.aligned":
		keep := int(in.Args[0].(Imm))
		for len(th.wg.pending) > keep {
			for _, r := range th.wg.pending[0] {
				th.regs[classIndex(r.r.T)][r.r.n] = r.v
			}
			th.wg.pending = th.wg.pending[1:]
		}
		for len(th.wg.readPending) > keep {
			for _, x := range th.wg.readPending[0] {
				m.inflight[x[0]][x[1]]--
				if m.tma != nil {
					// the read completes now: only arrivals from here on release it
					m.tma.noteRead(th, x[0], x[1])
					m.tma.early[x[0]][x[1]] = false
				}
			}
			th.wg.readPending = th.wg.readPending[1:]
		}
		clear(th.wg.latest)
		for _, g := range append(th.wg.pending, th.wg.open) {
			for _, r := range g {
				th.wg.latest[r.r] = r.v
			}
		}
	default:
		return false
	}
	return true
}

// noteGenericWrite records a generic-proxy write of shared byte k of array i by th.
func (m *emulator) noteGenericWrite(th *emuThread, i, k int) {
	if th.wg == nil {
		return
	}
	if m.inflight[i][k] != 0 {
		emuError("thread %d overwrites %s byte %d, which a wgmma still in flight reads (no wgmma.wait_group retired it)", th.id, m.shared[i].name, k)
	}
	m.generic[i][k] = int32(th.id + 1)
	th.wg.unfenced = append(th.wg.unfenced, [2]int{i, k})
}

// wgmmaAddr is the shared byte address of element (x, k) of a 16-bit operand described by desc.
func wgmmaAddr(desc uint64, x, k int, mnMajor bool) uint64 {
	start := (desc & 0x3FFF) << 4
	lbo := int((desc >> 16) & 0x3FFF << 4)
	sbo := int((desc >> 32) & 0x3FFF << 4)
	if (desc>>49)&7 != 0 {
		emuError("wgmma descriptor %#x: a base offset is not modelled", desc)
	}
	mode := desc >> 62
	w := [4]int{0, 128, 64, 32}[mode]
	var off int
	switch {
	case !mnMajor && mode == 0:
		off = x%8*16 + x/8*sbo + k%8*2 + k/8*lbo
	case !mnMajor:
		if 2*k >= w {
			emuError("wgmma: K-major k %d outside the %d-byte swizzle row", k, w)
		}
		off = x%8*w + x/8*sbo + 2*k
	case mode == 0:
		off = x%8*2 + x/8*sbo + k%8*16 + k/8*lbo
	default:
		off = x%(w/2)*2 + x/(w/2)*lbo + k%8*w + k/8*sbo
	}
	a := start + uint64(off)
	if w != 0 {
		bits := map[int]uint64{128: 3, 64: 2, 32: 1}[w]
		a ^= (a >> 7 & (1<<bits - 1)) << 4
	}
	return a
}

// wgmma runs wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16} with A and B descriptors
// for the 128 threads of a warpgroup.
func (m *emulator) wgmma(group []*emuThread, in *Instr) {
	tok := strings.Split(in.Op, ".")
	bad := len(tok) != 8 || strings.Join(tok[:4], ".") != "wgmma.mma_async.sync.aligned" || tok[5] != "f32" || tok[6] != tok[7] || (tok[6] != "f16" && tok[6] != "bf16")
	var n int
	if !bad {
		shape := tok[4]
		var err error
		n, err = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(shape, "m64n"), "k16"))
		bad = err != nil || !strings.HasPrefix(shape, "m64n") || !strings.HasSuffix(shape, "k16") || n < 8 || n > 256 || n%8 != 0
	}
	if bad || len(in.Args) != 8 {
		emuError("unknown instruction %s (the emulator models m64nNk16 f32 += f16/bf16 with both operands from descriptors)", in.Op)
	}
	d, ok := in.Args[0].(Vec)
	if !ok || len(d) != n/2 {
		emuError("%s: d is not a vector of %d registers", in.Op, n/2)
	}
	imm := make([]int64, 4)
	for x := range imm {
		v, ok := in.Args[4+x].(Imm)
		if !ok {
			emuError("%s: operand %d is not an immediate", in.Op, 5+x)
		}
		imm[x] = int64(v)
	}
	if (imm[0] != 1 && imm[0] != -1) || (imm[1] != 1 && imm[1] != -1) || imm[2]&^1 != 0 || imm[3]&^1 != 0 {
		emuError("%s: imm-scale-a/b must be ±1, imm-trans-a/b 0 or 1 (got %v)", in.Op, imm)
	}
	bf := tok[6] == "bf16"
	lead := group[0]
	if m.tma != nil {
		m.tma.group = group // bytes landed by bulk copies: every thread of the warpgroup must have waited
		defer func() { m.tma.group = nil }()
	}
	descA, descB := m.value(lead, in.Args[1], B64), m.value(lead, in.Args[2], B64)
	scaleD := m.value(lead, in.Args[3], Pred) != 0
	for _, th := range group {
		if m.value(th, in.Args[1], B64) != descA || m.value(th, in.Args[2], B64) != descB || (m.value(th, in.Args[3], Pred) != 0) != scaleD {
			emuError("%s: thread %d's descriptors or scale-d differ from thread %d's", in.Op, th.id, lead.id)
		}
	}
	elem := func(desc uint64, x, k int, mn bool) float64 {
		a := wgmmaAddr(desc, x, k, mn)
		b, i, off := m.mem(lead, "shared", Addr{Base: Imm(int64(a))}, 2)
		if w := m.generic[i][off]; w != 0 || m.generic[i][off+1] != 0 {
			emuError("%s reads %s byte %d, written through the generic proxy by thread %d without a fence.proxy.async since", in.Op, b.name, off, max(w, m.generic[i][off+1])-1)
		}
		m.sharedAccess(lead, i, off, 2, false)
		for b := off; b < off+2; b++ {
			m.inflight[i][b]++
			lead.wg.readOpen = append(lead.wg.readOpen, [2]int{i, b})
		}
		h := uint16(load(b.data[off:], 2))
		if bf {
			return float64(f16.BF16(h).Float32())
		}
		return float64(f16.F16(h).Float32())
	}
	var A [64][16]float64
	B := make([][16]float64, n)
	for i := 0; i < 64; i++ {
		for k := 0; k < 16; k++ {
			A[i][k] = float64(imm[0]) * elem(descA, i, k, imm[2] == 1)
		}
	}
	for j := 0; j < n; j++ {
		for k := 0; k < 16; k++ {
			B[j][k] = float64(imm[1]) * elem(descB, j, k, imm[3] == 1)
		}
	}
	for t, th := range group {
		for i, r := range d {
			c := classIndex(r.T)
			if th.wg.written[c][r.n] {
				emuError("%s: thread %d wrote accumulator register %s since its last wgmma.fence", in.Op, th.id, r)
			}
			row := 16*(t/32) + (t%32)/4 + 8*((i>>1)&1)
			col := 8*(i>>2) + 2*(t%4) + (i & 1)
			var s float64
			if scaleD {
				s = float64(f32(m.wgD(th, r)))
			}
			for k := 0; k < 16; k++ {
				s += A[row][k] * B[col][k]
			}
			th.wg.open = append(th.wg.open, wgResult{r: r, v: b32(float32(s))})
			th.wg.latest[r] = b32(float32(s))
			th.regs[c][r.n] = uint64(math.Float32bits(float32(math.NaN())))
		}
	}
}

// wgD is the value of D register r as the next wgmma of th reads it: the newest issued result for r
// when one is in flight (wgmma chains its accumulators in issue order), else the register.
func (m *emulator) wgD(th *emuThread, r Reg) uint64 {
	if v, ok := th.wg.latest[r]; ok {
		return v
	}
	return m.reg(th, r)
}
