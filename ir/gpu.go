package ir

import (
	"fmt"
	"strconv"
	"strings"
)

// GPU-mapped loop-level IR.
//
// A GPU kernel is a Launch node. Its body is written in the SPMD style of CUDA and Metal, as loops:
//
//	launch name grid(G0, G1) block(T0, T1) reads(...) writes(...)
//	  gpu.grid  by = ...            one iteration per thread block (len(Grid) nested loops)
//	    gpu.grid bx = ...
//	      alloc shared As f32[...]  block level: shared buffers, one per block
//	        gpu.block ty = 0 .. T0  thread level: one iteration per thread (len(Block) nested loops)
//	          gpu.block tx = 0 .. T1
//	            ... loads, stores, locals, serial loops, barrier block, async copies ...
//
// or, with the threads of a block split into warps of 32 lanes, a thread nest
//
//	gpu.warp w = 0 .. W
//	  gpu.thread lane = 0 .. 32
//
// with Block = (W, 32). Three levels, each holding only what the hardware runs there:
//   - launch level (the Launch body): GPUGrid loops (and Nest groupings);
//   - block level (inside the grid loops, outside the thread loops): shared Allocs, Nests and thread
//     nests — nothing that computes, since every instruction of a GPU kernel runs in some thread;
//   - thread level (inside a thread nest): what every thread runs, including Barrier, AsyncCommit and
//     AsyncWait.
//
// A thread nest is a chain of directly nested thread loops (GPUBlock loops, each the only node of its
// parent's body; or a GPUWarp loop whose body is exactly one GPUThread loop of 32 lanes); its innermost
// body is the thread body. Every thread nest of a block has as many iterations as the block has threads
// (the product of Launch.Block): iteration t, in loop order, is thread t, and warp t/32. When a block
// level holds several thread nests one after the other, each thread runs its iteration of each in turn,
// with no synchronisation between them other than the barriers they contain.
//
// Grid loops are independent (blocks share nothing but global memory and must not communicate through
// it); thread loops are not: threads of one block communicate through shared buffers, and the Barrier
// nodes inside the thread bodies order those accesses. The interpreter runs the threads of a block in
// phases split at barriers and reports unordered accesses to one shared element as races
// (interp_gpu.go); VerifyFunc checks the nesting and that barriers are reached by every thread of their
// scope (verify_gpu.go).

// Launch is the boundary between host code and one GPU kernel: the host launches a grid of thread
// blocks, Grid[i] blocks along the i-th GPUGrid loop (outermost first), each of Block[0]·Block[1]·…
// threads, and waits for it. Reads and Writes list the tensors the kernel reads and writes in global
// memory (parameters, temporaries and global scratch); shared buffers are allocated inside. Launches are
// host level: not nested in other launches or in GPU loops.
type Launch struct {
	Name          string
	Grid, Block   []IExpr
	Reads, Writes []*Tensor
	Body          []Node
}

// Barrier waits until every thread of its Scope (ScopeBlock: the thread block, __syncthreads /
// threadgroup_barrier; ScopeWarp or ScopeSimdgroup: the 32 threads of the warp) has reached it, and makes
// the shared-memory writes each of them made before it visible to all of them after it. Every thread of
// the scope must reach the same Barrier node: it may not be under a condition or in a loop whose trip
// count differs between those threads.
type Barrier struct {
	Scope Scope
	red   *WarpReduce // the interpreter's stand-in for a lane reduction: a wait that orders no memory
}

// AsyncMech names the hardware mechanism that tracks a thread's asynchronous copies: commit/wait
// groups (sm_80 cp.async; the nodes below), or an mbarrier (AsyncMbarrier: Hopper's bulk copies, whose
// Copy names the barrier and whose wait is an MbarWait on a phase; mbarrier.go).
type AsyncMech uint8

const (
	AsyncGroups AsyncMech = iota // cp.async.commit_group / cp.async.wait_group
)

// AsyncCommit closes the calling thread's group of asynchronous copies issued since its previous commit
// (an empty group is allowed and counts).
type AsyncCommit struct {
	Mech AsyncMech
}

// AsyncWait blocks the calling thread until at most N of its committed groups are still in flight: the
// copies of all older groups have landed and the thread may read their destinations. Other threads see
// them only after a barrier that follows the wait.
type AsyncWait struct {
	Mech AsyncMech
	N    int
}

func (*Launch) node()      {}
func (*Barrier) node()     {}
func (*AsyncCommit) node() {}
func (*AsyncWait) node()   {}

// IsThreadLoop reports whether k is a loop kind whose iterations are the threads of a block.
func (k LoopKind) IsThreadLoop() bool { return k == GPUBlock || k == GPUWarp || k == GPUThread }

// IsGPU reports whether k is one of the GPU loop kinds.
func (k LoopKind) IsGPU() bool { return k >= GPUGrid && k <= GPUThread }

// LaunchTensors returns the tensors that body reads and writes outside shared memory and outside
// scratch buffers allocated within body, each once in first-use order: what a Launch around body lists
// as its Reads and Writes.
func LaunchTensors(body []Node) (reads, writes []*Tensor) {
	local := map[*Tensor]bool{}
	seenR, seenW := map[*Tensor]bool{}, map[*Tensor]bool{}
	read := func(t *Tensor) {
		if !local[t] && t.Space != Shared && !seenR[t] {
			seenR[t] = true
			reads = append(reads, t)
		}
	}
	write := func(t *Tensor) {
		if !local[t] && t.Space != Shared && !seenW[t] {
			seenW[t] = true
			writes = append(writes, t)
		}
	}
	WalkNodes(body, func(n Node) bool {
		if a, ok := n.(*Alloc); ok {
			local[a.T] = true
		}
		NodeExprs(n, func(e Expr) {
			Walk(e, func(x Expr) {
				if l, ok := x.(*Load); ok {
					read(l.T)
				}
			})
		})
		NodeTensors(n, read, write)
		return true
	})
	return reads, writes
}

// NodeTensors calls read and write for the tensors node n itself reads and writes other than through
// expressions (the destination of a Store or Pack, the operands of a Micro, Transpose, Copy or MMA).
func NodeTensors(n Node, read, write func(*Tensor)) {
	switch n := n.(type) {
	case *Store:
		write(n.T)
	case *Pack:
		write(n.Dst)
	case *Micro:
		operandReads(n.A, read)
		operandReads(n.B, read)
		if n.Bias != nil {
			read(n.Bias)
		}
		read(n.C)
		write(n.C)
	case *Transpose:
		read(n.Src)
		write(n.Dst)
	case *Copy:
		read(n.Src.T)
		write(n.Dst.T)
	case *MMA:
		operandReads(n.A, read)
		operandReads(n.B, read)
	case *AccStore:
		write(n.Out)
	}
}

// operandReads reports the tensor an operand reads, or those its view loads.
func operandReads(o Operand, read func(*Tensor)) {
	if o.View == nil {
		if o.T != nil {
			read(o.T)
		}
		return
	}
	Walk(o.View.Value, func(x Expr) {
		if l, ok := x.(*Load); ok {
			read(l.T)
		}
	})
}

func joinTensors(ts []*Tensor) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.Name
	}
	return strings.Join(s, ", ")
}

// printGPU prints the GPU nodes; it reports false for any other node.
func printGPU(b *strings.Builder, n Node, depth int) bool {
	ind := strings.Repeat("  ", depth)
	switch n := n.(type) {
	case *Launch:
		fmt.Fprintf(b, "%slaunch %s grid(%s) block(%s) reads(%s) writes(%s)\n", ind, n.Name, joinI(n.Grid), joinI(n.Block), joinTensors(n.Reads), joinTensors(n.Writes))
		printNodes(b, n.Body, depth+1)
	case *Barrier:
		fmt.Fprintf(b, "%sbarrier %s\n", ind, n.Scope)
	case *AsyncCommit:
		fmt.Fprintf(b, "%sasync.commit\n", ind)
	case *AsyncWait:
		fmt.Fprintf(b, "%sasync.wait %s\n", ind, strconv.Itoa(n.N))
	case *Copy:
		fmt.Fprintf(b, "%s%s\n", ind, n)
	default:
		return printWarpReduce(b, ind, n) || printMbar(b, ind, n)
	}
	return true
}
