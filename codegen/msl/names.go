package msl

import (
	"fmt"
	"sort"
	"strings"
)

// namer gives every IR object one MSL identifier, unique in its kernel and clear of MSL keywords and
// the names the lowering makes.
type namer struct {
	of   map[any]string
	used map[string]bool
}

func newNamer() *namer {
	n := &namer{of: map[any]string{}, used: map[string]bool{}}
	for _, w := range reserved {
		n.used[w] = true
	}
	return n
}

// name returns obj's identifier, making one from hint on first use.
func (n *namer) name(obj any, hint string) string {
	if s, ok := n.of[obj]; ok {
		return s
	}
	s := n.fresh(hint)
	n.of[obj] = s
	return s
}

// fresh returns an unused identifier based on hint.
func (n *namer) fresh(hint string) string {
	base := sanitize(hint)
	s := base
	for i := 2; n.used[s]; i++ {
		s = fmt.Sprintf("%s_%d", base, i)
	}
	n.used[s] = true
	return s
}

// reserve is fresh for the lowering's own names.
func (n *namer) reserve(hint string) string { return n.fresh(hint) }

func sanitize(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_', r >= '0' && r <= '9' && i > 0:
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "v"
	}
	return b.String()
}

// reserved are C++ and MSL words (and metal_stdlib names the lowering calls unqualified) that no
// emitted identifier may take.
var reserved = func() []string {
	w := strings.Fields(`alignas alignof and asm auto bool break case catch char class const constexpr
		continue default delete do double else enum explicit export extern false float for friend goto if
		inline int long mutable namespace new noexcept not operator or private protected public register
		return short signed sizeof static struct switch template this throw true try typedef typeid
		typename union unsigned using virtual void volatile while xor half bfloat uint ushort uchar
		kernel vertex fragment device constant threadgroup thread metal min max exp log sqrt abs tanh
		select fmax fmin isnan INFINITY NAN simdgroup_barrier threadgroup_barrier mem_flags
		simdgroup_load simdgroup_store simdgroup_multiply_accumulate make_filled_simdgroup_matrix
		float2 float3 float4 uint2 uint3 int2 int3 int4 half2 half4 main simd kg_max kg_min kg_relu
		kg_sigmoid simd_shuffle_xor simd_max simd_min simd_any simdgroup_float8x8 simdgroup_half8x8
		simdgroup_bfloat8x8`)
	sort.Strings(w)
	return w
}()
