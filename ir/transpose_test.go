package ir

import (
	"math"
	"strings"
	"testing"
)

// transposeFunc is a loop-level function with one Transpose tile over flat buffers: S (f, In, S elements)
// and D (f, Out, D elements), with the given offsets, strides and tile size.
func transposeFunc(elem DType, ns, nd, so, lds, do, ldd, rows, cols int) (*Func, *Transpose) {
	dS, dD := &Dim{Name: "S"}, &Dim{Name: "D"}
	src := &Tensor{Name: "src", Type: elem, Shape: []*Dim{dS}, Kind: In}
	dst := &Tensor{Name: "dst", Type: elem, Shape: []*Dim{dD}, Kind: Out}
	t := &Transpose{Slot: "t", Elem: elem, Src: src, SrcOff: IConst{so}, LDS: IConst{lds},
		Dst: dst, DstOff: IConst{do}, LDD: IConst{ldd}, Rows: IConst{rows}, Cols: IConst{cols}}
	k := &Kernel{Name: "t", Params: []*Tensor{src, dst}, Dims: []*Dim{dS, dD}}
	return &Func{Kernel: k, Body: []Node{t}, Plan: map[string]int{}}, t
}

// TestTransposeInterp runs one Transpose node in both interpreter modes against a naive loop, on tiles
// with offsets and padded strides; elements outside the tile must keep their values.
func TestTransposeInterp(t *testing.T) {
	for _, elem := range []DType{F32, F64} {
		for _, c := range []struct{ so, lds, do, ldd, rows, cols int }{
			{0, 1, 0, 1, 1, 1}, {0, 5, 0, 3, 3, 5}, {2, 7, 1, 6, 4, 5}, {3, 9, 4, 11, 8, 8}, {0, 4, 0, 4, 0, 4}, {0, 4, 0, 4, 4, -1},
		} {
			ns := c.so + max(c.rows-1, 0)*c.lds + max(c.cols, 0) + 2
			nd := c.do + max(c.cols-1, 0)*c.ldd + max(c.rows, 0) + 3
			f, _ := transposeFunc(elem, ns, nd, c.so, c.lds, c.do, c.ldd, c.rows, c.cols)
			if err := VerifyFunc(f); err != nil {
				t.Fatal(err)
			}
			src, dst := make([]float64, ns), make([]float64, nd)
			for i := range src {
				src[i] = elem.Round(math.Sqrt(float64(i) + 0.5))
			}
			for i := range dst {
				dst[i] = -1
			}
			want := append([]float64(nil), dst...)
			for r := 0; r < c.rows; r++ {
				for col := 0; col < c.cols; col++ {
					want[c.do+col*c.ldd+r] = src[c.so+r*c.lds+col]
				}
			}
			for _, mode := range []Mode{Storage, Exact} {
				args := Args{Tensors: map[string][]float64{"src": src, "dst": append([]float64(nil), dst...)}, Dims: map[string]int{"S": ns, "D": nd}}
				if err := RunFunc(f, mode, args, nil); err != nil {
					t.Fatalf("%s %+v mode %d: %v", elem, c, mode, err)
				}
				for i, w := range want {
					if args.Tensors["dst"][i] != w {
						t.Fatalf("%s %+v mode %d: dst[%d] = %v, want %v", elem, c, mode, i, args.Tensors["dst"][i], w)
					}
				}
			}
		}
	}
}

// TestTransposeInterpBounds: a tile reaching outside either buffer is a run-time error, not a panic.
func TestTransposeInterpBounds(t *testing.T) {
	for _, c := range []struct{ ns, nd int }{{15, 16}, {16, 15}} {
		f, _ := transposeFunc(F32, c.ns, c.nd, 0, 4, 0, 4, 4, 4)
		args := Args{Tensors: map[string][]float64{"src": make([]float64, c.ns), "dst": make([]float64, c.nd)}, Dims: map[string]int{"S": c.ns, "D": c.nd}}
		err := RunFunc(f, Storage, args, nil)
		if _, ok := err.(*RuntimeError); !ok || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("%+v: err = %v, want an out-of-range RuntimeError", c, err)
		}
	}
}

// TestTransposeVerifyAndPrint: the verifier rejects mismatched element types, one tensor used as both
// operands, stores into inputs and unbound variables; the printer shows every field.
func TestTransposeVerifyAndPrint(t *testing.T) {
	f, tr := transposeFunc(F32, 16, 16, 0, 4, 0, 4, 4, 4)
	if got := f.String(); !strings.Contains(got, "transpose t f32 rows=4 cols=4 src+0 lds=4 -> dst+0 ldd=4") {
		t.Errorf("printed:\n%s", got)
	}
	for name, mut := range map[string]func(){
		"elem":     func() { tr.Elem = F16 },
		"mismatch": func() { tr.Elem = F64 },
		"alias":    func() { tr.Dst = tr.Src },
		"input":    func() { tr.Dst.Kind = In },
		"unbound":  func() { tr.Rows = IVar{&Var{Name: "x"}} },
		"plan":     func() { tr.Cols = ISym{Name: "t.CB"} },
	} {
		f, tr = transposeFunc(F32, 16, 16, 0, 4, 0, 4, 4, 4)
		mut()
		if err := VerifyFunc(f); err == nil {
			t.Errorf("%s: verifier accepted %+v", name, tr)
		}
	}
}
