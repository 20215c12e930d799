package passes

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
)

// MicroCall is one call of the CPU microkernel contract (docs/MICROKERNEL.md) on packed panels, with
// its data: A is the KC·MR panel (element (i, p) at p·MR + i), B the KC·NR panel ((p, j) at p·NR + j),
// C the (M−1)·LDC + N elements the call may touch, Bias N values (nil: none; EP must then be 0 or 2).
type MicroCall struct {
	Elem                  ir.DType // F32 or F64
	MR, NR, KC, M, N, LDC int
	A, B, C, Bias         []float64
	Alpha, Beta           float64
	EP                    int
}

// MicroReference returns C after the call as the IR defines it: the call is one ir.Micro, written as the
// MMA nodes it is an instance of (MicroToMMA) and expanded into scalar code (MMALower), then interpreted
// in mode (ir.Exact: the ideal result a tolerance is measured against). A backend's hand-scheduled
// microkernel is an implementation of that MMA; its tests compare with this reference. The call's data
// is not modified.
func MicroReference(call MicroCall, mode ir.Mode) ([]float64, error) {
	if call.Elem != ir.F32 && call.Elem != ir.F64 {
		return nil, fmt.Errorf("micro reference: element type %s, want f32 or f64", call.Elem)
	}
	if call.M < 1 || call.N < 1 || call.M > call.MR || call.N > call.NR || call.KC < 0 || call.LDC < call.N {
		return nil, fmt.Errorf("micro reference: m=%d n=%d kc=%d ldc=%d outside the %dx%d contract", call.M, call.N, call.KC, call.LDC, call.MR, call.NR)
	}
	if call.Bias == nil && call.EP&1 != 0 {
		return nil, fmt.Errorf("micro reference: epilogue %d adds a bias, but there is none", call.EP)
	}
	dims := map[string]int{"la": len(call.A), "lb": len(call.B), "lc": len(call.C), "lbias": len(call.Bias)}
	dim := map[string]*ir.Dim{}
	k := &ir.Kernel{Name: "micro_reference"}
	for _, n := range []string{"la", "lb", "lc", "lbias"} {
		dim[n] = &ir.Dim{Name: n}
		k.Dims = append(k.Dims, dim[n])
	}
	tensor := func(name string, t ir.DType, kind ir.TensorKind, d string) *ir.Tensor {
		p := &ir.Tensor{Name: name, Type: t, Kind: kind}
		if d != "" {
			p.Shape = []*ir.Dim{dim[d]}
		}
		k.Params = append(k.Params, p)
		return p
	}
	a := tensor("A", call.Elem, ir.In, "la")
	b := tensor("B", call.Elem, ir.In, "lb")
	c := tensor("C", call.Elem, ir.InOut, "lc")
	bias := tensor("bias", call.Elem, ir.In, "lbias")
	alpha := tensor("alpha", call.Elem, ir.Scalar, "")
	beta := tensor("beta", call.Elem, ir.Scalar, "")
	ep := tensor("ep", ir.I32, ir.Scalar, "")
	i := func(v int) ir.IExpr { return ir.IConst{V: v} }
	u := &ir.Micro{Slot: "reference", Elem: call.Elem, MR: i(call.MR), NR: i(call.NR), KC: i(call.KC),
		A: ir.Operand{T: a, Off: i(0), Layout: &ir.Panel{Width: i(call.MR), Depth: i(call.KC)}},
		B: ir.Operand{T: b, Off: i(0), Layout: &ir.Panel{Width: i(call.NR), Depth: i(call.KC), ByCol: true}}, C: c, COff: i(0), LDC: i(call.LDC), M: i(call.M), N: i(call.N),
		Alpha: &ir.Load{T: alpha}, Beta: &ir.Load{T: beta}, EP: &ir.Load{T: ep}}
	if call.Bias != nil {
		u.Bias, u.BiasOff = bias, i(0)
	}
	f := &ir.Func{Kernel: k, Body: []ir.Node{u}}
	ctx := &Context{}
	if changed, err := MicroToMMA(f, ctx); err != nil || !changed {
		return nil, fmt.Errorf("micro reference: the call has no MMA form (%v)", err)
	}
	if _, err := MMALower(f, ctx); err != nil {
		return nil, err
	}
	if err := ir.VerifyFunc(f); err != nil {
		return nil, fmt.Errorf("micro reference: %v", err)
	}
	args := ir.Args{
		Tensors: map[string][]float64{"A": call.A, "B": call.B, "C": append([]float64(nil), call.C...), "bias": call.Bias},
		Scalars: map[string]float64{"alpha": call.Alpha, "beta": call.Beta, "ep": float64(call.EP)},
		Dims:    dims,
	}
	if args.Tensors["bias"] == nil {
		args.Tensors["bias"] = []float64{}
	}
	if err := ir.RunFunc(f, mode, args, nil); err != nil {
		return nil, err
	}
	return args.Tensors["C"], nil
}
