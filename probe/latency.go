package probe

import (
	"math/rand/v2"
	"time"
)

// buildChase links lines of buf (a working set of 64-bit words) into one random cycle for a pointer
// chase and returns its first word's index: word i holds the index of the next word visited. It visits
// every other line (the spatial prefetcher fetches lines in 128-byte pairs, and would serve the other
// line of a pair early), in random order within groups of 16 pages (64 KiB), the groups in random
// order: no prefetcher follows the order, and a group's pages stay in the TLB while it is visited, so
// the latency is the cache's or memory's rather than a page walk's (a chase that changes page at
// every load shows the TLB's reach as false cache levels).
func buildChase(buf []uint64, line int, rng *rand.Rand) int {
	step := max(2*line/8, 1) // words between visited lines
	group := 16 * 4096 / 8
	if len(buf) < group {
		group = len(buf) - len(buf)%step
	}
	first, prev := -1, -1
	for _, g := range rng.Perm(len(buf) / group) {
		for _, s := range rng.Perm(group / step) {
			cur := g*group + s*step
			if first < 0 {
				first = cur
			} else {
				buf[prev] = uint64(cur)
			}
			prev = cur
		}
	}
	buf[prev] = uint64(first)
	return first
}

// chase follows n links from word i and returns where it ends: n dependent loads.
func chase(buf []uint64, i, n int) int {
	for ; n > 0; n-- {
		i = int(buf[i])
	}
	return i
}

// latencyCurve measures the chase latency (ns per load) over working sets from 4 KiB doubling to
// 256 MiB (64 MiB with quick).
func latencyCurve(t timer, quick bool) (sizes []int, ns []float64) {
	top := 256 << 20
	if quick {
		top = 64 << 20
		t = timer{2 * time.Millisecond, 2}
	}
	buf := make([]uint64, top/8)
	rng := rand.New(rand.NewPCG(7, 7))
	for size := 4 << 10; size <= top; size *= 2 {
		chain := buf[:size/8]
		pos := buildChase(chain, 64, rng)
		sizes = append(sizes, size)
		ns = append(ns, 1e9/t.rate(1, func(_, n int) { pos = chase(chain, pos, n) }))
	}
	return sizes, ns
}

// estimateCaches reads cache levels off a latency curve over doubling working sets: a rise of more
// than 30% from one size to the next starts a transition (consecutive rises are one transition), and
// the level's size is the last size before it, the largest working set still served at the faster
// latency (an underestimate by up to half, the safe side for cache blocking). The last plateau is
// memory. Ways are unknown (0) and the line is taken as 64 bytes.
func estimateCaches(sizes []int, ns []float64) []Cache {
	var out []Cache
	rising := false
	for i := 1; i < len(sizes); i++ {
		up := ns[i] > 1.3*ns[i-1]
		if up && !rising {
			out = append(out, Cache{Level: len(out) + 1, Size: sizes[i-1], Line: 64, Source: "measured"})
		}
		rising = up
	}
	return out
}
