package ptx

import (
	"strings"
	"testing"
)

// shflEntry is one block's entry in which every thread puts 100 + its %laneid through one
// shfl.sync.MODE.b32 with b, c and membermask, and stores what it got to out[%tid.x].
func shflEntry(mode string, b, c, mask int64) *Entry {
	e := NewEntry("shfl")
	out := e.Ld(Param, U64, Addr{Base: e.AddParam("p_out", U64)})
	lane := e.Mov(U32, Sym("%laneid"))
	v := e.Bin("add", U32, lane, Imm(100))
	d := e.Reg(B32)
	e.Op("shfl.sync."+mode, B32, d, v, Imm(b), Imm(c), Imm(mask))
	tid := e.Cvt(U64, U32, "", e.Mov(U32, Sym("%tid.x")))
	at := e.Bin("add", U64, out, e.Bin("mul.lo", U64, tid, Imm(4)))
	e.St(Global, B32, Addr{Base: at}, d)
	return e
}

// TestEmuShfl checks the emulator's shfl.sync against the source lanes the PTX ISA's pseudocode gives
// (worked out by hand here for each case), and that it refuses what hardware leaves undefined.
func TestEmuShfl(t *testing.T) {
	cases := []struct {
		name       string
		mode       string
		b, c, mask int64
		threads    int
		src        func(lane int) int
	}{
		{"bfly 16", "bfly", 16, 31, -1, 32, func(l int) int { return l ^ 16 }},
		{"bfly 1", "bfly", 1, 31, -1, 64, func(l int) int { return l ^ 1 }},
		{"bfly in segments of 8", "bfly", 4, 0x181f, -1, 32, func(l int) int { return l ^ 4 }},
		{"idx broadcast", "idx", 5, 31, -1, 32, func(int) int { return 5 }},
		{"idx in segments of 8", "idx", 11, 0x181f, -1, 32, func(l int) int { return l&^7 | 3 }},
		{"down 3 clamped", "down", 3, 31, -1, 32, func(l int) int {
			if l+3 > 31 {
				return l
			}
			return l + 3
		}},
		{"up 2", "up", 2, 0, -1, 32, func(l int) int {
			if l < 2 {
				return l
			}
			return l - 2
		}},
		{"bfly 2 in a warp of 8 lanes", "bfly", 2, 31, 0xFF, 8, func(l int) int { return l ^ 2 }},
	}
	for _, c := range cases {
		buf := &emuBuf{name: "out", data: make([]byte, 4*c.threads)}
		m := &emulator{e: shflEntry(c.mode, c.b, c.c, c.mask), params: map[string]uint64{"p_out": 1 << globalShift}, global: []*emuBuf{buf}}
		if err := m.run([3]int{1, 1, 1}, [3]int{c.threads, 1, 1}); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		for tid := 0; tid < c.threads; tid++ {
			if got, want := load(buf.data[4*tid:], 4), uint64(100+c.src(tid%32)); got != want {
				t.Errorf("%s: thread %d got %d, want %d", c.name, tid, got, want)
			}
		}
	}
	for _, c := range []struct {
		name    string
		b, mask int64
		threads int
		want    string
	}{
		{"member mask of half the warp", 1, 0xFFFF, 32, "member mask 0xffff, but the lanes of the warp that run it are 0xffffffff"},
		{"full mask for a warp of 8 lanes", 1, -1, 8, "member mask 0xffffffff, but the lanes of the warp that run it are 0xff"},
		{"a source lane that does not exist", 8, 0xFF, 8, "lane 0 reads lane 8, which is not in the member mask 0xff"},
	} {
		buf := &emuBuf{name: "out", data: make([]byte, 4*c.threads)}
		m := &emulator{e: shflEntry("bfly", c.b, 31, c.mask), params: map[string]uint64{"p_out": 1 << globalShift}, global: []*emuBuf{buf}}
		if err := m.run([3]int{1, 1, 1}, [3]int{c.threads, 1, 1}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}
