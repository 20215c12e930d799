//go:build amd64 && !purego

package kernels

import (
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/kgen-dev/kgen/codegen/amd64/emu"
	"github.com/kgen-dev/kgen/f16"
	"golang.org/x/sys/cpu"
)

// TestEmuBitExact validates the x86 interpreter (codegen/amd64/emu) on the
// committed kgen_amd64.s: every routine runs natively and emulated on the
// same operands (random, with NaN payloads, signaling NaNs, infinities,
// signed zeros and denormals) and every output buffer and result must agree
// bit for bit. The emulator also checks each access against the operands'
// slices, so a routine that strays outside them fails here. Routines of an
// ISA this CPU lacks are skipped (nothing native to compare with).

type emuRoutine struct {
	name string
	isa  string // "avx2" or "avx512"
	fn   any    // the native function
	// run calls f (native or emulated, same type as fn) on operands drawn from rng and returns
	// the buffers it may write and its results; set, when not nil, gives the emulator its regions.
	run func(rng *rand.Rand, f any, set func(bufs ...any)) []any
}

func emuHostHas(isa string) bool {
	x := cpu.X86
	avx2 := x.HasAVX2 && x.HasFMA && x.HasF16C
	switch isa {
	case "avx512":
		return avx2 && x.HasAVX512F && x.HasAVX512DQ && x.HasAVX512VL
	case "avx512bf16":
		return avx2 && x.HasAVX512F && x.HasAVX512DQ && x.HasAVX512VL && x.HasAVX512BF16
	}
	return avx2
}

func wild32(rng *rand.Rand) float32 {
	switch rng.IntN(14) {
	case 0:
		return math.Float32frombits(0x7F800001 + rng.Uint32()%0x7FFFFF | rng.Uint32()&0x80000000)
	case 1:
		return float32(math.Inf(1 - 2*rng.IntN(2)))
	case 2:
		return float32(math.Copysign(0, float64(1-2*rng.IntN(2))))
	case 3:
		return math.Float32frombits(rng.Uint32()&0x807FFFFF | 1)
	case 4:
		return float32(rng.NormFloat64() * 1e30)
	}
	return float32(rng.NormFloat64() * 4)
}

func wild64(rng *rand.Rand) float64 {
	switch rng.IntN(14) {
	case 0:
		return math.Float64frombits(0x7FF0000000000001 + rng.Uint64()%0xFFFFFFFFFFFFF | rng.Uint64()&(1<<63))
	case 1:
		return math.Inf(1 - 2*rng.IntN(2))
	case 2:
		return math.Copysign(0, float64(1-2*rng.IntN(2)))
	case 3:
		return math.Float64frombits(rng.Uint64()&0x800FFFFFFFFFFFFF | 1)
	case 4:
		return rng.NormFloat64() * 1e300
	}
	return rng.NormFloat64() * 4
}

func wild16(rng *rand.Rand) uint16 {
	switch rng.IntN(8) {
	case 0:
		return 0x7C00 | uint16(rng.IntN(1024)) | uint16(rng.IntN(2))<<15
	case 1:
		return uint16(rng.IntN(1024)) | uint16(rng.IntN(2))<<15
	}
	return uint16(rng.IntN(1 << 16))
}

func wildSlice[T float32 | float64 | uint16](rng *rand.Rand, n int) []T {
	s := make([]T, n)
	for i := range s {
		switch p := any(&s[i]).(type) {
		case *float32:
			*p = wild32(rng)
		case *float64:
			*p = wild64(rng)
		case *uint16:
			*p = wild16(rng)
		}
	}
	return s
}

func ptr[T any](s []T) *T { return &s[0] }

// gemmRun draws a packed-microkernel call (contract of docs/MICROKERNEL.md).
func gemmRun[T float32 | float64](mr, nr int) func(rng *rand.Rand, f any, set func(...any)) []any {
	return func(rng *rand.Rand, f any, set func(...any)) []any {
		fn := f.(func(int, *T, *T, *T, int, int, int, T, T, *T, int))
		kc := []int{0, 1, 2, 3, 5, 8, 17}[rng.IntN(7)]
		m, n := 1+rng.IntN(mr), 1+rng.IntN(nr)
		ldc := n + rng.IntN(3)
		a, b := wildSlice[T](rng, max(kc, 1)*mr), wildSlice[T](rng, max(kc, 1)*nr)
		c, bias := wildSlice[T](rng, (m-1)*ldc+n), wildSlice[T](rng, n)
		alpha, beta := wildSlice[T](rng, 1)[0], wildSlice[T](rng, 1)[0]
		if rng.IntN(3) == 0 {
			beta = 0
		}
		if set != nil {
			set(a, b, c, bias)
		}
		fn(kc, ptr(a), ptr(b), ptr(c), ldc, m, n, alpha, beta, ptr(bias), rng.IntN(4))
		return []any{c}
	}
}

// strided draws an unpacked operand: A (m×kc) with strides ars, acs; B (kc×n) with ldb.
func strided[T float32 | float64](rng *rand.Rand, kc, m, n int) (a []T, ars, acs int, b []T, ldb int) {
	if rng.IntN(2) == 0 {
		ars, acs = kc+rng.IntN(3), 1
	} else {
		ars, acs = 1, m+rng.IntN(3)
	}
	ldb = n + rng.IntN(3)
	la, lb := 1, 1
	if kc > 0 {
		la, lb = (m-1)*ars+(kc-1)*acs+1, (kc-1)*ldb+n
	}
	return wildSlice[T](rng, la), ars, acs, wildSlice[T](rng, lb), ldb
}

func gemmURun[T float32 | float64](mr, nr int) func(rng *rand.Rand, f any, set func(...any)) []any {
	return func(rng *rand.Rand, f any, set func(...any)) []any {
		fn := f.(func(int, *T, int, int, *T, int, *T, int, int, int, T, T, *T, int))
		kc := []int{0, 1, 2, 3, 5, 8, 17}[rng.IntN(7)]
		m, n := 1+rng.IntN(mr), 1+rng.IntN(nr)
		a, ars, acs, b, ldb := strided[T](rng, kc, m, n)
		ldc := n + rng.IntN(3)
		c, bias := wildSlice[T](rng, (m-1)*ldc+n), wildSlice[T](rng, n)
		alpha, beta := wildSlice[T](rng, 1)[0], wildSlice[T](rng, 1)[0]
		if rng.IntN(3) == 0 {
			beta = 0
		}
		if set != nil {
			set(a, b, c, bias)
		}
		fn(kc, ptr(a), ars, acs, ptr(b), ldb, ptr(c), ldc, m, n, alpha, beta, ptr(bias), rng.IntN(4))
		return []any{c}
	}
}

// gemmUBRun draws a batched unpacked call: cnt products of m×n (m up to three row tiles and a part),
// each operand's products sa, sb, sc elements apart (with gaps: the kernel must not touch them).
func gemmUBRun[T float32 | float64](mr, nr int) func(rng *rand.Rand, f any, set func(...any)) []any {
	return func(rng *rand.Rand, f any, set func(...any)) []any {
		fn := f.(func(int, *T, int, int, *T, int, *T, int, int, int, T, T, *T, int, int, int, int, int))
		kc := []int{0, 1, 2, 3, 5, 8, 17}[rng.IntN(7)]
		m, n, cnt := 1+rng.IntN(3*mr+2), 1+rng.IntN(nr), 1+rng.IntN(4)
		a1, ars, acs, b1, ldb := strided[T](rng, kc, m, n)
		ldc := n + rng.IntN(3)
		sa, sb, sc := len(a1)+rng.IntN(3), len(b1)+rng.IntN(3), (m-1)*ldc+n+rng.IntN(3)
		a, b := wildSlice[T](rng, (cnt-1)*sa+len(a1)), wildSlice[T](rng, (cnt-1)*sb+len(b1))
		c, bias := wildSlice[T](rng, (cnt-1)*sc+(m-1)*ldc+n), wildSlice[T](rng, n)
		alpha, beta := wildSlice[T](rng, 1)[0], wildSlice[T](rng, 1)[0]
		if rng.IntN(3) == 0 {
			beta = 0
		}
		if set != nil {
			set(a, b, c, bias)
		}
		fn(kc, ptr(a), ars, acs, ptr(b), ldb, ptr(c), ldc, m, n, alpha, beta, ptr(bias), rng.IntN(4), cnt, sa, sb, sc)
		return []any{c}
	}
}

// gemmUTRun draws a tall-tile call: one vector of columns (n <= vl), acs == 1, MR < m <= 2·MR.
func gemmUTRun[T float32 | float64](mr, vl int) func(rng *rand.Rand, f any, set func(...any)) []any {
	return func(rng *rand.Rand, f any, set func(...any)) []any {
		fn := f.(func(int, *T, int, int, *T, int, *T, int, int, int, T, T, *T, int))
		kc := []int{0, 1, 2, 3, 5, 8, 17}[rng.IntN(7)]
		m, n := mr+1+rng.IntN(mr), 1+rng.IntN(vl)
		ars := max(kc, 1) + rng.IntN(3)
		ldb, ldc := n+rng.IntN(3), n+rng.IntN(3)
		a, b := wildSlice[T](rng, (m-1)*ars+max(kc, 1)), wildSlice[T](rng, max(kc-1, 0)*ldb+n)
		c, bias := wildSlice[T](rng, (m-1)*ldc+n), wildSlice[T](rng, n)
		alpha, beta := wildSlice[T](rng, 1)[0], wildSlice[T](rng, 1)[0]
		if rng.IntN(3) == 0 {
			beta = 0
		}
		if set != nil {
			set(a, b, c, bias)
		}
		fn(kc, ptr(a), ars, 1, ptr(b), ldb, ptr(c), ldc, m, n, alpha, beta, ptr(bias), rng.IntN(4))
		return []any{c}
	}
}

func rowsRun[T float32 | float64]() func(rng *rand.Rand, f any, set func(...any)) []any {
	return func(rng *rand.Rand, f any, set func(...any)) []any {
		fn := f.(func(int, *T, int, int, *T, int, *T, int, int, int))
		kc := 1 + rng.IntN(20)
		m, n := 1+rng.IntN(4), 1+rng.IntN(70)
		a, ars, acs, b, ldb := strided[T](rng, kc, m, n)
		ldc := n + rng.IntN(3)
		c := wildSlice[T](rng, (m-1)*ldc+n)
		if set != nil {
			set(a, b, c)
		}
		fn(kc, ptr(a), ars, acs, ptr(b), ldb, ptr(c), ldc, m, n)
		return []any{c}
	}
}

func packDRun[T float32 | float64]() func(rng *rand.Rand, f any, set func(...any)) []any {
	return func(rng *rand.Rand, f any, set func(...any)) []any {
		fn := f.(func(*T, *T, int, int, int, int))
		panel := []int{4, 6, 8, 14, 16, 32}[rng.IntN(6)]
		w, depth := 1+rng.IntN(panel), 1+rng.IntN(20)
		ld := depth + rng.IntN(3)
		dst, src := wildSlice[T](rng, panel*depth), wildSlice[T](rng, (w-1)*ld+depth)
		if set != nil {
			set(dst, src)
		}
		fn(ptr(dst), ptr(src), ld, w, panel, depth)
		return []any{dst}
	}
}

func packPBRun[T float32 | float64]() func(rng *rand.Rand, f any, set func(...any)) []any {
	return func(rng *rand.Rand, f any, set func(...any)) []any {
		fn := f.(func(*T, *T, int, int, int, int))
		panel := []int{4, 6, 8, 14, 16, 32}[rng.IntN(6)]
		n, depth := 1+rng.IntN(3*panel), 1+rng.IntN(12)
		ld := n + rng.IntN(3)
		dst, src := wildSlice[T](rng, (n+panel-1)/panel*panel*depth), wildSlice[T](rng, (depth-1)*ld+n)
		if set != nil {
			set(dst, src)
		}
		fn(ptr(dst), ptr(src), ld, n, panel, depth)
		return []any{dst}
	}
}

// packPBbf16Run runs a bf16 B packer (f32 or pair panels: the same arguments, a uint16 source).
func packPBbf16Run() func(rng *rand.Rand, f any, set func(...any)) []any {
	return func(rng *rand.Rand, f any, set func(...any)) []any {
		fn := f.(func(*float32, *uint16, int, int, int, int))
		panel := []int{4, 6, 8, 14, 16, 32}[rng.IntN(6)]
		n, depth := 1+rng.IntN(3*panel), 1+rng.IntN(12)
		ld := n + rng.IntN(3)
		dst, src := wildSlice[float32](rng, (n+panel-1)/panel*panel*depth), make([]uint16, (depth-1)*ld+n)
		for i := range src {
			src[i] = uint16(rng.Uint32())
		}
		if set != nil {
			set(dst, src)
		}
		fn(ptr(dst), &src[0], ld, n, panel, depth)
		return []any{dst}
	}
}

func transposeRun[T float32 | float64]() func(rng *rand.Rand, f any, set func(...any)) []any {
	return func(rng *rand.Rand, f any, set func(...any)) []any {
		fn := f.(func(int, int, *T, int, *T, int))
		rows, cols := 1+rng.IntN(20), 1+rng.IntN(20)
		lds, ldd := cols+rng.IntN(3), rows+rng.IntN(3)
		src, dst := wildSlice[T](rng, (rows-1)*lds+cols), wildSlice[T](rng, (cols-1)*ldd+rows)
		if set != nil {
			set(src, dst)
		}
		fn(rows, cols, ptr(src), lds, ptr(dst), ldd)
		return []any{dst}
	}
}

// vloopRun draws a call of a vector loop (codegen.VLoop contract: n groups of
// lanes elements behind every pointer) by reflection on its signature.
func vloopRun(lanes int) func(rng *rand.Rand, f any, set func(...any)) []any {
	return func(rng *rand.Rand, f any, set func(...any)) []any {
		return vloopCall(rng, f, set, 1+rng.IntN(6), lanes, false)
	}
}

// vloopCounted draws a call of a counted vector loop (the AVX-512 routines,
// codegen.VLoopImpl.Counted: n iterations, the last n % lanes under an
// opmask): n from 1 to 70, so that full groups, masked tails and both come.
func vloopCounted() func(rng *rand.Rand, f any, set func(...any)) []any {
	return func(rng *rand.Rand, f any, set func(...any)) []any {
		return vloopCall(rng, f, set, 1+rng.IntN(70), 1, false)
	}
}

// vloopCall calls the vector loop f with n and, behind every pointer, n*per elements: wild values
// (NaN payloads, infinities, denormals, huge) or, when tame, values in [0.5, 1.5), whose sums in
// another order stay within a few ulps.
func vloopCall(rng *rand.Rand, f any, set func(...any), n, per int, tame bool) []any {
	v := reflect.ValueOf(f)
	t := v.Type()
	var bufs []any
	args := make([]reflect.Value, t.NumIn())
	for i := range args {
		switch at := t.In(i); {
		case i == 0:
			args[i] = reflect.ValueOf(n)
		case at == reflect.TypeFor[*float32]():
			s := wildSlice[float32](rng, n*per)
			if tame {
				for j := range s {
					s[j] = float32(0.5 + rng.Float64())
				}
			}
			bufs = append(bufs, s)
			args[i] = reflect.ValueOf(&s[0])
		case at == reflect.TypeFor[*float64]():
			s := wildSlice[float64](rng, n*per)
			if tame {
				for j := range s {
					s[j] = 0.5 + rng.Float64()
				}
			}
			bufs = append(bufs, s)
			args[i] = reflect.ValueOf(&s[0])
		case at == reflect.TypeFor[*uint16]():
			s := wildSlice[uint16](rng, n*per)
			if tame {
				for j := range s {
					s[j] = uint16(f16.FromFloat64(0.5 + rng.Float64()))
				}
			}
			bufs = append(bufs, s)
			args[i] = reflect.ValueOf(&s[0])
		case at == reflect.TypeFor[float32]():
			x := wild32(rng)
			if tame {
				x = float32(0.5 + rng.Float64())
			}
			args[i] = reflect.ValueOf(x)
		case at == reflect.TypeFor[float64]():
			x := float64(wild32(rng))
			if tame {
				x = 0.5 + rng.Float64()
			}
			args[i] = reflect.ValueOf(x)
		default:
			panic("vloopCall: argument type " + at.String())
		}
	}
	if set != nil {
		set(bufs...)
	}
	for _, r := range v.Call(args) {
		switch x := r.Interface().(type) { // not r.Float(): widening quiets a signaling NaN
		case float32:
			bufs = append(bufs, []float32{x})
		case float64:
			bufs = append(bufs, []float64{x})
		default:
			panic("vloopCall: result type " + r.Type().String())
		}
	}
	return bufs
}

var emuRoutines = []emuRoutine{
	{"sgemm14x32AVX512", "avx512", sgemm14x32AVX512, gemmRun[float32](14, 32)},
	{"dgemm14x16AVX512", "avx512", dgemm14x16AVX512, gemmRun[float64](14, 16)},
	{"sgemm6x16AVX2", "avx2", sgemm6x16AVX2, gemmRun[float32](6, 16)},
	{"dgemm6x8AVX2", "avx2", dgemm6x8AVX2, gemmRun[float64](6, 8)},
	{"sgemm14x32AVX512U", "avx512", sgemm14x32AVX512U, gemmURun[float32](14, 32)},
	{"dgemm14x16AVX512U", "avx512", dgemm14x16AVX512U, gemmURun[float64](14, 16)},
	// The Xeon class's tuned microkernels (kgen.lock: MR 12 and 13).
	{"dgemm13x16AVX512", "avx512", dgemm13x16AVX512, gemmRun[float64](13, 16)},
	{"dgemm13x16AVX512U", "avx512", dgemm13x16AVX512U, gemmURun[float64](13, 16)},
	{"sgemm12x32AVX512", "avx512", sgemm12x32AVX512, gemmRun[float32](12, 32)},
	{"sgemm12x32AVX512U", "avx512", sgemm12x32AVX512U, gemmURun[float32](12, 32)},
	{"sgemm13x32AVX512", "avx512", sgemm13x32AVX512, gemmRun[float32](13, 32)},
	{"sgemm13x32AVX512U", "avx512", sgemm13x32AVX512U, gemmURun[float32](13, 32)},
	{"sgemm6x16AVX2U", "avx2", sgemm6x16AVX2U, gemmURun[float32](6, 16)},
	{"dgemm6x8AVX2U", "avx2", dgemm6x8AVX2U, gemmURun[float64](6, 8)},
	{"sgemm14x32AVX512UT", "avx512", sgemm14x32AVX512UT, gemmUTRun[float32](14, 16)},
	{"dgemm14x16AVX512UT", "avx512", dgemm14x16AVX512UT, gemmUTRun[float64](14, 8)},
	{"dgemm13x16AVX512UT", "avx512", dgemm13x16AVX512UT, gemmUTRun[float64](13, 8)},
	{"sgemm12x32AVX512UT", "avx512", sgemm12x32AVX512UT, gemmUTRun[float32](12, 16)},
	{"sgemm13x32AVX512UT", "avx512", sgemm13x32AVX512UT, gemmUTRun[float32](13, 16)},
	{"sgemm14x32AVX512UB", "avx512", sgemm14x32AVX512UB, gemmUBRun[float32](14, 32)},
	{"dgemm14x16AVX512UB", "avx512", dgemm14x16AVX512UB, gemmUBRun[float64](14, 16)},
	{"dgemm13x16AVX512UB", "avx512", dgemm13x16AVX512UB, gemmUBRun[float64](13, 16)},
	{"sgemm12x32AVX512UB", "avx512", sgemm12x32AVX512UB, gemmUBRun[float32](12, 32)},
	{"sgemm13x32AVX512UB", "avx512", sgemm13x32AVX512UB, gemmUBRun[float32](13, 32)},
	{"sgemm6x16AVX2UB", "avx2", sgemm6x16AVX2UB, gemmUBRun[float32](6, 16)},
	{"dgemm6x8AVX2UB", "avx2", dgemm6x8AVX2UB, gemmUBRun[float64](6, 8)},
	{"sgemmRowsAVX2", "avx2", sgemmRowsAVX2, rowsRun[float32]()},
	{"dgemmRowsAVX2", "avx2", dgemmRowsAVX2, rowsRun[float64]()},
	{"packDf32AVX2", "avx2", packDf32AVX2, packDRun[float32]()},
	{"packDf64AVX2", "avx2", packDf64AVX2, packDRun[float64]()},
	{"packPBf32AVX2", "avx2", packPBf32AVX2, packPBRun[float32]()},
	{"packPBf64AVX2", "avx2", packPBf64AVX2, packPBRun[float64]()},
	{"packPBbf16AVX2", "avx2", packPBbf16AVX2, packPBbf16Run()},
	{"packPBbf16PairAVX2", "avx2", packPBbf16PairAVX2, packPBbf16Run()},
	{"vloop_linear_gelu_0AVX2", "avx2", vloop_linear_gelu_0AVX2, vloopRun(8)},
	{"vloop_linear_gelu_0AVX512", "avx512", vloop_linear_gelu_0AVX512, vloopCounted()},
	{"vloop_hlinear_gelu_0AVX2", "avx2", vloop_hlinear_gelu_0AVX2, vloopRun(8)},
	{"vloop_hlinear_gelu_0AVX512", "avx512", vloop_hlinear_gelu_0AVX512, vloopCounted()},
	{"vloop_linear_residual_0AVX2", "avx2", vloop_linear_residual_0AVX2, vloopRun(8)},
	{"vloop_linear_residual_0AVX512", "avx512", vloop_linear_residual_0AVX512, vloopCounted()},
	{"vloop_gemm_sigmoid_0AVX2", "avx2", vloop_gemm_sigmoid_0AVX2, vloopRun(8)},
	{"vloop_gemm_sigmoid_0AVX512", "avx512", vloop_gemm_sigmoid_0AVX512, vloopCounted()},
	{"vloop_gelu_0AVX2", "avx2", vloop_gelu_0AVX2, vloopRun(8)},
	{"vloop_gelu_0AVX512", "avx512", vloop_gelu_0AVX512, vloopCounted()},
	{"transposeF32AVX2", "avx2", transposeF32AVX2, transposeRun[float32]()},
	{"transposeF64AVX2", "avx2", transposeF64AVX2, transposeRun[float64]()},
	{"vloop_sgemv_0AVX2", "avx2", vloop_sgemv_0AVX2, vloopRun(8)},
	{"vloop_sdot_0AVX2", "avx2", vloop_sdot_0AVX2, vloopRun(8)},
	{"vloop_saxpy_0AVX2", "avx2", vloop_saxpy_0AVX2, vloopRun(8)},
	{"vloop_softmax_0AVX2", "avx2", vloop_softmax_0AVX2, vloopRun(8)},
	{"vloop_softmax_1AVX2", "avx2", vloop_softmax_1AVX2, vloopRun(8)},
	{"vloop_softmax_2AVX2", "avx2", vloop_softmax_2AVX2, vloopRun(8)},
	{"vloop_softmax_3AVX2", "avx2", vloop_softmax_3AVX2, vloopRun(8)},
	{"vloop_layernorm_0AVX2", "avx2", vloop_layernorm_0AVX2, vloopRun(8)},
	{"vloop_layernorm_1AVX2", "avx2", vloop_layernorm_1AVX2, vloopRun(8)},
	{"vloop_layernorm_2AVX2", "avx2", vloop_layernorm_2AVX2, vloopRun(8)},
	{"vloop_conv2d_0AVX2", "avx2", vloop_conv2d_0AVX2, vloopRun(8)},
	{"vloop_hgemm_0AVX2", "avx2", vloop_hgemm_0AVX2, vloopRun(8)},
	{"vloop_cvt_f32_f16_0AVX2", "avx2", vloop_cvt_f32_f16_0AVX2, vloopRun(8)},
	{"vloop_cvt_f16_f32_0AVX2", "avx2", vloop_cvt_f16_f32_0AVX2, vloopRun(8)},
	{"vloop_hadd_0AVX2", "avx2", vloop_hadd_0AVX2, vloopRun(8)},
	{"vloop_haxpy_0AVX2", "avx2", vloop_haxpy_0AVX2, vloopRun(8)},
	{"vloop_cvtF16F32AVX2", "avx2", vloop_cvtF16F32AVX2, vloopRun(8)},
	{"bgemm14x32AVX512", "avx512bf16", bgemm14x32AVX512, gemmRun[float32](14, 32)}, // random words: bf16 pairs with NaN payloads, denormals, Inf
	{"sgemmRowsAVX512", "avx512", sgemmRowsAVX512, rowsRun[float32]()},
	{"dgemmRowsAVX512", "avx512", dgemmRowsAVX512, rowsRun[float64]()},
	{"vloop_colsum_0AVX2", "avx2", vloop_colsum_0AVX2, vloopRun(8)},
	{"vloop_colsum_1AVX2", "avx2", vloop_colsum_1AVX2, vloopRun(8)},
	{"vloop_colsum_2AVX2", "avx2", vloop_colsum_2AVX2, vloopRun(8)},
	{"vloop_dcolsum_0AVX2", "avx2", vloop_dcolsum_0AVX2, vloopRun(4)},
	{"vloop_dcolsum_1AVX2", "avx2", vloop_dcolsum_1AVX2, vloopRun(4)},
	{"vloop_dcolsum_2AVX2", "avx2", vloop_dcolsum_2AVX2, vloopRun(4)},
	{"vloop_colsum_acc_0AVX2", "avx2", vloop_colsum_acc_0AVX2, vloopRun(8)},
	{"vloop_colsum_acc_1AVX2", "avx2", vloop_colsum_acc_1AVX2, vloopRun(8)},
	{"vloop_colsum_acc_2AVX2", "avx2", vloop_colsum_acc_2AVX2, vloopRun(8)},
	{"vloop_colsum_acc_3AVX2", "avx2", vloop_colsum_acc_3AVX2, vloopRun(8)},
	{"vloop_sum_mid_0AVX2", "avx2", vloop_sum_mid_0AVX2, vloopRun(8)},
	{"vloop_sum_mid_1AVX2", "avx2", vloop_sum_mid_1AVX2, vloopRun(8)},
	{"vloop_sum_mid_2AVX2", "avx2", vloop_sum_mid_2AVX2, vloopRun(8)},
	{"vloop_max_mid_0AVX2", "avx2", vloop_max_mid_0AVX2, vloopRun(8)},
	{"vloop_max_mid_1AVX2", "avx2", vloop_max_mid_1AVX2, vloopRun(8)},
	{"vloop_max_mid_2AVX2", "avx2", vloop_max_mid_2AVX2, vloopRun(8)},
	{"vloop_hsum_mid_0AVX2", "avx2", vloop_hsum_mid_0AVX2, vloopRun(8)},
	{"vloop_hsum_mid_1AVX2", "avx2", vloop_hsum_mid_1AVX2, vloopRun(8)},
	{"vloop_hsum_mid_2AVX2", "avx2", vloop_hsum_mid_2AVX2, vloopRun(8)},
	{"vloop_hsum_mid_3AVX2", "avx2", vloop_hsum_mid_3AVX2, vloopRun(8)},
	{"vloop_batch_stats_0AVX2", "avx2", vloop_batch_stats_0AVX2, vloopRun(8)},
	{"vloop_batch_stats_1AVX2", "avx2", vloop_batch_stats_1AVX2, vloopRun(8)},
	{"vloop_batch_stats_2AVX2", "avx2", vloop_batch_stats_2AVX2, vloopRun(8)},
	{"vloop_batch_stats_3AVX2", "avx2", vloop_batch_stats_3AVX2, vloopRun(8)},
	{"vloop_batch_stats_4AVX2", "avx2", vloop_batch_stats_4AVX2, vloopRun(8)},
	{"vloop_batch_stats_5AVX2", "avx2", vloop_batch_stats_5AVX2, vloopRun(8)},
	{"vloop_batch_stats_6AVX2", "avx2", vloop_batch_stats_6AVX2, vloopRun(8)},
	{"vloop_batch_stats_7AVX2", "avx2", vloop_batch_stats_7AVX2, vloopRun(8)},
	{"vloop_sgemv_0AVX512", "avx512", vloop_sgemv_0AVX512, vloopCounted()},
	{"vloop_sdot_0AVX512", "avx512", vloop_sdot_0AVX512, vloopCounted()},
	{"vloop_saxpy_0AVX512", "avx512", vloop_saxpy_0AVX512, vloopCounted()},
	{"vloop_softmax_0AVX512", "avx512", vloop_softmax_0AVX512, vloopCounted()},
	{"vloop_softmax_1AVX512", "avx512", vloop_softmax_1AVX512, vloopCounted()},
	{"vloop_softmax_2AVX512", "avx512", vloop_softmax_2AVX512, vloopCounted()},
	{"vloop_softmax_3AVX512", "avx512", vloop_softmax_3AVX512, vloopCounted()},
	{"vloop_layernorm_0AVX512", "avx512", vloop_layernorm_0AVX512, vloopCounted()},
	{"vloop_layernorm_1AVX512", "avx512", vloop_layernorm_1AVX512, vloopCounted()},
	{"vloop_layernorm_2AVX512", "avx512", vloop_layernorm_2AVX512, vloopCounted()},
	{"vloop_conv2d_0AVX512", "avx512", vloop_conv2d_0AVX512, vloopCounted()},
	{"vloop_hgemm_0AVX512", "avx512", vloop_hgemm_0AVX512, vloopCounted()},
	{"vloop_cvt_f32_f16_0AVX512", "avx512", vloop_cvt_f32_f16_0AVX512, vloopCounted()},
	{"vloop_cvt_f16_f32_0AVX512", "avx512", vloop_cvt_f16_f32_0AVX512, vloopCounted()},
	{"vloop_hadd_0AVX512", "avx512", vloop_hadd_0AVX512, vloopCounted()},
	{"vloop_haxpy_0AVX512", "avx512", vloop_haxpy_0AVX512, vloopCounted()},
	{"vloop_colsum_0AVX512", "avx512", vloop_colsum_0AVX512, vloopCounted()},
	{"vloop_colsum_1AVX512", "avx512", vloop_colsum_1AVX512, vloopCounted()},
	{"vloop_colsum_2AVX512", "avx512", vloop_colsum_2AVX512, vloopCounted()},
	{"vloop_dcolsum_0AVX512", "avx512", vloop_dcolsum_0AVX512, vloopCounted()},
	{"vloop_dcolsum_1AVX512", "avx512", vloop_dcolsum_1AVX512, vloopCounted()},
	{"vloop_dcolsum_2AVX512", "avx512", vloop_dcolsum_2AVX512, vloopCounted()},
	{"vloop_colsum_acc_0AVX512", "avx512", vloop_colsum_acc_0AVX512, vloopCounted()},
	{"vloop_colsum_acc_1AVX512", "avx512", vloop_colsum_acc_1AVX512, vloopCounted()},
	{"vloop_colsum_acc_2AVX512", "avx512", vloop_colsum_acc_2AVX512, vloopCounted()},
	{"vloop_colsum_acc_3AVX512", "avx512", vloop_colsum_acc_3AVX512, vloopCounted()},
	{"vloop_sum_mid_0AVX512", "avx512", vloop_sum_mid_0AVX512, vloopCounted()},
	{"vloop_sum_mid_1AVX512", "avx512", vloop_sum_mid_1AVX512, vloopCounted()},
	{"vloop_sum_mid_2AVX512", "avx512", vloop_sum_mid_2AVX512, vloopCounted()},
	{"vloop_max_mid_0AVX512", "avx512", vloop_max_mid_0AVX512, vloopCounted()},
	{"vloop_max_mid_1AVX512", "avx512", vloop_max_mid_1AVX512, vloopCounted()},
	{"vloop_max_mid_2AVX512", "avx512", vloop_max_mid_2AVX512, vloopCounted()},
	{"vloop_hsum_mid_0AVX512", "avx512", vloop_hsum_mid_0AVX512, vloopCounted()},
	{"vloop_hsum_mid_1AVX512", "avx512", vloop_hsum_mid_1AVX512, vloopCounted()},
	{"vloop_hsum_mid_2AVX512", "avx512", vloop_hsum_mid_2AVX512, vloopCounted()},
	{"vloop_hsum_mid_3AVX512", "avx512", vloop_hsum_mid_3AVX512, vloopCounted()},
	{"vloop_batch_stats_0AVX512", "avx512", vloop_batch_stats_0AVX512, vloopCounted()},
	{"vloop_batch_stats_1AVX512", "avx512", vloop_batch_stats_1AVX512, vloopCounted()},
	{"vloop_batch_stats_2AVX512", "avx512", vloop_batch_stats_2AVX512, vloopCounted()},
	{"vloop_batch_stats_3AVX512", "avx512", vloop_batch_stats_3AVX512, vloopCounted()},
	{"vloop_batch_stats_4AVX512", "avx512", vloop_batch_stats_4AVX512, vloopCounted()},
	{"vloop_batch_stats_5AVX512", "avx512", vloop_batch_stats_5AVX512, vloopCounted()},
	{"vloop_batch_stats_6AVX512", "avx512", vloop_batch_stats_6AVX512, vloopCounted()},
	{"vloop_batch_stats_7AVX512", "avx512", vloop_batch_stats_7AVX512, vloopCounted()},
	{"vloop_cvtF16F32AVX512", "avx512", vloop_cvtF16F32AVX512, vloopCounted()},
	{"transposeF32AVX512", "avx512", transposeF32AVX512, transposeRun[float32]()},
	{"transposeF64AVX512", "avx512", transposeF64AVX512, transposeRun[float64]()},
}

// sameBuf compares two buffers of the same type bit for bit; it returns the first differing index or -1.
func sameBuf(x, y any) int {
	switch a := x.(type) {
	case []float32:
		b := y.([]float32)
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				return i
			}
		}
	case []float64:
		b := y.([]float64)
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
				return i
			}
		}
	case []uint16:
		b := y.([]uint16)
		for i := range a {
			if a[i] != b[i] {
				return i
			}
		}
	}
	return -1
}

func regionOf(i int, x any) emu.Region {
	name := "operand " + string(rune('0'+i))
	switch s := x.(type) {
	case []float32:
		return emu.Slice(name, s)
	case []float64:
		return emu.Slice(name, s)
	case []uint16:
		return emu.Slice(name, s)
	}
	panic("regionOf: type")
}

func TestEmuBitExact(t *testing.T) {
	src, err := os.ReadFile("kgen_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := emu.Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, r := range emuRoutines {
		covered[r.name] = true
		t.Run(r.name, func(t *testing.T) {
			if !emuHostHas(r.isa) {
				t.Skipf("CPU lacks %s: nothing native to compare with", r.isa)
			}
			m := prog.Machine()
			ev, err := emu.FuncValue(m, r.name, reflect.TypeOf(r.fn))
			if err != nil {
				t.Fatal(err)
			}
			m.OnError(func(err error) { t.Fatalf("emulated: %v", err) })
			emulated := ev.Interface()
			set := func(bufs ...any) {
				rs := make([]emu.Region, len(bufs))
				for i, b := range bufs {
					rs[i] = regionOf(i, b)
				}
				m.SetRegions(rs...)
			}
			for trial := 0; trial < 200; trial++ {
				seed := uint64(trial)
				want := r.run(rand.New(rand.NewPCG(seed, 9)), r.fn, nil)
				got := r.run(rand.New(rand.NewPCG(seed, 9)), emulated, set)
				for i := range want {
					if j := sameBuf(got[i], want[i]); j >= 0 {
						t.Fatalf("trial %d: output %d differs at element %d: emulated %v, native %v",
							trial, i, j, reflect.ValueOf(got[i]).Index(j), reflect.ValueOf(want[i]).Index(j))
					}
				}
			}
		})
	}
	// Every routine of the file must have a recipe above.
	textRE := regexp.MustCompile(`(?m)^TEXT ·(\w+)\(SB\)`)
	for _, mm := range textRE.FindAllStringSubmatch(string(src), -1) {
		if !covered[mm[1]] && !strings.HasPrefix(mm[1], "fmaPeak") {
			t.Errorf("routine %s of kgen_amd64.s has no entry in emuRoutines", mm[1])
		}
	}
}
