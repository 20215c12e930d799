package codegen

import "github.com/kgen-dev/kgen/ir"

// bf16 pair panels.
//
// A GEMM whose two operands are bf16 tensors accumulates in f32, and its panels hold f32 values: the
// pack widens each element once (exactly: a bf16 is the top half of an f32). A microkernel built on a
// bf16 dot-product instruction (x86 VDPBF16PS, Arm BFDOT) wants the panels in another format instead:
// the two elements of a pair of k steps side by side in one 32-bit word. For such GEMMs the portable
// loop nest packs through two package-level routines, packDBF16 and packPBBF16 (the bf16 twins of
// packD32/packPB32, same arguments, a bf16 source). By default they widen to f32 panels; a variant
// whose microkernel of every such slot takes pair panels installs the pair routines instead
// (Variant.Packs with Elem BF16), so that the packing and the microkernel of a variant always agree.
// The panel buffers, their sizes and offsets are those of the f32 panels (a micro-panel of depth kc
// starts kc·MR or kc·NR words after the previous one, whatever its format), so the loop nest is the
// same for every variant: a pair panel of depth kc uses the first ⌈kc/2⌉·MR (or ·NR) words of its room.
//
// Pair layout (word w of a panel, low half first, as the instruction reads it):
//
//	A (MR rows):    word p2*MR + i = A(i, 2·p2) | A(i, 2·p2+1)<<16
//	B (NR columns): word p2*NR + j = B(2·p2, j) | B(2·p2+1, j)<<16
//
// for p2 < ⌈kc/2⌉; the high half of the last word of an odd kc, and rows/columns past the edge, are 0.

// PairPackable reports whether a Pack can be packed by packDBF16/packPBBF16: its value is a plain load of
// a bf16 tensor (possibly widened to f32) that is contiguous along the panel or along the depth.
func PairPackable(p *ir.Pack) bool {
	if p.Dst.Type != ir.F32 {
		return false
	}
	v := p.Value
	if c, ok := v.(*ir.Cast); ok {
		if c.T != ir.F32 {
			return false
		}
		v = c.X
	}
	l, ok := v.(*ir.Load)
	if !ok || l.T.Type != ir.BF16 || l.T.Kind == ir.Scratch || len(l.Idx) == 0 {
		return false
	}
	return ir.Stride(l.Idx, p.P) == 1 || ir.Stride(l.Idx, p.D) == 1
}

// PairPanels finds the GEMM slots of f whose panels may be packed as bf16 pairs and the panel buffers
// they read: every Micro of the slot accumulates in f32 and reads packed panels, each filled only by
// PairPackable packs. The packs of those buffers call packDBF16/packPBBF16.
func PairPanels(f *ir.Func) (panels map[*ir.Tensor]bool, slots map[string]bool) {
	packs := map[*ir.Tensor][]*ir.Pack{}
	var micros []*ir.Micro
	ir.WalkNodes(f.Body, func(n ir.Node) bool {
		switch x := n.(type) {
		case *ir.Pack:
			packs[x.Dst] = append(packs[x.Dst], x)
		case *ir.Micro:
			micros = append(micros, x)
		}
		return true
	})
	ok := map[string]bool{}
	for _, u := range micros {
		good := u.Elem == ir.F32 && u.Kind() == ir.MicroPacked
		for _, t := range []*ir.Tensor{u.A.T, u.B.T} {
			if !good {
				break
			}
			good = len(packs[t]) > 0
			for _, p := range packs[t] {
				good = good && PairPackable(p)
			}
		}
		if prev, seen := ok[u.Slot]; seen {
			good = good && prev
		}
		ok[u.Slot] = good
	}
	panels, slots = map[*ir.Tensor]bool{}, map[string]bool{}
	for _, u := range micros {
		if ok[u.Slot] {
			slots[u.Slot] = true
			panels[u.A.T], panels[u.B.T] = true, true
		}
	}
	return panels, slots
}

// HasPairSlots reports whether any GEMM slot of p packs bf16 pairs (see PairPanels).
func HasPairSlots(p *Package) bool {
	for _, s := range Slots(p) {
		if s.BF16Pairs {
			return true
		}
	}
	return false
}
