package ptx

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/passes"
	"github.com/kgen-dev/kgen/target"
)

// sm_90a bulk tensor copies (TMA) and mbarriers (PTX ISA 8.0: "cp.async.bulk.tensor", "mbarrier"; the
// IR's meaning is ir/mbarrier.go, the staging passes/tma.go).
//
//   - An mbarrier array is a .shared array of .b64 barriers. MbarInit is mbarrier.init.shared::cta.b64
//     followed by fence.proxy.async.shared::cta (the initialised barrier must be visible to the TMA
//     unit, which completes transactions on it through the async proxy); the block barrier after the
//     inits (which the IR has) publishes it to the other threads.
//   - MbarArrive with Tx is mbarrier.arrive.expect_tx.shared::cta.b64 (the state it returns is unused);
//     without, mbarrier.arrive.shared::cta.b64.
//   - MbarWait of phase P is a loop on mbarrier.try_wait.parity.shared::cta.b64 with parity P & 1:
//     try_wait returns true once the phase with that parity has completed (the barrier's current phase
//     has the other parity), and may also return false before a time-out, hence the loop.
//   - A Copy on an mbarrier is one cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::
//     complete_tx::bytes of the whole tile: the tensor map (a kernel parameter .param .align 64 .b8
//     p_tmap_X[128] per tensor X such copies read, which the launcher encodes with
//     cuTensorMapEncodeTiled: dims {cols, rows} of the 2-D tensor, the row stride in bytes, box 64×64,
//     128-byte swizzle, out-of-bounds elements filled with zeros) and the box's coordinates {col, row}
//     of the source offset. The map's bounds are the tensor's, so the box's elements past them are
//     zero-filled by the TMA unit (CUDA driver API, cuTensorMapEncodeTiled: oobFill selects zeros
//     (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) or a NaN for the out-of-bound elements of a box); that is
//     the Copy's zero fill outside its valid extents, which the staging pass derives from the same
//     bounds. The destination is the stage's 1024-byte-aligned tile, where the 128-byte swizzle puts
//     16-byte chunk c of row r at c ^ (r % 8): the layout the wgmma descriptors read (wgmma.go).
//
// ptxas 12.4 accepts a kernel parameter's name as the tensor-map operand's address (mov.u64 of the
// parameter symbol) and assembles the copy to UTMALDG.2D; that the driver passes the 128-byte map so
// that the hardware reads it there is what only a GPU run shows.

// PTensorMap is a TMA descriptor parameter (ParamInfo.Name is the tensor it maps).
const PTensorMap ParamKind = PDim + 1

// TMABox is the box side of the staged tiles' tensor maps (elements, both dims).
const TMABox = 64

// tmaParams lists the tensor-map parameters of f: one per global tensor a bulk copy reads, in
// parameter order.
func tmaParams(f *ir.Func) []ParamInfo {
	read := map[*ir.Tensor]bool{}
	ir.WalkNodes(f.Body, func(n ir.Node) bool {
		if c, ok := n.(*ir.Copy); ok && c.Bar != nil {
			read[c.Src.T] = true
		}
		return true
	})
	var ps []ParamInfo
	for _, t := range append(append([]*ir.Tensor{}, f.Kernel.Params...), f.Kernel.Temps...) {
		if read[t] {
			var shape []string
			for _, d := range t.Shape {
				shape = append(shape, d.Name)
			}
			ps = append(ps, ParamInfo{Name: t.Name, Kind: PTensorMap, Elem: t.Type, Shape: shape})
		}
	}
	return ps
}

// tmapSym is the parameter symbol of tensor t's map.
func tmapSym(t *ir.Tensor) Sym { return Sym("p_tmap_" + t.Name) }

// mbarAddr is the shared address of barrier r.
func (l *lowerer) mbarAddr(r ir.MbarRef) Addr {
	if _, ok := l.shared[r.T]; !ok {
		l.fail("mbarrier array %s is not a shared array of this block", r.T.Name)
	}
	if r.T.Type.Size() != 8 {
		l.fail("mbarrier array %s has %d-byte elements", r.T.Name, r.T.Type.Size())
	}
	a, _ := l.elemAddr(r.T, r.Idx)
	return a
}

// mbarNode lowers an mbarrier node; false for other nodes.
func (l *lowerer) mbarNode(n ir.Node) bool {
	switch n := n.(type) {
	case *ir.MbarInit:
		l.needThread("mbarrier.init")
		l.e.Comment(n.String())
		l.e.Op0("mbarrier.init.shared::cta.b64", l.mbarAddr(n.Bar), Imm(n.Count))
		l.e.Op0("fence.proxy.async.shared::cta")
	case *ir.MbarArrive:
		l.needThread("mbarrier.arrive")
		l.e.Comment(n.String())
		st := l.e.Reg(B64)
		if n.Tx == nil {
			l.e.Op0("mbarrier.arrive.shared::cta.b64", st, l.mbarAddr(n.Bar))
			break
		}
		tx := l.ival(n.Tx)
		if _, ok := tx.(Imm); !ok {
			tx = l.e.Cvt(U32, S64, "", tx)
		}
		l.e.Op0("mbarrier.arrive.expect_tx.shared::cta.b64", st, l.mbarAddr(n.Bar), tx)
	case *ir.MbarWait:
		l.needThread("mbarrier.wait")
		l.e.Comment(n.String())
		a := l.mbarAddr(n.Bar)
		par := l.e.Cvt(U32, S64, "", l.e.Bin("and", B64, l.ival(n.Phase), Imm(1)))
		spin := l.e.NewLabel()
		l.e.Place(spin)
		done := l.e.Reg(Pred)
		l.e.Op0("mbarrier.try_wait.parity.shared::cta.b64", done, a, par).Comment = "phase " + n.Phase.String() + " complete?"
		l.e.Bra(spin, &done, true)
	default:
		return false
	}
	return true
}

// bulkCopy lowers a Copy on an mbarrier (the form passes/tma.go makes) to one TMA tile load.
func (l *lowerer) bulkCopy(n *ir.Copy) {
	l.needThread("a bulk copy")
	l.e.Comment(n.String())
	src, dst := n.Src.T, n.Dst.T
	if l.target != "sm_90a" {
		l.fail("bulk tensor copy into %s: TMA needs sm_90a", dst.Name)
	}
	if _, ok := l.shared[dst]; !ok {
		l.fail("bulk copy into %s, which is not a shared buffer of this block", dst.Name)
	}
	if !l.wgTiles[dst] || !l.swizzledTile(n.Dst) {
		l.fail("bulk copy into %s: only the 128-byte-swizzled wgmma tiles are loaded by TMA", dst.Name)
	}
	rows, okr := l.prep(n.Rows).(ir.IConst)
	cols, okc := l.prep(n.Cols).(ir.IConst)
	st, oks := n.Src.Layout.(*ir.Strided)
	if !okr || !okc || rows.V != TMABox || cols.V != TMABox || !oks || len(src.Shape) != 2 || src.Type != dst.Type {
		l.fail("bulk copy %s: not a %d×%d tile of a 2-D tensor", n, TMABox, TMABox)
	}
	cs, ok1 := l.prep(st.ColStride).(ir.IConst)
	rs, ok2 := st.RowStride.(ir.IDim)
	if !ok1 || cs.V != 1 || !ok2 || rs.D != src.Shape[1] {
		l.fail("bulk copy %s: the source's rows are not the tensor's contiguous rows", n)
	}
	d, _ := l.elemAddr(dst, n.Dst.Off)
	off := l.ival(n.Src.Off)
	ld := l.ival(ir.IDim{D: src.Shape[1]})
	col := l.e.Cvt(S32, S64, "", l.e.Bin("rem", S64, off, ld))
	row := l.e.Cvt(S32, S64, "", l.e.Bin("div", S64, off, ld))
	m := l.e.Reg(U64)
	l.e.Op("cvta.param", U64, m, l.e.Mov(U64, tmapSym(src))) // the map's generic address
	op := fmt.Sprintf("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes")
	l.e.Emit(&Instr{Op: op, Args: []Operand{d, TensorRef{Map: m, Coords: Vec{col, row}}, l.mbarAddr(*n.Bar)}}).Comment =
		fmt.Sprintf("%d×%d box of %s at {col, row}, zero-filled past its bounds", TMABox, TMABox, src.Name)
}

// TMAMap is the tiled tensor map a launcher encodes (cuTensorMapEncodeTiled) for a PTensorMap
// parameter: the parameter's 2-D row-major tensor of Rows×Cols elements as dims {Cols, Rows}
// (innermost first), its row stride in bytes, a TMABox×TMABox box, the 128-byte swizzle
// (CU_TENSOR_MAP_SWIZZLE_128B = 3), no interleave, unit element strides, zero fill of out-of-bound
// elements (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0).
type TMAMap struct {
	DataType  int32 // CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6, _BFLOAT16 = 9
	Dims      [2]uint64
	RowStride uint64
	Box       [2]uint32
	Swizzle   int32
}

// TMAMapOf is the map of parameter p for the kernel's dims. The driver requires 16-byte aligned row
// strides: a tensor whose rows are not (a 16-bit tensor with a number of columns that is not a
// multiple of 8) cannot be loaded by TMA, and TMAMapOf says so.
func TMAMapOf(p ParamInfo, dims map[string]int64) (TMAMap, error) {
	if p.Kind != PTensorMap || len(p.Shape) != 2 {
		return TMAMap{}, fmt.Errorf("ptx: %s is not a 2-D tensor-map parameter", p.Name)
	}
	dt := map[ir.DType]int32{ir.F16: 6, ir.BF16: 9}[p.Elem]
	if dt == 0 {
		return TMAMap{}, fmt.Errorf("ptx: tensor map of %s: element type %s", p.Name, p.Elem)
	}
	rows, cols := dims[p.Shape[0]], dims[p.Shape[1]]
	if rows <= 0 || cols <= 0 {
		return TMAMap{}, fmt.Errorf("ptx: tensor map of %s: empty %d×%d tensor", p.Name, rows, cols)
	}
	stride := uint64(cols) * uint64(p.Elem.Size())
	if stride%16 != 0 {
		return TMAMap{}, fmt.Errorf("ptx: tensor map of %s: rows of %d bytes (%s = %d) are not a multiple of 16, which TMA requires", p.Name, stride, p.Shape[1], cols)
	}
	return TMAMap{DataType: dt, Dims: [2]uint64{uint64(cols), uint64(rows)}, RowStride: stride, Box: [2]uint32{TMABox, TMABox}, Swizzle: 3}, nil
}

// ProdPlan is the plan of the production sm_90a version (passes/wgmma.go's plan values): two
// consumer warpgroups of 64×256 wgmma tiles (a 128×256 block tile), a producer warpgroup, four
// stages of 48 KiB in dynamic shared memory, one wgmma group in flight. ptxas 12.4: 160 registers
// (≤ 168 = 65536 / 384, so no setmaxnreg is needed), 0 spills; 128×128 tiles (PlanWGN 128) take 101.
var ProdPlan = map[string]int{passes.PlanTMA: 3, passes.PlanWG: 2, passes.PlanWGN: 256, passes.PlanStages: 4}

// prodVariant compiles k for ptx:sm_90a with plan (ProdPlan or a variation of it) and lowers it, its
// entries named with the suffix "_prod"; nil when no tile of k is loaded by TMA.
func prodVariant(k *ir.Kernel, plan map[string]int) (*Kernel, error) {
	return stagedVariant(k, plan, "_prod")
}

// tmaVariant compiles k for ptx:sm_90a with its wgmma tiles staged by TMA and warp-specialised
// (passes.PlanTMA = 2: a producer and a consumer warpgroup) and lowers it, its entries named with the
// suffix "_tma"; nil when no tile of k is loaded by TMA.
func tmaVariant(k *ir.Kernel) (*Kernel, error) {
	return stagedVariant(k, map[string]int{passes.PlanTMA: 2}, "_tma")
}

// stagedVariant compiles k for ptx:sm_90a with plan and lowers it, its entries named with suffix; nil
// when no tile of k is loaded by TMA.
func stagedVariant(k *ir.Kernel, plan map[string]int, suffix string) (*Kernel, error) {
	m, err := target.Lookup("ptx:sm_90a")
	if err != nil {
		return nil, err
	}
	p := map[string]int{}
	for n, v := range plan {
		p[n] = v
	}
	f, err := passes.Compile(k, m, passes.Options{Plan: p})
	if err != nil {
		return nil, err
	}
	bulk := false
	ir.WalkNodes(f.Body, func(n ir.Node) bool {
		if c, ok := n.(*ir.Copy); ok && c.Bar != nil {
			bulk = true
		}
		return !bulk
	})
	if !bulk {
		return nil, nil
	}
	tk, err := Lower(f, "sm_90a")
	if err != nil {
		return nil, err
	}
	for i, e := range tk.Entries {
		e.Name += suffix
		tk.Launches[i].Entry = e.Name
	}
	return tk, nil
}
