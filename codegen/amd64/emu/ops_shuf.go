package emu

import (
	"math"
	"strings"
)

// permFn computes a whole result r of w bytes from x (Go's first vector
// operand, maybe memory), y (the next one; nil for unary forms) and the old d.
type permFn func(imm int64, x, y, d *vec, w int, r *vec)

// compilePerm sets in up as [$imm]? x [y] d with vector (or memory) x.
func compilePerm(in *inst, es int, hasImm, unary bool, f permFn) {
	a := in.args
	first := 0
	var imm int64
	if hasImm {
		if len(a) == 0 || !isI(&a[0]) {
			return
		}
		imm, first = a[0].imm, 1
	}
	want := first + 3
	if unary {
		want = first + 2
	}
	if len(a) != want || !isVM(&a[first]) || in.bcst {
		return
	}
	for i := first + 1; i < want; i++ {
		if !isV(&a[i]) {
			return
		}
	}
	w := a[want-1].width
	if !sameWidth(a, w, first, first+1) {
		return
	}
	if in.mask != 0 && isM(&a[first]) {
		return // masked permutes from memory are not modeled
	}
	in.width = w
	in.exec = func(m *Machine, in *inst) (int, error) {
		w := in.width
		var x vec
		if err := m.vsrc(in, &in.args[first], w, es, &x, ones8(w/es)); err != nil {
			return 0, err
		}
		var y *vec
		if !unary {
			y = &m.v[in.args[first+1].reg]
		}
		dreg := in.args[len(in.args)-1].reg
		var r vec
		f(imm, &x, y, &m.v[dreg], w, &r)
		m.vdst(in, dreg, &r, w, es, m.active(in, w/es))
		return m.pc + 1, nil
	}
}

func compileShuffle(in *inst) error {
	a := in.args
	op := in.op
	switch op {
	case "VPERMILPS":
		compilePerm(in, 4, true, true, func(imm int64, x, _, _ *vec, w int, r *vec) {
			xs, rs := x.u32(), r.u32()
			for i := 0; i < w/4; i++ {
				l := i &^ 3
				rs[i] = xs[l+int(imm>>(2*(i&3)))&3]
			}
		})
	case "VPERMILPD":
		compilePerm(in, 8, true, true, func(imm int64, x, _, _ *vec, w int, r *vec) {
			xs, rs := x.u64(), r.u64()
			for i := 0; i < w/8; i++ {
				rs[i] = xs[i&^1+int(imm>>i)&1]
			}
		})
	case "VPERM2F128", "VPERM2I128":
		if in.mask != 0 || len(a) != 4 || a[3].width != 32 {
			return nil
		}
		compilePerm(in, 8, true, false, func(imm int64, x, y, _ *vec, w int, r *vec) {
			for h := 0; h < 2; h++ {
				c := imm >> (4 * h)
				if c&8 != 0 {
					continue
				}
				src := y // Intel src1 is Go's second operand
				if c&2 != 0 {
					src = x
				}
				s := int(c & 1)
				r[2*h], r[2*h+1] = src[2*s], src[2*s+1]
			}
		})
	case "VSHUFPS":
		compilePerm(in, 4, true, false, func(imm int64, x, y, _ *vec, w int, r *vec) {
			xs, ys, rs := x.u32(), y.u32(), r.u32()
			for l := 0; l < w/4; l += 4 {
				rs[l] = ys[l+int(imm)&3]
				rs[l+1] = ys[l+int(imm>>2)&3]
				rs[l+2] = xs[l+int(imm>>4)&3]
				rs[l+3] = xs[l+int(imm>>6)&3]
			}
		})
	case "VSHUFPD":
		compilePerm(in, 8, true, false, func(imm int64, x, y, _ *vec, w int, r *vec) {
			for l := 0; l < w/8; l += 2 {
				r[l] = y[l+int(imm>>l)&1]
				r[l+1] = x[l+int(imm>>(l+1))&1]
			}
		})
	case "VUNPCKLPS", "VUNPCKHPS":
		hi := 0
		if op == "VUNPCKHPS" {
			hi = 2
		}
		compilePerm(in, 4, false, false, func(_ int64, x, y, _ *vec, w int, r *vec) {
			xs, ys, rs := x.u32(), y.u32(), r.u32()
			for l := 0; l < w/4; l += 4 {
				rs[l], rs[l+1], rs[l+2], rs[l+3] = ys[l+hi], xs[l+hi], ys[l+hi+1], xs[l+hi+1]
			}
		})
	case "VUNPCKLPD", "VUNPCKHPD":
		hi := 0
		if op == "VUNPCKHPD" {
			hi = 1
		}
		compilePerm(in, 8, false, false, func(_ int64, x, y, _ *vec, w int, r *vec) {
			for l := 0; l < w/8; l += 2 {
				r[l], r[l+1] = y[l+hi], x[l+hi]
			}
		})
	case "VMOVHLPS", "VMOVLHPS":
		if in.mask != 0 || len(a) != 3 || !isV(&a[0]) || a[0].width != 16 || a[2].width != 16 {
			return nil
		}
		compilePerm(in, 8, false, false, func(_ int64, x, y, _ *vec, w int, r *vec) {
			if op == "VMOVHLPS" {
				r[0], r[1] = x[1], y[1]
			} else {
				r[0], r[1] = y[0], x[0]
			}
		})
	case "VMOVHPD", "VMOVHPS", "VMOVLPD", "VMOVLPS":
		hi := strings.Contains(op, "H")
		switch {
		case len(a) == 3 && isM(&a[0]) && isV(&a[1]) && isV(&a[2]) && a[1].width == 16 && a[2].width == 16 && in.mask == 0:
			in.width = 16
			in.exec = func(m *Machine, in *inst) (int, error) {
				v, err := m.load64(m.addr(&in.args[0]), 8)
				if err != nil {
					return 0, err
				}
				y := m.v[in.args[1].reg]
				r := vec{y[0], y[1]}
				if hi {
					r[1] = v
				} else {
					r[0] = v
				}
				m.v[in.args[2].reg] = r
				return m.pc + 1, nil
			}
		case len(a) == 2 && isV(&a[0]) && a[0].width == 16 && isM(&a[1]) && in.mask == 0:
			in.exec = func(m *Machine, in *inst) (int, error) {
				q := 0
				if hi {
					q = 1
				}
				if err := m.store64(m.addr(&in.args[1]), m.v[in.args[0].reg][q], 8); err != nil {
					return 0, err
				}
				return m.pc + 1, nil
			}
		}
	case "VINSERTPS":
		// Go: $imm, x (X or m32), y, d
		if in.mask != 0 || len(a) != 4 || !isI(&a[0]) || !isVM(&a[1]) || !isV(&a[2]) || !isV(&a[3]) || a[2].width != 16 || a[3].width != 16 || (isV(&a[1]) && a[1].width != 16) {
			return nil
		}
		imm := a[0].imm
		in.width = 16
		in.exec = func(m *Machine, in *inst) (int, error) {
			var t uint32
			if o := &in.args[1]; o.kind == kMem {
				v, err := m.load64(m.addr(o), 4)
				if err != nil {
					return 0, err
				}
				t = uint32(v)
			} else {
				t = m.v[o.reg].u32()[imm>>6&3]
			}
			var r vec
			copy(r.b()[:16], m.v[in.args[2].reg].b()[:16])
			rs := r.u32()
			rs[imm>>4&3] = t
			for i := 0; i < 4; i++ {
				if imm>>i&1 != 0 {
					rs[i] = 0
				}
			}
			m.v[in.args[3].reg] = r
			return m.pc + 1, nil
		}
	case "VEXTRACTF128", "VEXTRACTI128", "VEXTRACTF32X4", "VEXTRACTF64X2", "VEXTRACTF32X8", "VEXTRACTF64X4":
		c, es := 16, 4
		switch op {
		case "VEXTRACTF64X2":
			es = 8
		case "VEXTRACTF32X8":
			c = 32
		case "VEXTRACTF64X4":
			c, es = 32, 8
		}
		if in.mask != 0 && (op == "VEXTRACTF128" || op == "VEXTRACTI128") {
			return nil
		}
		if len(a) != 3 || !isI(&a[0]) || !isV(&a[1]) || a[1].width <= c || !(isM(&a[2]) || (isV(&a[2]) && a[2].width == c)) {
			return nil
		}
		if (op == "VEXTRACTF128" || op == "VEXTRACTI128") && a[1].width != 32 {
			return nil
		}
		in.width = c
		in.exec = func(m *Machine, in *inst) (int, error) {
			part := int(in.args[0].imm) & (in.args[1].width/c - 1)
			var r vec
			copy(r.b()[:c], m.v[in.args[1].reg].b()[part*c:(part+1)*c])
			act := m.active(in, c/es)
			if o := &in.args[2]; o.kind == kMem {
				if err := m.vstore(in, m.addr(o), &r, c, es, act); err != nil {
					return 0, err
				}
			} else {
				m.vdst(in, o.reg, &r, c, es, act)
			}
			return m.pc + 1, nil
		}
	case "VINSERTF128", "VINSERTI128", "VINSERTF32X4", "VINSERTF64X2", "VINSERTF32X8", "VINSERTF64X4":
		c, es := 16, 4
		switch op {
		case "VINSERTF64X2":
			es = 8
		case "VINSERTF32X8":
			c = 32
		case "VINSERTF64X4":
			c, es = 32, 8
		}
		if in.mask != 0 && (op == "VINSERTF128" || op == "VINSERTI128") {
			return nil
		}
		if len(a) != 4 || !isI(&a[0]) || !isVM(&a[1]) || !isV(&a[2]) || !isV(&a[3]) || a[2].width != a[3].width || a[3].width <= c || (isV(&a[1]) && a[1].width != c) {
			return nil
		}
		if (op == "VINSERTF128" || op == "VINSERTI128") && a[3].width != 32 {
			return nil
		}
		in.width = a[3].width
		in.exec = func(m *Machine, in *inst) (int, error) {
			w := in.width
			var x vec
			if err := m.vsrc(in, &in.args[1], c, es, &x, ones8(c/es)); err != nil {
				return 0, err
			}
			r := m.v[in.args[2].reg]
			part := int(in.args[0].imm) & (w/c - 1)
			copy(r.b()[part*c:(part+1)*c], x.b()[:c])
			m.vdst(in, in.args[3].reg, &r, w, es, m.active(in, w/es))
			return m.pc + 1, nil
		}
	case "VPERMPS", "VPERMPD":
		// Go: x (table, vector/memory), y (indices), d: d[i] = x[y[i]]
		es := elemSize(op)
		if len(a) == 3 && a[2].width < 32 {
			return nil
		}
		compilePerm(in, es, false, false, func(_ int64, x, y, _ *vec, w int, r *vec) {
			nl := w / es
			if es == 4 {
				xs, ys, rs := x.u32(), y.u32(), r.u32()
				for i := 0; i < nl; i++ {
					rs[i] = xs[int(ys[i])&(nl-1)]
				}
				return
			}
			for i := 0; i < nl; i++ {
				r[i] = x[int(y[i])&(nl-1)]
			}
		})
	case "VPERMT2PS", "VPERMT2PD", "VPERMI2PS", "VPERMI2PD":
		// Go: x (table 2), y, d. T2: y holds indices, d holds table 1 (and is overwritten).
		// I2: d holds the indices, y is table 1.
		es := elemSize(op)
		t2 := strings.Contains(op, "T2")
		compilePerm(in, es, false, false, func(_ int64, x, y, d *vec, w int, r *vec) {
			nl := w / es
			idx, t1 := y, d
			if !t2 {
				idx, t1 = d, y
			}
			if es == 4 {
				is, t1s, t2s, rs := idx.u32(), t1.u32(), x.u32(), r.u32()
				for i := 0; i < nl; i++ {
					j := int(is[i]) & (2*nl - 1)
					if j < nl {
						rs[i] = t1s[j]
					} else {
						rs[i] = t2s[j-nl]
					}
				}
				return
			}
			for i := 0; i < nl; i++ {
				j := int(idx[i]) & (2*nl - 1)
				if j < nl {
					r[i] = t1[j]
				} else {
					r[i] = x[j-nl]
				}
			}
		})
		if in.exec != nil && in.mask != 0 && !t2 {
			// VPERMI2 merges into the index register: same as d, handled by vdst.
		}
	case "VSHUFF32X4", "VSHUFF64X2":
		// Go: $imm, x (src2), y (src1), d: 128-bit blocks; low half of the result from src1, high from src2.
		es := 4
		if op == "VSHUFF64X2" {
			es = 8
		}
		if len(a) == 4 && a[3].width < 32 {
			return nil
		}
		compilePerm(in, es, true, false, func(imm int64, x, y, _ *vec, w int, r *vec) {
			nb := w / 16
			bits, mask := 2, int64(3)
			if nb == 2 {
				bits, mask = 1, 1
			}
			for b := 0; b < nb; b++ {
				src := y
				if b >= nb/2 {
					src = x
				}
				sel := int(imm>>(bits*b)) & int(mask)
				r[2*b], r[2*b+1] = src[2*sel], src[2*sel+1]
			}
		})
	case "VBLENDMPS", "VBLENDMPD":
		// Go: x (src2), y (src1), K, d: d[i] = k[i] ? x[i] : y[i] (0 for .Z). Registers only. The result is
		// built apart and written last: d may be x or y (VBLENDMPS Z1, Z0, K2, Z1 is what kgen emits).
		es := elemSize(op)
		if len(a) != 3 || in.mask == 0 || !isV(&a[0]) || !isV(&a[1]) || !isV(&a[2]) || !sameWidth(a, a[2].width, 0, 1) {
			return nil
		}
		in.width = a[2].width
		in.exec = func(m *Machine, in *inst) (int, error) {
			w := in.width
			nl := w / es
			act := m.active(in, nl)
			x, y := m.v[in.args[0].reg], m.v[in.args[1].reg]
			var r vec // bits past the vector length are zeroed, as EVEX does
			for i := 0; i < nl; i++ {
				src := &y
				switch {
				case act>>uint(i)&1 != 0:
					src = &x
				case in.zeroing:
					continue
				}
				copy(r.b()[i*es:(i+1)*es], src.b()[i*es:(i+1)*es])
			}
			m.v[in.args[2].reg] = r
			return m.pc + 1, nil
		}
	case "VPTERNLOGD", "VPTERNLOGQ":
		// Go: $imm, x (src3), y (src2), d (src1 and destination)
		if len(a) != 4 || !isI(&a[0]) {
			return nil
		}
		imm := uint64(a[0].imm & 0xFF)
		tern := func(s1, s2, s3 uint64) uint64 {
			var r uint64
			for b := 0; b < 64; b++ {
				i := (s1>>b&1)<<2 | (s2>>b&1)<<1 | s3>>b&1
				r |= (imm >> i & 1) << b
			}
			return r
		}
		lw := &lanewise{es: elemSize(op),
			f32: func(x, y, d uint32) uint32 { return uint32(tern(uint64(d), uint64(y), uint64(x))) },
			f64: func(x, y, d uint64) uint64 { return tern(d, y, x) }}
		in.args = a[1:]
		compile3(in, lw)
		in.args = a
		if in.exec != nil {
			lw.xi, lw.yi = 1, 2
		}
	case "VSCALEFPS":
		compile3(in, &lanewise{es: 4, f32: func(x, y, d uint32) uint32 { return scalef32(y, x) }})
	case "VGETEXPPS":
		compile2(in, &lanewise{es: 4, f32: func(x, y, d uint32) uint32 { return getexp32(x) }}, 0)
	case "VPMOVZXBD", "VPMOVSXBD", "VPMOVZXWD", "VPMOVSXWD", "VPMOVZXDQ", "VPMOVSXDQ", "VPMOVZXBQ", "VPMOVSXBQ", "VPMOVZXWQ", "VPMOVSXWQ":
		return compileExtend(in)
	case "VPINSRQ", "VPINSRD":
		// Go: $imm, r/m (the element), X (first source), X (destination)
		n := 8
		if op == "VPINSRD" {
			n = 4
		}
		if in.mask == 0 && len(a) == 4 && isI(&a[0]) && isGM(&a[1]) && isV(&a[2]) && isV(&a[3]) && a[2].width == 16 && a[3].width == 16 {
			lane := int(a[0].imm) & (16/n - 1)
			in.exec = func(m *Machine, in *inst) (int, error) {
				v, err := m.readInt(&in.args[1], n)
				if err != nil {
					return 0, err
				}
				var r vec
				copy(r.b()[:16], m.v[in.args[2].reg].b()[:16])
				putN(r.b()[lane*n:], v, n)
				m.v[in.args[3].reg] = r
				return m.pc + 1, nil
			}
		}
	case "VPCMPD", "VPCMPUD":
		if len(a) == 4 && isI(&a[0]) && isK(&a[3]) {
			return compileCmpK(in)
		}
	}
	return nil
}

func compileExtend(in *inst) error {
	a := in.args
	op := in.op
	from := map[byte]int{'B': 1, 'W': 2, 'D': 4}[op[len(op)-2]]
	to := map[byte]int{'D': 4, 'Q': 8}[op[len(op)-1]]
	signed := op[5] == 'S'
	if len(a) != 2 || !isVM(&a[0]) || !isV(&a[1]) || in.bcst {
		return nil
	}
	w := a[1].width
	sw := w / to * from
	if isV(&a[0]) && a[0].width != max(16, sw) {
		return nil
	}
	in.width = w
	in.exec = func(m *Machine, in *inst) (int, error) {
		nl := w / to
		act := m.active(in, nl)
		var x vec
		if err := m.vsrc(in, &in.args[0], sw, from, &x, act); err != nil {
			return 0, err
		}
		var r vec
		xb, rb := x.b(), r.b()
		for i := 0; i < nl; i++ {
			v := getN(xb[i*from:], from)
			if signed {
				sh := uint(64 - 8*from)
				v = uint64(int64(v<<sh) >> sh)
			}
			putN(rb[i*to:], v, to)
		}
		m.vdst(in, in.args[1].reg, &r, w, to, act)
		return m.pc + 1, nil
	}
	return nil
}

// compileCmpK: VCMPPS/PD and VPCMPD/UD $imm, x, y, [K,] Kd.
func compileCmpK(in *inst) error {
	a := in.args
	if len(a) != 4 || !isI(&a[0]) || !isVM(&a[1]) || !isV(&a[2]) || !isK(&a[3]) || in.zeroing {
		return nil
	}
	if isV(&a[1]) && a[1].width != a[2].width {
		return nil
	}
	op := in.op
	es := elemSize(op)
	if op == "VCMPPD" {
		es = 8
	}
	pred := int(a[0].imm & 31)
	in.width = a[2].width
	in.exec = func(m *Machine, in *inst) (int, error) {
		w := in.width
		nl := w / es
		act := m.active(in, nl)
		var x vec
		if err := m.vsrc(in, &in.args[1], w, es, &x, act); err != nil {
			return 0, err
		}
		y := &m.v[in.args[2].reg]
		var k uint64
		for i := 0; i < nl; i++ {
			if act>>uint(i)&1 == 0 {
				continue
			}
			var t bool
			switch op {
			case "VCMPPS":
				xv, yv := x.u32()[i], y.u32()[i]
				t = cmpPred(pred, float64(f32frombits(yv)), float64(f32frombits(xv)), nan32(xv) || nan32(yv))
			case "VCMPPD":
				xv, yv := x[i], y[i]
				t = cmpPred(pred, f64frombits(yv), f64frombits(xv), nan64(xv) || nan64(yv))
			case "VPCMPD":
				t = intPred(pred&7, int64(int32(y.u32()[i])), int64(int32(x.u32()[i])))
			case "VPCMPUD":
				t = intPred(pred&7, int64(y.u32()[i]), int64(x.u32()[i]))
			}
			if t {
				k |= 1 << uint(i)
			}
		}
		m.k[in.args[3].reg] = k
		return m.pc + 1, nil
	}
	return nil
}

func intPred(p int, a, b int64) bool {
	switch p {
	case 0:
		return a == b
	case 1:
		return a < b
	case 2:
		return a <= b
	case 3:
		return false
	case 4:
		return a != b
	case 5:
		return a >= b
	case 6:
		return a > b
	}
	return true
}

// compileK: opmask instructions.
func compileK(in *inst) (bool, error) {
	op := in.op
	if !strings.HasPrefix(op, "K") {
		return false, nil
	}
	a := in.args
	width := map[byte]int{'B': 8, 'W': 16, 'D': 32, 'Q': 64}[op[len(op)-1]]
	if width == 0 {
		return true, nil
	}
	msk := ones8(width)
	base := op[:len(op)-1]
	switch base {
	case "KMOV":
		switch {
		case len(a) == 2 && (isG(&a[0]) || isK(&a[0]) || isM(&a[0])) && isK(&a[1]):
			in.exec = func(m *Machine, in *inst) (int, error) {
				var v uint64
				switch o := &in.args[0]; o.kind {
				case kGPR:
					v = m.gpr[o.reg]
				case kMask:
					v = m.k[o.reg]
				default:
					var err error
					if v, err = m.load64(m.addr(o), width/8); err != nil {
						return 0, err
					}
				}
				m.k[in.args[1].reg] = v & msk
				return m.pc + 1, nil
			}
		case len(a) == 2 && isK(&a[0]) && (isG(&a[1]) || isM(&a[1])):
			in.exec = func(m *Machine, in *inst) (int, error) {
				v := m.k[in.args[0].reg] & msk
				if o := &in.args[1]; o.kind == kGPR {
					m.gpr[o.reg] = v
				} else if err := m.store64(m.addr(o), v, width/8); err != nil {
					return 0, err
				}
				return m.pc + 1, nil
			}
		}
	case "KOR", "KAND", "KXOR", "KANDN", "KXNOR", "KADD":
		if len(a) == 3 && isK(&a[0]) && isK(&a[1]) && isK(&a[2]) {
			in.exec = func(m *Machine, in *inst) (int, error) {
				x, y := m.k[in.args[0].reg], m.k[in.args[1].reg] // Intel: k1 = k2 op k3 with k2 = y, k3 = x
				var r uint64
				switch base {
				case "KOR":
					r = y | x
				case "KAND":
					r = y & x
				case "KXOR":
					r = y ^ x
				case "KANDN":
					r = ^y & x
				case "KXNOR":
					r = ^(y ^ x)
				case "KADD":
					r = y + x
				}
				m.k[in.args[2].reg] = r & msk
				return m.pc + 1, nil
			}
		}
	case "KNOT":
		if len(a) == 2 && isK(&a[0]) && isK(&a[1]) {
			in.exec = func(m *Machine, in *inst) (int, error) {
				m.k[in.args[1].reg] = ^m.k[in.args[0].reg] & msk
				return m.pc + 1, nil
			}
		}
	case "KSHIFTR", "KSHIFTL":
		if len(a) == 3 && isI(&a[0]) && isK(&a[1]) && isK(&a[2]) {
			c := uint64(a[0].imm & 0xFF)
			in.exec = func(m *Machine, in *inst) (int, error) {
				v := m.k[in.args[1].reg] & msk
				var r uint64
				if c < uint64(width) {
					if base == "KSHIFTR" {
						r = v >> c
					} else {
						r = v << c
					}
				}
				m.k[in.args[2].reg] = r & msk
				return m.pc + 1, nil
			}
		}
	case "KORTEST", "KTEST":
		if len(a) == 2 && isK(&a[0]) && isK(&a[1]) {
			in.exec = func(m *Machine, in *inst) (int, error) {
				x, y := m.k[in.args[0].reg]&msk, m.k[in.args[1].reg]&msk
				if base == "KORTEST" {
					m.zf = x|y == 0
					m.cf = x|y == msk
				} else { // KTEST: ZF = (y & x) == 0, CF = (^y & x) == 0 with Intel k1 = y, k2 = x
					m.zf = y&x == 0
					m.cf = ^y&x&msk == 0
				}
				m.sf, m.of = false, false
				m.fvalid = fAll
				return m.pc + 1, nil
			}
		}
	}
	return true, nil
}

// scalef32 is VSCALEFPS: s1 * 2^floor(s2), one rounding, with the SDM's
// table of special cases (a quiet NaN s1 scaled by ±Inf gives +Inf or +0).
func scalef32(s1, s2 uint32) uint32 {
	inf2 := s2&0x7FFFFFFF == 0x7F800000
	switch {
	case nan32(s1):
		if s1&0x00400000 != 0 && inf2 {
			if s2>>31 == 0 {
				return 0x7F800000
			}
			return 0
		}
		return quiet32(s1)
	case nan32(s2):
		return quiet32(s2)
	}
	a, b := float64(f32frombits(s1)), float64(f32frombits(s2))
	switch {
	case math.IsInf(b, 1):
		if a == 0 {
			return qnan32
		}
		return f32bits(float32(math.Copysign(math.Inf(1), a)))
	case math.IsInf(b, -1):
		if math.IsInf(a, 0) {
			return qnan32
		}
		return f32bits(float32(math.Copysign(0, a)))
	}
	e := math.Max(-400, math.Min(400, math.Floor(b)))
	// exact in float64 (|e| <= 400 and a is a float32), then one rounding
	return f32bits(float32(math.Ldexp(a, int(e))))
}

// getexp32: floor(log2(|x|)) as a float (VGETEXPPS), denormals normalized.
func getexp32(x uint32) uint32 {
	if nan32(x) {
		return quiet32(x)
	}
	v := math.Abs(float64(f32frombits(x)))
	switch {
	case v == 0:
		return f32bits(float32(math.Inf(-1)))
	case math.IsInf(v, 0):
		return f32bits(float32(math.Inf(1)))
	}
	return f32bits(float32(math.Ilogb(v)))
}
