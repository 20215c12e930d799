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

// wgmmaStaged reports whether a warpgroup MMA is staged for wgmma: a 64×N f32 accumulator over f16 or
// bf16 inputs (N = 64, or 128 or 256 in the production version below), one instruction K (16) per step.
func wgmmaStaged(acc *ir.Accum, mma *ir.MMA) bool {
	m, okm := acc.M.(ir.IConst)
	n, okn := acc.N.(ir.IConst)
	k, okk := mma.K.(ir.IConst)
	return acc.Scope == ir.ScopeWarpgroup && acc.T == ir.F32 && (mma.In == ir.F16 || mma.In == ir.BF16) &&
		okm && okn && okk && m.V == 64 && (n.V == 64 || n.V == 128 || n.V == 256) && k.V == 16 && !mma.TF32
}

// WGMMALayout is the layout of a staged wgmma tile: 64 16-bit elements (128 bytes) a row, 128-byte
// swizzle.
func WGMMALayout() *ir.Swizzle { return ir.Swizzle128B(ir.IConst{V: 64}, 2) }

// WGMMALayoutB is the layout of a staged 64×n tile of B (n a multiple of 64): n/64 column blocks of 64
// (one 128-byte swizzle atom wide), block j a whole 64×64 WGMMALayout tile at element 4096·j — the
// MN-major canonical layout whose leading byte offset (between atoms along N) is 8192 bytes. For
// n = 64 it is WGMMALayout.
func WGMMALayoutB(n int) *ir.Swizzle {
	if n == 64 {
		return WGMMALayout()
	}
	return ir.NewSwizzle(&ir.Panel{Width: ir.IConst{V: 64}, Depth: ir.IConst{V: WGMMATileK}, ByCol: true}, 3, 3, 3)
}

// The production sm_90a version (plan values, set together by the ptx backend's prodVariant):
//
//   - PlanWG = G consumer warpgroups per block (gpumap stacks their 64-row tiles along M: a block
//     covers 64·G rows);
//   - PlanWGN = the wgmma N of each (MMAForm's tile width: 128 or 256 instead of 64);
//   - PlanTMA = 3: the warp-specialised TMA staging of tma.go with the producer as the last
//     warpgroup, PlanStages stages, 64×64 boxes, and the consumers releasing a stage one K tile late
//     (the backend keeps one wgmma group in flight: wgmma.wait_group 1).
const (
	PlanWG     = "gpu.WG"
	PlanWGN    = "gpu.wgN"
	PlanStages = "gpu.tmaS"
)

// swizzledCopies issues the copies of operand o's tile for K tile t (first k k0) into stage t mod
// stages, in 16-byte chunks placed by o.swizzled, thread tl of nt taking every nt-th chunk. The chunks
// are taken in the order of the unswizzled stage (8 consecutive threads fill 128 contiguous bytes):
// along the rows of a row-major tile, or, for a transposed source (o.trans, SM80TLayout), down the
// columns of each 16-row panel — chunk u is rows 16·(u / 2d) + 8·(u % 2) .. +7 of column (u % 2d) / 2,
// d the depth.
func swizzledCopies(nm namer, o *stagedOperand, t, k0, tl, nt ir.IExpr, stages int) ir.Node {
	chunk := ir.IConst{V: 8} // 16 bytes of 16-bit elements
	u := &ir.Var{Name: nm.name("u" + o.name)}
	uv := ir.IVar{V: u}
	rs, cs := strides(o.src)
	// chunk u holds tile elements (r, c) .. (r, c+7), or (r, c) .. (r+7, c) for a transposed source:
	// one copy row of 8 elements along the source's contiguous direction
	var r, c, total, validRows, validCols ir.IExpr
	src := o.src.Layout
	if o.trans {
		per := ir.IMul(ir.IConst{V: 2}, o.cols) // chunks per panel
		r = ir.IAdd(ir.IMul(ir.IDiv(uv, per), ir.IConst{V: 16}), ir.IMul(ir.IMod(uv, ir.IConst{V: 2}), chunk))
		c = ir.IDiv(ir.IMod(uv, per), ir.IConst{V: 2})
		total = ir.IDiv(ir.IMul(o.rows, per), ir.IConst{V: 16})
		src = &ir.Strided{RowStride: cs, ColStride: rs}
		validRows, validCols = ir.ISub(o.validCols(k0), c), ir.ISub(o.validRows(k0), r)
	} else {
		per := ir.IConst{V: o.cols.(ir.IConst).V / chunk.V} // chunks per row
		r, c, total = ir.IDiv(uv, per), ir.IMul(ir.IMod(uv, per), chunk), ir.IMul(o.rows, per)
		validRows, validCols = ir.ISub(o.validRows(k0), r), ir.ISub(o.validCols(k0), c)
	}
	cp := &ir.Copy{
		Dst:       ir.Operand{T: o.buf, Off: ir.IAdd(o.stage(ir.IMod(t, ir.IConst{V: stages})), o.swizzled.Offset(r, c)), Layout: ir.RowMajor(chunk)},
		Src:       ir.Operand{T: o.src.T, Off: ir.IAdd(o.off(k0), ir.IAdd(ir.IMul(r, rs), ir.IMul(c, cs))), Layout: src},
		Rows:      ir.IConst{V: 1},
		Cols:      chunk,
		ValidRows: validRows,
		ValidCols: validCols,
		Async:     true, Group: t,
	}
	return &ir.Loop{Var: u, Lo: tl, Hi: total, Step: nt, Body: []ir.Node{cp}}
}
