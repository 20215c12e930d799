package ptx

// shfl runs shfl.sync.{bfly,idx,up,down}.b32 d, a, b, c, membermask for the lanes of a warp that all
// wait at it (PTX ISA "shfl.sync"): with lane = %laneid, segmask = c[12:8] and maxLane = (lane &
// segmask) | (c[4:0] & ~segmask), the source lane j is lane ^ b (bfly), lane + b (down), lane - b
// (up) or (lane & segmask) | (b & ~segmask) (idx); when j is out of range (j > maxLane, or j < maxLane
// for up) the lane reads its own a. Every lane must name the same membermask, which must hold the
// executing lanes and only lanes of the warp that exist; reading a lane outside the mask is undefined
// on hardware and an error here. The optional |p destination is not modelled.
func (m *emulator) shfl(warp []*emuThread, in *Instr) {
	var mode string
	switch in.Op {
	case "shfl.sync.bfly", "shfl.sync.idx", "shfl.sync.up", "shfl.sync.down":
		mode = in.Op[len("shfl.sync."):]
	default:
		emuError("unknown instruction %s", in.Op)
	}
	if len(in.Types) != 1 || in.Types[0] != B32 || len(in.Args) != 5 {
		emuError("%s: only the .b32 form without a predicate destination is modelled", in.Op)
	}
	d, ok := in.Args[0].(Reg)
	if !ok {
		emuError("%s: destination %v", in.Op, in.Args[0])
	}
	exist := uint32(1)<<len(warp) - 1
	if len(warp) == 32 {
		exist = ^uint32(0)
	}
	mask := uint32(m.value(warp[0], in.Args[4], B32))
	src := make([]uint64, len(warp))
	for l, th := range warp {
		if got := uint32(m.value(th, in.Args[4], B32)); got != mask {
			emuError("%s: lanes 0 and %d name different member masks (%#x, %#x)", in.Op, l, mask, got)
		}
		src[l] = m.value(th, in.Args[1], B32) & 0xFFFFFFFF
	}
	if mask != exist {
		emuError("%s: member mask %#x, but the lanes of the warp that run it are %#x", in.Op, mask, exist)
	}
	out := make([]uint64, len(warp))
	for lane, th := range warp {
		b := int(m.value(th, in.Args[2], B32) & 0x1F)
		c := int(m.value(th, in.Args[3], B32))
		seg := c >> 8 & 0x1F
		maxLane := lane&seg | c&0x1F&^seg
		var j int
		var p bool
		switch mode {
		case "bfly":
			j = lane ^ b
			p = j <= maxLane
		case "down":
			j = lane + b
			p = j <= maxLane
		case "up":
			j = lane - b
			p = j >= maxLane
		case "idx":
			j = lane&seg | b&^seg
			p = j <= maxLane
		}
		if !p {
			j = lane
		}
		if j < 0 || j >= len(warp) || mask>>j&1 == 0 {
			emuError("%s: lane %d reads lane %d, which is not in the member mask %#x (undefined)", in.Op, lane, j, mask)
		}
		out[lane] = src[j]
	}
	for lane, th := range warp {
		m.set(th, d, out[lane])
	}
}
