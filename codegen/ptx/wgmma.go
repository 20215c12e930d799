package ptx

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/passes"
)

// sm_90a warpgroup MMA with wgmma.mma_async (PTX ISA 8.0, "Asynchronous Warpgroup Level Matrix
// Multiply-Accumulate"): the 128 threads of a warpgroup multiply a 64×16 tile of A by a 16×N tile of B,
// both read from shared memory through 64-bit matrix descriptors, into the f32 accumulator fragment
// ir.FragWGMMAAcc(N) (register i of the instruction's d vector is the fragment's register i).
//
// The staging pass (passes/wgmma.go) leaves a warpgroup MMA in the one form issued here: a 64×64×K
// tile (K a multiple of 16, at most 64) whose A and B are whole 64×64 shared tiles stored row-major
// with the 128-byte swizzle (ir.Swizzle128B over 64 16-bit elements a row), starting on 1024-byte
// boundaries, with no valid extents (the copies zero-filled the edges). In the descriptor's terms:
//
//   - A is K-major (imm-trans-a 0): 8-row core groups 1024 bytes apart (stride byte offset 1024; the
//     leading byte offset is unused by K-major swizzled layouts and set to 1 unit); the k16 step s
//     starts 32·s bytes into the rows — the hardware applies the swizzle to the address bits, so this is
//     right on 1024-byte-aligned tiles (base offset 0);
//   - B is MN-major (imm-trans-b 1, transpose allowed for f16/bf16): N contiguous, 64 columns (one
//     128-byte swizzle atom: the leading byte offset between atoms along N is unused for N = 64), 8-row
//     groups of K 1024 bytes apart (stride byte offset); the k16 step s starts 16·s rows (2048·s bytes)
//     further.
//
// Descriptor bits (PTX ISA "Matrix Descriptor Format"): 0–13 start address, 16–29 leading byte offset,
// 32–45 stride byte offset, each as (bytes & 0x3FFFF) >> 4; 49–51 base offset (0); 62–63 swizzle mode
// (1 = 128-byte).
//
// The sequence per MMA: wgmma.fence (the accumulator registers were written by other instructions:
// the zeroing, or nothing since the last wait, which the fence also covers), K/16 wgmma.mma_async with
// scale-d true (D = A·B + D), wgmma.commit_group, wgmma.wait_group 0 (the registers are read and the
// stage's shared memory is refilled only after it). Shared tiles written by threads through the
// generic proxy (cp.async, st.shared) are read by wgmma through the async proxy: every
// cp.async.wait_group of an entry that issues wgmma is followed by fence.proxy.async.shared::cta, before
// the block barrier that publishes the tile.

const (
	wgmmaRowBytes = 128  // one row of a staged tile: 64 16-bit elements
	wgmmaGroup    = 1024 // 8 rows: the stride byte offset, and the tiles' alignment
)

// wgmmaOK reports whether the sm_90a module issues n as wgmma (the form described above).
func (l *lowerer) wgmmaOK(n *ir.MMA) bool {
	if l.target != "sm_90a" || n.Acc.Scope != ir.ScopeWarpgroup || n.TF32 || (n.In != ir.F16 && n.In != ir.BF16) {
		return false
	}
	if n.ValidM != nil || n.ValidN != nil || n.ValidK != nil || n.Acc.T != ir.F32 {
		return false
	}
	m, okm := l.prep(n.Acc.M).(ir.IConst)
	nn, okn := l.prep(n.Acc.N).(ir.IConst)
	k, okk := l.prep(n.K).(ir.IConst)
	if !okm || !okn || !okk || m.V != 64 || (nn.V != 64 && nn.V != 128 && nn.V != 256) || k.V%16 != 0 || k.V <= 0 || k.V > 64 {
		return false
	}
	if nn.V > 64 {
		return l.swizzledTile(n.A) && l.panelTile(n.B)
	}
	return l.swizzledTile(n.A) && l.swizzledTile(n.B)
}

// panelTile reports whether o is a staged B tile wider than 64 (passes.WGMMALayoutB): 64-column
// blocks of 64 rows, each a swizzled 64×64 tile, on a 1024-byte boundary. Its descriptor's leading
// byte offset is the distance between the blocks, wgmmaAtomBytes.
func (l *lowerer) panelTile(o ir.Operand) bool {
	s, ok := o.Layout.(*ir.Swizzle)
	if !ok || s.B != 3 || s.M != 3 || s.S != 3 || o.T.Space != ir.Shared || o.T.Type.Size() != 2 {
		return false
	}
	p, ok := s.Of.(*ir.Panel)
	if !ok || !p.ByCol {
		return false
	}
	w, ok1 := l.prep(p.Width).(ir.IConst)
	d, ok2 := l.prep(p.Depth).(ir.IConst)
	return ok1 && ok2 && w.V == 64 && d.V == 64 && divisible(l.prep(o.Off), wgmmaGroup/2)
}

// wgmmaAtomBytes is the distance between the 64-column blocks of a wide B tile (64 rows of 128 bytes).
const wgmmaAtomBytes = 64 * wgmmaRowBytes

// swizzledTile reports whether o is a shared tile of 16-bit elements, 64 a row with the 128-byte
// swizzle, at an offset that keeps it on a 1024-byte boundary of its (1024-byte aligned) array.
func (l *lowerer) swizzledTile(o ir.Operand) bool {
	s, ok := o.Layout.(*ir.Swizzle)
	if !ok || s.B != 3 || s.M != 3 || s.S != 3 || o.T.Space != ir.Shared || o.T.Type.Size() != 2 {
		return false
	}
	st, ok := s.Of.(*ir.Strided)
	if !ok {
		return false
	}
	rs, ok1 := l.prep(st.RowStride).(ir.IConst)
	cs, ok2 := l.prep(st.ColStride).(ir.IConst)
	return ok1 && ok2 && rs.V == 64 && cs.V == 1 && divisible(l.prep(o.Off), wgmmaGroup/2)
}

// wgmmaTensors lists the shared tensors that the wgmma MMAs of a launch body read (their arrays are
// aligned to 1024 bytes).
func (l *lowerer) wgmmaTensors(body []ir.Node) map[*ir.Tensor]bool {
	ts := map[*ir.Tensor]bool{}
	ir.WalkNodes(body, func(x ir.Node) bool {
		if m, ok := x.(*ir.MMA); ok && l.wgmmaOK(m) {
			ts[m.A.T], ts[m.B.T] = true, true
		}
		return true
	})
	return ts
}

// wgmma emits one MMA of the form above.
func (l *lowerer) wgmma(n *ir.MMA, acc *accTile) {
	it := ".f16"
	if n.In == ir.BF16 {
		it = ".bf16"
	}
	k := l.prep(n.K).(ir.IConst).V
	// desc builds the descriptor of operand o's tile: start address from the shared address, the
	// constant fields or-ed in.
	desc := func(o ir.Operand, lbo, sbo int) Reg {
		a, _ := l.elemAddr(o.T, o.Off)
		f := l.e.Bin("and", B64, l.addrReg(a), Imm(0x3FFFF))
		f = l.e.Bin("shr", B64, f, Imm(4))
		hi := int64(lbo>>4)<<16 | int64(sbo>>4)<<32 | int64(1)<<62
		return l.e.Bin("or", B64, f, Imm(hi))
	}
	da := desc(n.A, 16, wgmmaGroup)
	lbo := 16
	if acc.n > 64 {
		lbo = wgmmaAtomBytes
	}
	db := desc(n.B, lbo, wgmmaGroup)
	scale := l.e.Reg(Pred)
	l.e.Op("setp.ne", S32, scale, l.e.Mov(S32, Imm(1)), Imm(0)).Comment = "scale-d: D = A·B + D"
	l.e.Op0("wgmma.fence.sync.aligned")
	op := fmt.Sprintf("wgmma.mma_async.sync.aligned.m64n%dk16.f32%s%s", acc.n, it, it)
	for s := 0; s < k/16; s++ {
		a, b := da, db
		if s > 0 {
			a, b = l.e.Reg(S64), l.e.Reg(S64)
			l.e.Op("add", S64, a, da, Imm(int64(32*s/16))).Comment = fmt.Sprintf("A descriptor: start %d bytes further along K", 32*s)
			l.e.Op("add", S64, b, db, Imm(int64(16*s*wgmmaRowBytes/16))).Comment = fmt.Sprintf("B descriptor: start %d rows further along K", 16*s)
		}
		in := l.e.Emit(&Instr{Op: op, Args: []Operand{Vec(acc.regs), a, b, scale, Imm(1), Imm(1), Imm(0), Imm(1)}})
		in.Comment = fmt.Sprintf("k %d..%d: A K-major, B MN-major (transposed)", 16*s, 16*s+15)
	}
	l.e.Op0("wgmma.commit_group.sync.aligned")
	if l.plan[passes.PlanTMA] == 3 {
		// the production version (passes/tma.go): the previous K tile's group retires, this one stays
		// in flight; its stage is released one step later, and the store waits for all (accStore)
		l.e.Op0("wgmma.wait_group.sync.aligned", Imm(1)).Comment = "the previous K tile's wgmmas retired: its stage may be released"
		l.wgInFlight = true
		return
	}
	l.e.Op0("wgmma.wait_group.sync.aligned", Imm(0))
}

// wgmmaDrain retires every wgmma group in flight (before the accumulator registers are read).
func (l *lowerer) wgmmaDrain() {
	if l.wgInFlight {
		l.e.Op0("wgmma.wait_group.sync.aligned", Imm(0)).Comment = "every wgmma retired: the accumulator is final"
		l.wgInFlight = false
	}
}
