//go:build amd64 && !purego

package kernels

import (
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen/amd64/emu"
	"golang.org/x/sys/cpu"
)

// TestEmuAVX512Twins runs the AVX-512 vector loops, transposes and rows kernels of kgen_amd64.s in the
// x86 interpreter and compares them with their AVX2 twins (the same lane bodies on ymm), which run
// natively: on a CPU without AVX-512 this is how those routines execute at all (the generated tests
// cannot select the avx512 variant there). It runs where the CPU lacks AVX-512, and under KGEN_EMU=1.
//
// Vector loops: the AVX-512 routine gets n elements, its AVX2 twin n/8 groups of 8 f32 (n/4 of 4 f64;
// n a multiple of the group, so the AVX-512 one still runs a masked half vector when the count is odd). Everything they write must agree
// bit for bit, on wild operands (NaN payloads, infinities, denormals). Their results (sums, maxima) are
// compared on tame operands in [0.5, 1.5), within 4·n ulps: the two sum in different orders.
func TestEmuAVX512Twins(t *testing.T) {
	if cpu.X86.HasAVX512F && !forceEmu() {
		t.Skip("the CPU runs the AVX-512 routines natively (TestEmuBitExact and the generated tests check them); KGEN_EMU=1 runs this anyway")
	}
	if !emuHostHas("avx2") {
		t.Skip("CPU lacks AVX2: no native twin to compare with")
	}
	src := readAsm(t)
	prog, err := emu.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]emuRoutine{}
	for _, r := range emuRoutines {
		byName[r.name] = r
	}
	twins := 0
	for _, r := range emuRoutines {
		if r.isa != "avx512" {
			continue
		}
		twin, ok := byName[strings.TrimSuffix(r.name, "AVX512")+"AVX2"]
		if !ok {
			continue
		}
		twins++
		t.Run(r.name+"/emulated", func(t *testing.T) {
			m := prog.Machine()
			ev, err := emu.FuncValue(m, r.name, reflect.TypeOf(r.fn))
			if err != nil {
				t.Fatal(err)
			}
			m.OnError(func(err error) { t.Fatalf("emulated: %v", err) })
			t.Logf("%s runs in the x86 interpreter (codegen/amd64/emu), against %s natively", r.name, twin.name)
			set := func(bufs ...any) {
				rs := make([]emu.Region, len(bufs))
				for i, b := range bufs {
					rs[i] = regionOf(i, b)
				}
				m.SetRegions(rs...)
			}
			if !strings.HasPrefix(r.name, "vloop_") { // transposes, rows kernels: same operands, same bits
				for trial := 0; trial < 100; trial++ {
					want := twin.run(rand.New(rand.NewPCG(uint64(trial), 3)), twin.fn, nil)
					got := r.run(rand.New(rand.NewPCG(uint64(trial), 3)), ev.Interface(), set)
					compareBufs(t, trial, got, want, 0)
				}
				return
			}
			ft := reflect.TypeOf(r.fn)
			nres, lanes := ft.NumOut(), 8 // an AVX2 group: 8 f32 lanes, or 4 f64
			for i := 0; i < ft.NumIn(); i++ {
				if ft.In(i) == reflect.TypeFor[*float64]() {
					lanes = 4
				}
			}
			for trial := 0; trial < 200; trial++ {
				groups := 1 + trial%9
				tame := trial%2 == 1
				want := vloopCall(rand.New(rand.NewPCG(uint64(trial), 4)), twin.fn, nil, groups, lanes, tame)
				got := vloopCall(rand.New(rand.NewPCG(uint64(trial), 4)), ev.Interface(), set, lanes*groups, 1, tame)
				compareBufs(t, trial, got[:len(got)-nres], want[:len(want)-nres], 0)
				if tame {
					compareBufs(t, trial, got[len(got)-nres:], want[len(want)-nres:], 4*lanes*groups)
				}
			}
		})
	}
	if twins < 20 {
		t.Errorf("only %d AVX-512 routines have an AVX2 twin in emuRoutines", twins)
	}
}

// compareBufs requires got and want to agree: bit for bit when ulps is 0, else within ulps units of
// the last place of the larger.
func compareBufs(t *testing.T, trial int, got, want []any, ulps int) {
	t.Helper()
	for i := range want {
		if ulps == 0 {
			if j := sameBuf(got[i], want[i]); j >= 0 {
				t.Fatalf("trial %d: output %d differs at element %d: emulated %v, native twin %v",
					trial, i, j, reflect.ValueOf(got[i]).Index(j), reflect.ValueOf(want[i]).Index(j))
			}
			continue
		}
		g, w := reflect.ValueOf(got[i]), reflect.ValueOf(want[i])
		for j := 0; j < w.Len(); j++ {
			x, y := g.Index(j).Float(), w.Index(j).Float()
			ulp := math.Abs(y) * 0x1p-23
			if _, is64 := want[i].([]float64); is64 {
				ulp = math.Abs(y) * 0x1p-52
			}
			if !(math.Abs(x-y) <= float64(ulps)*ulp) {
				t.Fatalf("trial %d: result %d: emulated %v, native twin %v (more than %d ulps apart)", trial, i, x, y, ulps)
			}
		}
	}
}

// forceEmu: KGEN_EMU=1 runs the interpreter's tests on CPUs that have AVX-512 too.
func forceEmu() bool { return os.Getenv("KGEN_EMU") == "1" }

// readAsm returns the committed kgen_amd64.s.
func readAsm(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("kgen_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}
