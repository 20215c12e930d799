package ptx

import (
	"strings"
	"testing"
)

// TestPlantedWGMMABugs shows that the emulated differential test of the sm_90a GEMMs catches the bugs a
// wgmma path is prone to: descriptors that misdescribe the staged tiles, tiles not on the swizzle's
// 1024-byte period, and each missing fence or wait.
func TestPlantedWGMMABugs(t *testing.T) {
	fs := kernelsByName(t, "../../kernels.kdsl", "ptx:sm_90a")
	// descBits rewrites the constant fields of every descriptor (the or with bits above 16).
	descBits := func(change func(int64) int64) func(e *Entry) bool {
		return func(e *Entry) bool {
			return edit(e, func(in *Instr) bool {
				if in.Op != "or" || len(in.Args) != 3 {
					return false
				}
				imm, ok := in.Args[2].(Imm)
				return ok && imm>>62 != 0
			}, func(in *Instr) *Instr {
				c := *in
				c.Args = append(append([]Operand{}, in.Args[:2]...), Imm(change(int64(in.Args[2].(Imm)))))
				return &c
			}, -1)
		}
	}
	remove := func(op string) func(e *Entry) bool {
		return func(e *Entry) bool {
			return edit(e, func(in *Instr) bool { return in.Op == op }, func(*Instr) *Instr { return nil }, -1)
		}
	}
	cases := []struct {
		name, kernel string
		plant        func(e *Entry) bool
	}{
		{"64-byte swizzle mode in the descriptors", "hgemm", descBits(func(v int64) int64 { return int64(uint64(v)&^(3<<62) | 2<<62) })},
		{"stride byte offset 512 instead of 1024", "bgemm", descBits(func(v int64) int64 { return v&^(0x3FFF<<32) | (512>>4)<<32 })},
		{"B read K-major (imm-trans-b 0)", "hgemm", func(e *Entry) bool {
			return edit(e, func(in *Instr) bool { return len(in.Args) == 8 && in.Args[7] == Imm(1) && in.Args[4] == Imm(1) },
				func(in *Instr) *Instr {
					c := *in
					c.Args = append(append([]Operand{}, in.Args[:7]...), Imm(0))
					return &c
				}, -1)
		}},
		{"wrong k16 step of A", "bgemm_tt", func(e *Entry) bool {
			return edit(e, func(in *Instr) bool { return strings.HasPrefix(in.Comment, "A descriptor:") && in.Args[2] == Imm(2) },
				func(in *Instr) *Instr { c := *in; c.Args = []Operand{in.Args[0], in.Args[1], Imm(4)}; return &c }, 1)
		}},
		{"tiles aligned to 16 bytes, not 1024", "hgemm", func(e *Entry) bool {
			changed := false
			for i := range e.Shared {
				if e.Shared[i].Align == 1024 {
					e.Shared[i].Align, changed = 16, true
				}
			}
			return changed
		}},
		{"missing fence.proxy.async", "bgemm_bf16", remove("fence.proxy.async.shared::cta")},
		{"missing wgmma.fence", "hgemm", remove("wgmma.fence.sync.aligned")},
		{"missing wgmma.wait_group", "bgemm", remove("wgmma.wait_group.sync.aligned")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { expectDetected(t, fs[c.kernel], "sm_90a", 2, c.name, c.plant) })
	}
}
