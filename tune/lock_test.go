package tune

import (
	"reflect"
	"strings"
	"testing"
)

func TestLockRoundTrip(t *testing.T) {
	l := &Lock{Path: "kgen.lock"}
	// Set out of order, and once twice: the printed lock is sorted and keeps one entry per key.
	l.Set(Entry{Kernel: "sgemm", Hash: "00112233445566ff", Target: "amd64", Variant: "avx512", Class: "b-class",
		Values: map[string]int{"sgemm.MC": 280, "sgemm.KC": 384}, Speedup: 1.0734, Noise: 0.0121, Shapes: []string{"64x64x64", "4x1024x1024"}})
	l.Set(Entry{Kernel: "dgemm", Hash: "0123456789abcdef", Target: "amd64", Variant: "avx2", Class: "a-class",
		Values: map[string]int{"dgemm.SmallWork": 1 << 20}, Speedup: 1.2, Noise: 0.03, Shapes: []string{"100x100x100"}})
	l.Set(Entry{Kernel: "sgemm", Hash: "00112233445566ff", Target: "amd64", Variant: "avx512", Class: "a-class",
		Values: map[string]int{"sgemm.KC": 1}, Speedup: 1, Noise: 0, Shapes: []string{"1x1x1"}})
	l.Set(Entry{Kernel: "sgemm", Hash: "00112233445566ff", Target: "amd64", Variant: "avx512", Class: "a-class",
		Values: map[string]int{"sgemm.KC": 512, "sgemm.RowsNB": 2048}, Speedup: 1.5, Noise: 0.25, Shapes: []string{"1x1x1"}})
	text := l.Format()
	want := header +
		"dgemm 0123456789abcdef amd64/avx2 a-class dgemm.SmallWork=1048576 speedup=1.200 noise=0.030 shapes=100x100x100\n" +
		"sgemm 00112233445566ff amd64/avx512 a-class sgemm.KC=512 sgemm.RowsNB=2048 speedup=1.500 noise=0.250 shapes=1x1x1\n" +
		"sgemm 00112233445566ff amd64/avx512 b-class sgemm.KC=384 sgemm.MC=280 speedup=1.073 noise=0.012 shapes=64x64x64,4x1024x1024\n"
	if string(text) != want {
		t.Fatalf("Format:\n%s\nwant:\n%s", text, want)
	}
	back, err := Parse("kgen.lock", text)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Format(); string(got) != want {
		t.Fatalf("Format(Parse(Format)):\n%s\nwant:\n%s", got, want)
	}
	e := back.Entries[2]
	if e.Line != 6 || e.Class != "b-class" || !reflect.DeepEqual(e.Values, map[string]int{"sgemm.MC": 280, "sgemm.KC": 384}) ||
		e.Speedup != 1.073 || !reflect.DeepEqual(e.Shapes, []string{"64x64x64", "4x1024x1024"}) {
		t.Errorf("parsed entry %+v", e)
	}
	tuned, stale := back.Tuned("sgemm", "00112233445566ff", "amd64")
	if len(stale) != 0 || tuned["avx512"]["a-class"]["sgemm.RowsNB"] != 2048 || tuned["avx512"]["b-class"]["sgemm.MC"] != 280 {
		t.Errorf("Tuned: %v, stale %v", tuned, stale)
	}
	if tuned, stale := back.Tuned("sgemm", "ffffffffffffffff", "amd64"); tuned != nil || len(stale) != 2 {
		t.Errorf("Tuned with another hash: %v, stale %d", tuned, len(stale))
	}
}

func TestLockErrors(t *testing.T) {
	const ok = "sgemm 0123456789abcdef amd64/avx512 c sgemm.KC=384 speedup=1.1 noise=0.01 shapes=8x8x8"
	for _, tc := range []struct{ line, want string }{
		{"sgemm 0123456789abcdef amd64/avx512", "kgen.lock:2:36: 3 fields; want kernel hash"},
		{"9x 0123456789abcdef amd64/avx512 c sgemm.KC=1 speedup=1 noise=0 shapes=8x8x8", "kgen.lock:2:1: kernel name \"9x\"; want an identifier"},
		{"sgemm 0123456789ABCDEF amd64/avx512 c sgemm.KC=1 speedup=1 noise=0 shapes=8x8x8", "kgen.lock:2:7: hash \"0123456789ABCDEF\"; want 16 lower-case hex digits"},
		{"sgemm 0123456789abcdef amd64 c sgemm.KC=1 speedup=1 noise=0 shapes=8x8x8", "kgen.lock:2:24: \"amd64\"; want target/variant"},
		{"sgemm 0123456789abcdef amd64/avx512 c sgemm.KC384 speedup=1 noise=0 shapes=8x8x8", "kgen.lock:2:39: \"sgemm.KC384\"; want symbol=value"},
		{"sgemm 0123456789abcdef amd64/avx512 c sgemm.KC=0 speedup=1 noise=0 shapes=8x8x8", "kgen.lock:2:39: sgemm.KC=\"0\"; want a positive integer"},
		{"sgemm 0123456789abcdef amd64/avx512 c KC=3 speedup=1 noise=0 shapes=8x8x8", "kgen.lock:2:39: \"KC\"; want a plan symbol slot.NAME"},
		{"sgemm 0123456789abcdef amd64/avx512 c sgemm.KC=3 sgemm.KC=4 speedup=1 noise=0 shapes=8x8x8", "kgen.lock:2:50: sgemm.KC given twice"},
		{"sgemm 0123456789abcdef amd64/avx512 c sgemm.KC=3 speedup=x noise=0 shapes=8x8x8", "kgen.lock:2:50: speedup=\"x\"; want a non-negative number"},
		{"sgemm 0123456789abcdef amd64/avx512 c sgemm.KC=3 speedup=1 noise=0 shapes=8x8", "kgen.lock:2:68: shape \"8x8\"; want MxNxK"},
		{"sgemm 0123456789abcdef amd64/avx512 c sgemm.KC=3 speedup=1 shapes=8x8x8", "kgen.lock:2:72: no noise=; want one"},
		{"sgemm 0123456789abcdef amd64/avx512 c speedup=1 noise=0 shapes=8x8x8", "kgen.lock:2:38: no plan symbol"},
		{ok, "kgen.lock:2:1: second entry for sgemm amd64/avx512 c (first on line 1)"},
	} {
		_, err := Parse("kgen.lock", []byte(ok+"\n"+tc.line+"\n"))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("line %q: error %v, want prefix %q", tc.line, err, tc.want)
		}
	}
	if _, err := Parse("kgen.lock", []byte("# comment\n\n"+ok+"\n")); err != nil {
		t.Errorf("comments and blank lines: %v", err)
	}
}

const twoKernels = `kernel mm(A: f32[M, K], B: f32[K, N], C: out f32[M, N]) {
    C[i, j] = sum(k: A[i, k] * B[k, j])
}

kernel axpy(x: f32[N], y: inout f32[N], a: f32) {
    y[i] = a * x[i] + y[i]
}
`

// The hash is the canonical text's: comments and layout do not change it, the kernel's body and its
// schedule do, and one kernel's edit leaves the other's hash alone.
func TestKernelHashes(t *testing.T) {
	h := func(src string) map[string]string {
		t.Helper()
		m, err := KernelHashes("k.kdsl", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	base := h(twoKernels)
	if len(base) != 2 || len(base["mm"]) != 16 || base["mm"] == base["axpy"] {
		t.Fatalf("hashes %v", base)
	}
	if got := h("// tuned kernels\n" + strings.ReplaceAll(twoKernels, "    ", "\t\t")); !reflect.DeepEqual(got, base) {
		t.Errorf("comment and indentation changed the hashes: %v, want %v", got, base)
	}
	edited := h(strings.Replace(twoKernels, "a * x[i]", "a * x[i] * 2", 1))
	if edited["mm"] != base["mm"] || edited["axpy"] == base["axpy"] {
		t.Errorf("editing axpy: %v, was %v", edited, base)
	}
	scheduled := h(twoKernels + "\nschedule mm {\n    tile i 64 8\n}\n")
	if scheduled["mm"] == base["mm"] || scheduled["axpy"] != base["axpy"] {
		t.Errorf("scheduling mm: %v, was %v", scheduled, base)
	}
}

func TestVerify(t *testing.T) {
	hashes, err := KernelHashes("k.kdsl", []byte(twoKernels))
	if err != nil {
		t.Fatal(err)
	}
	l := &Lock{Path: "kgen.lock", Entries: []Entry{
		{Kernel: "mm", Hash: hashes["mm"], Target: "amd64", Variant: "avx512", Class: "here", Values: map[string]int{"mm.KC": 64}, Line: 4},
		{Kernel: "mm", Hash: hashes["mm"], Target: "amd64", Variant: "avx512", Class: "there", Values: map[string]int{"mm.KC": 64}, Line: 5},
	}}
	if p := Verify(l, "k.kdsl", hashes, ""); len(p) != 0 {
		t.Errorf("fresh lock: %v", p)
	}
	if p := Verify(l, "k.kdsl", hashes, "here"); len(p) != 1 || !strings.HasPrefix(p[0], "kgen.lock:5: ") || !strings.Contains(p[0], "machine class there is not the profile's (here)") {
		t.Errorf("other class: %q", p)
	}
	l.Entries[0].Hash = "0000000000000000"
	l.Entries[1].Kernel = "gone"
	p := Verify(l, "k.kdsl", hashes, "")
	if len(p) != 2 || !strings.Contains(p[0], "kgen.lock:4: mm amd64/avx512 here: kernel mm changed since it was tuned (hash 0000000000000000, now "+hashes["mm"]) ||
		!strings.Contains(p[1], "kgen.lock:5: gone amd64/avx512 there: kernel gone is not in k.kdsl any more") {
		t.Errorf("stale lock: %q", p)
	}
}
