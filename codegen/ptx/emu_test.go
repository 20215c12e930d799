package ptx

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/kgen-dev/kgen/f16"
)

// A test-only emulator of the PTX this backend emits: it runs the instructions of an Entry (the values
// the printer prints, by their printed mnemonic) for every thread of every block, the threads of a
// block one at a time between barriers. It models the state spaces (global buffers with bounds checks,
// per-block shared arrays filled with NaN bits), cp.async groups (a copy lands when a wait_group
// retires its group: an early read sees NaN), and reports shared-memory races between barriers
// (a read or write of bytes another thread wrote since the last barrier, a write of bytes another
// thread read since then). Any mnemonic it does not
// know is an error, never a guess. It is not the project's PTX interpreter (issue 11, point 2): it
// reads the builder's values, not PTX text, and covers only what the lowering emits.

type emuBuf struct {
	name string
	data []byte
}

type emuCopy struct {
	dst  uint64
	data []byte
}

type emuThread struct {
	pc      int
	regs    [7][]uint64
	tid     [3]uint64
	pending [][]emuCopy // committed groups, oldest first
	open    []emuCopy   // copies issued since the last commit
	done    bool
	barrier bool
	coll    *Instr // the warp-collective instruction (mma.sync) the thread waits at
	id      int
}

type emulator struct {
	e       *Entry
	labels  map[int]int
	params  map[string]uint64
	global  []*emuBuf
	shared  []*emuBuf
	sharedI map[string]int
	ctaid   [3]uint64
	ntid    [3]uint64
	nctaid  [3]uint64
	// race check: for each shared byte, the thread that wrote it in the current barrier epoch (+1)
	writer [][]int32
	reader [][]int32 // the thread that read it (+1), -1 for several
	steps  int
	names  map[*Instr][]string
}

const globalShift = 40

func emuError(format string, args ...any) { panic(emuFault(fmt.Sprintf(format, args...))) }

type emuFault string

func classIndex(t Type) int {
	c, _ := t.regClass()
	switch c {
	case Pred:
		return 0
	case B16:
		return 1
	case B32:
		return 2
	case B64:
		return 3
	case F32:
		return 4
	case F64:
		return 5
	}
	return 6
}

// run executes the entry on grid×block threads. Global buffers are addressed (i+1)<<40 + offset.
func (m *emulator) run(grid, block [3]int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(emuFault)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%s", string(f))
		}
	}()
	m.labels = map[int]int{}
	for pc, it := range m.e.body {
		if l, ok := it.(labelDef); ok {
			m.labels[l.l.n] = pc
		}
	}
	for i := range 3 {
		m.ntid[i], m.nctaid[i] = uint64(block[i]), uint64(grid[i])
	}
	for z := 0; z < grid[2]; z++ {
		for y := 0; y < grid[1]; y++ {
			for x := 0; x < grid[0]; x++ {
				m.ctaid = [3]uint64{uint64(x), uint64(y), uint64(z)}
				m.runBlock(block)
			}
		}
	}
	return nil
}

func (m *emulator) runBlock(block [3]int) {
	m.shared = nil
	m.sharedI = map[string]int{}
	m.writer, m.reader = nil, nil
	for i, s := range m.e.Shared {
		b := &emuBuf{name: s.Name, data: make([]byte, s.Count*s.T.Bits()/8)}
		for j := range b.data {
			b.data[j] = 0xFF // NaN in every float type: undefined contents read by mistake show
		}
		m.shared = append(m.shared, b)
		m.sharedI[s.Name] = i
		m.writer = append(m.writer, make([]int32, len(b.data)))
		m.reader = append(m.reader, make([]int32, len(b.data)))
	}
	var ths []*emuThread
	for z := 0; z < block[2]; z++ {
		for y := 0; y < block[1]; y++ {
			for x := 0; x < block[0]; x++ {
				th := &emuThread{tid: [3]uint64{uint64(x), uint64(y), uint64(z)}, id: len(ths)}
				for c := range th.regs {
					th.regs[c] = make([]uint64, 1+m.e.nregs[classType(c)])
				}
				ths = append(ths, th)
			}
		}
	}
	for {
		progress := false
		// Highest thread first: a thread that consumes what a lower thread (thread 0 folding partials)
		// produces runs before it unless a barrier orders them, so a missing barrier shows.
		for i := len(ths) - 1; i >= 0; i-- {
			th := ths[i]
			if !th.done && !th.barrier && th.coll == nil {
				m.runThread(th)
				progress = true
			}
		}
		// A warp whose 32 threads all wait at one collective instruction executes it.
		for w := 0; w < len(ths); w += 32 {
			warp := ths[w:min(w+32, len(ths))]
			in := warp[0].coll
			all := in != nil && len(warp) == 32
			for _, th := range warp {
				all = all && th.coll == in
			}
			if all {
				if strings.HasPrefix(in.Op, "ldmatrix") {
					m.ldmatrix(warp, in)
				} else {
					m.warpMMA(warp, in)
				}
				for _, th := range warp {
					th.coll = nil
				}
				progress = true
			}
		}
		if progress {
			continue
		}
		waiting, done := 0, 0
		for _, th := range ths {
			switch {
			case th.done:
				done++
			case th.coll != nil:
				emuError("%s: thread %d waits for lanes of its warp that never reach it", th.coll.Op, th.id)
			case th.barrier:
				waiting++
			}
		}
		if done == len(ths) {
			return
		}
		if done > 0 {
			emuError("bar.sync: %d threads wait at a barrier that %d finished threads never reach", waiting, done)
		}
		for _, th := range ths {
			th.barrier = false
		}
		for i := range m.writer {
			clear(m.writer[i])
			clear(m.reader[i])
		}
	}
}

// warpMMA runs mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 for a warp, with the
// fragment layouts of the PTX ISA ("Matrix Fragments for mma.m16n8k16 with floating point type"),
// written here independently of ir/layout.go: g = lane>>2, t = lane%4; A a0a1 (g, 2t+{0,1}), a2a3
// (g+8, 2t+{0,1}), a4a5 (g, 2t+8+{0,1}), a6a7 (g+8, 2t+8+{0,1}); B b0b1 (k = 2t+{0,1}, n = g), b2b3
// (k = 2t+8+{0,1}, n = g); C, D c0c1 (g, 2t+{0,1}), c2c3 (g+8, 2t+{0,1}); two 16-bit elements per
// .b32, the lower index in the low half. Products are summed exactly (f64) and rounded once to f32.
func (m *emulator) warpMMA(warp []*emuThread, in *Instr) {
	if in.Op != "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" && in.Op != "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" {
		emuError("unknown instruction %s", in.Op)
	}
	bf := strings.Contains(in.Op, "bf16")
	half := func(v uint64, hi bool) float64 {
		h := uint16(v)
		if hi {
			h = uint16(v >> 16)
		}
		if bf {
			return float64(f16.BF16(h).Float32())
		}
		return float64(f16.F16(h).Float32())
	}
	var A [16][16]float64
	var B [16][8]float64
	var C [16][8]float64
	for lane, th := range warp {
		g, t := lane>>2, lane%4
		av, bv, cv := in.Args[1].(Vec), in.Args[2].(Vec), in.Args[3].(Vec)
		for i := 0; i < 8; i++ {
			row := g + 8*((i>>1)&1)
			col := 2*t + i&1 + 8*(i>>2)
			A[row][col] = half(m.reg(th, av[i/2]), i%2 == 1)
		}
		for i := 0; i < 4; i++ {
			B[2*t+i&1+8*(i>>1)][g] = half(m.reg(th, bv[i/2]), i%2 == 1)
		}
		for i := 0; i < 4; i++ {
			C[g+8*(i>>1)][2*t+i&1] = float64(f32(m.reg(th, cv[i])))
		}
	}
	for lane, th := range warp {
		g, t := lane>>2, lane%4
		dv := in.Args[0].(Vec)
		for i := 0; i < 4; i++ {
			r, c := g+8*(i>>1), 2*t+i&1
			s := C[r][c]
			for k := 0; k < 16; k++ {
				s += A[r][k] * B[k][c]
			}
			m.set(th, dv[i], b32(float32(s)))
		}
	}
}

func classType(c int) Type {
	return [...]Type{Pred, B16, B32, B64, F32, F64, B64}[c]
}

func (m *emulator) reg(th *emuThread, r Reg) uint64 { return th.regs[classIndex(r.T)][r.n] }

func (m *emulator) set(th *emuThread, r Reg, v uint64) { th.regs[classIndex(r.T)][r.n] = v }

// value reads a source operand as bits of type t.
func (m *emulator) value(th *emuThread, o Operand, t Type) uint64 {
	switch x := o.(type) {
	case Reg:
		return m.reg(th, x)
	case Imm:
		return uint64(int64(x))
	case FImm:
		if x.T == F64 || t == F64 {
			return math.Float64bits(x.V)
		}
		return uint64(math.Float32bits(float32(x.V)))
	case Sym:
		s := string(x)
		if s == "%laneid" {
			return uint64(th.id % 32)
		}
		for i, name := range []string{"%tid.", "%ctaid.", "%ntid.", "%nctaid."} {
			if strings.HasPrefix(s, name) {
				axis := strings.IndexByte("xyz", s[len(s)-1])
				return [][3]uint64{th.tid, m.ctaid, m.ntid, m.nctaid}[i][axis]
			}
		}
		if i, ok := m.sharedI[s]; ok {
			return uint64(i+1) << 32
		}
		emuError("unknown symbol %s", s)
	}
	emuError("operand %v", o)
	return 0
}

// mem resolves an address in a state space to a buffer, its index and the byte offset.
func (m *emulator) mem(th *emuThread, sp string, a Addr, n int) (*emuBuf, int, int) {
	base := m.value(th, a.Base, B64)
	addr := base + uint64(a.Off)
	switch sp {
	case "global":
		i := int(addr>>globalShift) - 1
		off := int(addr & (1<<globalShift - 1))
		if i < 0 || i >= len(m.global) {
			emuError("global address %#x is in no buffer", addr)
		}
		b := m.global[i]
		if off < 0 || off+n > len(b.data) {
			emuError("global access to %s at byte %d (+%d) outside its %d bytes (thread %v of block %v)", b.name, off, n, len(b.data), th.tid, m.ctaid)
		}
		return b, i, off
	case "shared":
		i := int(addr>>32) - 1
		off := int(addr & (1<<32 - 1))
		if i < 0 || i >= len(m.shared) {
			emuError("shared address %#x is in no array", addr)
		}
		b := m.shared[i]
		if off < 0 || off+n > len(b.data) {
			emuError("shared access to %s at byte %d (+%d) outside its %d bytes", b.name, off, n, len(b.data))
		}
		return b, i, off
	}
	emuError("state space %s", sp)
	return nil, 0, 0
}

func (m *emulator) sharedAccess(th *emuThread, i, off, n int, write bool) {
	me := int32(th.id + 1)
	for k := off; k < off+n; k++ {
		if w := m.writer[i][k]; w != 0 && w != me {
			emuError("shared-memory race on %s byte %d: thread %d accesses what thread %d wrote since the last barrier", m.shared[i].name, k, th.id, w-1)
		}
		r := m.reader[i][k]
		if write {
			if r != 0 && r != me {
				emuError("shared-memory race on %s byte %d: thread %d overwrites what another thread read since the last barrier", m.shared[i].name, k, th.id)
			}
			m.writer[i][k] = me
		} else if r == 0 {
			m.reader[i][k] = me
		} else if r != me {
			m.reader[i][k] = -1
		}
	}
}

func load(b []byte, n int) uint64 {
	switch n {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func storeBytes(b []byte, n int, v uint64) {
	switch n {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
}

func f32(v uint64) float32 { return math.Float32frombits(uint32(v)) }
func b32(x float32) uint64 { return uint64(math.Float32bits(x)) }
func f64(v uint64) float64 { return math.Float64frombits(v) }
func b64(x float64) uint64 { return math.Float64bits(x) }
func sext(v uint64, t Type) int64 {
	switch t.Bits() {
	case 32:
		return int64(int32(v))
	case 16:
		return int64(int16(v))
	}
	return int64(v)
}

// fval reads a float operand of type t as float64.
func fval(v uint64, t Type) float64 {
	if t == F64 {
		return f64(v)
	}
	return float64(f32(v))
}

// fbits rounds x to type t and returns its bits.
func fbits(x float64, t Type) uint64 {
	if t == F64 {
		return b64(x)
	}
	return b32(float32(x))
}

// intBits truncates an integer result to t's width.
func intBits(x int64, t Type) uint64 {
	switch t.Bits() {
	case 32:
		return uint64(uint32(x))
	case 16:
		return uint64(uint16(x))
	}
	return uint64(x)
}

// runThread runs th until it reaches a barrier or returns.
func (m *emulator) runThread(th *emuThread) {
	for {
		if th.pc >= len(m.e.body) {
			th.done = true
			return
		}
		it := m.e.body[th.pc]
		th.pc++
		in, ok := it.(*Instr)
		if !ok {
			continue
		}
		m.steps++
		if m.steps > 200_000_000 {
			emuError("more than 2e8 instructions: a loop that does not end?")
		}
		if in.Guard != nil {
			p := m.reg(th, *in.Guard) != 0
			if p == in.Neg {
				continue
			}
		}
		if strings.HasPrefix(in.Op, "mma.sync") || strings.HasPrefix(in.Op, "ldmatrix") {
			th.coll = in
			return
		}
		if m.exec(th, in) {
			return
		}
	}
}

// exec runs one instruction; it reports true when the thread must stop (barrier).
func (m *emulator) exec(th *emuThread, in *Instr) bool {
	tok, ok := m.names[in]
	if !ok {
		var name strings.Builder
		name.WriteString(in.Op)
		for _, md := range in.Mods {
			name.WriteString(md)
		}
		for _, t := range in.Types {
			name.WriteString(t.String())
		}
		tok = strings.Split(name.String(), ".")
		if m.names == nil {
			m.names = map[*Instr][]string{}
		}
		m.names[in] = tok
	}
	var t Type
	if len(in.Types) > 0 {
		t = in.Types[len(in.Types)-1]
	}
	a := in.Args
	src := func(i int) uint64 { return m.value(th, a[i], t) }
	dst := func(v uint64) { m.set(th, a[0].(Reg), v) }
	isF := t == F32 || t == F64
	switch tok[0] {
	case "ld":
		n := t.Bits() / 8
		if tok[1] == "param" {
			dst(m.params[string(a[1].(Addr).Base.(Sym))])
			return false
		}
		if v, ok := a[0].(Vec); ok {
			// ld.space.vN.type {r0, ..}, [addr]: N consecutive elements, aligned to the vector size
			total := n * len(v)
			if tok[2] != "v"+string(rune('0'+len(v))) {
				emuError("%s with %d registers", strings.Join(tok, "."), len(v))
			}
			b, i, off := m.mem(th, tok[1], a[1].(Addr), total)
			if (m.value(th, a[1].(Addr).Base, B64)+uint64(a[1].(Addr).Off))%uint64(total) != 0 {
				emuError("%s: address not aligned to %d bytes", strings.Join(tok, "."), total)
			}
			if tok[1] == "shared" {
				m.sharedAccess(th, i, off, total, false)
			}
			for k, r := range v {
				m.set(th, r, load(b.data[off+k*n:], n))
			}
			return false
		}
		b, i, off := m.mem(th, tok[1], a[1].(Addr), n)
		if tok[1] == "shared" {
			m.sharedAccess(th, i, off, n, false)
		}
		dst(load(b.data[off:], n))
	case "st":
		n := t.Bits() / 8
		b, i, off := m.mem(th, tok[1], a[0].(Addr), n)
		if tok[1] == "shared" {
			m.sharedAccess(th, i, off, n, true)
		}
		storeBytes(b.data[off:], n, src(1))
	case "cvta":
		dst(src(1))
	case "mov":
		if v, ok := a[1].(Vec); ok {
			// pack: the first element in the low bits
			var bits uint64
			w := t.Bits() / len(v)
			for i := len(v) - 1; i >= 0; i-- {
				bits = bits<<w | m.reg(th, v[i])&(1<<w-1)
			}
			dst(bits)
			return false
		}
		dst(src(1))
	case "cvt":
		dst(m.cvt(tok[1:], src(1), in.Types))
	case "add", "sub", "mul", "div", "rem", "min", "max", "fma", "neg", "abs", "sqrt", "and", "or", "xor", "shl", "shr", "copysign":
		if t == Pred {
			dst(b2u(src(1) != 0 && src(2) != 0))
			return false
		}
		if isF {
			dst(m.float(tok, t, a, src))
		} else {
			dst(m.integer(tok[0], t, a, src))
		}
	case "setp":
		cmp := tok[1]
		r := compareOp(cmp, src(1), src(2), t)
		if len(tok) > 3 && tok[2] == "and" {
			r = r && src(3) != 0
		}
		dst(b2u(r))
	case "selp":
		if src(3) != 0 {
			dst(src(1))
		} else {
			dst(src(2))
		}
	case "bra":
		th.pc = m.labels[a[0].(Label).n]
	case "bar":
		if tok[1] == "sync" {
			th.barrier = true
			return true
		}
		emuError("%s", strings.Join(tok, "."))
	case "cp":
		switch tok[2] {
		case "ca", "cg":
			size, srcSize := int(src(2)), int(src(3))
			if (tok[2] == "cg" && size != 16) || (size != 4 && size != 8 && size != 16) || srcSize > size || srcSize < 0 {
				emuError("%s with cp-size %d, src-size %d", strings.Join(tok, "."), size, srcSize)
			}
			for _, x := range []Addr{a[0].(Addr), a[1].(Addr)} {
				if (m.value(th, x.Base, B64)+uint64(x.Off))%uint64(size) != 0 {
					emuError("%s: address not aligned to %d bytes", strings.Join(tok, "."), size)
				}
			}
			m.mem(th, "shared", a[0].(Addr), size) // bounds check of the destination
			data := make([]byte, size)
			if srcSize > 0 {
				sb, _, soff := m.mem(th, "global", a[1].(Addr), srcSize)
				copy(data, sb.data[soff:soff+srcSize])
			}
			dstAddr := m.value(th, a[0].(Addr).Base, B64) + uint64(a[0].(Addr).Off)
			th.open = append(th.open, emuCopy{dst: dstAddr, data: data})
		case "commit_group":
			th.pending = append(th.pending, th.open)
			th.open = nil
		case "wait_group":
			keep := int(src(0))
			for len(th.pending) > keep {
				for _, c := range th.pending[0] {
					b, i, off := m.mem(th, "shared", Addr{Base: Imm(int64(c.dst))}, len(c.data))
					m.sharedAccess(th, i, off, len(c.data), true)
					copy(b.data[off:], c.data)
				}
				th.pending = th.pending[1:]
			}
		default:
			emuError("unknown instruction %s", strings.Join(tok, "."))
		}
	default:
		emuError("unknown instruction %s", strings.Join(tok, "."))
	}
	return false
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func compareOp(cmp string, x, y uint64, t Type) bool {
	if t == F32 || t == F64 {
		a, b := fval(x, t), fval(y, t)
		switch cmp {
		case "lt":
			return a < b
		case "le":
			return a <= b
		case "gt":
			return a > b
		case "ge":
			return a >= b
		case "eq":
			return a == b
		case "ne":
			return a != b && a == a && b == b
		case "neu":
			return a != b
		case "nan":
			return a != a || b != b
		case "ltu":
			return !(a >= b)
		}
		emuError("setp.%s on floats", cmp)
	}
	a, b := sext(x, t), sext(y, t)
	switch cmp {
	case "lt":
		return a < b
	case "le":
		return a <= b
	case "gt":
		return a > b
	case "ge":
		return a >= b
	case "eq":
		return a == b
	case "ne":
		return a != b
	}
	emuError("setp.%s on integers", cmp)
	return false
}

func (m *emulator) float(tok []string, t Type, a []Operand, src func(int) uint64) uint64 {
	x := fval(src(1), t)
	r := func(v float64) uint64 { return fbits(v, t) }
	nanProp := len(tok) > 1 && tok[1] == "NaN"
	switch tok[0] {
	case "neg":
		return r(-x)
	case "abs":
		return r(math.Abs(x))
	case "sqrt":
		return r(math.Sqrt(x))
	}
	y := fval(src(2), t)
	switch tok[0] {
	case "add":
		return r(x + y)
	case "sub":
		return r(x - y)
	case "mul":
		return r(x * y)
	case "div":
		return r(x / y)
	case "fma":
		return r(math.FMA(x, y, fval(src(3), t)))
	case "copysign":
		return r(math.Copysign(y, x))
	case "min", "max":
		if x != x || y != y {
			if nanProp {
				return r(math.NaN())
			}
			if x != x {
				return r(y)
			}
			return r(x)
		}
		if tok[0] == "min" {
			return r(math.Min(x, y))
		}
		return r(math.Max(x, y))
	}
	emuError("float op %s", strings.Join(tok, "."))
	return 0
}

func (m *emulator) integer(op string, t Type, a []Operand, src func(int) uint64) uint64 {
	x := sext(src(1), t)
	var y int64
	if len(a) > 2 {
		y = sext(src(2), t)
	}
	var v int64
	switch op {
	case "add":
		v = x + y
	case "sub":
		v = x - y
	case "mul":
		v = x * y
	case "div":
		if y == 0 {
			v = -1
		} else {
			v = x / y
		}
	case "rem":
		if y == 0 {
			emuError("rem by zero")
		}
		v = x % y
	case "min":
		v = min(x, y)
	case "max":
		v = max(x, y)
	case "and":
		v = x & y
	case "xor":
		v = x ^ y
	case "or":
		v = x | y
	case "shl":
		v = x << uint64(src(2)&0xFFFFFFFF)
	case "shr":
		v = x >> uint64(src(2)&0xFFFFFFFF)
	case "neg":
		v = -x
	default:
		emuError("integer op %s", op)
	}
	return intBits(v, t)
}

// cvt converts between the types the lowering uses; mods holds the rounding modifier, if any, then the
// two types.
func (m *emulator) cvt(tok []string, v uint64, types []Type) uint64 {
	to, from := types[0], types[1]
	rnd := ""
	if len(tok) == 3 {
		rnd = tok[0]
	}
	isF := func(t Type) bool { return t == F32 || t == F64 || t == F16 || t == BF16 }
	fromF := func() float64 {
		switch from {
		case F16:
			return float64(f16.F16(uint16(v)).Float32())
		case BF16:
			return float64(f16.BF16(uint16(v)).Float32())
		}
		return fval(v, from)
	}
	switch {
	case isF(to) && isF(from):
		x := fromF()
		switch to {
		case F16:
			return uint64(f16.FromFloat64(x))
		case BF16:
			return uint64(f16.BF16FromFloat64(x))
		}
		if rnd == "rni" {
			x = math.RoundToEven(x)
		}
		return fbits(x, to)
	case isF(from):
		x := fromF()
		if x != x {
			return 0
		}
		if rnd != "rzi" {
			emuError("cvt.%s float to integer", rnd)
		}
		return intBits(int64(math.Trunc(x)), to)
	case isF(to):
		var x float64
		if from == U32 || from == U16 || from == U64 {
			x = float64(v)
		} else {
			x = float64(sext(v, from))
		}
		return fbits(x, to)
	}
	// integer to integer: sign- or zero-extend from the source, truncate to the destination
	var x int64
	switch from {
	case U16, U32, U64, B16, B32, B64:
		x = int64(v & (1<<uint(from.Bits()) - 1))
		if from.Bits() == 64 {
			x = int64(v)
		}
	default:
		x = sext(v, from)
	}
	return intBits(x, to)
}

// ldmatrix runs ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{,.trans}.shared.b16 for a warp (PTX ISA
// "ldmatrix"): the lanes 8i..8i+7 give the row addresses of matrix i; lane l receives in its register i
// the elements (row l/4, columns 2·(l%4) and +1) of matrix i, or with .trans those of its transpose
// (rows 2·(l%4) and +1 of column l/4), the lower column in the low half.
func (m *emulator) ldmatrix(warp []*emuThread, in *Instr) {
	tok := strings.Split(in.Op, ".")
	var count int
	switch {
	case len(tok) > 4 && tok[4] == "x1":
		count = 1
	case len(tok) > 4 && tok[4] == "x2":
		count = 2
	case len(tok) > 4 && tok[4] == "x4":
		count = 4
	default:
		emuError("unknown instruction %s", in.Op)
	}
	trans := strings.Contains(in.Op, ".trans.")
	if !strings.HasSuffix(in.Op, ".shared.b16") || !strings.HasPrefix(in.Op, "ldmatrix.sync.aligned.m8n8.") {
		emuError("unknown instruction %s", in.Op)
	}
	rowAddr := make([]uint64, 8*count)
	for i := range rowAddr {
		a := in.Args[1].(Addr)
		rowAddr[i] = m.value(warp[i], a.Base, B64) + uint64(a.Off)
		if rowAddr[i]%16 != 0 {
			emuError("ldmatrix: row address %#x of lane %d is not 16-byte aligned", rowAddr[i], i)
		}
	}
	elem := func(th *emuThread, mat, r, c int) uint64 {
		b, i, off := m.mem(th, "shared", Addr{Base: Imm(int64(rowAddr[8*mat+r] + uint64(2*c)))}, 2)
		m.sharedAccess(th, i, off, 2, false)
		return load(b.data[off:], 2)
	}
	for l, th := range warp {
		regs := in.Args[0].(Vec)
		if len(regs) != count {
			emuError("ldmatrix .x%d with %d registers", count, len(regs))
		}
		for i := 0; i < count; i++ {
			var lo, hi uint64
			if trans {
				lo, hi = elem(th, i, 2*(l%4), l/4), elem(th, i, 2*(l%4)+1, l/4)
			} else {
				lo, hi = elem(th, i, l/4, 2*(l%4)), elem(th, i, l/4, 2*(l%4)+1)
			}
			m.set(th, regs[i], lo|hi<<16)
		}
	}
}
