package ptx

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// An emulator of the PTX this backend emits (the tests' and kgen tune's, Emulate): it runs the instructions of an Entry (parsed from
// the printed text, by their printed mnemonic) for every thread of every block, the threads of a
// block one at a time between barriers. It models the state spaces (global buffers with bounds checks,
// per-block shared arrays filled with NaN bits), cp.async groups (a copy lands when a wait_group
// retires its group: an early read sees NaN), and reports shared-memory races between barriers
// (a read or write of bytes another thread wrote since the last barrier, a write of bytes another
// thread read since then). Any mnemonic, modifier or type it does not
// know is an error, never a guess. It runs PTX text: emulate (and Emulate) prints the entries as a
// module and parses that back (emuparse.go), so what runs is what a driver loads; it covers only
// what the lowering emits.

type emuBuf struct {
	name string
	data []byte
}

type emuCopy struct {
	dst  uint64
	data []byte
}

type emuThread struct {
	pc       int
	regs     [7][]uint64
	tid      [3]uint64
	pending  [][]emuCopy // committed groups, oldest first
	open     []emuCopy   // copies issued since the last commit
	done     bool
	barrier  bool
	coll     *Instr // the warp-collective instruction (mma.sync, ldmatrix, shfl.sync) the thread waits at
	id       int
	wg       *wgThread      // wgmma state (emu_wgmma_test.go), in entries that issue wgmma
	mwait    *emuWait       // a failed mbarrier try_wait (emu_tma_test.go)
	seen     map[uint64]int // per mbarrier, the phases this thread saw complete
	arrivals int            // mbarrier arrivals made
	hb       map[int]int    // per thread, its arrivals that happen before this thread's point
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
	// shared arrays lie at flat addresses, each only as aligned as declared (base[i]), with unmapped
	// gaps between them; in entries with wgmma, generic[i][k] is the thread (+1) whose generic-proxy
	// write of the byte no fence.proxy.async has covered yet
	base     []uint64
	generic  [][]int32
	inflight [][]int32 // per shared byte, the reads of wgmmas not retired yet
	proxy    bool
	steps    int
	names    map[*Instr][]string
	tma      *tmaState         // mbarriers and bulk copies (emu_tma_test.go)
	tmaps    map[string][]byte // tensor-map parameters by name
}

const globalShift = 40

// emuBanks, when set (by a test; nil otherwise), records the shared-memory addresses of every
// ldmatrix phase and of every cp.async store, so that a test can count bank conflicts
// (bank_test.go): the emulator itself has no notion of banks or timing.
var emuBanks *bankLog

// A bankLog holds the shared addresses of the accesses recorded while emuBanks was set.
type bankLog struct {
	// ldmatrix: per phase (one 8×8 matrix of one ldmatrix of one warp) the 8 row addresses (16 bytes each)
	ldmatrix [][]uint64
	// cpAsync: per store wave (one execution of one cp.async instruction by the lanes of one warp),
	// the lanes that ran it and their destination addresses, and the bytes each stores
	cpAsync map[cpWave][]cpLane
	// runs counts the executions of an instruction by a thread, to tell the waves of a loop apart
	runs map[cpRun]int
}

type cpWave struct {
	ctaid [3]uint64
	warp  int
	in    *Instr
	n     int // the n-th execution by each lane
}

type cpRun struct {
	ctaid [3]uint64
	id    int
	in    *Instr
}

type cpLane struct {
	lane, size int
	addr       uint64
}

func (b *bankLog) cp(m *emulator, th *emuThread, in *Instr, addr uint64, size int) {
	r := cpRun{m.ctaid, th.id, in}
	n := b.runs[r]
	b.runs[r] = n + 1
	w := cpWave{m.ctaid, th.id / 32, in, n}
	b.cpAsync[w] = append(b.cpAsync[w], cpLane{lane: th.id % 32, size: size, addr: addr})
}

// sharedGap is the unmapped space before and between the emulator's shared arrays.
const sharedGap = 1024

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
	m.writer, m.reader, m.base, m.generic, m.inflight = nil, nil, nil, nil, nil
	m.proxy = usesWGMMA(m.e)
	next := uint64(sharedGap)
	for i, s := range m.e.Shared {
		b := &emuBuf{name: s.Name, data: make([]byte, s.Bytes())} // dynamic: exactly the bytes the launch passes
		for j := range b.data {
			b.data[j] = 0xFF // NaN in every float type: undefined contents read by mistake show
		}
		m.shared = append(m.shared, b)
		m.sharedI[s.Name] = i
		m.writer = append(m.writer, make([]int32, len(b.data)))
		m.reader = append(m.reader, make([]int32, len(b.data)))
		m.generic = append(m.generic, make([]int32, len(b.data)))
		m.inflight = append(m.inflight, make([]int32, len(b.data)))
		// an odd multiple of the alignment: no more aligned than declared
		al := uint64(max(s.Align, 1))
		next = (next + al - 1) / al * al
		if next/al%2 == 0 {
			next += al
		}
		m.base = append(m.base, next)
		next += uint64(len(b.data)) + sharedGap
	}
	m.tma = nil
	if usesMbarrier(m.e) {
		m.newTMAState()
	}
	var ths []*emuThread
	for z := 0; z < block[2]; z++ {
		for y := 0; y < block[1]; y++ {
			for x := 0; x < block[0]; x++ {
				th := &emuThread{tid: [3]uint64{uint64(x), uint64(y), uint64(z)}, id: len(ths)}
				for c := range th.regs {
					th.regs[c] = make([]uint64, 1+m.e.nregs[classType(c)])
				}
				if m.proxy {
					th.wg = newWGThread(th)
				}
				ths = append(ths, th)
			}
		}
	}
	if m.tma != nil {
		m.tma.threads = ths
	}
	for {
		progress := false
		// Highest thread first: a thread that consumes what a lower thread (thread 0 folding partials)
		// produces runs before it unless a barrier orders them, so a missing barrier shows.
		for i := len(ths) - 1; i >= 0; i-- {
			th := ths[i]
			if !th.done && !th.barrier && th.coll == nil && !m.mwaiting(th) {
				m.runThread(th)
				progress = true
			}
		}
		// A warpgroup whose 128 threads all wait at one wgmma executes it.
		for w := 0; w+128 <= len(ths); w += 128 {
			group := ths[w : w+128]
			in := group[0].coll
			all := in != nil && strings.HasPrefix(in.Op, "wgmma.")
			for _, th := range group {
				all = all && th.coll == in
			}
			if all {
				m.wgmma(group, in)
				for _, th := range group {
					th.coll = nil
				}
				progress = true
			}
		}
		// A warp whose 32 threads all wait at one collective instruction executes it.
		for w := 0; w < len(ths); w += 32 {
			warp := ths[w:min(w+32, len(ths))]
			in := warp[0].coll
			if in != nil && strings.HasPrefix(in.Op, "wgmma.") {
				continue
			}
			all := in != nil && (len(warp) == 32 || strings.HasPrefix(in.Op, "shfl"))
			for _, th := range warp {
				all = all && th.coll == in
			}
			if all {
				if strings.HasPrefix(in.Op, "shfl") {
					m.shfl(warp, in)
				} else if strings.HasPrefix(in.Op, "ldmatrix") {
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
		m.tmaDeadlock(ths, done == len(ths))
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
			if m.tma != nil {
				clear(m.tma.rd[i])
			}
		}
	}
}

func classType(c int) Type {
	return [...]Type{Pred, B16, B32, B64, F32, F64, B64}[c]
}

func (m *emulator) reg(th *emuThread, r Reg) uint64 { return th.regs[classIndex(r.T)][r.n] }

func (m *emulator) set(th *emuThread, r Reg, v uint64) {
	c := classIndex(r.T)
	th.regs[c][r.n] = v
	if th.wg != nil {
		th.wg.written[c][r.n] = true
	}
}

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
			return m.base[i]
		}
		if a, ok := m.tmapParam(s); ok {
			return a
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
		i := -1
		for x, b := range m.base {
			if addr >= b && addr < b+uint64(len(m.shared[x].data)) {
				i = x
			}
		}
		if i < 0 {
			emuError("shared address %#x is in no array", addr)
		}
		off := int(addr - m.base[i])
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
	m.bulkCheck(th, i, off, n, write)
	me := int32(th.id + 1)
	for k := off; k < off+n; k++ {
		if w := m.writer[i][k]; w != 0 && w != me {
			emuError("shared-memory race on %s byte %d: thread %d accesses what thread %d wrote since the last barrier", m.shared[i].name, k, th.id, w-1)
		}
		if !write && m.tma != nil {
			m.tma.noteRead(th, i, k)
		}
		r := m.reader[i][k]
		if write {
			if r != 0 && r != me {
				emuError("shared-memory race on %s byte %d: thread %d overwrites what another thread read since the last barrier", m.shared[i].name, k, th.id)
			}
			m.writer[i][k] = me
			m.noteGenericWrite(th, i, k)
		} else if r == 0 || (r == me && m.tma != nil) {
			m.reader[i][k] = me
			if m.tma != nil {
				m.tma.readArr[i][k] = int32(th.arrivals)
			}
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
		if strings.HasPrefix(in.Op, "mma.sync") || strings.HasPrefix(in.Op, "ldmatrix") || strings.HasPrefix(in.Op, "shfl.sync") || strings.HasPrefix(in.Op, "wgmma.mma_async") {
			th.coll = in
			return
		}
		if m.exec(th, in) {
			return
		}
	}
}
