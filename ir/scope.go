package ir

// Scope is the set of threads that take part in one operation: an MMA (who holds the fragments), a
// barrier (who waits), a shared buffer (who sees it). CPU targets use ScopeThread only.
type Scope uint8

const (
	ScopeThread    Scope = iota // one thread: a register tile (CPU microkernels, scalar GPU code)
	ScopeWarp                   // the 32 threads of an NVIDIA warp (mma.sync)
	ScopeWarpgroup              // 4 consecutive warps, 128 threads (sm_90a wgmma)
	ScopeSimdgroup              // the 32 threads of an Apple simdgroup (simdgroup_matrix)
	ScopeBlock                  // a thread block / Metal threadgroup (barriers, shared memory)
)

var scopeNames = [...]string{"thread", "warp", "warpgroup", "simdgroup", "block"}

func (s Scope) String() string {
	if int(s) < len(scopeNames) {
		return scopeNames[s]
	}
	return "scope?"
}

// Threads is the number of threads in one instance of the scope; 0 for ScopeBlock, whose size is the
// block's.
func (s Scope) Threads() int {
	switch s {
	case ScopeThread:
		return 1
	case ScopeWarp, ScopeSimdgroup:
		return 32
	case ScopeWarpgroup:
		return 128
	}
	return 0
}
