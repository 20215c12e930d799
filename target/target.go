// Package target describes the machines kgen generates code for: vector width, register file and cache
// sizes, from static defaults when cross-generating and from the host when generating for it. The
// analytical blocking model (Low et al., "Analytical Modeling Is Enough for High-Performance BLIS",
// TOMS 2016) turns these into GEMM cache blocks.
package target

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Cache is one cache level.
type Cache struct {
	Size, Ways, Line int // bytes, associativity, line bytes
}

// Machine is what the passes know about a target.
type Machine struct {
	Name       string // go, amd64, arm64, ptx, msl, llvm
	VecBytes   int    // SIMD register width in bytes (the portable Go target uses 16 as its unroll width)
	VecRegs    int    // number of SIMD registers
	L1, L2, L3 Cache
}

// Static defaults for cross-generation. amd64 is sized for AVX2 (the variant every x86-64-v3 machine
// runs); the AVX-512 variant's tile comes from its own register file at generation time.
var static = map[string]Machine{
	"go":    {Name: "go", VecBytes: 16, VecRegs: 16, L1: Cache{32 << 10, 8, 64}, L2: Cache{1 << 20, 16, 64}, L3: Cache{16 << 20, 16, 64}},
	"amd64": {Name: "amd64", VecBytes: 32, VecRegs: 16, L1: Cache{32 << 10, 8, 64}, L2: Cache{1 << 20, 16, 64}, L3: Cache{32 << 20, 16, 64}},
	"arm64": {Name: "arm64", VecBytes: 16, VecRegs: 32, L1: Cache{64 << 10, 4, 64}, L2: Cache{1 << 20, 8, 64}, L3: Cache{32 << 20, 16, 64}},
	"ptx":   {Name: "ptx", VecBytes: 16, VecRegs: 255, L1: Cache{228 << 10, 4, 128}, L2: Cache{50 << 20, 16, 128}},
	"msl":   {Name: "msl", VecBytes: 16, VecRegs: 128, L1: Cache{32 << 10, 4, 128}, L2: Cache{8 << 20, 16, 128}},
	"llvm":  {Name: "llvm", VecBytes: 16, VecRegs: 16, L1: Cache{32 << 10, 8, 64}, L2: Cache{1 << 20, 16, 64}, L3: Cache{16 << 20, 16, 64}},
}

// Names lists the known targets.
func Names() []string { return []string{"go", "amd64", "arm64", "ptx", "msl", "llvm"} }

// Lookup returns the static model of a target.
func Lookup(name string) (Machine, error) {
	m, ok := static[name]
	if !ok {
		return Machine{}, fmt.Errorf("unknown target %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return m, nil
}

// Host returns the static model of name with the cache sizes probed from this machine when it is the
// host's architecture (Linux sysfs; other systems keep the defaults).
func Host(name string) (Machine, error) {
	m, err := Lookup(name)
	if err != nil {
		return m, err
	}
	if name != runtime.GOARCH && name != "go" {
		return m, nil
	}
	for idx := 0; idx < 8; idx++ {
		dir := fmt.Sprintf("/sys/devices/system/cpu/cpu0/cache/index%d/", idx)
		level, err1 := readInt(dir + "level")
		typ, err2 := os.ReadFile(dir + "type")
		if err1 != nil || err2 != nil {
			break
		}
		if strings.TrimSpace(string(typ)) == "Instruction" {
			continue
		}
		size, err := readSize(dir + "size")
		if err != nil {
			continue
		}
		ways, _ := readInt(dir + "ways_of_associativity")
		line, _ := readInt(dir + "coherency_line_size")
		if ways <= 0 {
			ways = 8
		}
		if line <= 0 {
			line = 64
		}
		c := Cache{size, ways, line}
		switch level {
		case 1:
			m.L1 = c
		case 2:
			m.L2 = c
		case 3:
			m.L3 = c
		}
	}
	return m, nil
}

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

func readSize(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	mul := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mul, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mul, s = 1<<20, strings.TrimSuffix(s, "M")
	}
	n, err := strconv.Atoi(s)
	return n * mul, err
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
// architecture with the cache sizes probed at run time (Linux sysfs; the static model elsewhere).
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
