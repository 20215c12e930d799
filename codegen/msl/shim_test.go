package msl

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/f16"
)

// TestShimConversions checks the shim's half and bfloat against kgen's f16 package (the interpreter's
// rounding): every 16-bit pattern widened, and narrowing of every half and bfloat value, the midpoints
// between neighbours (ties to even), their neighbours one float ulp away, overflow and underflow
// boundaries and random floats. NaNs only need to stay NaN.
func TestShimConversions(t *testing.T) {
	t.Parallel()
	clang := clangPath(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "convcheck")
	abs, _ := filepath.Abs("testdata")
	if out, err := exec.Command(clang, append(append([]string{}, cxxFlags...), "-I", abs, "-o", bin, filepath.Join(abs, "convcheck.cpp"))...).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var in []float32
	add := func(f float32) {
		in = append(in, f, math.Nextafter32(f, float32(math.Inf(1))), math.Nextafter32(f, float32(math.Inf(-1))))
	}
	for i := 0; i < 65536; i++ {
		h := f16.F16(i).Float32()
		add(h)
		if i < 65535 {
			if n := f16.F16(i + 1).Float32(); !math.IsNaN(float64(h)) && !math.IsNaN(float64(n)) && !math.IsInf(float64(n), 0) {
				add(float32((float64(h) + float64(n)) / 2)) // exact in float32: halves have 11 bits
			}
		}
		add(f16.BF16(i).Float32())
	}
	for _, f := range []float32{65504, 65519.998, 65520, 65536, 1e10, 0x1p-24, 0x1p-25, 0x1.8p-25, 0x1p-26, 0x1p-14, 0x1p-126, 0x1p-149, 3.4e38} {
		add(f)
		add(-f)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		in = append(in, math.Float32frombits(rng.Uint32()))
	}
	var req bytes.Buffer
	binary.Write(&req, binary.LittleEndian, in)
	reqPath, resPath := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	if err := os.WriteFile(reqPath, req.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, reqPath, resPath).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	res, err := os.ReadFile(resPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4*len(in)+2*4*65536 {
		t.Fatalf("%d result bytes", len(res))
	}
	bad := 0
	for i, f := range in {
		h := f16.F16(binary.LittleEndian.Uint16(res[4*i:]))
		b := f16.BF16(binary.LittleEndian.Uint16(res[4*i+2:]))
		wantH, wantB := f16.FromFloat32(f), f16.BF16FromFloat32(f)
		nan := math.IsNaN(float64(f))
		if (nan && !math.IsNaN(float64(h.Float32()))) || (!nan && h != wantH) {
			t.Errorf("half(%g) = %#04x, want %#04x", f, uint16(h), uint16(wantH))
			bad++
		}
		if (nan && !math.IsNaN(float64(b.Float32()))) || (!nan && b != wantB) {
			t.Errorf("bfloat(%g) = %#04x, want %#04x", f, uint16(b), uint16(wantB))
			bad++
		}
		if bad > 10 {
			t.Fatal("too many mismatches")
		}
	}
	res = res[4*len(in):]
	for i := 0; i < 2*65536; i++ {
		got := math.Float32frombits(binary.LittleEndian.Uint32(res[4*i:]))
		want := f16.F16(i).Float32()
		what := "half"
		if i >= 65536 {
			want, what = f16.BF16(i-65536).Float32(), "bfloat"
		}
		if math.Float32bits(got) != math.Float32bits(want) && !(math.IsNaN(float64(got)) && math.IsNaN(float64(want))) {
			t.Errorf("float(%s %#04x) = %g, want %g", what, i%65536, got, want)
			if bad++; bad > 10 {
				t.Fatal("too many mismatches")
			}
		}
	}
}

// TestStrictAddressSpaces: the strict build refuses MSL that mixes address spaces, which the
// executing build (empty address-space macros) accepts: a buffer parameter without `device`, and a
// simdgroup_load from a thread-space array. (The unmutated source passes it: buildDriver checks the
// whole library that way.)
func TestStrictAddressSpaces(t *testing.T) {
	t.Parallel()
	clang := clangPath(t)
	p := compilePackage(t, "kernels.kdsl", libraryText(t), "msl")
	for _, k := range p.Kernels {
		if k.K.Name == "sgemm" {
			p.Kernels = []codegen.Kernel{k} // the library's whole source passes (buildDriver checks it)
			break
		}
	}
	src, err := BuildSource(p)
	if err != nil {
		t.Fatal(err)
	}
	entries := CPPEntries(src.Launches)
	for name, tc := range map[string]struct {
		mutate func(string) string
		want   string
	}{
		"thread pointer parameter": {func(s string) string {
			return strings.Replace(s, "device const float* A [[buffer(0)]]", "const float* A [[buffer(0)]]", 1)
		}, "address space"},
		"simdgroup_load from thread memory": {func(s string) string {
			return strings.Replace(s, "simdgroup_load(mat_a, &kg_mma_a[sg_index * 64], 8);", "float local[64] = {};\nsimdgroup_load(mat_a, &local[0], 8);", 1)
		}, "no matching function for call to 'simdgroupLoad'"},
	} {
		mutate := tc.mutate
		dir := t.TempDir()
		text := mutate(src.Text)
		if name != "unchanged" && text == src.Text {
			t.Fatalf("%s: the mutation did not apply", name)
		}
		os.WriteFile(filepath.Join(dir, "kernels.metal"), []byte(text), 0o644)
		os.WriteFile(filepath.Join(dir, "entries.inc"), []byte(entries), 0o644)
		out, err := strictCheck(clang, dir)
		switch {
		case name == "unchanged" && err != nil:
			t.Errorf("the emitted source fails the strict build: %v\n%s", err, limit(string(out), 3000))
		case name != "unchanged" && err == nil:
			t.Errorf("%s: the strict build accepted it", name)
		case name != "unchanged" && !strings.Contains(string(out), tc.want):
			t.Errorf("%s: refused, but not with %q:\n%s", name, tc.want, limit(string(out), 2000))
		}
	}
}
