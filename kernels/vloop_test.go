//go:build amd64 && !purego

package kernels

import (
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// asmFunc returns the body of TEXT ·name(SB) in kgen_amd64.s.
func asmFunc(t *testing.T, name string) string {
	t.Helper()
	src, err := os.ReadFile("kgen_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	i := strings.Index(s, "TEXT ·"+name+"(SB)")
	if i < 0 {
		t.Fatalf("kgen_amd64.s has no function %s", name)
	}
	s = s[i:]
	if j := strings.Index(s[1:], "\nTEXT "); j >= 0 {
		s = s[:j+1]
	}
	return s
}

// TestVLoopAsm checks that the vector loops of saxpy, sdot, sgemv, softmax and layernorm are generated as
// AVX2 on Y registers (an asmcheck in the spirit of the Go compiler's test/codegen).
func TestVLoopAsm(t *testing.T) {
	for name, want := range map[string][]string{
		"vloop_saxpy_0AVX2":     {`VFMADD231PS\s+\S*\(\w+\)\(AX\*1\), Y\d+, Y\d+`, `VMOVUPS\s+Y\d+, \S*\(\w+\)\(AX\*1\)`},
		"vloop_sdot_0AVX2":      {`VFMADD231PS\s+\S*\(\w+\)\(AX\*1\), Y\d+, Y\d+`, `VEXTRACTF128`},
		"vloop_sgemv_0AVX2":     {`VFMADD231PS\s+\S*\(\w+\)\(AX\*1\), Y\d+, Y\d+`},
		"vloop_softmax_0AVX2":   {`VMAXPS\s+Y\d+, Y\d+, Y\d+`, `VCMPPS\s+\$0x03, Y\d+, Y\d+, Y\d+`},
		"vloop_softmax_2AVX2":   {`VADDPS\s+\S*\(\w+\)\(AX\*1\), Y\d+, Y\d+`},
		"vloop_softmax_3AVX2":   {`VDIVPS\s+Y\d+, Y\d+, Y\d+`, `VBROADCASTSS`},
		"vloop_layernorm_2AVX2": {`VDIVPS\s+Y\d+, Y\d+, Y\d+`, `VFMADD231PS`},
	} {
		body := asmFunc(t, name)
		for _, re := range want {
			if !regexp.MustCompile(re).MatchString(body) {
				t.Errorf("%s: no match for %q in\n%s", name, re, body)
			}
		}
	}
}

// TestVLoopAsmAVX512 checks that the AVX-512 vector loops are zmm code (no ymm register at all) with
// the opmask tail: a mask built in K1 from the remainder, zero-masking loads, merge-masking stores, a
// reduction's masked group merged into its accumulator, compares into K2, VSCALEFPS in exp.
func TestVLoopAsmAVX512(t *testing.T) {
	const (
		kmask  = `KMOVW\s+DX, K1`
		zload  = `VMOVUPS\.Z\s+\S*\(\w+\)\(AX\*1\), K1, Z\d+`
		mstore = `VMOVUPS\s+Z\d+, K1, \S*\(\w+\)\(AX\*1\)`
		merge  = `VMOVUPS\s+Z\d+, K1, Z\d+`
		nanmax = `VPTERNLOGD\s+\$0xff, Z(\d+), Z\d+, K2, Z\d+`
	)
	for name, want := range map[string][]string{
		"vloop_saxpy_0AVX512":       {`VFMADD231PS\s+\S*\(\w+\)\(AX\*1\), Z\d+, Z\d+`, kmask, zload, mstore},
		"vloop_sdot_0AVX512":        {`VFMADD231PS\s+\S*\(\w+\)\(AX\*1\), Z\d+, Z\d+`, kmask, zload, merge, `VSHUFF32X4\s+\$0x4e`},
		"vloop_softmax_0AVX512":     {`VCMPPS\s+\$0x03, Z\d+, Z\d+, K2`, `VMAXPS\s+Z\d+, Z\d+, Z\d+`, nanmax, zload, merge},
		"vloop_softmax_1AVX512":     {`VRNDSCALEPS\s+\$0x00, Z\d+, Z\d+`, `VSCALEFPS\s+Z\d+, Z\d+, Z\d+`, zload, mstore},
		"vloop_softmax_3AVX512":     {`VDIVPS\s+Z\d+, Z\d+, Z\d+`, `VBROADCASTSS\s+c0\+\d+\(FP\), Z\d+`, mstore},
		"vloop_layernorm_2AVX512":   {`VDIVPS\s+Z\d+, Z\d+, Z\d+`, `VFMADD231PS`, mstore},
		"vloop_cvt_f32_f16_0AVX512": {`VCMPPS\s+\$0x03, Z\d+, Z\d+, K2`, `VPORD\s+vloopF16QuietZ`, `VBLENDMPS\s+Z\d+, Z\d+, K2, Z\d+`, `VCVTPS2PH\s+\$0x00, Z\d+, \(\w+\)\(AX\*1\)`, `VCVTPS2PH\s+\$0x00, Z\d+, K1, \(\w+\)\(AX\*1\)`},
		"vloop_cvt_f16_f32_0AVX512": {`VCVTPH2PS\s+\(\w+\)\(AX\*1\), Z\d+`, `VCVTPH2PS\.Z\s+\(\w+\)\(AX\*1\), K1, Z\d+`},
	} {
		body := asmFunc(t, name)
		for _, re := range want {
			if !regexp.MustCompile(re).MatchString(body) {
				t.Errorf("%s: no match for %q in\n%s", name, re, body)
			}
		}
		if regexp.MustCompile(`\bY\d+\b`).MatchString(body) {
			t.Errorf("%s uses ymm registers:\n%s", name, body)
		}
	}
}

// TestVLoopAVX512Installed checks that Use("avx512") installs the AVX-512 routine of every vector-loop
// slot (and Use("avx2") the AVX2 one): the slot variables hold the AVX512 adapters.
func TestVLoopAVX512Installed(t *testing.T) {
	if !slices.Contains(Variants(), "avx512") {
		t.Skip("no avx512 variant on this CPU")
	}
	defer Use("")
	slots := map[string][3]any{
		"saxpy":      {&vloop_saxpy_0, vloop_saxpy_0AVX512Slot, vloop_saxpy_0AVX2Slot},
		"sdot":       {&vloop_sdot_0, vloop_sdot_0AVX512Slot, vloop_sdot_0AVX2Slot},
		"softmax_1":  {&vloop_softmax_1, vloop_softmax_1AVX512Slot, vloop_softmax_1AVX2Slot},
		"layernorm":  {&vloop_layernorm_2, vloop_layernorm_2AVX512Slot, vloop_layernorm_2AVX2Slot},
		"cvt":        {&vloop_cvt_f32_f16_0, vloop_cvt_f32_f16_0AVX512Slot, vloop_cvt_f32_f16_0AVX2Slot},
		"cvtF16F32":  {&vloop_cvtF16F32, vloop_cvtF16F32AVX512Slot, vloop_cvtF16F32AVX2Slot},
		"transpose":  {&transposeSlot.T, transposeF32AVX512Slice, transposeF32AVX2Slice},
		"dtranspose": {&dtransposeSlot.T, transposeF64AVX512Slice, transposeF64AVX2Slice},
	}
	for i, v := range []string{"avx512", "avx2"} {
		must(t, Use(v))
		for name, s := range slots {
			got := reflect.ValueOf(s[0]).Elem().Pointer()
			if want := reflect.ValueOf(s[1+i]).Pointer(); got != want {
				t.Errorf("variant %s: slot %s does not hold its %s routine", v, name, v)
			}
		}
	}
}

// TestVLoopVariants runs the vectorized kernels under avx2 and go on long rows (so the assembly does
// most of the work) with NaN, ±Inf and -0 sprinkled in, and compares them.
func TestVLoopVariants(t *testing.T) {
	var asm []string
	for _, v := range []string{"avx512", "avx2"} {
		if slices.Contains(Variants(), v) {
			asm = append(asm, v)
		}
	}
	if len(asm) == 0 {
		t.Skip("no avx2 variant on this CPU")
	}
	defer Use("")
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func(n int, special bool) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(rng.NormFloat64())
			if special && rng.IntN(50) == 0 {
				s[i] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1))}[rng.IntN(4)]
			}
		}
		return s
	}
	close := func(a, b []float32, tol float64) bool {
		for i := range a {
			x, y := float64(a[i]), float64(b[i])
			if x != x || y != y {
				if (x != x) != (y != y) {
					return false
				}
				continue
			}
			if math.IsInf(x, 0) || math.IsInf(y, 0) {
				if x != y {
					return false
				}
				continue
			}
			if math.Abs(x-y) > tol*max(1, math.Abs(y)) {
				return false
			}
		}
		return true
	}
	run := func(v string, f func() []float32) []float32 {
		if err := Use(v); err != nil {
			t.Fatal(err)
		}
		return f()
	}
	for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 67, 1000, 4099} {
		for _, special := range []bool{false, true} {
			m := 3
			X, x, y, g, bt := gen(m*n, special), gen(n, special), gen(n, special), gen(n, false), gen(n, false)
			cases := map[string]func() []float32{
				"sdot": func() []float32 { r := []float32{0}; must(t, Sdot(n, x, y, r)); return r },
				"saxpy": func() []float32 {
					out := slices.Clone(y)
					must(t, Saxpy(n, x, out, 1.5))
					return out
				},
				"sgemv": func() []float32 {
					out := gen(m, false)
					must(t, Sgemv(m, n, X, x, out, 0.5, 0))
					return out
				},
				"softmax": func() []float32 { out := make([]float32, m*n); must(t, Softmax(m, n, X, out)); return out },
				"layernorm": func() []float32 {
					out := make([]float32, m*n)
					must(t, Layernorm(m, n, X, g, bt, out, 1e-5))
					return out
				},
			}
			for name, f := range cases {
				b := run("go", f)
				for _, v := range asm {
					if a := run(v, f); !close(a, b, 1e-4*math.Sqrt(float64(n))) {
						t.Errorf("%s n=%d special=%v: %s %v\ngo %v", name, n, special, v, head(a), head(b))
					}
				}
			}
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func head(s []float32) []float32 { return s[:min(len(s), 12)] }

// TestVLoopExpULP measures the vectorized exp of softmax's second loop (Y = exp(X - m), run with m = 0)
// against float32(math.Exp(float64(x))), the portable code's: at most 1 ulp for normal results, exact
// specials (NaN, ±Inf, overflow to +Inf, underflow to 0), and within 1 unit of 2^-149 for subnormals.
func TestVLoopExpULP(t *testing.T) {
	if !slices.Contains(Variants(), "avx2") {
		t.Skip("no avx2 variant on this CPU")
	}
	t.Run("avx2", func(t *testing.T) {
		testExpULP(t, 0, func(xs, ys []float32) { vloop_softmax_1AVX2(len(xs)/8, &xs[0], &ys[0], 0) })
	})
	if !slices.Contains(Variants(), "avx512") {
		return
	}
	// A length that is not a multiple of 16: the last 5 values go through the masked group.
	t.Run("avx512", func(t *testing.T) {
		testExpULP(t, 5, func(xs, ys []float32) { vloop_softmax_1AVX512(len(xs), &xs[0], &ys[0], 0) })
	})
	// The AVX-512 exp (VRNDSCALEPS, VSCALEFPS, constants in registers) gives the AVX2 bits.
	var xs []float32
	for x := float32(-110); x < 95; x += 0.0013 {
		xs = append(xs, x)
	}
	xs = append(xs, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)))
	xs = xs[:len(xs)/8*8]
	y2, y512 := make([]float32, len(xs)), make([]float32, len(xs))
	vloop_softmax_1AVX2(len(xs)/8, &xs[0], &y2[0], 0)
	vloop_softmax_1AVX512(len(xs), &xs[0], &y512[0], 0)
	for i, x := range xs {
		if a, b := math.Float32bits(y512[i]), math.Float32bits(y2[i]); a != b {
			t.Fatalf("exp(%v): avx512 %#x, avx2 %#x", x, a, b)
		}
	}
}

// testExpULP runs exp through run on inputs padded with zeros to a length of rem modulo 16.
func testExpULP(t *testing.T, rem int, run func(xs, ys []float32)) {
	var xs []float32
	for x := float32(-110); x < 95; x += 0.0037 {
		xs = append(xs, x)
	}
	xs = append(xs, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 88.72283, 88.72284, -87.33654, -103.97208, -103.97209)
	for len(xs)%16 != rem {
		xs = append(xs, 0)
	}
	ys := make([]float32, len(xs))
	run(xs, ys) // p0 = X (read), p1 = Y (written)
	worst := 0.0
	for i, x := range xs {
		want := float32(math.Exp(float64(x)))
		got := ys[i]
		switch {
		case want != want:
			if got == got {
				t.Errorf("exp(%v) = %v, want NaN", x, got)
			}
			continue
		case math.IsInf(float64(want), 0) || want == 0:
			if got != want && !(want == 0 && got <= 0x1p-149) {
				t.Errorf("exp(%v) = %v, want %v", x, got, want)
			}
			continue
		}
		ulp := float64(math.Nextafter32(want, float32(math.Inf(1))) - want)
		e := math.Abs(float64(got)-float64(want)) / ulp
		if want < 0x1p-126 {
			e = math.Abs(float64(got)-float64(want)) / 0x1p-149
		}
		worst = max(worst, e)
		if e > 1 {
			t.Errorf("exp(%v) = %v, want %v (%.2f ulp)", x, got, want, e)
		}
	}
	t.Logf("max error %.2f ulp over %d points", worst, len(xs))
}

// TestVariantConditions checks that each amd64 variant's init condition (kgen_amd64.go) tests every CPU
// feature that avo lists under "Requires:" for the assembly routines the variant installs.
func TestVariantConditions(t *testing.T) {
	goSrc, err := os.ReadFile("kgen_amd64.go")
	if err != nil {
		t.Fatal(err)
	}
	asm, err := os.ReadFile("kgen_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	requires := map[string][]string{}
	for _, m := range regexp.MustCompile(`(?m)^// func (\w+)\(.*\n// Requires: (.*)$`).FindAllStringSubmatch(string(asm), -1) {
		requires[m[1]] = strings.Split(m[2], ", ")
	}
	flag := map[string]string{"AVX2": "HasAVX2", "FMA3": "HasFMA", "F16C": "HasF16C", "AVX512F": "HasAVX512F",
		"AVX512DQ": "HasAVX512DQ", "AVX512VL": "HasAVX512VL", "AVX512BW": "HasAVX512BW", "AVX512BF16": "HasAVX512BF16"}
	implied := map[string]bool{"AVX": true, "CMOV": true, "MMX+": true, "SSE": true, "SSE2": true} // by AVX2 or amd64
	blocks := regexp.MustCompile(`(?s)\tif (cpu\.X86[^{]*) \{\n(.*?)\n\t\}\n`).FindAllStringSubmatch(string(goSrc), -1)
	if len(blocks) != 3 {
		t.Fatalf("%d conditional variants in kgen_amd64.go, want 3 (avx2, avx512, avx512bf16)", len(blocks))
	}
	for _, b := range blocks {
		cond, body := b[1], b[2]
		n := 0
		for _, ref := range regexp.MustCompile(`\b(\w+?)(Slot|Slice)\b`).FindAllStringSubmatch(body, -1) {
			feats, ok := requires[ref[1]]
			if !ok {
				continue // a slot variable, not a routine
			}
			n++
			for _, f := range feats {
				if implied[f] {
					continue
				}
				if fl, ok := flag[f]; !ok || !strings.Contains(cond, "cpu.X86."+fl) {
					t.Errorf("variant %q installs %s, which needs %s", cond, ref[1], f)
				}
			}
		}
		if n < 10 {
			t.Errorf("variant %q: only %d routines found", cond, n)
		}
	}
}
