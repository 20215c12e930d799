package emu

import "strings"

// vstore writes the w bytes of r to memory at a, only the active lanes (es bytes each) when masked.
func (m *Machine) vstore(in *inst, a uint64, r *vec, w, es int, act uint64) error {
	rb := r.b()
	if in.mask == 0 {
		return m.store(a, rb[:w])
	}
	for i := 0; i < w/es; i++ {
		if act>>uint(i)&1 != 0 {
			if err := m.store(a+uint64(i*es), rb[i*es:(i+1)*es]); err != nil {
				return err
			}
		}
	}
	return nil
}

func movES(op string) int {
	switch op {
	case "VMOVUPS", "VMOVAPS", "VMOVDQU32":
		return 4
	}
	return 8
}

func compileMov(in *inst) error {
	a := in.args
	if len(a) != 2 || in.bcst {
		return nil
	}
	es := movES(in.op)
	aligned := strings.Contains(in.op, "MOVA")
	switch {
	case isVM(&a[0]) && isV(&a[1]) && sameWidth(a, a[1].width, 0): // load or register copy
		in.width = a[1].width
		in.exec = func(m *Machine, in *inst) (int, error) {
			w := in.width
			act := m.active(in, w/es)
			if aligned && isM(&in.args[0]) && m.addr(&in.args[0])%uint64(w) != 0 {
				return 0, m.fail("#GP: misaligned %d-byte aligned load at %#x", w, m.addr(&in.args[0]))
			}
			var r vec
			if err := m.vsrc(in, &in.args[0], w, es, &r, act); err != nil {
				return 0, err
			}
			m.vdst(in, in.args[1].reg, &r, w, es, act)
			return m.pc + 1, nil
		}
	case isV(&a[0]) && isM(&a[1]) && !in.zeroing: // store
		in.width = a[0].width
		in.exec = func(m *Machine, in *inst) (int, error) {
			w := in.width
			ad := m.addr(&in.args[1])
			if aligned && ad%uint64(w) != 0 {
				return 0, m.fail("#GP: misaligned %d-byte aligned store at %#x", w, ad)
			}
			if err := m.vstore(in, ad, &m.v[in.args[0].reg], w, es, m.active(in, w/es)); err != nil {
				return 0, err
			}
			return m.pc + 1, nil
		}
	}
	return nil
}

func compileBroadcast(in *inst) error {
	a := in.args
	op := in.op
	es := 4
	if strings.HasSuffix(op, "SD") || strings.HasSuffix(op, "Q") {
		es = 8
	}
	if len(a) != 2 || !isV(&a[1]) || in.bcst {
		return nil
	}
	gpr := strings.HasPrefix(op, "VPBROADCAST") && isG(&a[0])
	if !(isM(&a[0]) || (isV(&a[0]) && a[0].width == 16) || gpr) {
		return nil
	}
	if op == "VBROADCASTSD" && a[1].width == 16 {
		return nil // no xmm form
	}
	in.width = a[1].width
	in.exec = func(m *Machine, in *inst) (int, error) {
		w := in.width
		act := m.active(in, w/es)
		var e [8]byte
		switch o := &in.args[0]; o.kind {
		case kVec:
			copy(e[:es], m.v[o.reg].b()[:es])
		case kGPR:
			v := m.gpr[o.reg]
			for i := 0; i < es; i++ {
				e[i] = byte(v >> (8 * i))
			}
		default:
			if act != 0 { // a broadcast with every lane masked off reads nothing
				if err := m.load(m.addr(o), e[:es]); err != nil {
					return 0, err
				}
			}
		}
		var r vec
		rb := r.b()
		for i := 0; i < w; i += es {
			copy(rb[i:i+es], e[:es])
		}
		m.vdst(in, in.args[1].reg, &r, w, es, act)
		return m.pc + 1, nil
	}
	return nil
}

// VMASKMOVPS/PD: the lanes whose mask element has its sign bit set are
// loaded (others zero) or stored (others untouched, and not accessed).
func compileMaskMov(in *inst) error {
	a := in.args
	es := elemSize(in.op)
	if len(a) != 3 || !isV(&a[1]) {
		return nil
	}
	lanes := func(m *Machine, mk *vec, w int) uint64 {
		var act uint64
		mb := mk.b()
		for i := 0; i < w/es; i++ {
			if mb[(i+1)*es-1]&0x80 != 0 {
				act |= 1 << uint(i)
			}
		}
		return act
	}
	switch {
	case isM(&a[0]) && isV(&a[2]) && a[1].width == a[2].width && a[2].width <= 32:
		in.width = a[2].width
		in.exec = func(m *Machine, in *inst) (int, error) {
			w := in.width
			act := lanes(m, &m.v[in.args[1].reg], w)
			var r vec
			ad := m.addr(&in.args[0])
			rb := r.b()
			for i := 0; i < w/es; i++ {
				if act>>uint(i)&1 != 0 {
					if err := m.load(ad+uint64(i*es), rb[i*es:(i+1)*es]); err != nil {
						return 0, err
					}
				}
			}
			m.vdst(in, in.args[2].reg, &r, w, es, 0)
			return m.pc + 1, nil
		}
	case isV(&a[0]) && isM(&a[2]) && a[0].width == a[1].width && a[0].width <= 32:
		in.width = a[0].width
		in.exec = func(m *Machine, in *inst) (int, error) {
			w := in.width
			act := lanes(m, &m.v[in.args[1].reg], w)
			ad := m.addr(&in.args[2])
			sb := m.v[in.args[0].reg].b()
			for i := 0; i < w/es; i++ {
				if act>>uint(i)&1 != 0 {
					if err := m.store(ad+uint64(i*es), sb[i*es:(i+1)*es]); err != nil {
						return 0, err
					}
				}
			}
			return m.pc + 1, nil
		}
	}
	return nil
}

// VMOVSS/VMOVSD (VEX: zero bits 128..511) and MOVSS/MOVSD (legacy SSE: keep them).
func compileMovScalar(in *inst) error {
	a := in.args
	es := 4
	if strings.HasSuffix(in.op, "SD") {
		es = 8
	}
	legacy := !strings.HasPrefix(in.op, "V")
	if in.mask != 0 {
		return nil
	}
	switch {
	case len(a) == 2 && isM(&a[0]) && isV(&a[1]) && a[1].width == 16: // load: lane 0, zero the rest of the low 128 bits
		in.exec = func(m *Machine, in *inst) (int, error) {
			var e [8]byte
			if err := m.load(m.addr(&in.args[0]), e[:es]); err != nil {
				return 0, err
			}
			d := m.v[in.args[1].reg].b()
			copy(d[:es], e[:es])
			clear(d[es:16])
			if !legacy {
				clear(d[16:])
			}
			return m.pc + 1, nil
		}
	case len(a) == 2 && isV(&a[0]) && a[0].width == 16 && isM(&a[1]): // store lane 0
		in.exec = func(m *Machine, in *inst) (int, error) {
			if err := m.store(m.addr(&in.args[1]), m.v[in.args[0].reg].b()[:es]); err != nil {
				return 0, err
			}
			return m.pc + 1, nil
		}
	case legacy && len(a) == 2 && isV(&a[0]) && isV(&a[1]) && a[0].width == 16 && a[1].width == 16: // merge lane 0
		in.exec = func(m *Machine, in *inst) (int, error) {
			copy(m.v[in.args[1].reg].b()[:es], m.v[in.args[0].reg].b()[:es])
			return m.pc + 1, nil
		}
	case !legacy && len(a) == 3 && isV(&a[0]) && isV(&a[1]) && isV(&a[2]) && a[0].width == 16 && a[1].width == 16 && a[2].width == 16:
		// VMOVSS x, y, d: d = [x[0], y[1..3]]
		in.exec = func(m *Machine, in *inst) (int, error) {
			var r vec
			copy(r.b()[:16], m.v[in.args[1].reg].b()[:16])
			copy(r.b()[:es], m.v[in.args[0].reg].b()[:es])
			m.vdst(in, in.args[2].reg, &r, 16, es, 0)
			return m.pc + 1, nil
		}
	}
	return nil
}

// VMOVD/VMOVQ/MOVQ between general and X registers (and VMOVQ X, X / mem).
func compileMovGX(in *inst) error {
	a := in.args
	if len(a) != 2 || in.mask != 0 {
		return nil
	}
	n := 8
	if strings.HasSuffix(in.op, "D") {
		n = 4
	}
	legacy := !strings.HasPrefix(in.op, "V")
	switch {
	case isGM(&a[0]) && isV(&a[1]) && a[1].width == 16:
		in.exec = func(m *Machine, in *inst) (int, error) {
			v, err := m.readInt(&in.args[0], n)
			if err != nil {
				return 0, err
			}
			d := &m.v[in.args[1].reg]
			if legacy {
				clear(d.b()[:16])
			} else {
				*d = vec{}
			}
			d[0] = v
			return m.pc + 1, nil
		}
	case isV(&a[0]) && a[0].width == 16 && isGM(&a[1]):
		in.exec = func(m *Machine, in *inst) (int, error) {
			if err := m.writeInt(&in.args[1], m.v[in.args[0].reg][0]&ones(n), n); err != nil {
				return 0, err
			}
			return m.pc + 1, nil
		}
	case n == 8 && !legacy && isV(&a[0]) && isV(&a[1]) && a[0].width == 16 && a[1].width == 16:
		in.exec = func(m *Machine, in *inst) (int, error) {
			v := m.v[in.args[0].reg][0]
			m.v[in.args[1].reg] = vec{v}
			return m.pc + 1, nil
		}
	}
	return nil
}

// VCVTPH2PS [x (half width), d] and VCVTPS2PH [$imm, x, d (half width)].
func compileCvtPH(in *inst) error {
	a := in.args
	if in.bcst {
		return nil
	}
	if in.op == "VCVTPH2PS" {
		if len(a) != 2 || !isV(&a[1]) || !(isM(&a[0]) || (isV(&a[0]) && a[0].width == max(16, a[1].width/2))) {
			return nil
		}
		in.width = a[1].width
		in.exec = func(m *Machine, in *inst) (int, error) {
			w := in.width
			nl := w / 4
			act := m.active(in, nl)
			var h vec
			if err := m.vsrc(in, &in.args[0], w/2, 2, &h, act); err != nil {
				return 0, err
			}
			var r vec
			hs, rs := h.u16(), r.u32()
			for i := 0; i < nl; i++ {
				rs[i] = h2f(hs[i])
			}
			m.vdst(in, in.args[1].reg, &r, w, 4, act)
			return m.pc + 1, nil
		}
		return nil
	}
	if len(a) != 3 || !isI(&a[0]) || !isV(&a[1]) {
		return nil
	}
	if !(isM(&a[2]) || (isV(&a[2]) && a[2].width == max(16, a[1].width/2))) {
		return nil
	}
	if a[0].imm&^7 != 0 {
		return in.unsupported("VCVTPS2PH immediate %#x has bits above 2 set", a[0].imm)
	}
	mode := roundMode(a[0].imm)
	in.width = a[1].width
	in.exec = func(m *Machine, in *inst) (int, error) {
		w := in.width
		nl := w / 4
		act := m.active(in, nl)
		var r vec
		xs, rs := m.v[in.args[1].reg].u32(), r.u16()
		for i := 0; i < nl; i++ {
			rs[i] = f2h(xs[i], mode)
		}
		if o := &in.args[2]; o.kind == kMem {
			if err := m.vstore(in, m.addr(o), &r, w/2, 2, act); err != nil {
				return 0, err
			}
		} else {
			m.vdst(in, o.reg, &r, max(16, w/2), 2, act)
			if w/2 < 16 {
				clear(m.v[o.reg].b()[w/2:])
			}
		}
		return m.pc + 1, nil
	}
	return nil
}
