package rt

import "math/bits"

// Wide is an exact integer for the bounds checks of generated wrappers: an affine combination of dims
// (each at most MaxDim) with coefficients whose absolute values sum below 2^30 cannot overflow it, so
// a check never wraps around and lets a bad index through. It is a 128-bit two's complement value.
type Wide struct {
	hi int64
	lo uint64
}

// Affine returns c + a0·x0 + a1·x1 + ..., given terms as pairs a0, x0, a1, x1, ... The sum is exact as
// long as it fits 128 bits (generated code keeps far below that).
func Affine(c int, terms ...int) Wide {
	w := wide(int64(c))
	for i := 0; i+1 < len(terms); i += 2 {
		w = w.add(mul(int64(terms[i]), int64(terms[i+1])))
	}
	return w
}

func wide(v int64) Wide { return Wide{hi: v >> 63, lo: uint64(v)} }

func (w Wide) add(v Wide) Wide {
	lo, carry := bits.Add64(w.lo, v.lo, 0)
	return Wide{hi: w.hi + v.hi + int64(carry), lo: lo}
}

func (w Wide) neg() Wide {
	lo, borrow := bits.Sub64(0, w.lo, 0)
	return Wide{hi: -w.hi - int64(borrow), lo: lo}
}

// mul is the exact product of two int64s.
func mul(a, b int64) Wide {
	neg := (a < 0) != (b < 0)
	ua, ub := uint64(a), uint64(b)
	if a < 0 {
		ua = -ua
	}
	if b < 0 {
		ub = -ub
	}
	hi, lo := bits.Mul64(ua, ub)
	w := Wide{hi: int64(hi), lo: lo}
	if neg {
		w = w.neg()
	}
	return w
}

// less reports w < v.
func (w Wide) less(v Wide) bool {
	if w.hi != v.hi {
		return w.hi < v.hi
	}
	return w.lo < v.lo
}

// Within reports whether lo >= 0 and hi < n: every index from lo to hi lies inside a dim of size n.
func Within(n int, lo, hi Wide) bool {
	return !lo.less(Wide{}) && hi.less(wide(int64(n)))
}
