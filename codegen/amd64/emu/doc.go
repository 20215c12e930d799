// Package emu interprets the Go assembler text that kgen's amd64 generators
// emit (codegen/amd64/internal/mk/mk_amd64.s, kernels/kgen_amd64.s), so that
// tests can execute AVX-512 and AVX2 routines on CPUs that lack them.
//
// It is exact for the subset it models and refuses everything else: an
// instruction, operand form or suffix it does not know makes the routine
// fail to load with an error naming the line (Program.Check lists them).
// Floating point follows the hardware with the default MXCSR bit for bit
// (single-rounding FMA, x86 NaN selection and quieting, default NaN, no
// DAZ/FTZ); vector writes clear the bits above their width as VEX/EVEX do,
// legacy MOVSS/MOVSD keep them; opmasks merge or zero (.Z).
//
// Memory is real Go memory, but every load and store is checked against the
// regions the caller registers (SetRegions, plus slice arguments), the
// argument frame, the local frame and the program's DATA symbols; masked
// accesses check only their active lanes and prefetches nothing. A stray
// access returns an *Error naming the instruction, its line, the address and
// the nearest region. MaxSteps bounds the instructions of one call.
//
// Typical use in a test, with the native stub's type:
//
//	p, err := emu.Parse(string(src))
//	m := p.Machine()
//	fn, err := emu.Func[func(kc int, a, b, c *float32, ldc, m, n int, alpha, beta float32, bias *float32, ep int)](m, "sgemm14x32AVX512")
//	m.OnError(func(err error) { t.Fatal(err) })
//	m.SetRegions(emu.Slice("a", a), emu.Slice("b", b), emu.Slice("c", c), emu.Slice("bias", bias))
//	fn(kc, &a[0], &b[0], &c[0], ldc, mm, n, 1, 0, &bias[0], 3)
package emu
