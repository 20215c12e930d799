package ptx

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/ir"
)

// TMA and mbarrier instructions of the emulator (emu.go), written from the PTX ISA
// ("mbarrier", "cp.async.bulk.tensor", "Tensor Access Modes: tile", "Tensor-map swizzle modes"),
// independently of the backend's tma.go:
//
//   - an mbarrier (8 bytes of shared memory) has a phase count, the arrivals it expects per phase (its
//     init count), the arrivals still pending, and a transaction count: arrive.expect_tx adds bytes,
//     each bulk copy completing on it subtracts the bytes it wrote; the phase completes when no arrival
//     is pending and the transaction count is zero (more bytes than expected is an error here: on
//     hardware the phase would complete early, on part of the data). Using a barrier that no
//     mbarrier.init set up, or before a bar.sync that follows another thread's init, is an error;
//   - try_wait.parity P returns true iff the barrier's current phase has the other parity (the phase
//     with parity P before it completed); a thread whose try_wait fails is suspended until the barrier
//     moves on, and a block where every live thread waits for something that never happens is a
//     deadlock error that names the barrier and what it lacks;
//   - cp.async.bulk.tensor.2d ... tile.mbarrier::complete_tx::bytes [dst], [map, {x, y}], [bar] copies
//     the box at coordinates (x, y) of the map's tensor (dims, byte strides, box, element size, swizzle
//     and fill mode decoded from the map, whose layout is the mock driver's: rt/cuda/testdata/mockcuda.c)
//     into shared memory at dst (128-byte aligned), row after row, each row box[0]·size bytes, with the
//     map's swizzle applied to the absolute shared address (the 16-byte chunk bits 4.. XORed with bits
//     7..: 1, 2 or 3 bits for the 32-, 64- and 128-byte modes); box elements outside the tensor's dims
//     are zeros (fill mode 0) and read nothing; elements inside are read from global memory with its
//     bounds check. The bytes land when the barrier's phase completes: until then touching them is an
//     error, and after it a thread (or a warpgroup's wgmma) may read them only once it has seen that
//     phase complete through a try_wait of its own. The copy overwriting bytes another thread read since
//     the last bar.sync, or that a wgmma still in flight reads, is an error, unless the reader arrived
//     on an mbarrier after reading and the issuing thread has seen that arrival's phase complete
//     (arrive releases, try_wait acquires: how a consumer hands a stage back to the producer).

// emuMbar is one mbarrier of the running block.
type emuMbar struct {
	count, pending, tx, phase int
	flight                    []emuLanding
	rel                       map[int]int         // current phase: per arriving thread, its arrivals after arriving
	relOf                     map[int]map[int]int // per completed phase, its rel
}

// emuLanding is one byte a bulk copy writes when its barrier's phase completes.
type emuLanding struct {
	arr, off int
	v        byte
}

// emuTag marks a shared byte written by a bulk copy: the barrier, the phase it completes on, whether
// it is still in flight.
type emuTag struct {
	bar    uint64
	phase  int
	flight bool
}

// tmaState is the TMA/mbarrier state of an emulated block (nil in entries without mbarriers).
type tmaState struct {
	bars    map[uint64]*emuMbar
	tags    [][]emuTag
	group   []*emuThread // the warpgroup whose wgmma is reading shared memory now
	readArr [][]int32    // per shared byte, the arrivals its reader (emulator.reader) had made
	early   [][]bool     // shared bytes a wgmma still read when a thread of its warpgroup arrived on an mbarrier
	threads []*emuThread // the block's threads
	// rd: per shared byte, every thread that read it since the last bar.sync and the arrivals it had
	// made when the read completed (a wgmma's read completes when wgmma.wait_group retires it): a bulk
	// copy may overwrite the byte once the issuer acquired a later arrival of each (several consumer
	// warpgroups read the same B tile)
	rd [][][]emuRead
}

// emuRead is one reader of a shared byte.
type emuRead struct{ thread, arrivals int }

// noteRead records th's read of shared byte k of array i, complete now.
func (s *tmaState) noteRead(th *emuThread, i, k int) {
	for j := range s.rd[i][k] {
		if s.rd[i][k][j].thread == th.id {
			s.rd[i][k][j].arrivals = th.arrivals
			return
		}
	}
	s.rd[i][k] = append(s.rd[i][k], emuRead{th.id, th.arrivals})
}

// emuWait is a suspended try_wait.
type emuWait struct {
	bar    uint64
	parity int
}

// tmapBase is where the emulator places the tensor-map parameters (param space, outside the global
// buffers' addresses).
const tmapBase = 1 << 60

// usesMbarrier reports whether the entry uses mbarriers.
func usesMbarrier(e *Entry) bool {
	for _, it := range e.body {
		if in, ok := it.(*Instr); ok && strings.HasPrefix(in.Op, "mbarrier.") {
			return true
		}
	}
	return false
}

// newTMAState allocates the block's TMA state.
func (m *emulator) newTMAState() {
	m.tma = &tmaState{bars: map[uint64]*emuMbar{}}
	for _, s := range m.shared {
		m.tma.tags = append(m.tma.tags, make([]emuTag, len(s.data)))
		m.tma.readArr = append(m.tma.readArr, make([]int32, len(s.data)))
		m.tma.early = append(m.tma.early, make([]bool, len(s.data)))
		m.tma.rd = append(m.tma.rd, make([][]emuRead, len(s.data)))
	}
}

// tmapParam returns the address of a tensor-map parameter, or false.
func (m *emulator) tmapParam(name string) (uint64, bool) {
	for i, p := range m.e.Params {
		if p.Name == name && p.Bytes > 0 {
			if _, ok := m.tmaps[name]; !ok {
				emuError("tensor-map parameter %s was not given a map", name)
			}
			return tmapBase + uint64(i)*256, true
		}
	}
	return 0, false
}

// tmapAt returns the 128 bytes of the tensor map at address a.
func (m *emulator) tmapAt(a uint64) []byte {
	if a >= tmapBase {
		i := int((a - tmapBase) / 256)
		if (a-tmapBase)%256 == 0 && i < len(m.e.Params) {
			if b, ok := m.tmaps[m.e.Params[i].Name]; ok {
				return b
			}
		}
	}
	emuError("tensor-map address %#x is not a tensor-map parameter", a)
	return nil
}

// barAt resolves an mbarrier operand, checking that th may use it.
func (m *emulator) barAt(th *emuThread, op string, a Addr) (uint64, *emuMbar) {
	addr := m.value(th, a.Base, B64) + uint64(a.Off)
	if addr%8 != 0 {
		emuError("%s: mbarrier address %#x is not 8-byte aligned", op, addr)
	}
	_, i, off := m.mem(th, "shared", a, 8)
	s := m.tma.bars[addr]
	if s == nil {
		emuError("%s: thread %d uses the mbarrier at %s byte %d, which no mbarrier.init set up", op, th.id, m.shared[i].name, off)
	}
	if w := m.writer[i][off]; w != 0 && w != int32(th.id+1) {
		emuError("%s: thread %d uses the mbarrier at %s byte %d that thread %d initialised with no bar.sync since", op, th.id, m.shared[i].name, off, w-1)
	}
	return addr, s
}

// mbarrierOp runs an mbarrier instruction; it reports true when the thread is suspended.
func (m *emulator) mbarrierOp(th *emuThread, in *Instr) bool {
	a := in.Args
	switch in.Op {
	case "mbarrier.init.shared::cta.b64":
		ad := a[0].(Addr)
		addr := m.value(th, ad.Base, B64) + uint64(ad.Off)
		_, i, off := m.mem(th, "shared", ad, 8)
		if addr%8 != 0 {
			emuError("mbarrier.init at %#x: not 8-byte aligned", addr)
		}
		if s := m.tma.bars[addr]; s != nil && (len(s.flight) > 0 || s.pending != s.count || s.tx != 0) {
			emuError("mbarrier.init of %s byte %d while its phase %d is under way", m.shared[i].name, off, s.phase)
		}
		n := int(m.value(th, a[1], U32))
		if n < 1 || n > 1<<20-1 {
			emuError("mbarrier.init with count %d", n)
		}
		m.sharedAccess(th, i, off, 8, true)
		m.tma.bars[addr] = &emuMbar{count: n, pending: n}
	case "mbarrier.arrive.expect_tx.shared::cta.b64", "mbarrier.arrive.shared::cta.b64":
		addr, s := m.barAt(th, in.Op, a[1].(Addr))
		if in.Op == "mbarrier.arrive.expect_tx.shared::cta.b64" {
			s.tx += int(uint32(m.value(th, a[2], U32)))
		}
		if th.wg != nil && len(th.wg.pending)+len(th.wg.open) > 0 && m.tma.threads != nil {
			// an arrival while this thread's wgmmas are not retired does not release what they read
			lead := m.tma.threads[th.id/128*128]
			for _, g := range lead.wg.readPending {
				for _, x := range g {
					m.tma.early[x[0]][x[1]] = true
				}
			}
		}
		th.arrivals++
		if s.rel == nil {
			s.rel = map[int]int{}
		}
		s.rel[th.id] = th.arrivals // what the thread did before arriving happens before the phase's end
		s.pending--
		m.mbarProgress(addr, s)
		m.set(th, a[0].(Reg), uint64(s.phase)) // the state: opaque, unused by the backend
	case "mbarrier.try_wait.parity.shared::cta.b64":
		addr, s := m.barAt(th, in.Op, a[1].(Addr))
		parity := int(m.value(th, a[2], U32))
		if parity&^1 != 0 {
			emuError("%s with parity %d", in.Op, parity)
		}
		if s.phase%2 == parity {
			m.set(th, a[0].(Reg), 0)
			th.mwait = &emuWait{bar: addr, parity: parity}
			return true
		}
		m.set(th, a[0].(Reg), 1)
		if th.seen == nil {
			th.seen, th.hb = map[uint64]int{}, map[int]int{}
		}
		for p := th.seen[addr]; p < s.phase; p++ { // acquire: the arrivals of the phases seen complete now
			for t, n := range s.relOf[p] {
				th.hb[t] = max(th.hb[t], n)
			}
		}
		th.seen[addr] = max(th.seen[addr], s.phase)
	default:
		emuError("unknown instruction %s (the emulator models mbarrier.init, arrive[.expect_tx] and try_wait.parity on .shared::cta .b64 barriers)", in.Op)
	}
	return false
}

// mbarProgress completes a barrier's phase when all arrivals are in and all expected bytes landed.
func (m *emulator) mbarProgress(addr uint64, s *emuMbar) {
	switch {
	case s.pending < 0:
		emuError("mbarrier at %#x phase %d: more arrivals than its count %d", addr, s.phase, s.count)
	case s.pending == 0 && s.tx < 0:
		emuError("mbarrier at %#x phase %d: %d bytes landed beyond the expect_tx count (the phase would complete before all of them)", addr, s.phase, -s.tx)
	case s.pending > 0 || s.tx != 0:
		return
	}
	for _, l := range s.flight {
		m.shared[l.arr].data[l.off] = l.v
		m.tma.tags[l.arr][l.off].flight = false
	}
	if s.relOf == nil {
		s.relOf = map[int]map[int]int{}
	}
	s.relOf[s.phase] = s.rel
	s.flight, s.phase, s.pending, s.tx, s.rel = nil, s.phase+1, s.count, 0, nil
}

// bulkTensor runs cp.async.bulk.tensor (the tile load described above).
func (m *emulator) bulkTensor(th *emuThread, in *Instr) {
	const op = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
	if in.Op != op || len(in.Args) != 3 {
		emuError("unknown instruction %s (the emulator models %s)", in.Op, op)
	}
	ref, ok := in.Args[1].(TensorRef)
	if !ok || len(ref.Coords) != 2 {
		emuError("%s: the tensor operand is not [map, {x, y}]", op)
	}
	barAddr, bar := m.barAt(th, op, in.Args[2].(Addr))
	mp := decodeMockTensorMap(m.tmapAt(m.reg(th, ref.Map)))
	if mp.rank != 2 || mp.interleave != 0 || mp.oob != 0 || mp.estride[0] != 1 || mp.estride[1] != 1 {
		emuError("%s: map %+v: only rank 2, no interleave, zero fill, unit element strides are modelled", op, mp)
	}
	es := map[int32]int{0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2}[mp.dtype]
	if es == 0 {
		emuError("%s: map data type %d", op, mp.dtype)
	}
	rowBytes := int(mp.box[0]) * es
	span := [4]int{0, 32, 64, 128}[mp.swizzle&3]
	if mp.swizzle < 0 || mp.swizzle > 3 || (span != 0 && rowBytes != span) || rowBytes%16 != 0 {
		emuError("%s: box rows of %d bytes with swizzle mode %d are not modelled (a swizzled row must fill its span)", op, rowBytes, mp.swizzle)
	}
	da := in.Args[0].(Addr)
	dst := m.value(th, da.Base, B64) + uint64(da.Off)
	if dst%128 != 0 {
		emuError("%s: shared destination %#x is not 128-byte aligned", op, dst)
	}
	x0 := int64(int32(m.reg(th, ref.Coords[0])))
	y0 := int64(int32(m.reg(th, ref.Coords[1])))
	me := int32(th.id + 1)
	bits := [4]uint64{0, 1, 2, 3}[mp.swizzle]
	for y := int64(0); y < int64(mp.box[1]); y++ {
		for x := int64(0); x < int64(mp.box[0]); x++ {
			gx, gy := x0+x, y0+y
			val := make([]byte, es)
			if gx >= 0 && gy >= 0 && uint64(gx) < mp.dims[0] && uint64(gy) < mp.dims[1] {
				ga := mp.global + uint64(gy)*mp.strides[0] + uint64(gx)*uint64(es)
				b, _, off := m.mem(th, "global", Addr{Base: Imm(int64(ga))}, es)
				copy(val, b.data[off:off+es])
			}
			sa := dst + uint64(y)*uint64(rowBytes) + uint64(x)*uint64(es)
			sa ^= (sa >> 7 & (1<<bits - 1)) << 4
			_, i, off := m.mem(th, "shared", Addr{Base: Imm(int64(sa))}, es)
			for k := off; k < off+es; k++ {
				if t := m.tma.tags[i][k]; t.flight {
					emuError("%s into %s byte %d while an earlier bulk copy into it is in flight", op, m.shared[i].name, k)
				}
				for _, r := range m.tma.rd[i][k] {
					if r.thread != th.id && r.arrivals >= th.hb[r.thread] {
						emuError("%s overwrites %s byte %d, which thread %d read since the last bar.sync (and before no mbarrier arrival this thread waited for)", op, m.shared[i].name, k, r.thread)
					}
				}
				if m.inflight[i][k] != 0 {
					emuError("%s overwrites %s byte %d, which a wgmma still in flight reads (no wgmma.wait_group retired it)", op, m.shared[i].name, k)
				}
				if m.tma.early[i][k] {
					emuError("%s overwrites %s byte %d, which a wgmma read that was not retired (wgmma.wait_group) when its warpgroup arrived on the mbarrier releasing it", op, m.shared[i].name, k)
				}
				if w := m.writer[i][k]; w != 0 && w != me {
					emuError("%s overwrites %s byte %d, which thread %d wrote since the last bar.sync", op, m.shared[i].name, k, w-1)
				}
				m.tma.tags[i][k] = emuTag{bar: barAddr, phase: bar.phase, flight: true}
				bar.flight = append(bar.flight, emuLanding{i, k, val[k-off]})
			}
		}
	}
	bar.tx -= int(mp.box[0]) * int(mp.box[1]) * es
	m.mbarProgress(barAddr, bar)
}

// bulkCheck fails when th (or the warpgroup whose wgmma reads) touches bytes a bulk copy has not
// landed for it.
func (m *emulator) bulkCheck(th *emuThread, i, off, n int, write bool) {
	if m.tma == nil {
		return
	}
	for k := off; k < off+n; k++ {
		t := m.tma.tags[i][k]
		if t.bar == 0 {
			continue
		}
		if t.flight {
			emuError("thread %d %s %s byte %d while a bulk copy into it is in flight (phase %d of the mbarrier at %#x has not completed)", th.id, verbOf(write), m.shared[i].name, k, t.phase, t.bar)
		}
		readers := []*emuThread{th}
		if m.tma.group != nil {
			readers = m.tma.group
		}
		for _, r := range readers {
			if r.seen[t.bar] <= t.phase {
				emuError("thread %d %s %s byte %d, which a bulk copy landed in phase %d of the mbarrier at %#x, without having seen that phase complete (try_wait.parity)", r.id, verbOf(write), m.shared[i].name, k, t.phase, t.bar)
			}
		}
		if write {
			m.tma.tags[i][k] = emuTag{}
		}
	}
}

func verbOf(write bool) string {
	if write {
		return "writes"
	}
	return "reads"
}

// mwaiting reports whether th is suspended at a try_wait whose barrier has not moved on.
func (m *emulator) mwaiting(th *emuThread) bool {
	if th.mwait == nil {
		return false
	}
	if m.tma.bars[th.mwait.bar].phase%2 == th.mwait.parity {
		return true
	}
	th.mwait = nil
	return false
}

// tmaDeadlock fails when a thread waits on an mbarrier phase that can no longer complete, and when a
// block ends with bulk copies in flight.
func (m *emulator) tmaDeadlock(ths []*emuThread, ended bool) {
	if m.tma == nil {
		return
	}
	for _, th := range ths {
		if th.mwait != nil && !th.done {
			s := m.tma.bars[th.mwait.bar]
			emuError("deadlock: thread %d waits (try_wait.parity %d) on the mbarrier at %#x, whose phase %d never completes (%d of %d arrivals missing, %d transaction bytes outstanding)", th.id, th.mwait.parity, th.mwait.bar, s.phase, s.pending, s.count, s.tx)
		}
	}
	if ended {
		for a, s := range m.tma.bars {
			if len(s.flight) > 0 {
				emuError("the block ends with %d bytes of bulk copies in flight on the mbarrier at %#x (phase %d: %d arrivals missing, %d bytes outstanding)", len(s.flight), a, s.phase, s.pending, s.tx)
			}
		}
	}
}

// mockTensorMap is a tensor map as the mock driver encodes it (rt/cuda/testdata/mockcuda.c): u64
// address at 0; i32 data type, rank, interleave, swizzle, L2 promotion, OOB fill at 8..31; u64 dims[5]
// at 32; u64 strides[4] at 72; u16 box[5] at 104; u8 element strides[5] at 114.
type mockTensorMap struct {
	global                                    uint64
	dtype, rank, interleave, swizzle, l2, oob int32
	dims                                      [5]uint64
	strides                                   [4]uint64
	box                                       [5]uint16
	estride                                   [5]uint8
}

func decodeMockTensorMap(b []byte) mockTensorMap {
	var t mockTensorMap
	le := binary.LittleEndian
	t.global = le.Uint64(b)
	small := []*int32{&t.dtype, &t.rank, &t.interleave, &t.swizzle, &t.l2, &t.oob}
	for i, p := range small {
		*p = int32(le.Uint32(b[8+4*i:]))
	}
	for i := range 5 {
		t.dims[i] = le.Uint64(b[32+8*i:])
		t.box[i] = le.Uint16(b[104+2*i:])
		t.estride[i] = b[114+i]
	}
	for i := range 4 {
		t.strides[i] = le.Uint64(b[72+8*i:])
	}
	return t
}

// encodeMockTensorMap writes a map the way the mock driver's cuTensorMapEncodeTiled does (rank 2).
func encodeMockTensorMap(t mockTensorMap) []byte {
	b := make([]byte, 128)
	le := binary.LittleEndian
	le.PutUint64(b, t.global)
	for i, v := range []int32{t.dtype, t.rank, t.interleave, t.swizzle, t.l2, t.oob} {
		le.PutUint32(b[8+4*i:], uint32(v))
	}
	for i := 0; i < int(t.rank); i++ {
		le.PutUint64(b[32+8*i:], t.dims[i])
		if i+1 < int(t.rank) {
			le.PutUint64(b[72+8*i:], t.strides[i])
		}
		le.PutUint16(b[104+2*i:], t.box[i])
		b[114+i] = t.estride[i]
	}
	return b
}

func (t mockTensorMap) String() string {
	return fmt.Sprintf("map{%#x type %d rank %d dims %v strides %v box %v swizzle %d}", t.global, t.dtype, t.rank, t.dims[:t.rank], t.strides[:max(t.rank-1, 0)], t.box[:t.rank], t.swizzle)
}

// emuTensorMap is the mock-driver encoding of the map TMAMapOf describes for parameter p, whose
// tensor t lies at global address addr; it panics (an emulator error) where TMAMapOf refuses.
func emuTensorMap(p ParamInfo, t *ir.Tensor, addr uint64, dims map[string]int) mockTensorMap {
	d := map[string]int64{}
	for k, v := range dims {
		d[k] = int64(v)
	}
	tm, err := TMAMapOf(p, d)
	if err != nil {
		emuError("%v", err)
	}
	return mockTensorMap{global: addr, dtype: tm.DataType, rank: 2, swizzle: tm.Swizzle,
		dims: [5]uint64{tm.Dims[0], tm.Dims[1]}, strides: [4]uint64{tm.RowStride},
		box: [5]uint16{uint16(tm.Box[0]), uint16(tm.Box[1])}, estride: [5]uint8{1, 1}}
}

// emuMapHook, when set (by a planted-bug test), changes every tensor map emulate encodes.
var emuMapHook func(*mockTensorMap)
