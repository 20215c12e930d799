package target_test

import (
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen/amd64"
	"github.com/kgen-dev/kgen/codegen/arm64"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/target"
)

// Every shape is consistent: positive sizes, and its fragments belong to its scope and cover the
// operand tiles (A M×K, B K×N, C M×N).
func TestMMAShapesConsistent(t *testing.T) {
	for _, key := range target.MMATargets() {
		for _, s := range target.MMAShapes(key) {
			if s.M <= 0 || s.N <= 0 || s.K <= 0 || (s.NStep > 0 && s.N%s.NStep != 0) {
				t.Errorf("%v: bad sizes", s)
			}
			if !ir.Widens(s.In, s.Acc) {
				t.Errorf("%v: inputs do not widen to the accumulator", s)
			}
			ns := []int{s.N}
			if s.NStep > 0 {
				ns = []int{s.NStep, s.N / 2, s.N}
			}
			for _, n := range ns {
				c := s.AccLayout(n)
				if c.Scope != s.Scope || c.Rows != s.M || c.Cols != n {
					t.Errorf("%v: accumulator %v for n=%d", s, c, n)
				}
				if s.Frag == nil {
					continue
				}
				for _, op := range []struct {
					which      byte
					rows, cols int
				}{{'A', s.M, s.K}, {'B', s.K, n}} {
					f := s.Frag(op.which, n)
					if f != nil && (f.Scope != s.Scope || f.Rows != op.rows || f.Cols != op.cols) {
						t.Errorf("%v: %c fragment %v", s, op.which, f)
					}
				}
			}
			if s.Scope == ir.ScopeThread && s.Frag != nil {
				t.Errorf("%v: a thread-scope shape with fragments", s)
			}
		}
	}
}

// The CPU rows are the register tiles the hand-scheduled microkernel generators build.
func TestMMAShapesMatchMicrokernels(t *testing.T) {
	for _, c := range []struct {
		key      string
		elem     string
		isa      string
		in, acc  ir.DType
		fromNEON bool
	}{
		{"amd64:avx2", amd64.F32, amd64.AVX2, ir.F32, ir.F32, false},
		{"amd64:avx2", amd64.F64, amd64.AVX2, ir.F64, ir.F64, false},
		{"amd64:avx512", amd64.F32, amd64.AVX512, ir.F32, ir.F32, false},
		{"amd64:avx512", amd64.F64, amd64.AVX512, ir.F64, ir.F64, false},
		{"amd64:avx512", amd64.BF16, amd64.AVX512, ir.BF16, ir.F32, false},
		{"arm64:neon", "f32", "", ir.F32, ir.F32, true},
		{"arm64:neon", "f64", "", ir.F64, ir.F64, true},
	} {
		mr, nr := amd64.TileFor(c.elem, c.isa)
		if c.fromNEON {
			mr, nr = arm64.TileFor(c.elem)
		}
		s, err := target.LookupMMA(c.key, c.in, c.acc, false)
		if err != nil || s.M != mr || s.N != nr || s.Scope != ir.ScopeThread {
			t.Errorf("%s %s: %v %v, the generator's tile is %dx%d", c.key, c.elem, s, err, mr, nr)
		}
	}
}

func TestLookupMMA(t *testing.T) {
	for _, c := range []struct {
		key     string
		in, acc ir.DType
		tf32    bool
		want    string // M N K scope
	}{
		{"amd64", ir.F32, ir.F32, false, "6x16x1 f32->f32 thread"},
		{"amd64:avx512", ir.F32, ir.F32, false, "14x32x1 f32->f32 thread"},
		{"arm64", ir.F32, ir.F32, false, "8x12x1 f32->f32 thread"},
		{"ptx:sm_80", ir.F16, ir.F32, false, "m16n8k16.row.col.f32.f16.f16.f32 16x8x16 f16->f32 warp"},
		{"ptx", ir.BF16, ir.F32, false, "16x8x16 bf16->f32 warp"},
		{"ptx:sm_80", ir.F32, ir.F32, false, "fma register tile 8x8x1 f32->f32 thread"},
		{"ptx:sm_80", ir.F32, ir.F32, true, "16x8x8 f32->f32 tf32 warp"},
		{"ptx:sm_90a", ir.BF16, ir.F32, false, "64x{8..256 step 8}x16 bf16->f32 warpgroup"},
		{"ptx:sm_90a", ir.F64, ir.F64, false, "8x8x1 f64->f64 thread"},
		{"msl", ir.F16, ir.F32, false, "8x8x8 f16->f32 simdgroup"},
	} {
		s, err := target.LookupMMA(c.key, c.in, c.acc, c.tf32)
		if err != nil || !strings.Contains(s.String(), c.want) {
			t.Errorf("%s %s->%s tf32=%v: %v %v, want %q", c.key, c.in, c.acc, c.tf32, s, err, c.want)
		}
	}
	for _, c := range []struct {
		key     string
		in, acc ir.DType
		want    string
	}{
		{"msl", ir.F64, ir.F64, "msl has no MMA with f64 inputs and a f64 accumulator"},
		{"vax", ir.F32, ir.F32, `no MMA shapes for target "vax"`},
		{"ptx:sm_80", ir.F16, ir.F16, "has no MMA"},
	} {
		if _, err := target.LookupMMA(c.key, c.in, c.acc, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s->%s: %v, want %q", c.key, c.in, c.acc, err, c.want)
		}
	}
}
