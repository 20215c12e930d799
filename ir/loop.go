package ir

import (
	"slices"
	"strings"
)

// Func is the loop-level IR of one kernel: the statements lowered to loop nests and transformed by the
// passes. Its parameters are the kernel's; Body may declare scratch buffers (Alloc) and locals (Decl).
type Func struct {
	Kernel *Kernel
	Body   []Node
	// Plan holds the default value of every plan symbol (ISym) used in Body. A backend variant may
	// replace them (a different microkernel tile) without changing the result beyond rounding.
	Plan map[string]int
	// Variants are the plan values of the target's native implementation levels (amd64: avx512, avx2;
	// arm64: neon), best first: what a generated package installs in place of Plan's defaults when it
	// selects that variant at run time (Plan is the portable code's). Empty for the portable target.
	Variants []PlanVariant
}

// PlanVariant is the plan of one backend variant: a value for every plan symbol it sets differently
// from the defaults or the same (the register tile and cache blocks of each GEMM slot).
type PlanVariant struct {
	Name string
	Plan map[string]int
	// Host lists the symbols the generated package recomputes at init from the caches of the machine it
	// runs on (target.HostGemmBlocks); Plan holds their value on the static model of the target.
	Host []string
	// Tuned holds plan values measured by kgen tune (kgen.lock) per machine class (probe.Profile.Class):
	// the generated package installs Tuned[class] over Plan at init where that class is the nearest to
	// the machine (cache blocks only where its L1 and L2 also match the machine's: probe.MatchingCaches)
	// and keeps Plan (and the host-sized blocks) everywhere else. Only run-time symbols appear here (cache
	// blocks and the version thresholds of GEMM slots), never a register tile.
	Tuned map[string]map[string]int
}

// PlanOf returns the complete plan of variant name: Plan with the variant's values over it (Plan
// itself for a name that is not a variant).
func (f *Func) PlanOf(name string) map[string]int {
	out := make(map[string]int, len(f.Plan))
	for k, v := range f.Plan {
		out[k] = v
	}
	for _, pv := range f.Variants {
		if pv.Name == name {
			for k, v := range pv.Plan {
				out[k] = v
			}
		}
	}
	return out
}

// Node is a loop-level statement.
type Node interface{ node() }

// LoopKind says how a loop's iterations may run.
type LoopKind uint8

const (
	Serial    LoopKind = iota
	Parallel           // iterations are independent and may run on different cores
	Vector             // Width consecutive iterations form one SIMD group (lanes independent)
	Unrolled           // the body is replicated Width times per trip
	GPUGrid            // one iteration per thread block along one grid dimension (blockIdx); inside a Launch
	GPUBlock           // one iteration per thread along one block dimension (threadIdx); inside GPUGrid loops
	GPUWarp            // one iteration per warp of a block; its body is one GPUThread loop
	GPUThread          // one iteration per lane (0..32) of the enclosing warp
)

// The GPU kinds are meaningful only inside a Launch, in the nesting ir/gpu.go describes (grid loops,
// then block-level shared allocations, then a nest of thread loops whose iterations are the block's
// threads). VerifyFunc checks that nesting.

var loopKindNames = [...]string{"for", "parallel", "vector", "unrolled", "gpu.grid", "gpu.block", "gpu.warp", "gpu.thread"}

func (k LoopKind) String() string { return loopKindNames[k] }

// Loop runs Body for Var = Lo, Lo+Step, ... while Var < Hi. Step is a positive constant or plan symbol.
// For Vector and Unrolled loops, Width iterations are grouped; Step is Width, and the pass that made the
// loop also made the remainder loop after it, so a group is always whole. An Unrolled loop's Body holds
// the Width copies; a Vector loop's Body is the single-lane body, run once per lane (ir/vector.go).
type Loop struct {
	Var    *Var
	Lo, Hi IExpr
	Step   IExpr
	Kind   LoopKind
	Width  int
	// Cost estimates the work of one iteration (for deciding at run time whether a parallel loop is
	// worth splitting); nil means unknown.
	Cost IExpr
	Body []Node
	// Reduce describes the reduction of a Vector loop whose lanes accumulate into per-lane partials
	// (ir/vector.go); nil for elementwise loops and loops of other kinds.
	Reduce *LaneReduce
}

// Decl declares a scalar local and sets it to Init.
type Decl struct {
	L    *LocalVar
	Init Expr
}

// Assign sets a declared local.
type Assign struct {
	L     *LocalVar
	Value Expr
}

// Store writes Value (rounded to T's type) to T[Idx...].
type Store struct {
	T     *Tensor
	Idx   []IExpr
	Value Expr
}

// Nest groups the code of one source statement (or several fused ones). It changes nothing when run.
type Nest struct {
	Stmts []*Stmt
	Body  []Node
}

// Alloc makes a scratch buffer T (T.Size elements, contents undefined until written) for the duration
// of Body. Inside a parallel loop every iteration has its own (a backend may reuse one per worker); a GPU
// thread allocating one (Register or Global space, inside a thread loop) has its own. A Shared buffer is
// allocated at block level (inside the GPUGrid loops of a Launch, outside its thread loops): one per
// thread block, visible to every thread of that block and to no other, living while the block runs.
type Alloc struct {
	T    *Tensor
	Body []Node
}

// Pack copies an N×Depth block into Dst in panels of Panel along N: element (p, d) goes to
// Dst[DstOff + (p/Panel)*Panel*Depth + d*Panel + p%Panel], and the last panel is padded with zeros up to
// a multiple of Panel. Value gives the element in terms of the placeholder variables P and D; it may
// convert (f16 to f32) or gather (transposed or strided operands).
// A-panels of GEMM pack rows of A (P = row, D = k); B-panels pack columns of B (P = column, D = k).
type Pack struct {
	Dst      *Tensor
	DstOff   IExpr
	N, Depth IExpr
	Panel    IExpr
	P, D     *Var
	Value    Expr
}

// Micro is one register-tile update through a backend's microkernel (the tensorize intrinsic): with
// Ã(i, p) the element (i, p) of operand A (an MR×KC tile) and B̃(p, j) that of B (KC×NR), it computes for
// i < M, j < N:
//
//	v = Alpha·Σ_p Ã(i, p)·B̃(p, j); if Beta ≠ 0 { v += Beta·C[COff+i·LDC+j] }
//	if EP&1 { v += Bias[BiasOff+j] }; if EP&2 { v = max(v, 0) }; C[COff+i·LDC+j] = v
//
// accumulating in Elem. C is addressed as a flat row-major buffer. The operands' layouts decide which
// implementation runs (Kind): packed panels the register-tile microkernel, tiles read in place the
// unpacked ("U") microkernel, and a tile of the whole problem (MR = M, all of K) the "rows" kernel, which
// streams B. docs/MICROKERNEL.md is the contract. In MMA terms (AsMMA) a Micro is one MMA on an MR×NR
// thread-scope accumulator with its epilogue.
type Micro struct {
	Slot        string // the kernel family ("sgemm", "dgemm"): one microkernel per Slot and variant
	Elem        DType
	MR, NR      IExpr
	KC          IExpr
	A, B        MicroOperand
	C           *Tensor
	COff, LDC   IExpr
	M, N        IExpr
	Alpha, Beta Expr
	Bias        *Tensor // nil when there is no bias
	BiasOff     IExpr
	EP          Expr // i32: epilogue bits
	// Batch, when not nil, makes the Micro a batch of independent products (MicroBatched): see MicroBatch.
	Batch *MicroBatch
}

// MicroBatch is the batch of a batched Micro: Count products, product q (0 ≤ q < Count) reading its A tile
// at A.Off + q·AStride and its B tile at B.Off + q·BStride (elements of the operands' tensors) and writing
// its C tile at COff + q·CStride, with the Micro's KC, strides, Alpha, Beta, bias (the same for every
// product) and EP. Each product is a whole M×N product: M may exceed MR (the kernel walks its row tiles of
// MR rows, in order, as the unpacked tile loops do), N is at most NR. Only the unpacked layouts (Strided
// operands) are batched: one call runs a batch of small products without a loop nest per product.
type MicroBatch struct {
	Count, AStride, BStride, CStride IExpr
}

// MicroOperand is an input tile of a Micro: A is MR×KC (rows i, reduction p), B is KC×NR. It is an MMA
// Operand: in memory T at Off through Layout — a Panel for BLIS packed panels (what Pack writes), a
// Strided layout for a tile read in place — with T of the type Elem; before the pack pass stages it, a
// View (T nil): the element as an expression of the source tensors, which may convert (f16 or bf16 to
// Elem), transpose, gather or compute, so it is no layout. No microkernel reads a View; the interpreter
// evaluates it, and Pack turns it into a panel or, where the view is a plain strided load of Elem, into a
// Strided operand.
type MicroOperand = Operand

// MicroKind is the implementation of a Micro that its operands' layouts select (Micro.Kind).
type MicroKind int

const (
	// MicroUnbound: an operand is still a View, or its layout is one no microkernel reads.
	MicroUnbound MicroKind = iota
	// MicroPacked: both operands are Panel layouts of the tile's width (MR for A, NR for B) and depth KC.
	MicroPacked
	// MicroUnpacked: both operands are Strided with B's columns contiguous (ColStride 1), in a register
	// tile (MR and NR constants or plan symbols): the "U" microkernel reads them in place.
	MicroUnpacked
	// MicroRows: strided operands as for MicroUnpacked, in a tile whose height is no register tile but
	// the problem's rows (MR = M, a run-time extent; KC all of K): the rows kernel, which streams B.
	MicroRows
	// MicroBatched: strided operands as for MicroUnpacked and a Batch: the batched unpacked kernel, a
	// batch of whole small products in one call.
	MicroBatched
)

func (k MicroKind) String() string {
	return [...]string{"unbound", "packed", "unpacked", "rows", "batched"}[k]
}

// Kind is the implementation u's operand layouts select: the one place that decides between the packed,
// unpacked and rows kernels.
func (u *Micro) Kind() MicroKind {
	if u.A.View != nil || u.B.View != nil || u.A.T == nil || u.B.T == nil {
		return MicroUnbound
	}
	pa, okA := u.A.Layout.(*Panel)
	pb, okB := u.B.Layout.(*Panel)
	if okA && okB {
		if !pa.ByCol && pb.ByCol && SameIExpr(pa.Width, u.MR) && SameIExpr(pb.Width, u.NR) && SameIExpr(pa.Depth, u.KC) && SameIExpr(pb.Depth, u.KC) {
			return MicroPacked
		}
		return MicroUnbound
	}
	_, okA = u.A.Layout.(*Strided)
	sb, okB := u.B.Layout.(*Strided)
	if !okA || !okB || !SameIExpr(sb.ColStride, IConst{V: 1}) {
		return MicroUnbound
	}
	if registerExtent(u.MR) && registerExtent(u.NR) {
		if u.Batch != nil {
			return MicroBatched
		}
		return MicroUnpacked
	}
	if u.Batch != nil {
		return MicroUnbound // a batch of rows products: no kernel
	}
	return MicroRows
}

// registerExtent reports whether e can size a register tile: a constant or a plan symbol, fixed when the
// kernel is compiled.
func registerExtent(e IExpr) bool {
	switch e.(type) {
	case IConst, ISym:
		return true
	}
	return false
}

// Transpose is one tile of a transpose copy through a backend's transpose routine (the tensorize
// intrinsic of a pure 2-D transpose statement): for 0 ≤ r < Rows and 0 ≤ c < Cols,
//
//	Dst[DstOff + c·LDD + r] = Src[SrcOff + r·LDS + c]
//
// with Src and Dst addressed as flat row-major buffers of element type Elem (F32 or F64; both tensors
// have that type, so the copy is exact). Rows or Cols ≤ 0 copies nothing. Src and Dst are distinct
// tensors. One routine per Slot and variant implements it (codegen.TransposeSlots); every element the
// tile touches is inside both tensors (Tensorize builds it that way and the interpreter checks it).
type Transpose struct {
	Slot        string // the routine family: one routine per Slot and variant
	Elem        DType
	Src         *Tensor
	SrcOff, LDS IExpr
	Dst         *Tensor
	DstOff, LDD IExpr
	Rows, Cols  IExpr
}

// View is an operand element as an expression of two placeholder variables: P ranges over the
// operand's rows (A) or columns (B), D over the reduction; Base0 and K0 are where the tile starts.
type View struct {
	P, D  *Var
	Value Expr
	Base0 IExpr // first row (A) or column (B) of the tile
	K0    IExpr // first reduction index of the tile
}

func (*Loop) node()      {}
func (*Decl) node()      {}
func (*Assign) node()    {}
func (*Store) node()     {}
func (*Nest) node()      {}
func (*Alloc) node()     {}
func (*Pack) node()      {}
func (*Micro) node()     {}
func (*Transpose) node() {}

// WalkNodes calls f for every node in body, parents first; f returning false skips the children.
func WalkNodes(body []Node, f func(Node) bool) {
	for _, n := range body {
		if !f(n) {
			continue
		}
		switch n := n.(type) {
		case *Loop:
			WalkNodes(n.Body, f)
		case *Nest:
			WalkNodes(n.Body, f)
		case *Alloc:
			WalkNodes(n.Body, f)
		case *Launch:
			WalkNodes(n.Body, f)
		case *If:
			WalkNodes(n.Then, f)
			WalkNodes(n.Else, f)
		}
	}
}

// RewriteNodes rebuilds body, replacing each node by the nodes f returns for it (children are
// rewritten first).
func RewriteNodes(body []Node, f func(Node) []Node) []Node {
	var out []Node
	for _, n := range body {
		switch n := n.(type) {
		case *Loop:
			n.Body = RewriteNodes(n.Body, f)
		case *Nest:
			n.Body = RewriteNodes(n.Body, f)
		case *Alloc:
			n.Body = RewriteNodes(n.Body, f)
		case *Launch:
			n.Body = RewriteNodes(n.Body, f)
		case *If:
			n.Then = RewriteNodes(n.Then, f)
			n.Else = RewriteNodes(n.Else, f)
		}
		out = append(out, f(n)...)
	}
	return out
}

// NodeExprs calls f for every expression held directly by n.
func NodeExprs(n Node, f func(Expr)) {
	switch n := n.(type) {
	case *Decl:
		f(n.Init)
	case *Assign:
		f(n.Value)
	case *Store:
		f(n.Value)
	case *Pack:
		f(n.Value)
	case *Micro:
		f(n.Alpha)
		f(n.Beta)
		f(n.EP)
	case *If:
		f(n.Cond)
	case *AccStore:
		f(n.Value)
	}
}

// CacheBlockFields are the GEMM slot fields sized from the caches (the BLIS blocks). A kgen.lock value of
// one is installed only from a class whose L1 and L2 match the machine's (probe.MatchingCaches); the
// other tuned fields (version thresholds) come from the nearest class whatever its caches.
var CacheBlockFields = []string{"MC", "KC", "NC"}

// IsCacheBlock reports whether plan symbol sym ("slot.FIELD", or a bare field) is a cache block.
func IsCacheBlock(sym string) bool {
	return slices.Contains(CacheBlockFields, sym[strings.LastIndex(sym, ".")+1:])
}

// KernelFields are the GEMM slot symbols that choose the microkernel itself: the register tile (MR, NR),
// the packed kernel's k unroll (KU) and prefetch distances in k steps for Ã and B̃ (PFA, PFB; -1: off),
// how many k steps before the end of its k loop it prefetches the C tile again (PFC; -1: off), and the
// unpacked kernel's B prefetch distance in rows (PFU; -1: off). A kgen.lock value of one makes
// the backend generate that microkernel beside the default one and install it for the class, with the
// other kernel fields at their defaults (0 in the backend's terms).
var KernelFields = []string{"MR", "NR", "KU", "PFA", "PFB", "PFC", "PFU"}

// TunedValueOK reports whether v may be a tuned value of sym ("slot.FIELD", or a bare field): at least
// 1, or -1 for a prefetch distance (off).
func TunedValueOK(sym string, v int) bool {
	return v >= 1 || v == -1 && strings.HasPrefix(sym[strings.LastIndex(sym, ".")+1:], "PF")
}

// IsKernelField reports whether plan symbol sym ("slot.FIELD", or a bare field) is a kernel field.
func IsKernelField(sym string) bool {
	return slices.Contains(KernelFields, sym[strings.LastIndex(sym, ".")+1:])
}
