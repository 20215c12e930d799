package llvm

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/target"
)

// expDriver computes y = exp(x) for the inputs twice: all in a row (groups whose lanes all take the
// short path of expF32 run it), and each input alone in a group of 16 whose other lanes are NaN (every
// group takes the whole schedule). It prints the input's bits and both results' bits, one line each.
const expDriver = `#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include "ee.h"
static uint32_t xb[] = {%s};
static float xs[sizeof xb / 4];
int main(void) {
    int64_t n = sizeof xs / sizeof xs[0];
    memcpy(xs, xb, sizeof xb);
    static float y[1 << 20], g[16], gy[16];
    if (ee_ex(n, xs, n, y, n) != 0) return 1;
    for (int64_t i = 0; i < n; i++) {
        for (int k = 0; k < 16; k++) g[k] = NAN;
        g[i %% 16] = xs[i];
        if (ee_ex(16, g, 16, gy, 16) != 0) return 1;
        uint32_t a, b, c;
        memcpy(&a, &xs[i], 4); memcpy(&b, &y[i], 4); memcpy(&c, &gy[i %% 16], 4);
        printf("%%u %%u %%u\n", a, b, c);
    }
    return 0;
}
`

// TestExpPaths checks that the two paths of the f32 exp (exp.go) give the same bits: on a grid over
// [−110, 95], around the edges of the short path (n = −125 and 127: x near −86.64 and 88.03), the
// clamps and the overflow and underflow points, and the special values, for the default machine (8
// lanes, baseline x86-64) and the wide one (16 lanes, -mcpu=native on x86-64). Both also agree with
// float32(math.Exp) within 1 ulp on [−87, 88] (the bound of the SIMD backends' TestVLoopExpULP).
func TestExpPaths(t *testing.T) {
	clang := tool(t, "clang-14", "clang")
	opt, llc := tool(t, "opt", "opt-14"), tool(t, "llc", "llc-14")
	ks, err := check.File("ee.kdsl", "kernel ex(x: f32[N], y: out f32[N]) {\n    y[i] = exp(x[i])\n}\n")
	if err != nil {
		t.Fatal(err)
	}
	var xs []string
	add := func(x float32) { xs = append(xs, fmt.Sprintf("%#x", math.Float32bits(x))) }
	for x := float32(-110); x < 95; x += 0.0137 {
		add(x)
	}
	for _, c := range []float32{-86.64, -86.99, -87.33654, 87.7, 88.03, 88.38, 88.72283, 88.72284, 89, -103.97208, -103.97209, -104} {
		for k, x := -40, math.Nextafter32(c, 0); k < 40; k++ {
			add(math.Float32frombits(math.Float32bits(x) + uint32(k)))
		}
	}
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1e30, -1e30} {
		add(float32(x))
	}
	for len(xs)%16 != 0 {
		add(0.5)
	}
	src := fmt.Sprintf(expDriver, strings.Join(xs, ","))
	narrow, err := target.Lookup("llvm")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		m     target.Machine
		flags []string
	}{{"default", narrow, nil}, {"wide", wideMachine(t), []string{"-mcpu=native"}}} {
		t.Run(c.name, func(t *testing.T) {
			if runtime.GOARCH != "amd64" && len(c.flags) > 0 {
				t.Skip("x86-64 CPU flags on a non-x86-64 host")
			}
			dir := writePackage(t, compileKernels(t, "ee", c.m, ks), src)
			run(t, dir, opt, "-passes=verify", "ee.ll", "-o", "/dev/null")
			run(t, dir, opt, append([]string{"-O3", "ee.ll", "-o", "k.bc"}, c.flags...)...)
			run(t, dir, llc, append([]string{"-O3", "-relocation-model=pic", "-filetype=obj", "k.bc", "-o", "k.o"}, c.flags...)...)
			run(t, dir, clang, "-O1", "-w", "driver.c", "k.o", "-lm", "-o", "driver")
			out := strings.Fields(string(run(t, dir, dir+"/driver")))
			if len(out) != 3*len(xs) {
				t.Fatalf("driver printed %d numbers, want %d", len(out), 3*len(xs))
			}
			bad := 0
			for i := 0; i < len(out); i += 3 {
				var v [3]uint32
				for k := range v {
					u, err := strconv.ParseUint(out[i+k], 10, 32)
					if err != nil {
						t.Fatal(err)
					}
					v[k] = uint32(u)
				}
				x, short, whole := math.Float32frombits(v[0]), math.Float32frombits(v[1]), math.Float32frombits(v[2])
				if v[1] != v[2] && !(short != short && whole != whole) {
					bad++
					if bad < 10 {
						t.Errorf("exp(%v): %#x in a row, %#x alone among NaNs", x, v[1], v[2])
					}
				}
				if x >= -87 && x <= 88 {
					want := float32(math.Exp(float64(x)))
					if d := int64(v[1]) - int64(math.Float32bits(want)); d < -1 || d > 1 {
						t.Errorf("exp(%v) = %v, want %v within 1 ulp", x, short, want)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d inputs differ", bad, len(xs))
			}
		})
	}
}
