package ptx

import (
	"fmt"
	"math"
	"slices"

	"github.com/kgen-dev/kgen/f16"
	"github.com/kgen-dev/kgen/ir"
)

// evalIExpr evaluates a launch dimension (plan substituted) for the given dims.
func evalIExpr(e ir.IExpr, dims map[string]int) (int, error) {
	switch x := e.(type) {
	case ir.IConst:
		return x.V, nil
	case ir.IDim:
		return dims[x.D.Name], nil
	case ir.IBin:
		a, err := evalIExpr(x.X, dims)
		if err != nil {
			return 0, err
		}
		b, err := evalIExpr(x.Y, dims)
		if err != nil {
			return 0, err
		}
		v, msg := ir.IBinOp(x.Op, a, b)
		if msg != "" {
			return 0, fmt.Errorf("%s", msg)
		}
		return v, nil
	}
	return 0, fmt.Errorf("launch dimension %s", e)
}

func encode(t ir.DType, v float64) (uint64, int) {
	switch t {
	case ir.F64:
		return math.Float64bits(v), 8
	case ir.F32:
		return uint64(math.Float32bits(float32(v))), 4
	case ir.F16:
		return uint64(f16.FromFloat64(v)), 2
	case ir.BF16:
		return uint64(f16.BF16FromFloat64(v)), 2
	case ir.I32:
		return uint64(uint32(int32(v))), 4
	}
	panic("type " + t.String())
}

func decode(t ir.DType, v uint64) float64 {
	switch t {
	case ir.F64:
		return math.Float64frombits(v)
	case ir.F32:
		return float64(math.Float32frombits(uint32(v)))
	case ir.F16:
		return float64(f16.F16(uint16(v)).Float32())
	case ir.BF16:
		return float64(f16.BF16(uint16(v)).Float32())
	case ir.I32:
		return float64(int32(uint32(v)))
	}
	panic("type " + t.String())
}

// emulate runs every launch of k (lowered from f) on args in the emulator and writes the outputs back
// into args.
func emulate(k *Kernel, f *ir.Func, args ir.Args) error {
	kern := f.Kernel
	tensors := map[string]*ir.Tensor{}
	for _, t := range append(append([]*ir.Tensor{}, kern.Params...), kern.Temps...) {
		tensors[t.Name] = t
	}
	params := map[string]uint64{}
	tmaps := map[string][]byte{}
	var global []*emuBuf
	byName := map[string]*emuBuf{}
	for _, p := range k.Params {
		switch p.Kind {
		case PTensor, PTemp:
			t := tensors[p.Name]
			n := 1
			for _, d := range p.Shape {
				n *= args.Dims[d]
			}
			size := t.Type.Size()
			b := &emuBuf{name: p.Name, data: make([]byte, n*size)}
			if p.Kind == PTensor {
				for i, v := range args.Tensors[p.Name] {
					bits, _ := encode(t.Type, v)
					storeBytes(b.data[i*size:], size, bits)
				}
			} else {
				for i := range b.data {
					b.data[i] = 0xFF
				}
			}
			global = append(global, b)
			byName[p.Name] = b
			params["p_"+p.Name] = uint64(len(global)) << globalShift
		case PScalar:
			bits, _ := encode(p.Elem, args.Scalars[p.Name])
			params["p_"+p.Name] = bits
		case PDim:
			params["p_"+p.Name] = uint64(args.Dims[p.Name])
		case PTensorMap:
			tm := emuTensorMap(p, tensors[p.Name], uint64(slices.Index(global, byName[p.Name])+1)<<globalShift, args.Dims)
			if emuMapHook != nil {
				emuMapHook(&tm)
			}
			tmaps[string(tmapSym(tensors[p.Name]))] = encodeMockTensorMap(tm)
		}
	}
	// the emulator runs the PTX text: the entries printed as a module and parsed back (emuparse.go)
	entries, err := viaText(k)
	if err != nil {
		return err
	}
	for i, e := range entries {
		info := k.Launches[i]
		var grid, block [3]int
		empty := false
		for j := range 3 {
			g, err := evalIExpr(info.Grid[j], args.Dims)
			if err != nil {
				return err
			}
			grid[j] = g
			block[j] = info.Block[j].(ir.IConst).V
			empty = empty || g <= 0
		}
		if empty {
			continue
		}
		m := &emulator{e: e, params: params, global: global, tmaps: tmaps}
		if err := m.run(grid, block); err != nil {
			return fmt.Errorf("%s grid %v block %v: %v", e.Name, grid, block, err)
		}
	}
	for _, p := range k.Params {
		if p.Kind != PTensor {
			continue
		}
		t := tensors[p.Name]
		if t.Kind != ir.Out && t.Kind != ir.InOut {
			continue
		}
		size := t.Type.Size()
		out := args.Tensors[p.Name]
		for j := range out {
			out[j] = decode(t.Type, load(byName[p.Name].data[j*size:], size))
		}
	}
	return nil
}

// Emulate runs every launch of k (lowered from f) on args in the emulator and writes the outputs back
// into args; an error names the entry, grid and block and what went wrong (an out-of-bounds access, a
// shared-memory race, a deadlock, an unknown instruction). kgen tune checks GPU candidates with it.
func Emulate(k *Kernel, f *ir.Func, args ir.Args) error { return emulate(k, f, args) }
