package llvm

import (
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/kgentest"
	"github.com/kgen-dev/kgen/target"
)

// edgeKernels are the kernels of kernels.kdsl and extraSrc whose vector loops have remainders (every
// element type, elementwise and +/max/min reductions, strided-axis reductions, f16 storage, lane-by-lane
// integer bodies) and GEMMs of each element type.
// libm: whether to keep the kernels calling libm (exp of f64, log), which the freestanding aarch64 driver
// cannot link.
func edgeKernels(t *testing.T, libm bool) []*ir.Kernel {
	t.Helper()
	extra, err := check.File("extra.kdsl", extraSrc)
	if err != nil {
		t.Fatal(err)
	}
	var ks []*ir.Kernel
	for _, k := range append(kdslKernels(t), extra...) {
		switch k.Name {
		case "saxpy", "sdot", "softmax", "layernorm", "haxpy", "hadd", "cvt_f32_f16", "cvt_f16_f32", "colsum",
			"dcolsum", "colsum_acc", "sum_mid", "max_mid", "batch_stats", "sgemv", "sgemm", "dgemm", "hgemm",
			"mixed", "rowmin", "ints":
			ks = append(ks, k)
		case "fns", "dfns":
			if libm {
				ks = append(ks, k)
			}
		}
	}
	return ks
}

// edgeSizes are the dims of the edge calls: 1, primes, and one around each vector width (4, 8, 16 lanes)
// and two groups of it.
var edgeSizes = []int{1, 2, 3, 5, 7, 8, 9, 11, 13, 15, 16, 17, 23, 31, 33, 37, 63, 65}

// edgeCalls calls every kernel of p with every dim set to each of edgeSizes, and once with a tensor one
// element too long (status 2, nothing written).
func edgeCalls(t *testing.T, p *codegen.Package) []*call {
	t.Helper()
	rng := rand.New(rand.NewPCG(31, 4))
	var calls []*call
	for i, kk := range p.Kernels {
		k := kk.K
		for si, n := range edgeSizes {
			dims := map[string]int{}
			for _, d := range k.Dims {
				dims[d.Name] = n
			}
			args := kgentest.RandomArgs(k, dims, rng, si)
			if _, ok := args.Scalars["eps"]; ok {
				// layernorm's eps as used: small and positive (a random one in [-0.5, 1.5) can cancel the
				// variance, and 1/sqrt(var + eps) then amplifies rounding beyond what Compare models).
				args.Scalars["eps"] = 0x1p-16
			}
			ref := args.Clone()
			if err := ir.RunKernel(k, ir.Storage, ref); err != nil {
				t.Fatalf("%s: interpreter on %v: %v", k.Name, dims, err)
			}
			calls = append(calls, &call{k: i, kern: k, dims: dims, in: args, ref: ref, mag: kgentest.Magnitude(k, args)})
		}
		dims := map[string]int{}
		for _, d := range k.Dims {
			dims[d.Name] = 17
		}
		bad := kgentest.RandomArgs(k, dims, rng, 1)
		for _, q := range k.Params {
			if q.Kind != ir.Scalar {
				bad.Tensors[q.Name] = append(bad.Tensors[q.Name], 0.5)
				break
			}
		}
		calls = append(calls, &call{k: i, kern: k, dims: dims, in: bad, status: StatusLength})
	}
	return calls
}

// wideModule is the text of the module of ks compiled for the wide llvm machine as package name.
func wideModule(t *testing.T, name string, ks []*ir.Kernel) string {
	t.Helper()
	files, err := Backend{}.Generate(compileKernels(t, name, wideMachine(t), ks))
	if err != nil {
		t.Fatal(err)
	}
	return string(files[0].Data)
}

// funcText is the text of function fn's definition in module text ll.
func funcText(ll, fn string) string {
	body := ll[strings.Index(ll, "@"+fn+"("):]
	return body[:strings.Index(body, "\n}\n")]
}

// TestMaskedTails checks that the remainders of the vector loops run as masked groups (llvm.masked.load
// and llvm.masked.store in the module) and that no remainder loop is left where the body vectorises.
func TestMaskedTails(t *testing.T) {
	ll := wideModule(t, "mt", edgeKernels(t, true))
	for _, want := range []string{"@llvm.masked.load.v16f32.p0v16f32", "@llvm.masked.store.v16f32.p0v16f32",
		"@llvm.masked.load.v8f64.p0v8f64", "@llvm.masked.load.v16i16.p0v16i16", "@llvm.masked.store.v16i16.p0v16i16"} {
		if !strings.Contains(ll, want) {
			t.Errorf("the module does not call %s", want)
		}
	}
	// saxpy: one vector loop, its unrolled main loop and its tail; no scalar remainder loop.
	body := funcText(ll, "mt_saxpy")
	if strings.Count(body, "@llvm.masked.store") != 1 || strings.Contains(body, "head.ir") {
		t.Errorf("saxpy: want one masked store and no remainder loop:\n%s", body)
	}
}

// TestMaskedEdges runs edgeKernels on edgeSizes with every tensor ending right before an inaccessible
// page (guardedBufs: a read or write past a tensor faults, a write before it is caught by canaries),
// against the interpreter: the llvm machine's code (8 f32 lanes) on baseline x86-64 (masked operations
// expanded to SSE code) and on x86-64-v3 (AVX2 masked moves), the wide machine's (16 lanes) with
// -mcpu=native (AVX-512 opmasks where the host has them), and on aarch64 under qemu-aarch64.
func TestMaskedEdges(t *testing.T) {
	t.Parallel()
	clang := tool(t, "clang-14", "clang")
	opt, llc := tool(t, "opt", "opt-14"), tool(t, "llc", "llc-14")
	m, err := target.Lookup("llvm")
	if err != nil {
		t.Fatal(err)
	}
	narrow := compileKernels(t, "me", m, edgeKernels(t, true))
	wide := compileKernels(t, "me", wideMachine(t), edgeKernels(t, true))
	calls := edgeCalls(t, narrow) // the same kernels in the same order in both packages
	host := func(name string, p *codegen.Package, flags ...string) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if runtime.GOARCH != "amd64" && len(flags) > 0 {
				t.Skip("x86-64 CPU flags on a non-x86-64 host")
			}
			dir := writePackage(t, p, driverBufs(p, hostedIO, hostedPages+guardedBufs))
			run(t, dir, opt, "-passes=verify", "me.ll", "-o", "/dev/null")
			run(t, dir, opt, append([]string{"-O3", "me.ll", "-o", "k.bc"}, flags...)...)
			run(t, dir, llc, append([]string{"-O3", "-relocation-model=pic", "-filetype=obj", "k.bc", "-o", "k.o"}, flags...)...)
			run(t, dir, clang, "-O1", "-w", "driver.c", "k.o", "-lm", "-o", "driver")
			runCalls(t, filepath.Join(dir, "driver"), calls)
		})
	}
	host("x86-64", narrow)
	host("x86-64-v3", narrow, "-mcpu=x86-64-v3")
	host("native-wide", wide, "-mcpu=native")
	t.Run("aarch64", func(t *testing.T) {
		t.Parallel()
		p := compileKernels(t, "me", m, edgeKernels(t, false))
		driver, qemu := aarch64Driver(t, p, driverBufs(p, freestandingIO, freestandingPages+guardedBufs))
		runCalls(t, driver, edgeCalls(t, p), qemu)
	})
}

// TestPrefetch checks that the packed GEMM prefetches as the amd64 microkernels do (prefetch.go): in
// sgemm's k loop the Ã and B̃ data prefetchDist steps ahead (one line of Ã, 8 f32 of a k step, and the
// two lines of B̃'s 32 f32, on the wide machine) and the 8 rows of the C tile before it (first and last
// element: 16), in the four versions of the tile (whole, fewer rows, fewer columns, both: all in
// registers); no prefetch outside GEMMs.
func TestPrefetch(t *testing.T) {
	ll := wideModule(t, "pf", edgeKernels(t, false))
	fn := func(name string) string { return funcText(ll, "pf_"+name) }
	if n := strings.Count(fn("sgemm"), "call void @llvm.prefetch.p0i8"); n != 4*(3+16) {
		t.Errorf("sgemm: %d prefetches, want %d", n, 4*(3+16))
	}
	if n := strings.Count(fn("sgemm"), "i32 0, i32 3, i32 1)"); n != 4*(3+16) {
		t.Errorf("sgemm: %d read prefetches into all cache levels, want %d", n, 4*(3+16))
	}
	for _, k := range []string{"saxpy", "softmax", "sgemv"} {
		if strings.Contains(fn(k), "@llvm.prefetch") {
			t.Errorf("%s prefetches", k)
		}
	}
}

// TestTilesInRegisters checks that every version of sgemm's and dgemm's register tiles (whole tiles,
// fewer rows: guarded rows, fewer columns: masked groups; the small-product and the packed forms) is
// emitted as vector groups: the scratch array a tile falls back to when an access has no constant
// offset (unroll.go) is never used, on the default and the wide machine.
func TestTilesInRegisters(t *testing.T) {
	var ks []*ir.Kernel
	for _, k := range kdslKernels(t) {
		if k.Name == "sgemm" || k.Name == "dgemm" {
			ks = append(ks, k)
		}
	}
	m, err := target.Lookup("llvm")
	if err != nil {
		t.Fatal(err)
	}
	files, err := Backend{}.Generate(compileKernels(t, "tr", m, ks))
	if err != nil {
		t.Fatal(err)
	}
	arr := regexp.MustCompile(`(?m)^\t(%\d+) = alloca (float|double), i64 (\d+)`)
	for mach, ll := range map[string]string{"default": string(files[0].Data), "wide": wideModule(t, "tr", ks)} {
		for _, k := range []string{"sgemm", "dgemm"} {
			body := funcText(ll, "tr_"+k)
			found := arr.FindAllStringSubmatch(body, -1)
			if len(found) == 0 {
				t.Errorf("%s %s: no tile array (the test no longer finds what it checks)", mach, k)
			}
			for _, a := range found {
				if n := len(regexp.MustCompile(regexp.QuoteMeta(a[1])+`\b`).FindAllString(body, -1)); n != 1 {
					t.Errorf("%s %s: the tile array %s [%s x %s] is used %d times", mach, k, a[1], a[3], a[2], n-1)
				}
			}
		}
	}
}
