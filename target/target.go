// Package target describes the machines kgen generates code for: vector width, register file and cache
// sizes, from static defaults when cross-generating and from the host when generating for it. The
// analytical blocking model (Low et al., "Analytical Modeling Is Enough for High-Performance BLIS",
// TOMS 2016) turns these into GEMM cache blocks.
package target

import (
	"runtime"
	"slices"
	"strings"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/target/hostcpu"
	"golang.org/x/sys/cpu"
)

// Cache is one cache level.
type Cache struct {
	Size, Ways, Line int // bytes, associativity, line bytes
}

// Machine is what the passes know about a target: one row of the target table.
type Machine struct {
	Name       string // go, amd64, arm64, ptx, msl, llvm
	Sub        string // sub-target (ptx: sm_80, sm_90a; msl: 3.0, 3.1), see spec.go
	VecBytes   int    // SIMD register width in bytes (the portable Go target uses 16 as its unroll width)
	VecRegs    int    // number of SIMD registers
	L1, L2, L3 Cache
	// Cores is the core count the parallel cut-offs below were tuned for.
	Cores int
	// Variants are the implementations a generated package chooses among at run time on this target,
	// best first; the portable Go code ("go") is always the last.
	Variants []Variant
	// Knobs are the thresholds the passes put into the loop IR as plan symbols (defaults of the tuner's
	// knobs).
	Knobs Knobs
	// Probed is set when Host read the cache sizes from this machine.
	Probed bool
}

// Variant is one implementation level of a target (amd64: avx512, avx2; arm64: neon; everywhere: the
// portable go), with its register file and the GEMM register tile its microkernels use. The tiles are
// the defaults of the MR and NR plan symbols tensorize records per variant; backends build their
// microkernels for the tile the plan gives, not for a tile of their own.
type Variant struct {
	Name     string
	VecBytes int // SIMD register width in bytes
	VecRegs  int // number of SIMD registers
	// MMA is the key of the variant's shapes in the MMA table (mma.go: "amd64:avx2", ...), whose f32
	// and f64 microkernel shapes M×N are its register tiles.
	MMA string
	// TileF32 and TileF64 are the register tiles MR×NR of a variant without MMA shapes (the portable
	// scalar microkernel).
	TileF32, TileF64 [2]int
	// Pairs: the variant differs from the one after it only for GEMMs whose operands are both bf16 (it
	// runs them on bf16 pair panels, codegen/bf16.go); its tile is the MMA shape for bf16 inputs
	// (Tile(2)) and its blocks are sized for 2-byte elements.
	Pairs bool
	// SmallDeepWork, when positive, replaces the knob of that name for the variant's GEMM slots, given for
	// 4-byte elements (passes.deepWorkFor scales it to the slot's: 448³ f32 is 317³ f64): the deep
	// version (passes.deepGemm) pays with AVX-512's wide tiles (14×32, 14×16: sgemm 256³ 10% and dgemm
	// 160³ 14% faster on one Zen 5 core, sgemm 320–448³ 5–13%) and loses with AVX2's (6×16, 6×8: sgemm
	// 256³ 9%, dgemm 256³ 24% slower on the same core), docs/PERF.md, sessions 15 and 16.
	SmallDeepWork int
}

// Tile returns the register tile for elements of elem bytes (4 or 8), or 0, 0.
func (v Variant) Tile(elem int) (mr, nr int) {
	t := map[int]ir.DType{4: ir.F32, 8: ir.F64}[elem]
	acc := t
	if v.Pairs {
		t, acc = map[int]ir.DType{2: ir.BF16}[elem], ir.F32
	}
	if t == ir.Invalid {
		return 0, 0
	}
	if v.MMA != "" {
		s, err := LookupMMA(v.MMA, t, acc, false)
		if err != nil {
			return 0, 0
		}
		return s.M, s.N
	}
	if elem == 4 {
		return v.TileF32[0], v.TileF32[1]
	}
	return v.TileF64[0], v.TileF64[1]
}

// Knobs are the thresholds that used to be constants of the passes, tuned on one machine (a two-core
// Zen 3, docs/PERF.md). The passes turn the GEMM ones into plan symbols of each GEMM slot, so a variant or
// the tuner can change them without a new loop nest.
type Knobs struct {
	// SmallGemmWork: a GEMM of at most this many multiply-adds (M·N·K) runs unpacked (slot.SmallWork).
	SmallGemmWork int
	// SmallDeepWork: a GEMM of at most this many multiply-adds whose C is small against its depth
	// (M·N ≤ 1024·K, M > 3·MR) also runs unpacked (slot.SmallDeep; passes/pack.go, deepGemm); 0: never.
	// A variant may set its own (Variant.SmallDeepWork).
	SmallDeepWork int
	// RowsMax: a GEMM of at most this many rows runs as rows kernels (slot.RowsMax), RowsNB columns
	// per call (slot.RowsNB).
	RowsMax, RowsNB int
	// RowBlocks: on W ≥ 2 workers, a packed GEMM whose rows give each worker at least MC/RowBlocks
	// (RowBlocks·M ≥ W·MC) runs its row blocks in parallel, each worker packing its own A block; on one,
	// one with M ≥ RowBlocks·MC runs the same version inline (slot.RowBlocks; docs/DESIGN.md, `parallel`).
	RowBlocks int
	// MinParallelWork is the run time's cut-off (rt.MinParallelWork, which TestTableConsistent keeps
	// equal): a parallel loop with less estimated work runs on the calling goroutine. Not a plan symbol
	// yet: the tuner sets rt.MinParallelWork.
	MinParallelWork int
}

// The variants of the target table. The portable tile: 3×2 measured fastest for scalar Go under both
// GOAMD64=v1 and v3 (4×4 spills; 4×2 and 2×4 lose under one of the two levels; see docs/PERF.md). The
// native tiles are the MMA table's CPU shapes: AVX2 (16 ymm) 6×16 f32 and 6×8 f64, 12 accumulators + 2
// B̃ vectors + 1-2 broadcast registers (the BLIS haswell shapes); AVX-512 (32 zmm) 14×32 and 14×16, 28
// accumulators + 2 B̃ + 2 broadcast registers; NEON (32 q registers) 8×12 f32 (24 accumulators) and 6×8
// f64.
var (
	portable = Variant{Name: "go", VecBytes: 16, VecRegs: 16, TileF32: [2]int{3, 2}, TileF64: [2]int{3, 2}}
	avx512   = Variant{Name: "avx512", VecBytes: 64, VecRegs: 32, MMA: "amd64:avx512", SmallDeepWork: 448 * 448 * 448}
	// avx512bf16: avx512 with VDPBF16PS (AVX512_BF16) for bf16 GEMMs, 14×32 on pair panels.
	avx512bf16 = Variant{Name: "avx512bf16", VecBytes: 64, VecRegs: 32, MMA: "amd64:avx512", Pairs: true, SmallDeepWork: 448 * 448 * 448}
	avx2       = Variant{Name: "avx2", VecBytes: 32, VecRegs: 16, MMA: "amd64:avx2"}
	neon       = Variant{Name: "neon", VecBytes: 16, VecRegs: 32, MMA: "arm64:neon"}
)

// cpuKnobs are the thresholds measured on the CPU targets (docs/PERF.md). RowsNB 2048 (was 4096): one
// core reads B as fast with either once a one-row product reads eight rows of B at a time, and a
// 4096-wide product makes two blocks, one per worker of two (session 17).
var cpuKnobs = Knobs{SmallGemmWork: 80 * 80 * 80, SmallDeepWork: 0, RowsMax: 4, RowsNB: 2048, RowBlocks: 4, MinParallelWork: 1 << 16}

// Static defaults for cross-generation: the target table. amd64 is sized for AVX2 (the variant every
// x86-64-v3 machine runs); the AVX-512 variant's register file is in its Variant.
var static = map[string]Machine{
	"go": {Name: "go", VecBytes: 16, VecRegs: 16, L1: Cache{32 << 10, 8, 64}, L2: Cache{1 << 20, 16, 64}, L3: Cache{16 << 20, 16, 64},
		Cores: 2, Variants: []Variant{portable}, Knobs: cpuKnobs},
	"amd64": {Name: "amd64", VecBytes: 32, VecRegs: 16, L1: Cache{32 << 10, 8, 64}, L2: Cache{1 << 20, 16, 64}, L3: Cache{32 << 20, 16, 64},
		Cores: 2, Variants: []Variant{avx512bf16, avx512, avx2, portable}, Knobs: cpuKnobs},
	"arm64": {Name: "arm64", VecBytes: 16, VecRegs: 32, L1: Cache{64 << 10, 4, 64}, L2: Cache{1 << 20, 8, 64}, L3: Cache{32 << 20, 16, 64},
		Cores: 2, Variants: []Variant{neon, portable}, Knobs: cpuKnobs},
	"ptx": {Name: "ptx", VecBytes: 16, VecRegs: 255, L1: Cache{228 << 10, 4, 128}, L2: Cache{50 << 20, 16, 128},
		Cores: 2, Variants: []Variant{portable}, Knobs: cpuKnobs},
	"msl": {Name: "msl", VecBytes: 16, VecRegs: 128, L1: Cache{32 << 10, 4, 128}, L2: Cache{8 << 20, 16, 128},
		Cores: 2, Variants: []Variant{portable}, Knobs: cpuKnobs},
	"llvm": {Name: "llvm", VecBytes: 16, VecRegs: 16, L1: Cache{32 << 10, 8, 64}, L2: Cache{1 << 20, 16, 64}, L3: Cache{16 << 20, 16, 64},
		Cores: 2, Variants: []Variant{portable}, Knobs: cpuKnobs},
}

// Variant returns the variant of m named name.
func (m Machine) Variant(name string) (Variant, bool) {
	for _, v := range m.Variants {
		if v.Name == name {
			return v, true
		}
	}
	return Variant{}, false
}

// Native returns the variants other than the portable one (those a SIMD backend implements).
func (m Machine) Native() []Variant {
	var out []Variant
	for _, v := range m.Variants {
		if v.Name != portable.Name {
			out = append(out, v)
		}
	}
	return out
}

// Portable returns the model the portable Go code is blocked for when a package is built for m: the
// "go" row of the table, with m's caches when they were probed from this machine. Every target's
// package carries the same portable code, so every target's plan gives it the same defaults.
func (m Machine) Portable() Machine {
	p := static["go"]
	p.Variants = slices.Clone(p.Variants)
	if m.Probed {
		p.L1, p.L2, p.L3, p.Probed = m.L1, m.L2, m.L3, true
	}
	return p
}

// WithVariant returns m with the register file of variant v (the model the blocking of v's tile uses).
func (m Machine) WithVariant(v Variant) Machine {
	m.VecBytes, m.VecRegs = v.VecBytes, v.VecRegs
	return m
}

// Names lists the known targets.
func Names() []string { return []string{"go", "amd64", "arm64", "ptx", "msl", "llvm"} }

// Lookup returns the static model of a target spec (a target, or target:sub-target, see ParseSpec).
func Lookup(spec string) (Machine, error) {
	name, sub, err := ParseSpec(spec)
	if err != nil {
		return Machine{}, err
	}
	m := static[name]
	m.Sub = sub
	m.Variants = slices.Clone(m.Variants)
	if name == "llvm" {
		m.VecBytes, m.VecRegs = llvmVectors(sub)
	}
	return m, nil
}

// llvmVectors is the vector register file the llvm target's loops are shaped for on a triple: the
// width of its vector loops (passes/vectorize: VecBytes / element size lanes) and, through MMAKey, its
// register tile. x86-64 assumes AVX2 (x86-64-v3, 16 ymm), what the default 6×16 tile is sized for;
// aarch64 NEON (32 q registers); other triples 16-byte vectors. Host widens x86-64 to AVX-512 when
// this machine has it (llc -mcpu=native then emits zmm code).
func llvmVectors(triple string) (vecBytes, vecRegs int) {
	switch arch, _, _ := strings.Cut(triple, "-"); arch {
	case "x86_64", "amd64":
		return 32, 16
	case "aarch64", "arm64", "aarch64_be":
		return 16, 32
	}
	return 16, 16
}

// llvmHostArch is the GOARCH of an LLVM triple's architecture, or "".
func llvmHostArch(triple string) string {
	switch arch, _, _ := strings.Cut(triple, "-"); arch {
	case "x86_64", "amd64":
		return "amd64"
	case "aarch64", "arm64":
		return "arm64"
	}
	return ""
}

// Host returns the static model of name with the cache sizes probed from this machine when it is the
// host's architecture (Linux sysfs, else CPUID on x86-64: package hostcpu; other systems keep the defaults).
func Host(name string) (Machine, error) {
	m, err := Lookup(name)
	if err != nil {
		return m, err
	}
	arch := m.Name
	if m.Name == "llvm" {
		// An LLVM module for this machine's architecture is compiled with -mcpu=native: it gets the
		// host's caches and, on x86-64 with AVX-512F, 64-byte vectors and 32 registers.
		arch = llvmHostArch(m.Sub)
		if arch == "amd64" && runtime.GOARCH == "amd64" && cpu.X86.HasAVX512F {
			m.VecBytes, m.VecRegs = 64, 32
		}
	}
	if arch != runtime.GOARCH && m.Name != "go" {
		return m, nil
	}
	cs, _ := hostcpu.Caches()
	for _, pc := range cs {
		c := Cache{pc.Size, pc.Ways, pc.Line}
		if c.Ways <= 0 {
			c.Ways = 8
		}
		if c.Line <= 0 {
			c.Line = 64
		}
		switch pc.Level {
		case 1:
			m.L1 = c
		case 2:
			m.L2 = c
		case 3:
			m.L3 = c
		}
		m.Probed = true
	}
	return m, nil
}

// Blocks are the GEMM cache blocks for one microkernel tile.
type Blocks struct {
	MR, NR, MC, KC, NC int
}

// GemmBlocks applies the analytical model: KC so that a KC×NR micro-panel of B stays in L1 next to the
// streaming A micro-panel, MC so that the MC×KC block of A fills L2 minus two ways, NC so that the KC×NC
// panel of B takes L3 minus the ways A needs. Results are rounded down to multiples of MR and NR and
// clamped to sensible ranges.
func GemmBlocks(m Machine, mr, nr, elem int) Blocks {
	b := Blocks{MR: mr, NR: nr}
	l1 := m.L1
	sets1 := l1.Size / (l1.Ways * l1.Line)
	car := (l1.Ways - 1) * mr / (mr + nr) // ways for the A micro-panel
	if car < 1 {
		car = 1
	}
	b.KC = car * sets1 * l1.Line / (mr * elem)
	b.KC = clamp(b.KC/8*8, 64, 512)
	// Measured (docs/PERF.md): with short tiles (6 rows) the model's single L1 way for Ã gives KC ≈ 170,
	// and a KC of at least 256, which halves the passes over C, wins over keeping B̃ strictly in L1.
	b.KC = max(b.KC, MinKC)
	l2 := m.L2
	sets2 := l2.Size / (l2.Ways * l2.Line)
	b.MC = (l2.Ways - 2) * sets2 * l2.Line / (b.KC * elem)
	// The model is an upper bound (BLIS ships smaller blocks): keep A's block at half of it.
	b.MC = clamp(b.MC/2/mr*mr, mr, 960/mr*mr)
	l3 := m.L3
	if l3.Size == 0 {
		l3 = Cache{8 << 20, 16, 64}
	}
	b.NC = (l3.Size / 2) / (b.KC * elem)
	b.NC = clamp(b.NC/nr*nr, nr, 4096/nr*nr)
	return b
}

// MinKC is the smallest K block GemmBlocks returns.
const MinKC = 256

// HostGemmBlocks returns the blocks for a tile on the machine this program runs on: the model of its
// architecture with the cache sizes probed at run time (Linux sysfs or CPUID, package hostcpu; the static model elsewhere).
// Generated packages call it once, at init, for every assembly microkernel.
func HostGemmBlocks(mr, nr, elem int) Blocks {
	m, err := Host(runtime.GOARCH)
	if err != nil {
		m = static["go"]
	}
	return GemmBlocks(m, mr, nr, elem)
}

func clamp(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}
