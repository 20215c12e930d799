package main

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/codegen/amd64"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/probe"
	"github.com/kgen-dev/kgen/tune"
)

// lockFor writes kgen.lock beside the kdsl file at kdsl with the given lines after the hash of mm.
func lockFor(t *testing.T, kdsl string, lines ...string) string {
	t.Helper()
	return lockForKernel(t, kdsl, "mm", lines...)
}

// lockForKernel is lockFor for the named kernel.
func lockForKernel(t *testing.T, kdsl, kernel string, lines ...string) string {
	t.Helper()
	src, err := os.ReadFile(kdsl)
	if err != nil {
		t.Fatal(err)
	}
	h, err := tune.KernelHashes(kdsl, src)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s %s %s\n", kernel, h[kernel], l)
	}
	p := filepath.Join(filepath.Dir(kdsl), "kgen.lock")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func genInto(t *testing.T, kdsl string, args ...string) (map[string]string, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "pkg")
	code, _, errOut := runKgen(append(append([]string{"gen", "-o", out, "-pkg", "pkg", "-tests=false", "-targets", "go,amd64,arm64"}, args...), kdsl)...)
	if code != 0 {
		t.Fatalf("kgen gen: exit %d: %s", code, errOut)
	}
	return readFiles(t, out), errOut
}

// A lock beside the .kdsl file reaches the generated dispatch files as a switch on the machine class,
// for every class in it, and kgen ir shows its values; generation from the same lock is byte-identical,
// and without a lock (or with -lock none, or with a stale entry) the output is the untuned one.
func TestLockReachesGen(t *testing.T) {
	kdsl := write(t, "mm.kdsl", mmKdsl)
	plain, _ := genInto(t, kdsl)
	lockFor(t, kdsl,
		"amd64/avx512 amd64-avx512-c4-l1_48K-l2_2M mm.KC=384 mm.SmallWork=1048576 speedup=1.05 noise=0.01 shapes=64x64x64",
		"amd64/avx512 amd64-avx512-c8-l1_32K-l2_1M mm.MC=224 speedup=1.02 noise=0.01 shapes=64x64x64",
		"arm64/neon arm64-neon-c8-l1_64K-l2_1M mm.RowsNB=1536 speedup=1.10 noise=0.02 shapes=4x1024x1024")
	tuned, _ := genInto(t, kdsl)
	again, _ := genInto(t, kdsl)
	if !maps.Equal(tuned, again) {
		t.Error("two generations from the same lock differ")
	}
	for name, text := range plain {
		if (text != tuned[name]) != (name == "kgen_amd64.go" || name == "kgen_arm64.go") {
			t.Errorf("%s: changed %v by the lock", name, text != tuned[name])
		}
	}
	for _, want := range []string{
		"var machineClasses = []string{\"amd64-avx512-c4-l1_48K-l2_2M\", \"amd64-avx512-c8-l1_32K-l2_1M\"}\n",
		"var machineClass = probe.NearestHost(machineClasses)\n",
		"var cacheClass = probe.MatchingCaches(machineClass)\n",
		// thresholds switch on the nearest class, cache blocks on the nearest whose caches match
		"switch machineClass {\n\t\t\tcase \"amd64-avx512-c4-l1_48K-l2_2M\":\n\t\t\t\tmmSlot.SmallWork = 1048576\n\t\t\t}\n",
		"switch cacheClass {\n\t\t\tcase \"amd64-avx512-c4-l1_48K-l2_2M\":\n\t\t\t\tmmSlot.KC = 384\n\t\t\tcase \"amd64-avx512-c8-l1_32K-l2_1M\":\n\t\t\t\tmmSlot.MC = 224\n",
	} {
		if !strings.Contains(tuned["kgen_amd64.go"], want) {
			t.Errorf("kgen_amd64.go lacks %q", want)
		}
	}
	if n := strings.Count(tuned["kgen_amd64.go"], "switch machineClass"); n != 1 {
		t.Errorf("kgen_amd64.go: %d class switches, want 1 (avx512 only; avx512bf16 has no mm slot plan of its own)", n)
	}
	if !strings.Contains(tuned["kgen_arm64.go"], "mmSlot.RowsNB = 1536") {
		t.Error("kgen_arm64.go lacks the neon entry")
	}
	if none, _ := genInto(t, kdsl, "-lock", "none"); !maps.Equal(none, plain) {
		t.Error("-lock none differs from no lock")
	}
	code, out, errOut := runKgen("ir", "-target", "amd64", kdsl)
	if code != 0 || !strings.Contains(out, "plan[avx512 on amd64-avx512-c4-l1_48K-l2_2M] mm.KC = 384 (kgen.lock: installed at init where this class is the nearest and its L1 and L2 match)\n") {
		t.Errorf("kgen ir -target amd64: exit %d %s\n%s", code, errOut, out)
	}
	if code, out, errOut := runKgen("verify", kdsl); code != 0 || !strings.Contains(out, "3 entries fresh") {
		t.Errorf("verify of a fresh lock: exit %d: %s%s", code, out, errOut)
	}
	if code, _, errOut := runKgen("verify", "-profile", writeProfile(t), kdsl); code != 1 ||
		!strings.Contains(errOut, "kgen.lock:1: mm amd64/avx512 amd64-avx512-c4-l1_48K-l2_2M: machine class amd64-avx512-c4-l1_48K-l2_2M is not the profile's (amd64-go-c1)") {
		t.Errorf("verify with another machine's profile: exit %d: %s", code, errOut)
	}

	// The kernel changes: the entries are stale; verify fails naming each, gen warns and ignores them.
	if err := os.WriteFile(kdsl, []byte(strings.Replace(mmKdsl, "A[i, k] * B[k, j]", "B[k, j] * A[i, k]", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runKgen("verify", kdsl)
	if code != 1 || strings.Count(errOut, "kernel mm changed since it was tuned") != 3 || !strings.Contains(errOut, "kgen.lock:3: mm arm64/neon") {
		t.Errorf("verify of a stale lock: exit %d: %s", code, errOut)
	}
	stale, warn := genInto(t, kdsl)
	if !strings.Contains(warn, "kgen.lock:1: kernel mm changed since it was tuned: entry not applied") {
		t.Errorf("gen with a stale lock: no warning: %q", warn)
	}
	if strings.Contains(stale["kgen_amd64.go"], "machineClass") {
		t.Error("a stale entry reached the package")
	}
}

func writeProfile(t *testing.T) string {
	p := probe.Profile{Version: probe.Version, GOOS: "linux", GOARCH: "amd64", ISA: "go", Cores: 1}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return write(t, "p.json", string(b))
}

// A lock entry that is not a tuned plan symbol of the kernel (a run-time one or a kernel field), a
// kernel the backend cannot generate, or a malformed line, stops gen with the lock's file:line (and
// column) or the slot and class before anything is written.
func TestLockErrorsStopGen(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"amd64/avx512 c mm.Foo=8 speedup=1 noise=0 shapes=8x8x8", "kgen.lock:1: mm.Foo is not a tuned plan symbol of kernel mm (variant avx512)"},
		{"amd64/avx512 c mm.MR=40 speedup=1 noise=0 shapes=8x8x8", "slot mm, class c: kgen.lock's kernel: gemm kernel sgemm40x32AVX512: tile 40x32 needs 80 accumulators"},
		{"amd64/avx512 c mm.KU=-1 speedup=1 noise=0 shapes=8x8x8", "mm.KU=\"-1\"; want a positive integer (-1 for a prefetch distance: off)"},
		{"amd64/avx512 c other.KC=8 speedup=1 noise=0 shapes=8x8x8", "kgen.lock:1: other.KC is not a tuned plan symbol"},
		{"amd64/sse c mm.KC=8 speedup=1 noise=0 shapes=8x8x8", "kgen.lock:1: kernel mm has no sse variant plan on amd64"},
		{"amd64/avx512 c mm.KC=-8 speedup=1 noise=0 shapes=8x8x8", "kgen.lock:1:36: mm.KC=\"-8\"; want a positive integer"},
	} {
		kdsl := write(t, "mm.kdsl", mmKdsl)
		lockFor(t, kdsl, tc.line)
		out := filepath.Join(t.TempDir(), "pkg")
		code, _, errOut := runKgen("gen", "-o", out, "-targets", "go,amd64", kdsl)
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d: %s", tc.line, code, errOut)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: output written", tc.line)
		}
	}
}

// The tuner, on a tiny GEMM whose K block is planted far too small (16 for K = 300 and 512), finds a
// larger one faster beyond noise within a 5 s budget (searching KC alone: with the thresholds free it may as well leave the
// blocked path), and rejects every candidate of a planted broken generator (a register tile
// row count the microkernel does not compute: wrong only on the interpreter check's ragged shapes past the
// small-problem cut-off, not on the tuning shapes) before timing it.
func TestTunePlanted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a tuning driver")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	kdsl := write(t, "mm.kdsl", mmKdsl)
	src, _ := os.ReadFile(kdsl)
	var (
		broken int
		r      tune.Result
	)
	// A win must be beyond noise (a sign test on paired batches): on a 2-core CI host running other
	// packages' tests beside this one, a 5 s search was once left with no win (30 candidates). Up to
	// three searches; the rejection checks below hold for every one of them.
	for attempt := 0; attempt < 3; attempt++ {
		broken = 0
		rep, err := tune.Run(tune.Options{Path: kdsl, Src: src, Budget: 5 * time.Second, Target: "amd64", Root: root,
			Generate: tuneGenerate, Variant: "go", Shapes: []tune.Shape{{M: 24, N: 24, K: 512}, {M: 16, N: 40, K: 300}},
			Start: map[string]int{"mm.KC": 16}, Symbols: []string{"KC"}, Batch: 2 * time.Millisecond,
			Extra: func(cur map[string]int) map[string]int {
				broken++
				c := maps.Clone(cur)
				c["mm.MR"], c["mm.KC"] = 2, 512
				return c
			}})
		if err != nil {
			t.Fatal(err)
		}
		r = rep.Results[0]
		t.Logf("attempt %d: %d candidates, found %v, %d rejected", attempt+1, r.Tried, r.Found, len(r.Rejected))
		if r.Found["mm.KC"] > 16 {
			break
		}
	}
	// The search moves only on a win beyond noise (a sign test on paired batches), so any larger K block
	// was measured faster than the planted one.
	if r.Found["mm.KC"] <= 16 {
		t.Errorf("K block %d found from a planted 16 (want a larger one)", r.Found["mm.KC"])
	}
	if _, ok := r.Found["mm.MR"]; ok {
		t.Errorf("a broken candidate was accepted: %v", r.Found)
	}
	if broken == 0 || len(r.Rejected) == 0 {
		t.Fatalf("%d broken candidates proposed, %d rejected", broken, len(r.Rejected))
	}
	for _, rej := range r.Rejected {
		if rej.Cfg["mm.MR"] != 2 || rej.Err == "" {
			t.Errorf("rejected %v: %s", rej.Cfg, rej.Err)
		}
	}
}

// The values of a lock entry for this machine's class are what the generated package's slot holds after
// init under that variant (and only there), and the package's own interpreter tests pass with them. A
// machine of another class of the same vector level (played through $KGEN_MACHINE_CLASS, probe.ClassEnv)
// gets the nearest entry's values (probe.Nearest): the one of nearest L2, though another has its core
// count and one of another vector level has its very caches. Cache blocks come only from a nearest class
// whose L1 and L2 match (probe.MatchingCaches): a machine whose nearest class has half its L2 takes that
// class's thresholds but keeps its own blocks.
func TestTunedPackageInstallsClass(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a generated package")
	}
	if runtime.GOARCH != "amd64" {
		t.Skip("checks the amd64 variants' slots")
	}
	root, dir := pkgTempDir(t)
	kdsl := write(t, "mm.kdsl", mmKdsl)
	class := probe.Static().Class()
	host, err := probe.ParseClass(class)
	if err != nil {
		t.Fatal(err)
	}
	// played is the class of the machine played; near has its L2 within a factor 4/3 (caches that
	// match) and 8 times its cores; the host's class and far have its cores and L2 4 times off; otherISA
	// has its very class but another vector level. playedFar has twice far's L2: far is its nearest,
	// but with caches that do not match.
	played, near, far, otherISA, playedFar := host, host, host, host, host
	played.L2 *= 4
	near.L2, near.Cores = host.L2*3, host.Cores*8
	playedFar.L2 *= 32
	far.L2 *= 16
	otherISA.L2 *= 4
	otherISA.ISA = map[bool]string{true: "avx2", false: "avx512"}[host.ISA != "avx2"]
	entries := []string{
		"amd64/avx512 " + class + " mm.KC=40 mm.MC=42 mm.SmallWork=100 speedup=1 noise=0 shapes=8x8x8",
		"amd64/avx2 " + class + " mm.KC=24 mm.RowsMax=2 speedup=1 noise=0 shapes=8x8x8",
		"amd64/avx2 other-class mm.KC=8 speedup=1 noise=0 shapes=8x8x8",
	}
	if host.L1 > 0 && host.L2 > 0 {
		// near, far and otherISA differ from the host's class only in the caches it names
		entries = append(entries,
			"amd64/avx512 "+near.String()+" mm.KC=56 mm.SmallWork=200 speedup=1 noise=0 shapes=8x8x8",
			"amd64/avx2 "+near.String()+" mm.KC=32 speedup=1 noise=0 shapes=8x8x8",
			"amd64/avx512 "+far.String()+" mm.KC=72 mm.SmallWork=300 speedup=1 noise=0 shapes=8x8x8",
			"amd64/avx512 "+otherISA.String()+" mm.KC=88 mm.SmallWork=400 speedup=1 noise=0 shapes=8x8x8")
	}
	lockFor(t, kdsl, entries...)
	pkgDir := filepath.Join(dir, "tuned")
	if code, _, errOut := runKgen("gen", "-o", pkgDir, "-targets", "go,amd64", kdsl); code != 0 {
		t.Fatal(errOut)
	}
	check := `package tuned

import (
	"os"
	"testing"
)

func TestInstalled_(t *testing.T) {
	defer Use("")
	want := map[string][2]int{"avx512": {40, 100}, "avx512bf16": {40, 100}, "avx2": {24, 512000}}
	if os.Getenv("KGEN_MACHINE_CLASS") != "" {
		want = map[string][2]int{"avx512": {56, 200}, "avx512bf16": {56, 200}, "avx2": {32, 512000}}
	}
	if os.Getenv("KGEN_TEST_PLAYED_FAR") != "" {
		// far's thresholds, not its KC (72): the blocks stay this machine's own (KC 0 here: any but 72)
		want = map[string][2]int{"avx512": {0, 300}, "avx512bf16": {0, 300}}
	}
	for _, v := range Variants() {
		if err := Use(v); err != nil {
			t.Fatal(err)
		}
		w, ok := want[v]
		if !ok {
			continue
		}
		if (w[0] == 0 && mmSlot.KC == 72) || (w[0] != 0 && mmSlot.KC != w[0]) || mmSlot.SmallWork != w[1] {
			t.Errorf("variant %s on %s: KC %d, SmallWork %d; want %v", v, machineClass, mmSlot.KC, mmSlot.SmallWork, w)
		}
		if v == "avx2" && (mmSlot.RowsMax == 2) != (os.Getenv("KGEN_MACHINE_CLASS") == "") && os.Getenv("KGEN_TEST_PLAYED_FAR") == "" {
			t.Errorf("avx2 RowsMax %d on %s", mmSlot.RowsMax, machineClass)
		}
	}
}
`
	if err := os.WriteFile(filepath.Join(pkgDir, "installed_test.go"), []byte(check), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := []string{""}
	if host.L1 > 0 && host.L2 > 0 {
		runs = append(runs, played.String(), playedFar.String())
	} else {
		t.Logf("machine class %s names no L1/L2 sizes: nearest-class run skipped", class)
	}
	for _, playing := range runs {
		cmd := exec.Command("go", "test", "-count=1", "./"+filepath.ToSlash(filepath.Join("cmd/kgen", pkgDir)))
		cmd.Dir = root
		cmd.Env = append(os.Environ(), probe.ClassEnv+"="+playing)
		if playing == playedFar.String() {
			cmd.Env = append(cmd.Env, "KGEN_TEST_PLAYED_FAR=1")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s=%s: %v\n%s", probe.ClassEnv, playing, err, out)
		}
	}
}

// TestTunedKernelFields: kgen.lock entries that set a slot's kernel fields (tile, unroll, prefetch:
// ir.KernelFields) make kgen gen generate those microkernels beside the plan's and install them, with
// their tile, when the entry's class is the machine's; the generated package's own tests (the
// interpreter's ragged shapes, NaN/Inf, beta = 0) then run them. Played under another class, the
// plan's kernels stay.
func TestTunedKernelFields(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a generated package")
	}
	if runtime.GOARCH != "amd64" {
		t.Skip("kernel fields are tuned on amd64 only")
	}
	root, dir := pkgTempDir(t)
	kdsl := write(t, "mm.kdsl", mmKdsl)
	class := probe.Static().Class()
	lockFor(t, kdsl,
		"amd64/avx512 "+class+" mm.MR=8 mm.KU=2 mm.PFA=-1 mm.PFU=16 mm.KC=64 speedup=1 noise=0 shapes=8x8x8",
		"amd64/avx2 "+class+" mm.MR=4 mm.NR=24 mm.PFB=16 speedup=1 noise=0 shapes=8x8x8")
	pkgDir := filepath.Join(dir, "tuned")
	if code, _, errOut := runKgen("gen", "-o", pkgDir, "-targets", "go,amd64", kdsl); code != 0 {
		t.Fatal(errOut)
	}
	src, err := os.ReadFile(filepath.Join(pkgDir, "kgen_amd64.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"mmSlot.MR, mmSlot.NR, mmSlot.Micro, mmSlot.MicroU, mmSlot.MicroB = 8, 32, sgemm8x32AVX512_u2_paoffSlice, sgemm8x32AVX512U_pu16Slice, sgemm8x32AVX512U_pu16BSlice",
		"mmSlot.MC, mmSlot.KC, mmSlot.NC = sgemm8x32AVX512_u2_paoffBlocks.MC",
		"mmSlot.MR, mmSlot.NR, mmSlot.Micro, mmSlot.MicroU, mmSlot.MicroB = 4, 24, sgemm4x24AVX2_pb16Slice, microUGo32, microBGo32", // 4×24 unpacked needs 17 ymm: the portable one,
	} {
		if !strings.Contains(string(src), want) {
			var got []string
			for _, l := range strings.Split(string(src), "\n") {
				if strings.Contains(l, "mmSlot.MR,") {
					got = append(got, l)
				}
			}
			t.Errorf("dispatch file lacks %q; its class kernels:\n%s", want, strings.Join(got, "\n"))
		}
	}
	check := `package tuned

import (
	"os"
	"testing"
)

func TestKernelInstalled_(t *testing.T) {
	defer Use("")
	want := map[string][2]int{"avx512": {8, 32}, "avx512bf16": {8, 32}, "avx2": {4, 24}}
	if os.Getenv("KGEN_MACHINE_CLASS") != "" {
		want = map[string][2]int{"avx512": {14, 32}, "avx512bf16": {14, 32}, "avx2": {6, 16}}
	}
	for _, v := range Variants() {
		if err := Use(v); err != nil {
			t.Fatal(err)
		}
		if w, ok := want[v]; ok && (mmSlot.MR != w[0] || mmSlot.NR != w[1]) {
			t.Errorf("variant %s on %q: tile %dx%d, want %v", v, machineClass, mmSlot.MR, mmSlot.NR, w)
		}
		if v == "avx512" && os.Getenv("KGEN_MACHINE_CLASS") == "" && mmSlot.KC != 64 {
			t.Errorf("avx512: KC %d, want the lock's 64 over the class kernel's blocks", mmSlot.KC)
		}
	}
}
`
	if err := os.WriteFile(filepath.Join(pkgDir, "installed_test.go"), []byte(check), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, playing := range []string{"", "amd64-avx2-c64-l1_8K-l2_64K"} {
		cmd := exec.Command("go", "test", "-count=1", "./"+filepath.ToSlash(filepath.Join("cmd/kgen", pkgDir)))
		cmd.Dir = root
		cmd.Env = append(os.Environ(), probe.ClassEnv+"="+playing)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s=%q: %v\n%s", probe.ClassEnv, playing, err, out)
		}
	}
}

// TestTuneKernelCandidates: on this machine's vector level the tuner generates every microkernel
// candidate of the slot (tiles, unrolls, prefetch distances: amd64.KernelCandidates) into its scratch
// package and checks each against the interpreter on ragged shapes before timing it: none may be
// rejected (a wrong candidate kernel would be), and whatever is kept names only candidate fields.
func TestTuneKernelCandidates(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a tuning driver")
	}
	class, isa, root, kdsl, src := candidateSetup(t)
	rep, err := tune.Run(tune.Options{Path: kdsl, Src: src, Budget: 4 * time.Second, Target: "amd64", Root: root, Class: class,
		Generate: tuneGenerate, Shapes: []tune.Shape{{M: 24, N: 40, K: 64}}, Symbols: []string{"KC"}, Pairs: 4,
		Batch: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	want := len(amd64.KernelCandidates(amd64.F32, isa))
	t.Logf("variant %s: %d candidates (%d microkernels), found %v", rep.Variant, r.Tried, want, r.Found)
	if r.Tried < want || len(r.Rejected) > 0 {
		t.Errorf("%d candidates tried (want at least the %d microkernels), rejected: %v", r.Tried, want, r.Rejected)
	}
	for k := range r.Found {
		if _, f, _ := strings.Cut(k, "."); f != "KC" && !ir.IsKernelField(f) {
			t.Errorf("found %s: neither the searched KC nor a kernel field", k)
		}
	}
}

// TestSeedFromLock: a search over some fields starts from the kernel's lock entry for the class (its
// tuned slot fields and microkernel fields, not over a value -start gives), and a stale entry, another
// class's, or an ambiguous pair of variants seeds nothing.
func TestSeedFromLock(t *testing.T) {
	const class = "amd64-avx512bf16-c2-l1_48K-l2_1M"
	e := func(kernel, hash, variant, class string, kv ...any) tune.Entry {
		vals := map[string]int{}
		for i := 0; i < len(kv); i += 2 {
			vals[kv[i].(string)] = kv[i+1].(int)
		}
		return tune.Entry{Kernel: kernel, Hash: hash, Target: "amd64", Variant: variant, Class: class, Values: vals}
	}
	lock := &tune.Lock{Entries: []tune.Entry{
		e("sgemm", "h-s", "avx512", class, "sgemm.KC", 512, "sgemm.MC", 420, "sgemm.MR", 12, "sgemm.SmallWork", 2343987),
		e("sgemm", "h-s", "avx512", "amd64-avx2-c2-l1_32K-l2_512K", "sgemm.KC", 256),
		e("dgemm", "old", "avx512", class, "dgemm.KC", 384),
		e("bmm", "h-b", "avx512", class, "bmm.MC", 96),
		e("bmm", "h-b", "avx2", class, "bmm.MC", 48),
	}}
	hashes := map[string]string{"sgemm": "h-s", "dgemm": "h-d", "bmm": "h-b"}
	start, notes := seedFromLock(lock, hashes, map[string]int{"sgemm.SmallWork": 1}, nil, "amd64", "", class)
	want := map[string]int{"sgemm.KC": 512, "sgemm.MC": 420, "sgemm.MR": 12, "sgemm.SmallWork": 1}
	if !maps.Equal(start, want) {
		t.Errorf("start %v, want %v", start, want)
	}
	joined := strings.Join(notes, "\n")
	for _, w := range []string{"dgemm: the lock's entry for class " + class + " is stale", "bmm: 2 entries", "sgemm: starting from the lock's entry"} {
		if !strings.Contains(joined, w) {
			t.Errorf("notes %q lack %q", joined, w)
		}
	}
	// -variant picks one of the two; -kernels leaves the others out
	start, _ = seedFromLock(lock, hashes, nil, []string{"bmm"}, "amd64", "avx2", class)
	if want := map[string]int{"bmm.MC": 48}; !maps.Equal(start, want) {
		t.Errorf("bmm on avx2: start %v, want %v", start, want)
	}
	// nothing for another target or class
	if start, notes := seedFromLock(lock, hashes, nil, nil, "arm64", "", class); len(start) != 0 || len(notes) != 0 {
		t.Errorf("arm64: start %v, notes %v, want none", start, notes)
	}
}

// TestTuneKeepsSeededKernel: a search over some fields that starts from a microkernel (the kernel
// fields of a lock entry, as kgen tune -symbols seeds them) times no other microkernel: the trace has no
// microkernel line and the result keeps the seeded fields.
func TestTuneKeepsSeededKernel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a tuning driver")
	}
	class, isa, root, kdsl, src := candidateSetup(t)
	cands := amd64.KernelCandidates(amd64.F32, isa)
	seed := cands[len(cands)-1]
	start := map[string]int{}
	for f, v := range seed {
		start["mm."+f] = v
	}
	var log bytes.Buffer
	rep, err := tune.Run(tune.Options{Path: kdsl, Src: src, Budget: 3 * time.Second, Target: "amd64", Root: root, Class: class,
		Generate: tuneGenerate, Shapes: []tune.Shape{{M: 24, N: 40, K: 64}}, Symbols: []string{"KC"}, Start: start, Pairs: 4,
		Batch: time.Millisecond, Log: &log, Trace: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if strings.Contains(log.String(), "microkernel") {
		t.Errorf("microkernel candidates timed although the start names one:\n%s", log.String())
	}
	for f, v := range seed {
		if got, ok := r.Found["mm."+f]; ok && got != v {
			t.Errorf("found mm.%s = %d, seeded %d (found %v)", f, got, v, r.Found)
		}
	}
}

// candidateSetup is what the microkernel-candidate tests need: this machine's class and its amd64
// vector level (the test skips elsewhere), the module root, and the mm kernel's kdsl file and source.
func candidateSetup(t *testing.T) (class, isa, root, kdsl string, src []byte) {
	t.Helper()
	class = probe.Static().Class()
	switch {
	case runtime.GOARCH != "amd64":
	case strings.HasPrefix(class, "amd64-avx512"):
		isa = "avx512"
	case strings.HasPrefix(class, "amd64-avx2"):
		isa = "avx2"
	}
	if isa == "" {
		t.Skipf("machine class %s: microkernel candidates are amd64 AVX2/AVX-512 kernels", class)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	kdsl = write(t, "mm.kdsl", mmKdsl)
	src, _ = os.ReadFile(kdsl)
	return class, isa, root, kdsl, src
}
