package amd64

import (
	"fmt"

	"golang.org/x/sys/cpu"

	"github.com/kgen-dev/kgen/target"
)

// Element types and instruction sets understood by the generator.
const (
	F32 = "f32"
	F64 = "f64"
	// BF16 kernels (AVX512 only, packed only) take bf16 pair panels (codegen/bf16.go: one 32-bit word
	// holds the elements of two consecutive k steps) and accumulate with VDPBF16PS into f32; C, alpha,
	// beta and bias are float32.
	BF16   = "bf16"
	AVX2   = "avx2"
	AVX512 = "avx512"
)

// GemmKernel describes one GEMM microkernel to generate.
type GemmKernel struct {
	Name    string // Go identifier of the generated function
	Elem    string // F32 or F64
	ISA     string // AVX2 or AVX512
	MR, NR  int    // register tile; NR must be a multiple of the vector length
	KUnroll int    // k-loop unroll factor, a power of two (0 means 4)

	// PrefetchA and PrefetchB are the distances, in k steps, at which Ã and
	// B̃ are prefetched (PREFETCHT0) ahead of the step being computed.
	// 0 means the default; a negative value disables that prefetch.
	// Unpacked kernels ignore PrefetchA and prefetch the B row PrefetchB
	// rows ahead (default 64: B rows are strided, so only software prefetch
	// far enough ahead to cover DRAM latency keeps a strip of B read from
	// memory from being latency-bound).
	PrefetchA, PrefetchB int

	// PrefetchC is how many k steps before the end of a packed kernel's k loop the C tile is prefetched
	// (PREFETCHT0) a second time, 0 meaning defaultPrefetchC and a negative value none. The prefetch at
	// entry starts C's way from memory, but the Ã and B̃ panels streamed through L1 during the k loop
	// evict it again before the epilogue reads it; BLIS's and OpenBLAS's AVX-512 kernels also touch C
	// late. Rounded down to whole unrolled iterations (at least one); unpacked kernels ignore it.
	PrefetchC int

	// Unpacked selects the strided ("unpacked", BLIS sup / LIBXSMM style)
	// contract of docs/MICROKERNEL.md instead of packed panels:
	//
	//	func(kc int, a *T, ars, acs int, b *T, ldb int, c *T, ldc int, m, n int, alpha, beta T, bias *T, ep int)
	//
	// A is read at a[i*ars+p*acs] for i < m only, B at b[p*ldb+j] for j < n
	// only: nothing past the m×kc and kc×n operands is ever read.
	Unpacked bool
}

// PeakKernel describes an FMA-peak microbenchmark kernel:
// func Name(iters int) runs iters iterations of Chains independent
// VFMADD231PS/PD on registers only.
type PeakKernel struct {
	Name   string
	Elem   string
	ISA    string
	Chains int // independent accumulator chains (0 means the default)
}

// Default prefetch distances in k steps.
const (
	defaultPrefetchA = 8
	defaultPrefetchB = 8
	// defaultPrefetchC: 128 k steps stream at most 128·(14+32)·4 = 23 KiB of panels (f32; f64 14+16
	// columns: 30 KiB), within a 48 KiB L1, and take over 1000 cycles, far more than an L3 or DRAM
	// latency. Measured on the Zen 5 against 32 steps and none (docs/PERF.md, session 11).
	defaultPrefetchC = 128
	// defaultPrefetchU is the unpacked kernels' B distance in rows: at about 6 cycles per row it is
	// ~400 cycles ahead, near DRAM latency; with 8 rows a skinny product kept only 8 lines in flight.
	defaultPrefetchU = 64
)

// TileFor returns the default register tile MR×NR for elem on isa: the amd64 row of the target table
// (target/target.go; a package's plan may set another). AVX2 (16 ymm): f32 6×16 and f64 6×8; AVX-512
// (32 zmm): f32 and bf16 pairs 14×32, f64 14×16. It returns 0, 0 for an unknown pair.
func TileFor(elem, isa string) (mr, nr int) {
	if vecLen(elem, isa) == 0 {
		return 0, 0
	}
	m, err := target.Lookup("amd64")
	if err != nil {
		return 0, 0
	}
	v, ok := m.Variant(isa)
	if !ok {
		return 0, 0
	}
	size := 4 // f32, and bf16 pairs (one f32 accumulator per column)
	if elem == F64 {
		size = 8
	}
	return v.Tile(size)
}

// NewGemmKernel returns the default kernel for elem and isa, named e.g.
// "sgemm6x16AVX2" or "dgemm14x16AVX512".
func NewGemmKernel(elem, isa string) GemmKernel {
	mr, nr := TileFor(elem, isa)
	return NewGemmKernelTile(elem, isa, mr, nr)
}

// NewGemmKernelTile returns the kernel for elem and isa with register tile mr×nr (Validate says whether
// the generator can build it), named like NewGemmKernel's.
func NewGemmKernelTile(elem, isa string, mr, nr int) GemmKernel {
	p := "sgemm"
	switch elem {
	case F64:
		p = "dgemm"
	case BF16:
		p = "bgemm"
	}
	return GemmKernel{
		Name:    fmt.Sprintf("%s%dx%d%s", p, mr, nr, isaSuffix(isa)),
		Elem:    elem,
		ISA:     isa,
		MR:      mr,
		NR:      nr,
		KUnroll: 4,
	}
}

// NewGemmKernelU returns the default unpacked (strided) kernel for elem and
// isa: the same register tile as NewGemmKernel, named with a "U" suffix, e.g.
// "sgemm6x16AVX2U" or "dgemm14x16AVX512U".
func NewGemmKernelU(elem, isa string) GemmKernel {
	k := NewGemmKernel(elem, isa)
	k.Name += "U"
	k.Unpacked = true
	return k
}

// NewPeakKernel returns the default FMA-peak kernel for elem and isa, named
// e.g. "fmaPeakAVX2F32".
func NewPeakKernel(elem, isa string) PeakKernel {
	return PeakKernel{
		Name: fmt.Sprintf("fmaPeak%s%s", isaSuffix(isa), elemSuffix(elem)),
		Elem: elem,
		ISA:  isa,
	}
}

// DefaultKernels returns the four default GEMM kernels (f32/f64 × AVX2/AVX-512).
func DefaultKernels() []GemmKernel {
	return []GemmKernel{
		NewGemmKernel(F32, AVX2),
		NewGemmKernel(F64, AVX2),
		NewGemmKernel(F32, AVX512),
		NewGemmKernel(F64, AVX512),
	}
}

// DefaultKernelsBF16 returns the bf16 pair-panel kernels (VDPBF16PS, AVX512_BF16): one, the AVX-512
// f32 tile.
func DefaultKernelsBF16() []GemmKernel {
	return []GemmKernel{NewGemmKernel(BF16, AVX512)}
}

// HostSupportsBF16 reports whether the running CPU can execute the bf16 kernels (AVX-512F and
// AVX512_BF16).
func HostSupportsBF16() bool { return HostSupports(AVX512) && cpu.X86.HasAVX512BF16 }

// DefaultKernelsU returns the four default unpacked GEMM kernels
// (f32/f64 × AVX2/AVX-512), see NewGemmKernelU.
func DefaultKernelsU() []GemmKernel {
	return []GemmKernel{
		NewGemmKernelU(F32, AVX2),
		NewGemmKernelU(F64, AVX2),
		NewGemmKernelU(F32, AVX512),
		NewGemmKernelU(F64, AVX512),
	}
}

// DefaultPeaks returns the four default FMA-peak kernels.
func DefaultPeaks() []PeakKernel {
	return []PeakKernel{
		NewPeakKernel(F32, AVX2),
		NewPeakKernel(F64, AVX2),
		NewPeakKernel(F32, AVX512),
		NewPeakKernel(F64, AVX512),
	}
}

// HostSupports reports whether the running CPU can execute kernels for isa.
func HostSupports(isa string) bool {
	switch isa {
	case AVX2:
		return cpu.X86.HasAVX2 && cpu.X86.HasFMA
	case AVX512:
		return cpu.X86.HasAVX512F
	}
	return false
}

// VecLen returns the number of elem lanes in one vector register of isa
// (8/4 for AVX2, 16/8 for AVX-512), or 0 if unknown.
func VecLen(elem, isa string) int { return vecLen(elem, isa) }

// ChainsOrDefault returns p.Chains, or the default number of chains for p.ISA.
func (p PeakKernel) ChainsOrDefault() int {
	if p.Chains > 0 {
		return p.Chains
	}
	if p.ISA == AVX512 {
		return 24
	}
	return 12
}

// FlopsPerIter returns the floating-point operations one iteration of the
// peak kernel performs (2 per FMA lane).
func (p PeakKernel) FlopsPerIter() int {
	return 2 * p.ChainsOrDefault() * vecLen(p.Elem, p.ISA)
}

// Validate checks p.
func (p PeakKernel) Validate() error {
	if !isIdent(p.Name) {
		return fmt.Errorf("peak kernel: bad name %q", p.Name)
	}
	if vecLen(p.Elem, p.ISA) == 0 {
		return fmt.Errorf("peak kernel %s: bad elem/isa %q/%q", p.Name, p.Elem, p.ISA)
	}
	// Two multiplicand registers plus the chains.
	if c := p.ChainsOrDefault(); c+2 > numVecRegs(p.ISA) {
		return fmt.Errorf("peak kernel %s: %d chains do not fit in %d registers", p.Name, c, numVecRegs(p.ISA))
	}
	return nil
}

// Flops returns the floating-point operations of one call with the given kc
// on a full tile (2·MR·NR·kc).
func (k GemmKernel) Flops(kc int) int { return 2 * k.MR * k.NR * kc }

// Validate checks that k names a known element type and ISA, and that its
// tile fits the register file: MR·NR/VL accumulators, NR/VL B̃ vectors and at
// least one broadcast register, plus the epilogue's scratch registers.
func (k GemmKernel) Validate() error {
	if !isIdent(k.Name) {
		return fmt.Errorf("gemm kernel: bad name %q", k.Name)
	}
	vl := vecLen(k.Elem, k.ISA)
	if vl == 0 {
		return fmt.Errorf("gemm kernel %s: bad elem/isa %q/%q", k.Name, k.Elem, k.ISA)
	}
	if k.MR < 1 || k.NR < vl || k.NR%vl != 0 {
		return fmt.Errorf("gemm kernel %s: tile %dx%d: MR must be >= 1 and NR a multiple of %d", k.Name, k.MR, k.NR, vl)
	}
	if k.Elem == BF16 && k.Unpacked {
		return fmt.Errorf("gemm kernel %s: bf16 kernels read pair panels; there is no unpacked one", k.Name)
	}
	if k.NR >= 64 || k.MR > 64 {
		return fmt.Errorf("gemm kernel %s: tile %dx%d too large (NR < 64, MR <= 64)", k.Name, k.MR, k.NR)
	}
	if u := k.unroll(); u < 1 || u > 16 || u&(u-1) != 0 {
		return fmt.Errorf("gemm kernel %s: KUnroll %d is not a power of two in 1..16", k.Name, k.KUnroll)
	}
	nv := k.NR / vl
	free := numVecRegs(k.ISA) - k.MR*nv
	need := nv + 1 // loop: B̃ vectors + one broadcast; epilogue (avx512): bias vectors + 1
	if k.ISA == AVX2 && need < 3 {
		need = 3 // avx2 epilogue: beta, mask, loaded C
	}
	if k.ISA == AVX512 && nv > 7 {
		return fmt.Errorf("gemm kernel %s: %d column vectors need more than 7 opmask registers", k.Name, nv)
	}
	if k.Unpacked {
		if k.ISA == AVX2 {
			need = max(need, nv+2) // edge-n k loop: B vectors + one broadcast + the column mask
		}
		if k.MR > 14 {
			return fmt.Errorf("gemm kernel %s: unpacked kernels address at most 14 rows of A (MR = %d)", k.Name, k.MR)
		}
		if k.PrefetchB > 4096 {
			return fmt.Errorf("gemm kernel %s: unpacked PrefetchB %d rows is beyond any sensible distance", k.Name, k.PrefetchB)
		}
	}
	if free < need {
		return fmt.Errorf("gemm kernel %s: tile %dx%d needs %d accumulators + %d scratch registers, %s has %d",
			k.Name, k.MR, k.NR, k.MR*nv, need, k.ISA, numVecRegs(k.ISA))
	}
	return nil
}

// prefetchCTail returns the unrolled k-loop iteration count at which the packed kernel prefetches C
// again (0: never).
func (k GemmKernel) prefetchCTail() int {
	d := k.PrefetchC
	if d == 0 {
		d = defaultPrefetchC
	}
	if d < 0 || k.unroll() < 2 {
		return 0
	}
	return max(1, d/k.unroll())
}

func (k GemmKernel) unroll() int {
	if k.KUnroll == 0 {
		return 4
	}
	return k.KUnroll
}

func vecLen(elem, isa string) int {
	var bytes int
	switch isa {
	case AVX2:
		bytes = 32
	case AVX512:
		bytes = 64
	default:
		return 0
	}
	switch elem {
	case F32:
		return bytes / 4
	case F64:
		return bytes / 8
	case BF16:
		if isa == AVX512 { // VDPBF16PS is AVX-512 only (AVX512_BF16; the VEX form is AVX-NE-CONVERT's)
			return bytes / 4
		}
	}
	return 0
}

func elemSize(elem string) int {
	if elem == F64 {
		return 8
	}
	return 4
}

func numVecRegs(isa string) int {
	if isa == AVX512 {
		return 32
	}
	return 16
}

func isaSuffix(isa string) string {
	switch isa {
	case AVX2:
		return "AVX2"
	case AVX512:
		return "AVX512"
	}
	return "X"
}

func elemSuffix(elem string) string {
	switch elem {
	case F32:
		return "F32"
	case F64:
		return "F64"
	case BF16:
		return "BF16"
	}
	return "X"
}

func goType(elem string) string {
	if elem == F64 {
		return "float64"
	}
	return "float32"
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		ok := r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9'
		if !ok {
			return false
		}
	}
	return true
}
