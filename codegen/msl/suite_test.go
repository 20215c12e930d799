package msl

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
)

// suite is every kernel the CPU tests run, emitted into one source and compiled into one driver (one
// clang build for the package's tests): the library kernels (msl:3.1 pipeline), the planted-bug
// kernels and the register-tile GEMMs, the latter two with their launches renamed.
type suite struct {
	src      *Source
	driver   string
	library  []codegen.Kernel
	planted  []codegen.Kernel
	plants   []planted
	regTiles []codegen.Kernel
	extra    []codegen.Kernel // the other kdsl files of the repository
	err      error
}

var (
	suiteOnce sync.Once
	theSuite  suite
)

func renameLaunches(f *ir.Func, prefix string) {
	ir.WalkNodes(f.Body, func(n ir.Node) bool {
		if l, ok := n.(*ir.Launch); ok {
			l.Name = prefix + l.Name
		}
		return true
	})
}

// regTileKernels are GEMMs whose GPU loop IR holds thread-scope MMAs (register tiles per thread,
// staged through threadgroup memory): the ptx:sm_80 pipeline maps f32 GEMMs that way, and the GPU
// loop IR is the same for both backends, so the MSL lowering of register tiles is tested on it (the
// msl pipeline gives every f32/f16/bf16 GEMM simdgroup tiles, and its f64 ones have no Metal type).
// extraSources are the repository's other kdsl files: GEMMs with fused epilogues (GELU, sigmoid, a
// scaled residual), the parser's example, kernels whose names are MSL or C++ words (renamed), and row
// maxima and minima (the NaN rule of simd_max/simd_min).
var extraSources = []string{"../../passes/testdata/mma.kdsl", "../../parse/testdata/example.kdsl", "testdata/names.kdsl", "testdata/rows.kdsl"}

var regTileKernels = map[string]bool{"sgemm": true, "sgemm_tt": true, "gemm_bias_relu": true}

func getSuite(t *testing.T) *suite {
	t.Helper()
	clang := clangPath(t)
	suiteOnce.Do(func() {
		s := &theSuite
		s.err = fmt.Errorf("the suite's setup failed in another test") // until it completes
		text := libraryText(t)
		lib := compilePackage(t, "kernels.kdsl", text, "msl:3.1")
		s.library = lib.Kernels
		all := append([]codegen.Kernel{}, lib.Kernels...)
		for _, pb := range plantedBugs {
			for _, k := range compilePackage(t, "kernels.kdsl", text, "msl").Kernels {
				if k.K.Name == pb.kernel {
					pb.plant(t, k.F)
					renameLaunches(k.F, "planted_"+pb.name+"_")
					s.planted = append(s.planted, k)
					s.plants = append(s.plants, pb)
				}
			}
		}
		for _, k := range compilePackage(t, "kernels.kdsl", text, "ptx:sm_80").Kernels {
			if regTileKernels[k.K.Name] {
				renameLaunches(k.F, "regtile_")
				s.regTiles = append(s.regTiles, k)
			}
		}
		for _, file := range extraSources {
			text, err := os.ReadFile(file)
			if err != nil {
				s.err = err
				return
			}
			for _, k := range compilePackage(t, filepath.Base(file), string(text), "msl:3.1").Kernels {
				renameLaunches(k.F, "extra_")
				s.extra = append(s.extra, k)
			}
		}
		all = append(append(append(all, s.planted...), s.regTiles...), s.extra...)
		s.src, s.err = BuildSource(&codegen.Package{Name: "k", Source: "kernels.kdsl", Target: "msl:3.1", Kernels: all})
		if s.err != nil {
			return
		}
		for _, k := range append(append(append([]codegen.Kernel{}, s.planted...), s.regTiles...), s.extra...) {
			if err, ok := s.src.Unsupported[k.K.Name]; ok {
				s.err = fmt.Errorf("%s left out: %v", k.K.Name, err)
				return
			}
		}
		s.driver, s.err = buildDriver(clang, s.src)
	})
	if theSuite.err != nil {
		t.Fatal(theSuite.err)
	}
	return &theSuite
}

// TestKernelsRunOnCPU compiles every kernel of kernels.kdsl that the backend emits (into the suite's
// driver) and runs each against the interpreter on ragged shapes. Every kernel either runs or is left
// out with a "not supported yet" error.
func TestKernelsRunOnCPU(t *testing.T) {
	t.Parallel()
	s := getSuite(t)
	for i, k := range s.library {
		if err, ok := s.src.Unsupported[k.K.Name]; ok {
			t.Logf("%s left out: %v", k.K.Name, err)
			if !IsNotSupported(err) {
				t.Errorf("%s: %v", k.K.Name, err)
			}
			continue
		}
		t.Run(k.K.Name, func(t *testing.T) {
			t.Parallel()
			for _, err := range kernelErrors(s.driver, s.src, k.K, uint64(i), 3) {
				t.Error(err)
			}
		})
	}
}

// TestRegisterTileMMA runs the register-tile GEMMs (regTileKernels) against the interpreter.
func TestRegisterTileMMA(t *testing.T) {
	t.Parallel()
	s := getSuite(t)
	if len(s.regTiles) != len(regTileKernels) {
		t.Fatalf("%d register-tile kernels, want %d", len(s.regTiles), len(regTileKernels))
	}
	for i, k := range s.regTiles {
		if fn := launchesOf(s.src, k.K)[0].Function; !strings.Contains(kernelText(t, s.src.Text, fn), "thread: a register tile") {
			t.Errorf("%s: no register tile in %s", k.K.Name, fn)
		}
		t.Run(k.K.Name, func(t *testing.T) {
			t.Parallel()
			for _, err := range kernelErrors(s.driver, s.src, k.K, uint64(100+i), 3) {
				t.Error(err)
			}
		})
	}
}

// TestOtherKernelsRunOnCPU runs the kernels of extraSources against the interpreter.
func TestOtherKernelsRunOnCPU(t *testing.T) {
	t.Parallel()
	s := getSuite(t)
	for i, k := range s.extra {
		t.Run(k.K.Name, func(t *testing.T) {
			t.Parallel()
			for _, err := range kernelErrors(s.driver, s.src, k.K, uint64(200+i), 3) {
				t.Error(err)
			}
		})
	}
}

// TestPlantedBugs shows that the CPU run of emitted MSL catches the bugs a GPU backend makes: a missing
// barrier (poisoned threadgroup memory read in forward order; a device value read before it is
// written in reverse order), a barrier not reached by every thread,
// a simdgroup MMA in divergent control flow, a wrong simdgroup tile offset and an off-by-one edge
// (guard page). Each planted kernel must fail with the error named.
func TestPlantedBugs(t *testing.T) {
	t.Parallel()
	s := getSuite(t)
	if len(s.planted) != len(plantedBugs) {
		t.Fatalf("%d planted kernels, want %d", len(s.planted), len(plantedBugs))
	}
	for i, k := range s.planted {
		pb := s.plants[i]
		t.Run(pb.name, func(t *testing.T) {
			errs := kernelErrors(s.driver, s.src, k.K, 1, 3)
			var msgs []string
			for _, e := range errs {
				msgs = append(msgs, e.Error())
			}
			all := strings.Join(msgs, "\n")
			if len(errs) == 0 || !strings.Contains(all, pb.want) {
				t.Errorf("planted %s in %s: the CPU run reported %q, want an error containing %q", pb.name, pb.kernel, all, pb.want)
			} else {
				t.Logf("caught: %s", msgs[0])
			}
		})
	}
}

// TestSimdgroupWholeTiles runs sgemm, hgemm and bgemm (and the planted wrong tile offset) on a shape
// whose interior tiles are whole, so that simdgroup MMAs take the direct simdgroup_load path (in the
// operands' own type: float, half, bfloat) as well as the scratch path at the edges: the GEMMs must
// match, the planted kernel must not.
func TestSimdgroupWholeTiles(t *testing.T) {
	t.Parallel()
	s := getSuite(t)
	dims := map[string]int{"M": 40, "N": 24, "K": 27}
	find := func(ks []codegen.Kernel, name string) *ir.Kernel {
		for _, k := range ks {
			if k.K.Name == name {
				return k.K
			}
		}
		t.Fatalf("no kernel %s", name)
		return nil
	}
	sg := find(s.library, "sgemm")
	if !strings.Contains(kernelText(t, s.src.Text, "sgemm_0"), "simdgroup_load(mat_a, &As[") {
		t.Fatal("sgemm_0 has no direct simdgroup_load of the staged tile")
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for _, err := range shapeErrors(s.driver, sg, launchesOf(s.src, sg), dims, rng, 1) {
		t.Error(err)
	}
	// 16-bit GEMMs: whole tiles as simdgroup_half8x8 / simdgroup_bfloat8x8 into the float accumulator
	for _, c := range []struct{ kernel, tile string }{{"hgemm", "simdgroup_half8x8"}, {"bgemm", "simdgroup_bfloat8x8"}} {
		k := find(s.library, c.kernel)
		if txt := kernelText(t, s.src.Text, launchesOf(s.src, k)[0].Function); !strings.Contains(txt, c.tile+" mat_a") || !strings.Contains(txt, "simdgroup_float8x8 mat_a") {
			t.Errorf("%s: no whole-tile %s load beside the float edge path", c.kernel, c.tile)
		}
		for _, err := range shapeErrors(s.driver, k, launchesOf(s.src, k), dims, rng, 1) {
			t.Error(err)
		}
	}
	for i, pb := range s.plants {
		if pb.name != "simdgroup_tile_offset" {
			continue
		}
		k := s.planted[i].K
		// K = 27: the last K step is an edge; the first three are whole tiles in both paths
		if errs := shapeErrors(s.driver, k, launchesOf(s.src, k), dims, rng, 1); len(errs) == 0 {
			t.Errorf("the planted tile offset passed on %v", dims)
		}
	}
}
