package codegen

import (
	"bytes"
	"fmt"

	"github.com/kgen-dev/kgen/ir"
)

// TransposeSlot describes one tensorized transpose (ir.Transpose) of a generated package: the Go variable
// `<Var>` (SlotVar of the IR slot name) of type transposeSlot32 / transposeSlot64, emitted by the golang
// backend, with fields
//
//	Name   string
//	RB, CB int  // block sizes: the plan symbols <slot>.RB, <slot>.CB
//	T      func(rows, cols int, src []T, lds int, dst []T, ldd int)
//
// T sets dst[c*ldd+r] = src[r*lds+c] for 0 <= r < rows, 0 <= c < cols. The loop nest calls it with
// rows, cols >= 1 and src, dst sliced to exactly the elements the tile spans ((rows-1)*lds+cols and
// (cols-1)*ldd+rows), so every element T touches is inside its slices. The portable default is a
// 4×4 register-blocked Go routine (transposeGo32/64); an assembly variant installs its routine through a
// slice adapter that re-checks those bounds and otherwise runs the portable routine (TransposeKernel).
type TransposeSlot struct {
	Name string   // the IR slot name (kernel name, plus a number if several)
	Var  string   // Go variable holding it
	Elem ir.DType // F32 or F64
}

// TransposeSlots lists the tensorized transposes of p, in kernel order.
func TransposeSlots(p *Package) []TransposeSlot {
	var out []TransposeSlot
	for _, k := range p.Kernels {
		seen := map[string]bool{}
		ir.WalkNodes(k.F.Body, func(n ir.Node) bool {
			if t, ok := n.(*ir.Transpose); ok && !seen[t.Slot] {
				seen[t.Slot] = true
				out = append(out, TransposeSlot{Name: t.Slot, Var: SlotVar(t.Slot), Elem: t.Elem})
			}
			return true
		})
	}
	return out
}

// TransposeKernel points one transpose slot at an assembly routine in a variant: Kernel is the Go name of
// a function
//
//	func Kernel(rows, cols int, src *T, lds int, dst *T, ldd int)
//
// (declared in the backend's stub file) with T's semantics, which may assume rows, cols >= 1,
// lds, ldd >= 0 and that every element of the tile is inside the memory it is given.
type TransposeKernel struct {
	Slot   TransposeSlot
	Kernel string
}

// writeTransposeAdapter emits the slice adapter of a transpose routine: it checks that the tile lies
// inside the slices (without overflow: transposeFits, emitted by codegen/golang) and otherwise runs the
// portable routine, which reports bad bounds as a Go bounds check would.
func writeTransposeAdapter(b *bytes.Buffer, k TransposeKernel) {
	t := goFloat(k.Slot.Elem)
	fmt.Fprintf(b, "// %sSlice adapts %s to the transpose slot's slice signature (codegen.TransposeSlot). The\n", k.Kernel, k.Kernel)
	fmt.Fprintf(b, "// routine reads src[r*lds+c] and writes dst[c*ldd+r] for r < rows, c < cols: unless all of them are inside\n")
	fmt.Fprintf(b, "// the slices, the portable routine runs instead and the assembly touches nothing.\n")
	fmt.Fprintf(b, "func %sSlice(rows, cols int, src []%s, lds int, dst []%s, ldd int) {\n", k.Kernel, t, t)
	fmt.Fprintf(b, "\tif !%s(rows, cols, len(src), lds, len(dst), ldd) {\n", TransposeFits)
	fmt.Fprintf(b, "\t\t%s(rows, cols, src, lds, dst, ldd)\n\t\treturn\n\t}\n", TransposeGo(k.Slot.Elem))
	fmt.Fprintf(b, "\t%s(rows, cols, &src[0], lds, &dst[0], ldd)\n}\n\n", k.Kernel)
}
