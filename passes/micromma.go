package passes

import (
	"github.com/kgen-dev/kgen/ir"
)

// MicroToMMA writes each Micro (the CPU microkernel call, docs/MICROKERNEL.md) as the MMA nodes it is an
// instance of (ir.Micro.AsMMASimplified: the register tile, one MMA over the KC block on packed panels,
// strided tiles or views, the contract's alpha/beta/bias/ReLU epilogue as an AccStore expression, index
// lists simplified). A Micro whose operands have different types stays. In the llvm pipeline (whose
// backend compiles loops only) and in MicroReference: it states the microkernel contract in MMA terms,
// so that a backend's microkernel is one implementation of the MMA and the MMA expansion (MMALower) the
// reference it is tested against.
func MicroToMMA(f *ir.Func, c *Context) (bool, error) {
	n := funcNamer(f)
	changed := false
	f.Body = ir.RewriteNodes(f.Body, func(node ir.Node) []ir.Node {
		u, ok := node.(*ir.Micro)
		if !ok {
			return []ir.Node{node}
		}
		if loops := u.Unbatched(n.name); loops != nil {
			// a batch: the loops over its products' row tiles around one tile's MMA form
			tile := loops.Body[0].(*ir.Loop)
			nodes := tile.Body[0].(*ir.Micro).AsMMASimplified(n.name)
			if nodes == nil {
				return []ir.Node{node}
			}
			tile.Body = nodes
			changed = true
			return []ir.Node{loops}
		}
		nodes := u.AsMMASimplified(n.name)
		if nodes == nil {
			return []ir.Node{node}
		}
		changed = true
		return nodes
	})
	return changed, nil
}
