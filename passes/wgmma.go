package passes

import "github.com/kgen-dev/kgen/ir"

// The sm_90a staging of a warpgroup MMA for wgmma.mma_async with both operands in shared memory
// (PTX ISA "Asynchronous Warpgroup Level Matrix Shared Memory Layout"): wgmma reads A and B through
// matrix descriptors, which describe only the canonical layouts, so the staged tiles must be one of
// them. Each K tile is WGMMATileK = 64 deep, so that a row of A (64 16-bit elements of K) and a row of
// B (64 elements of N) are 128 bytes, and both tiles are stored row-major with the 128-byte swizzle
// (ir.Swizzle128B: 16-byte chunk c of row r at chunk c ^ (r % 8)):
//
//   - A, 64×64 (M×K), is the K-major canonical layout of the 128-byte mode: 8-row groups 1024 bytes
//     apart (the descriptor's stride byte offset), one k16 step 32 bytes further along the row;
//   - B, 64×64 (K×N), is the MN-major (transposed) canonical layout: N contiguous, 8-row groups of K
//     1024 bytes apart, one k16 step 16 rows (2048 bytes) further.
//
// The block copies each tile in 16-byte chunks (thread tl takes chunks tl, tl+threads, ...), each chunk
// to its swizzled place, zero-filled past the matrices' edges; so the staged MMA reads whole tiles and
// carries no valid extents (rows and columns past the edges hold zeros: their products are zero, or land
// in accumulator elements the store never writes). The MMA is one 64×64×64 step of the K loop, which the
// backend issues as four wgmma k16 instructions.

// WGMMATileK is the K depth of one staged wgmma tile.
const WGMMATileK = 64

// wgmmaStaged reports whether a warpgroup MMA is staged for wgmma: a 64×64 f32 accumulator over f16 or
// bf16 inputs, one instruction K (16) per step.
func wgmmaStaged(acc *ir.Accum, mma *ir.MMA) bool {
	m, okm := acc.M.(ir.IConst)
	n, okn := acc.N.(ir.IConst)
	k, okk := mma.K.(ir.IConst)
	return acc.Scope == ir.ScopeWarpgroup && acc.T == ir.F32 && (mma.In == ir.F16 || mma.In == ir.BF16) &&
		okm && okn && okk && m.V == 64 && n.V == 64 && k.V == 16 && !mma.TF32
}

// WGMMALayout is the layout of a staged wgmma tile: 64 16-bit elements (128 bytes) a row, 128-byte
// swizzle.
func WGMMALayout() *ir.Swizzle { return ir.Swizzle128B(ir.IConst{V: 64}, 2) }

// swizzledCopies issues the copies of operand o's tile for K tile t (first k k0) into stage t mod
// stages, in 16-byte chunks placed by WGMMALayout, thread tl of nt taking every nt-th chunk.
func swizzledCopies(nm namer, o *stagedOperand, t, k0, tl, nt ir.IExpr, stages int) ir.Node {
	cols := o.cols.(ir.IConst).V
	chunk := 8 // 16 bytes of 16-bit elements
	u := &ir.Var{Name: nm.name("u" + o.name)}
	uv := ir.IVar{V: u}
	r := ir.IDiv(uv, ir.IConst{V: cols / chunk})
	c := ir.IMul(ir.IMod(uv, ir.IConst{V: cols / chunk}), ir.IConst{V: chunk})
	rs, cs := strides(o.src)
	cp := &ir.Copy{
		Dst:       ir.Operand{T: o.buf, Off: ir.IAdd(o.stage(ir.IMod(t, ir.IConst{V: stages})), WGMMALayout().Offset(r, c)), Layout: ir.RowMajor(ir.IConst{V: chunk})},
		Src:       ir.Operand{T: o.src.T, Off: ir.IAdd(o.off(k0), ir.IAdd(ir.IMul(r, rs), ir.IMul(c, cs))), Layout: o.src.Layout},
		Rows:      ir.IConst{V: 1},
		Cols:      ir.IConst{V: chunk},
		ValidRows: ir.ISub(o.validRows(k0), r),
		ValidCols: ir.ISub(o.validCols(k0), c),
		Async:     true, Group: t,
	}
	total := ir.IMul(o.rows, ir.IConst{V: cols / chunk})
	return &ir.Loop{Var: u, Lo: tl, Hi: total, Step: nt, Body: []ir.Node{cp}}
}
