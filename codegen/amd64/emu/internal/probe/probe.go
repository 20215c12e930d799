// Package probe holds one tiny assembly routine per instruction form the
// interpreter in package emu models (probe_amd64.s, written by gen.go). The
// tests of package emu run each natively and emulated on the same random
// registers and require identical bits.
package probe

//go:generate go run gen.go

// Probe is one routine: it loads Z0, Z1, Z2 from a, b, c and K1 from k,
// runs its instruction(s) and stores the result (Z2) to c.
type Probe struct {
	Name string
	Elem int    // lane size of the random operands
	ISA  string // avx2, avx512 or avx512bf16
	Fn   func(a, b, c *[64]byte, k uint64)
}
