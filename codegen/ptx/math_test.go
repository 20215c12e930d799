package ptx

import (
	"math"
	"math/rand/v2"
	"testing"
)

// expEntry is one thread computing exp of parameter p_x into global buffer p_y.
func expEntry(t Type) *Entry { return fnEntry(t, (*lowerer).exp) }

// fnEntry is one thread computing fn of parameter p_x into global buffer p_y.
func fnEntry(t Type, fn func(*lowerer, Reg, Type) Reg) *Entry {
	e := NewEntry("fn")
	l := &lowerer{e: e}
	x := e.Ld(Param, t, Addr{Base: e.AddParam("p_x", t)})
	y := fn(l, x, t)
	out := e.Ld(Param, U64, Addr{Base: e.AddParam("p_y", U64)})
	e.St(Global, t, Addr{Base: out}, y)
	return e
}

// ulps is the distance from got to want in units of want's last place (subnormal spacing below the
// normal range).
func ulps(got, want float64, t Type) float64 {
	if math.IsInf(want, 0) || math.IsInf(got, 0) || want == 0 {
		if got == want {
			return 0
		}
		if want == 0 {
			if t == F64 {
				return math.Abs(got) / math.SmallestNonzeroFloat64
			}
			return math.Abs(got) / math.SmallestNonzeroFloat32
		}
		return math.Inf(1)
	}
	_, e := math.Frexp(want)
	mant, minExp := 24, -125
	if t == F64 {
		mant, minExp = 53, -1021
	}
	return math.Abs(got-want) / math.Ldexp(1, max(e, minExp)-mant)
}

// TestExpAccuracy runs the emitted exp in the emulator over the whole f32 and f64 ranges (random and
// special arguments) and checks the error bound math.go states: within 2 ulp of exp(x) (f32: against
// math.Exp, whose own error is far below an f32 ulp; f64: 2 ulp plus math.Exp's own < 1 ulp), NaN in
// NaN out, overflow to +Inf, underflow to 0.
func TestExpAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		t      Type
		lo, hi float64
		bound  float64
	}{{F32, -104, 89, 2}, {F64, -746, 710, 3}} {
		e := expEntry(c.t)
		buf := &emuBuf{name: "y", data: make([]byte, 8)}
		args := []float64{0, -0, 1, -1, 1e-30, 88.72, 88.73, -87.3, -103, -104.5, 709.78, 709.79, -745, -746, 1e300, -1e300, math.Inf(1), math.Inf(-1), math.NaN()}
		for i := 0; i < 6000; i++ {
			args = append(args, c.lo+(c.hi-c.lo)*rng.Float64(), (rng.Float64()*2-1)*2)
		}
		worst := 0.0
		for _, x := range args {
			if c.t == F32 {
				x = float64(float32(x))
			}
			m := &emulator{e: e, params: map[string]uint64{"p_x": fbits(x, c.t), "p_y": 1 << globalShift}, global: []*emuBuf{buf}}
			if err := m.run([3]int{1, 1, 1}, [3]int{1, 1, 1}); err != nil {
				t.Fatal(err)
			}
			got := fval(load(buf.data, c.t.Bits()/8), c.t)
			want := math.Exp(x)
			if c.t == F64 && x > 700 && x < 710 {
				// Go's amd64 math.Exp overflows early (near 709.4); two correctly scaled factors
				// instead (one extra rounding).
				want = math.Exp(x-700) * math.Exp(700)
			}
			if c.t == F32 {
				want = float64(float32(want))
			}
			if math.IsNaN(x) {
				if !math.IsNaN(got) {
					t.Errorf("%v exp(NaN) = %v", c.t, got)
				}
				continue
			}
			u := ulps(got, want, c.t)
			worst = max(worst, u)
			if u > c.bound {
				t.Errorf("%v exp(%v) = %v, want %v (%.2f ulp)", c.t, x, got, want, u)
			}
		}
		t.Logf("%v: worst error %.2f ulp over %d arguments", c.t, worst, len(args))
	}
}

// TestTanhAccuracy checks the emitted tanh in the emulator against math.Tanh: within 1 ulp (f32) and
// 8 ulp (f64) over small, medium and saturating arguments, odd symmetry, NaN.
func TestTanhAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		t     Type
		bound float64
	}{{F32, 1}, {F64, 8}} {
		e := fnEntry(c.t, (*lowerer).tanh)
		buf := &emuBuf{name: "y", data: make([]byte, 8)}
		args := []float64{0, math.Copysign(0, -1), 1e-30, -1e-30, 0x1p-12, 1.0 / 32, 0.5, 20, -20, 400, math.Inf(1), math.Inf(-1), math.NaN()}
		for i := 0; i < 5000; i++ {
			args = append(args, (rng.Float64()*2-1)*math.Pow(2, float64(rng.IntN(20)-16)), (rng.Float64()*2-1)*10)
		}
		worst := 0.0
		for _, x := range args {
			if c.t == F32 {
				x = float64(float32(x))
			}
			m := &emulator{e: e, params: map[string]uint64{"p_x": fbits(x, c.t), "p_y": 1 << globalShift}, global: []*emuBuf{buf}}
			if err := m.run([3]int{1, 1, 1}, [3]int{1, 1, 1}); err != nil {
				t.Fatal(err)
			}
			got := fval(load(buf.data, c.t.Bits()/8), c.t)
			want := math.Tanh(x)
			if c.t == F32 {
				want = float64(float32(want))
			}
			if math.IsNaN(x) {
				if !math.IsNaN(got) {
					t.Errorf("%v tanh(NaN) = %v", c.t, got)
				}
				continue
			}
			if math.Signbit(got) != math.Signbit(want) {
				t.Errorf("%v tanh(%v) = %v, sign of %v", c.t, x, got, want)
			}
			u := ulps(got, want, c.t)
			worst = max(worst, u)
			if u > c.bound {
				t.Errorf("%v tanh(%v) = %v, want %v (%.2f ulp)", c.t, x, got, want, u)
			}
		}
		t.Logf("%v: worst error %.2f ulp over %d arguments", c.t, worst, len(args))
	}
}

// TestTanhCoeffs checks the computed Taylor coefficients against the first ones of the series.
func TestTanhCoeffs(t *testing.T) {
	want := []float64{1, -1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835, -1382.0 / 155925, 21844.0 / 6081075, -929569.0 / 638512875}
	for i, c := range tanhCoeffs(len(want)) {
		if math.Abs(c-want[i]) > 1e-16*math.Abs(want[i]) {
			t.Errorf("c[%d] = %v, want %v", i, c, want[i])
		}
	}
}

// TestLogAccuracy checks the emitted log in the emulator against math.Log: within 1 ulp (f32) and
// 4 ulp (f64) over the whole range, subnormals included, and the special arguments.
func TestLogAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for _, c := range []struct {
		t     Type
		bound float64
	}{{F32, 1}, {F64, 4}} {
		e := fnEntry(c.t, (*lowerer).log)
		buf := &emuBuf{name: "y", data: make([]byte, 8)}
		args := []float64{1, 2, 0.5, math.E, 1 + 0x1p-52, 1 - 0x1p-53, 0x1p-1074, 0x1p-149, 0x1p-130, math.MaxFloat64, math.MaxFloat32, 0, math.Copysign(0, -1), -1, math.Inf(1), math.Inf(-1), math.NaN()}
		for i := 0; i < 4000; i++ {
			args = append(args, math.Ldexp(0.5+rng.Float64(), rng.IntN(2000)-1000), 1+(rng.Float64()-0.5)*0x1p-10)
		}
		worst := 0.0
		for _, x := range args {
			if c.t == F32 {
				x = float64(float32(x))
			}
			m := &emulator{e: e, params: map[string]uint64{"p_x": fbits(x, c.t), "p_y": 1 << globalShift}, global: []*emuBuf{buf}}
			if err := m.run([3]int{1, 1, 1}, [3]int{1, 1, 1}); err != nil {
				t.Fatal(err)
			}
			got := fval(load(buf.data, c.t.Bits()/8), c.t)
			want := math.Log(x)
			if x > 0 && x < 0x1p-1022 {
				// math.Log on amd64 is wrong for subnormals (log(2^-1074) = -709.09): scale first.
				want = math.Log(x*0x1p54) - 54*math.Ln2
			}
			if c.t == F32 {
				want = float64(float32(want))
			}
			if math.IsNaN(want) {
				if !math.IsNaN(got) {
					t.Errorf("%v log(%v) = %v, want NaN", c.t, x, got)
				}
				continue
			}
			u := ulps(got, want, c.t)
			worst = max(worst, u)
			if u > c.bound {
				t.Errorf("%v log(%v) = %v, want %v (%.2f ulp)", c.t, x, got, want, u)
			}
		}
		t.Logf("%v: worst error %.2f ulp over %d arguments", c.t, worst, len(args))
	}
}
