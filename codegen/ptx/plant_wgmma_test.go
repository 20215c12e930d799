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

// TestWGMMAInFlight builds a small entry by hand: every thread of a warpgroup stores zeros into two
// 64×64 swizzled tiles, fences, and the warpgroup issues one wgmma; thread 0 then stores into the A tile
// before (planted) or after the wgmma.wait_group that retires it. The emulator must report the first as
// a write to operands still in flight, and run the second.
func TestWGMMAInFlight(t *testing.T) {
	build := func(early bool) *Entry {
		e := NewEntry("inflight")
		e.MaxTid = [3]int{128, 1, 1}
		as := e.AddShared("s_As", B16, 64*64, 1024)
		bs := e.AddShared("s_Bs", B16, 64*64, 1024)
		tid := e.Cvt(U64, U32, "", e.Mov(U32, Sym("%tid.x")))
		off := e.Bin("mul.lo", S64, tid, Imm(64))
		for _, s := range []Sym{as, bs} {
			base := e.Bin("add", S64, e.Mov(U64, s), off)
			for x := 0; x < 64; x += 2 {
				e.St(Shared, B16, Addr{Base: base, Off: int64(x)}, Imm(0))
			}
		}
		e.Op0("fence.proxy.async.shared::cta")
		e.Op0("bar.sync", Imm(0))
		desc := func(s Sym) Reg {
			f := e.Bin("and", B64, e.Mov(U64, s), Imm(0x3FFFF))
			f = e.Bin("shr", B64, f, Imm(4))
			return e.Bin("or", B64, f, Imm(int64(1)<<16|int64(64)<<32|int64(1)<<62))
		}
		da, db := desc(as), desc(bs)
		d := make(Vec, 32)
		for i := range d {
			d[i] = e.Mov(F32, FImm{V: 0, T: F32})
		}
		scale := e.Setp("ne", S32, e.Mov(S32, Imm(1)), Imm(0))
		e.Op0("wgmma.fence.sync.aligned")
		e.Emit(&Instr{Op: "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", Args: []Operand{d, da, db, scale, Imm(1), Imm(1), Imm(0), Imm(1)}})
		e.Op0("wgmma.commit_group.sync.aligned")
		store := func() {
			skip := e.NewLabel()
			p := e.Setp("ne", S64, tid, Imm(0))
			e.Bra(skip, &p, false)
			e.St(Shared, B16, Addr{Base: as}, Imm(0))
			e.Place(skip)
		}
		if early {
			store()
		}
		e.Op0("wgmma.wait_group.sync.aligned", Imm(0))
		if !early {
			store()
		}
		return e
	}
	for _, early := range []bool{false, true} {
		m := &emulator{e: build(early), params: map[string]uint64{}}
		err := m.run([3]int{1, 1, 1}, [3]int{128, 1, 1})
		switch {
		case early && (err == nil || !strings.Contains(err.Error(), "in flight")):
			t.Errorf("a store into a tile a wgmma in flight reads: %v, want the in-flight error", err)
		case !early && err != nil:
			t.Errorf("a store after the wait: %v", err)
		}
		if err != nil {
			t.Logf("reported: %v", err)
		}
	}
}
