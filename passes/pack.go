package passes

import "github.com/kgen-dev/kgen/ir"

// Pack stages the operands of every Micro still in View form in BLIS panels: the KC×NC block of B once
// per (jc, pc) iteration, in NR-wide row-major micro-panels, and the MC×KC block of A once per ic
// iteration, in MR-tall column-major micro-panels, both zero-padded to whole panels. The panel buffers are
// allocated once per call (B) and once per ic iteration (A; per worker when ic runs in parallel), sized
// by the plan and the problem, whichever is smaller. Packing evaluates the View expression, so transposes,
// strides and 16-bit conversions happen here, once per element, not in the microkernel.
// Assumes the loop structure Tensorize builds (jc ⊃ pc ⊃ ic ⊃ jr ⊃ ir ⊃ Micro).
func Pack(f *ir.Func, c *Context) (bool, error) {
	n := funcNamer(f)
	type site struct {
		u     *ir.Micro
		loops []*ir.Loop
	}
	var sites []site
	var walk func(body []ir.Node, stack []*ir.Loop)
	walk = func(body []ir.Node, stack []*ir.Loop) {
		for _, node := range body {
			switch x := node.(type) {
			case *ir.Nest:
				walk(x.Body, stack)
			case *ir.Alloc:
				walk(x.Body, stack)
			case *ir.Loop:
				walk(x.Body, append(stack[:len(stack):len(stack)], x))
			case *ir.Micro:
				if x.AView != nil && len(stack) >= 5 {
					sites = append(sites, site{x, stack[len(stack)-5:]})
				}
			}
		}
	}
	walk(f.Body, nil)
	for _, s := range sites {
		packMicro(n, s.u, s.loops)
	}
	return len(sites) > 0, nil
}

// packMicro rewrites one Micro and the loops around it: loops = jc, pc, ic, jr, ir.
func packMicro(n namer, u *ir.Micro, loops []*ir.Loop) {
	jc, pc, ic, jr, irl := loops[0], loops[1], loops[2], loops[3], loops[4]
	slot := u.Slot
	kc := u.KC
	// B block: columns jc .. jc+nc, k pc .. pc+kc
	nc := jr.Hi
	mc := irl.Hi
	elem := u.Elem
	roundUp := func(x, p ir.IExpr) ir.IExpr { return ir.IMul(ir.IDiv(ir.IAdd(x, ir.ISub(p, ir.IConst{V: 1})), p), p) }
	dimK := pc.Hi // max(K, 1)
	kcMax := ir.IMin(sym(slot, "KC"), dimK)
	bp := &ir.Tensor{Name: n.name("packB"), Type: elem, Kind: ir.Scratch, Space: ir.Packed,
		Size: ir.IMul(ir.IMin(sym(slot, "NC"), roundUp(jc.Hi, sym(slot, "NR"))), kcMax)}
	ap := &ir.Tensor{Name: n.name("packA"), Type: elem, Kind: ir.Scratch, Space: ir.Packed,
		Size: ir.IMul(ir.IMin(sym(slot, "MC"), roundUp(ic.Hi, sym(slot, "MR"))), kcMax)}

	bv, av := u.BView, u.AView
	packB := &ir.Pack{Dst: bp, DstOff: ir.IConst{V: 0}, N: nc, Depth: kc, Panel: sym(slot, "NR"), P: bv.P, D: bv.D,
		Value: ir.SubstVars(bv.Value, map[*ir.Var]ir.IExpr{bv.P: ir.IAdd(ir.IVar{V: jc.Var}, ir.IVar{V: bv.P}), bv.D: ir.IAdd(ir.IVar{V: pc.Var}, ir.IVar{V: bv.D})})}
	packA := &ir.Pack{Dst: ap, DstOff: ir.IConst{V: 0}, N: mc, Depth: kc, Panel: sym(slot, "MR"), P: av.P, D: av.D,
		Value: ir.SubstVars(av.Value, map[*ir.Var]ir.IExpr{av.P: ir.IAdd(ir.IVar{V: ic.Var}, ir.IVar{V: av.P}), av.D: ir.IAdd(ir.IVar{V: pc.Var}, ir.IVar{V: av.D})})}
	u.AView, u.BView = nil, nil
	u.A, u.AOff = ap, ir.IMul(ir.IVar{V: irl.Var}, kc)
	u.B, u.BOff = bp, ir.IMul(ir.IVar{V: jr.Var}, kc)

	// pc body: pack B, then the ic loop. ic body: alloc A { pack A; jr loop }.
	pc.Body = append([]ir.Node{packB}, pc.Body...)
	ic.Body = []ir.Node{&ir.Alloc{T: ap, Body: append([]ir.Node{packA}, ic.Body...)}}
	// B's buffer lives across the whole jc loop: wrap the jc loop's body.
	jc.Body = []ir.Node{&ir.Alloc{T: bp, Body: jc.Body}}
}
