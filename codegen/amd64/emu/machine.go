package emu

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"runtime"
	"sort"
	"unsafe"
)

// vec is one 512-bit vector register (Z, with Y and X the low 256 and 128 bits).
type vec [8]uint64

func (v *vec) b() *[64]byte     { return (*[64]byte)(unsafe.Pointer(v)) }
func (v *vec) u16() *[32]uint16 { return (*[32]uint16)(unsafe.Pointer(v)) }
func (v *vec) u32() *[16]uint32 { return (*[16]uint32)(unsafe.Pointer(v)) }
func (v *vec) u64() *[8]uint64  { return (*[8]uint64)(v) }

// Region is a range of Go memory the emulated code may access.
type Region struct {
	Name     string
	base     unsafe.Pointer
	size     uint64
	readOnly bool
	keep     any // keeps the backing object alive
}

// Slice returns the region holding the len(s) elements of s.
func Slice[E any](name string, s []E) Region {
	var z E
	if len(s) == 0 {
		return Region{Name: name}
	}
	return Region{Name: name, base: unsafe.Pointer(unsafe.SliceData(s)), size: uint64(len(s)) * uint64(unsafe.Sizeof(z)), keep: s}
}

type region struct {
	lo, hi   uint64
	name     string
	base     unsafe.Pointer
	readOnly bool
}

// Machine is the state of one emulated hardware thread: 16 general
// registers, flags, 32 vector registers of 512 bits, 8 opmask registers.
// A Machine is not safe for concurrent use.
type Machine struct {
	prog *Program

	gpr [16]uint64
	v   [32]vec
	k   [8]uint64

	// flags; fvalid says which are defined (bit 0 ZF, 1 SF, 2 CF, 3 OF).
	zf, sf, cf, of bool
	fvalid         uint8

	// MaxSteps bounds the instructions one call executes (default 1e9).
	MaxSteps int64
	// Steps counts the instructions executed by all calls so far.
	Steps int64

	user    []Region
	regions []region // sorted by lo, for the current call
	last    int      // index of the last region hit

	fn    *function
	pc    int
	fp    uint64
	depth int // CALLs in progress

	onError func(error)
}

// Machine returns a fresh machine for p. Registers start zeroed.
func (p *Program) Machine() *Machine {
	return &Machine{prog: p, MaxSteps: 1e9}
}

// SetRegions replaces the caller regions (Go slices the emulated code may
// access) for the following calls. Slice arguments of a call are added to
// them automatically.
func (m *Machine) SetRegions(rs ...Region) { m.user = append(m.user[:0], rs...) }

// OnError sets what the functions returned by Func do with an emulation
// error (default: panic with it).
func (m *Machine) OnError(f func(error)) { m.onError = f }

func (m *Machine) fail(msg string, args ...any) error {
	in := &m.fn.code[m.pc]
	return &Error{Func: m.fn.name, Line: in.line, Text: in.text, Msg: fmt.Sprintf(msg, args...)}
}

// find returns the region containing [addr, addr+n).
func (m *Machine) find(addr uint64, n int) *region {
	if m.last < len(m.regions) {
		r := &m.regions[m.last]
		if addr >= r.lo && addr+uint64(n) <= r.hi && addr+uint64(n) >= addr {
			return r
		}
	}
	for i := range m.regions {
		r := &m.regions[i]
		if addr >= r.lo && addr+uint64(n) <= r.hi && addr+uint64(n) >= addr {
			m.last = i
			return r
		}
	}
	return nil
}

func (m *Machine) outside(addr uint64, n int, write bool) error {
	what := "read"
	if write {
		what = "write"
	}
	near := "no regions"
	best := uint64(1<<64 - 1)
	for _, r := range m.regions {
		var d uint64
		switch {
		case addr >= r.hi:
			d = addr - r.hi
		case addr+uint64(n) <= r.lo:
			d = r.lo - addr
		}
		if d < best {
			best = d
			rel := int64(addr - r.lo)
			near = fmt.Sprintf("nearest region %s [%#x, %#x) of %d bytes; access at offset %d", r.name, r.lo, r.hi, r.hi-r.lo, rel)
		}
	}
	return m.fail("%d-byte %s at %#x outside every region (%s)", n, what, addr, near)
}

// mem returns the n bytes at addr after checking them against the regions.
func (m *Machine) mem(addr uint64, n int, write bool) ([]byte, error) {
	r := m.find(addr, n)
	if r == nil {
		return nil, m.outside(addr, n, write)
	}
	if write && r.readOnly {
		return nil, m.fail("%d-byte write at %#x into read-only %s", n, addr, r.name)
	}
	return unsafe.Slice((*byte)(unsafe.Add(r.base, addr-r.lo)), n), nil
}

func (m *Machine) load(addr uint64, dst []byte) error {
	b, err := m.mem(addr, len(dst), false)
	if err != nil {
		return err
	}
	copy(dst, b)
	return nil
}

func (m *Machine) store(addr uint64, src []byte) error {
	b, err := m.mem(addr, len(src), true)
	if err != nil {
		return err
	}
	copy(b, src)
	return nil
}

func (m *Machine) load64(addr uint64, n int) (uint64, error) {
	b, err := m.mem(addr, n, false)
	if err != nil {
		return 0, err
	}
	var buf [8]byte
	copy(buf[:], b)
	return binary.LittleEndian.Uint64(buf[:]), nil
}

func (m *Machine) store64(addr uint64, v uint64, n int) error {
	b, err := m.mem(addr, n, true)
	if err != nil {
		return err
	}
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], v)
	copy(b, buf[:n])
	return nil
}

func u64bytes(s []uint64) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 8*len(s))
}

func addRegion(rs []region, name string, base unsafe.Pointer, size uint64, ro bool) []region {
	if size == 0 || base == nil {
		return rs
	}
	lo := uint64(uintptr(base))
	return append(rs, region{lo: lo, hi: lo + size, name: name, base: base, readOnly: ro})
}

// run executes fn with the argument frame args (argsize bytes, results
// after the arguments) and returns the frame with results filled in.
func (m *Machine) run(f *function, args []uint64, extra []Region) (err error) {
	if f.err != nil {
		return f.err
	}
	defer func() {
		if r := recover(); r != nil { // an interpreter bug: report it on the instruction, do not crash the test
			err = m.fail("internal error: %v", r)
		}
	}()
	locals := make([]uint64, (f.frame+7)/8)
	rs := m.regions[:0]
	for _, r := range m.user {
		rs = addRegion(rs, r.Name, r.base, r.size, r.readOnly)
	}
	for _, r := range extra {
		rs = addRegion(rs, r.Name, r.base, r.size, r.readOnly)
	}
	for _, s := range m.prog.data {
		rs = addRegion(rs, s.name+"(SB)", unsafe.Pointer(&s.mem[0]), uint64(s.size), true)
	}
	if f.frame > 0 {
		rs = addRegion(rs, "local frame", unsafe.Pointer(&locals[0]), uint64(f.frame), false)
	}
	if f.argsize > 0 {
		rs = addRegion(rs, "argument frame", unsafe.Pointer(&args[0]), uint64(f.argsize), false)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].lo < rs[j].lo })
	m.regions, m.last = rs, 0
	// SP points at the local frame; FP at the arguments (different objects:
	// nothing lies between them that the code may touch).
	if f.frame > 0 {
		m.gpr[4] = uint64(uintptr(unsafe.Pointer(&locals[0])))
	} else {
		m.gpr[4] = 0x1000 // nothing lives there; any SP access is outside every region
	}
	m.fp = 0
	if len(args) > 0 {
		m.fp = uint64(uintptr(unsafe.Pointer(&args[0])))
	}
	m.fn, m.pc, m.depth = f, 0, 0
	defer func() { m.regions = m.regions[:0] }()
	err = m.loop(f)
	runtime.KeepAlive(locals)
	return err
}

// loop executes the current function m.fn from m.pc until its RET.
func (m *Machine) loop(f *function) error {
	var steps int64
	for {
		if m.pc >= len(f.code) {
			return &Error{Func: f.name, Line: f.line, Msg: "execution ran past the last instruction without RET"}
		}
		if m.Steps+steps >= m.MaxSteps {
			return m.fail("more than %d instructions executed: runaway loop?", m.MaxSteps)
		}
		steps++
		in := &f.code[m.pc]
		next, err := in.exec(m, in)
		if err != nil {
			m.Steps += steps
			return err
		}
		if next == pcRet {
			m.Steps += steps
			return nil
		}
		m.pc = next
	}
}

// callInner runs f as the callee of a CALL in the current function (ABI0): its argument frame is the caller's
// outgoing area at 0(SP), which must lie inside the caller's local frame; its locals are a fresh frame
// (a region of their own while it runs). Registers and flags are shared, as on the hardware (ABI0 has
// no callee-saved registers); the caller's SP, FP and regions come back at the callee's RET.
func (m *Machine) callInner(f *function) error {
	if f.err != nil {
		return f.err
	}
	if m.depth >= 8 {
		return m.fail("calls nested deeper than 8")
	}
	if m.fn.frame < f.argsize {
		return m.fail("CALL %s: the caller's %d-byte frame cannot hold its %d bytes of arguments", f.name, m.fn.frame, f.argsize)
	}
	callerFn, callerPC, callerFP, callerSP := m.fn, m.pc, m.fp, m.gpr[4]
	saved, last := append([]region(nil), m.regions...), m.last
	locals := make([]uint64, (f.frame+7)/8)
	if f.frame > 0 {
		m.regions = addRegion(m.regions, "local frame of "+f.name, unsafe.Pointer(&locals[0]), uint64(f.frame), false)
		sort.Slice(m.regions, func(i, j int) bool { return m.regions[i].lo < m.regions[j].lo })
		m.gpr[4] = uint64(uintptr(unsafe.Pointer(&locals[0])))
	} else {
		m.gpr[4] = 0x1000
	}
	m.last, m.fp = 0, callerSP
	m.fn, m.pc = f, 0
	m.depth++
	err := m.loop(f)
	m.depth--
	runtime.KeepAlive(locals)
	m.fn, m.pc, m.fp, m.gpr[4] = callerFn, callerPC, callerFP, callerSP
	m.regions, m.last = saved, last
	return err
}

const pcRet = -1

// argLayout is the ABI0 layout of a Go function type.
type argLayout struct {
	in, out []int // byte offsets
	size    int
}

func layoutOf(t reflect.Type) (argLayout, error) {
	var l argLayout
	off := 0
	place := func(at reflect.Type) (int, error) {
		switch at.Kind() {
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
			reflect.Float32, reflect.Float64, reflect.Pointer, reflect.UnsafePointer, reflect.Slice:
		default:
			return 0, fmt.Errorf("emu: argument type %s is not supported", at)
		}
		a := at.Align()
		off = (off + a - 1) / a * a
		o := off
		off += int(at.Size())
		return o, nil
	}
	for i := 0; i < t.NumIn(); i++ {
		o, err := place(t.In(i))
		if err != nil {
			return l, err
		}
		l.in = append(l.in, o)
	}
	if t.NumOut() > 0 {
		off = (off + 7) / 8 * 8 // results start word-aligned
	}
	for i := 0; i < t.NumOut(); i++ {
		o, err := place(t.Out(i))
		if err != nil {
			return l, err
		}
		l.out = append(l.out, o)
	}
	l.size = off
	return l, nil
}

func putArg(frame []byte, off int, v reflect.Value) (Region, bool) {
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			frame[off] = 1
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		putN(frame[off:], uint64(v.Int()), int(v.Type().Size()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		putN(frame[off:], v.Uint(), int(v.Type().Size()))
	case reflect.Float32, reflect.Float64:
		// The bits as they are: v.Float() widens a float32, which quiets a signaling NaN.
		putN(frame[off:], floatBits(v), int(v.Type().Size()))
	case reflect.Pointer, reflect.UnsafePointer:
		putN(frame[off:], uint64(v.Pointer()), 8)
	case reflect.Slice:
		putN(frame[off:], uint64(v.Pointer()), 8)
		putN(frame[off+8:], uint64(v.Len()), 8)
		putN(frame[off+16:], uint64(v.Cap()), 8)
		if v.Len() > 0 {
			return Region{Name: "slice argument", base: v.UnsafePointer(), size: uint64(v.Len()) * uint64(v.Type().Elem().Size()), keep: v.Interface()}, true
		}
	}
	return Region{}, false
}

func putN(b []byte, v uint64, n int) {
	for i := 0; i < n; i++ {
		b[i] = byte(v >> (8 * i))
	}
}

func getN(b []byte, n int) uint64 {
	var v uint64
	for i := 0; i < n; i++ {
		v |= uint64(b[i]) << (8 * i)
	}
	return v
}

func getArg(frame []byte, off int, t reflect.Type) reflect.Value {
	v := reflect.New(t).Elem()
	n := int(t.Size())
	switch t.Kind() {
	case reflect.Bool:
		v.SetBool(frame[off] != 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x := getN(frame[off:], n)
		v.SetInt(int64(x<<(64-8*n)) >> (64 - 8*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(getN(frame[off:], n))
	case reflect.Float32:
		*(*uint32)(v.Addr().UnsafePointer()) = uint32(getN(frame[off:], 4)) // SetFloat would quiet a signaling NaN
	case reflect.Float64:
		v.SetFloat(f64frombits(getN(frame[off:], 8)))
	default:
		// pointers and slices are not returned by any routine modeled here
		panic(fmt.Sprintf("emu: result type %s is not supported", t))
	}
	return v
}

func (m *Machine) lookup(name string, t reflect.Type) (*function, argLayout, error) {
	f, ok := m.prog.funcs[name]
	if !ok {
		return nil, argLayout{}, fmt.Errorf("emu: no TEXT ·%s in the program", name)
	}
	if f.err != nil {
		return nil, argLayout{}, f.err
	}
	l, err := layoutOf(t)
	if err != nil {
		return nil, l, err
	}
	if l.size != f.argsize {
		return nil, l, fmt.Errorf("emu: %s: Go signature %s has %d bytes of arguments and results, TEXT says %d", name, t, l.size, f.argsize)
	}
	for i := 0; i < t.NumOut(); i++ {
		switch t.Out(i).Kind() {
		case reflect.Pointer, reflect.UnsafePointer, reflect.Slice:
			return nil, l, fmt.Errorf("emu: %s: result type %s is not supported", name, t.Out(i))
		}
	}
	return f, l, nil
}

func (m *Machine) call(f *function, l argLayout, t reflect.Type, args []reflect.Value) ([]reflect.Value, error) {
	frame := make([]uint64, (f.argsize+7)/8+1)
	fb := u64bytes(frame)
	var extra []Region
	for i, a := range args {
		if r, ok := putArg(fb, l.in[i], a); ok {
			extra = append(extra, r)
		}
	}
	err := m.run(f, frame, extra)
	runtime.KeepAlive(args)
	if err != nil {
		return nil, err
	}
	out := make([]reflect.Value, t.NumOut())
	for i := range out {
		out[i] = getArg(fb, l.out[i], t.Out(i))
	}
	return out, nil
}

// Call runs the function name with the given arguments, laid out per ABI0
// by their Go types (ints, floats, pointers, slices); the function must
// return nothing (use Func for functions with results).
func (m *Machine) Call(name string, args ...any) error {
	vals := make([]reflect.Value, len(args))
	ins := make([]reflect.Type, len(args))
	for i, a := range args {
		vals[i] = reflect.ValueOf(a)
		if !vals[i].IsValid() {
			return fmt.Errorf("emu: argument %d is nil without a type", i)
		}
		ins[i] = vals[i].Type()
	}
	t := reflect.FuncOf(ins, nil, false)
	f, l, err := m.lookup(name, t)
	if err != nil {
		return err
	}
	_, err = m.call(f, l, t, vals)
	return err
}

// Func returns a Go function with signature F that runs the TEXT symbol name
// on m: arguments and results are laid out per ABI0 from F's parameter types
// (whose total size must match the TEXT line). Emulation errors go to the
// handler set by OnError (default: panic).
func Func[F any](m *Machine, name string) (F, error) {
	var zero F
	v, err := FuncValue(m, name, reflect.TypeOf((*F)(nil)).Elem())
	if err != nil {
		return zero, err
	}
	return v.Interface().(F), nil
}

// FuncValue is Func for a function type known at run time.
func FuncValue(m *Machine, name string, t reflect.Type) (reflect.Value, error) {
	if t.Kind() != reflect.Func {
		return reflect.Value{}, fmt.Errorf("emu: Func needs a function type, not %s", t)
	}
	f, l, err := m.lookup(name, t)
	if err != nil {
		return reflect.Value{}, err
	}
	return reflect.MakeFunc(t, func(args []reflect.Value) []reflect.Value {
		out, err := m.call(f, l, t, args)
		if err != nil {
			if m.onError == nil {
				panic(err)
			}
			m.onError(err)
			out = make([]reflect.Value, t.NumOut())
			for i := range out {
				out[i] = reflect.Zero(t.Out(i))
			}
		}
		return out
	}), nil
}

// floatBits returns the bits of a float32 or float64 value without converting it.
func floatBits(v reflect.Value) uint64 {
	p := reflect.New(v.Type())
	p.Elem().Set(v)
	if v.Kind() == reflect.Float32 {
		return uint64(*(*uint32)(p.UnsafePointer()))
	}
	return *(*uint64)(p.UnsafePointer())
}
