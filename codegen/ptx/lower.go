package ptx

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/ir"
)

// Lowering of GPU-mapped loop IR (the ptx pipeline's output: passes fusion, mmaform, gpumap, staging) to
// PTX entry functions, one per ir.Launch. The code follows the IR node by node; every IR node that the
// lowering does not handle is reported as "not supported yet: ..." instead of being guessed at.

// unsupported is the panic value of a construct the lowering does not handle; Lower turns it into an
// error.
type unsupported struct{ msg string }

func (l *lowerer) fail(format string, args ...any) {
	panic(unsupported{fmt.Sprintf(format, args...)})
}

// Kernel is the PTX of one kdsl kernel: its entries (one per launch, in program order) and what a
// launcher needs to know about each.
type Kernel struct {
	Name     string
	Params   []ParamInfo // the parameters every entry of the kernel takes, in this order
	Launches []LaunchInfo
	Entries  []*Entry
	// TMA (sm_90a) is the kernel with its wgmma tiles loaded by TMA (tma.go), which a launcher runs
	// instead when the tensor maps can be encoded; nil when there is none.
	TMA *Kernel
	// Prod (sm_90a) is the production version (ProdPlan: 128×128 block tiles, two consumer
	// warpgroups, four stages in dynamic shared memory), which a launcher runs for GEMMs large enough
	// to fill the GPU with its blocks; nil when there is none.
	Prod *Kernel
}

// ParamKind says what a kernel parameter is.
type ParamKind uint8

const (
	PTensor ParamKind = iota // a kernel tensor parameter: its device address (.u64)
	PTemp                    // a temporary of the kernel: device memory the launcher allocates (.u64)
	PScalar                  // a scalar parameter, by value
	PDim                     // a dim's size (.s64)
)

// ParamInfo describes one entry parameter.
type ParamInfo struct {
	Name  string
	Kind  ParamKind
	PTX   Type     // the .param type
	Elem  ir.DType // element type (tensors, temps, scalars)
	Shape []string // dims of a tensor or temp, row-major (empty: one element)
}

// LaunchInfo is one launch: its entry name, grid and block dims (x fastest), each an index expression
// over the kernel's dims with the plan substituted, and its static shared memory.
type LaunchInfo struct {
	Entry       string
	Grid, Block [3]ir.IExpr
	SharedBytes int
	// DynSharedBytes is the dynamic shared memory a launch must pass (0: none): above
	// MaxStaticShared, the entry's shared arrays lie in dynamic shared memory
	DynSharedBytes int
	Line           int // the kdsl source line of the launch's statement (0: unknown)
}

// lowerer holds the state of lowering one kernel.
type lowerer struct {
	f      *ir.Func
	target string
	e      *Entry
	plan   map[string]int

	params  []ParamInfo
	ptrs    map[*ir.Tensor]Reg // global tensors: base address
	scalars map[*ir.Tensor]Reg // scalar parameters: value in the compute type
	dims    map[*ir.Dim]Reg    // dim sizes, .s64
	shared  map[*ir.Tensor]Sym // shared arrays of the current entry
	// dynamic shared memory (entries needing more than the 48 KiB of static shared memory): the
	// arrays lie at byte offsets sharedOff of the one extern array DynSharedSym
	dynShared bool
	sharedOff map[*ir.Tensor]int64
	vars      map[*ir.Var]Reg // bound loop variables (.s64)
	consts    map[*ir.Var]int // loop variables unrolled to constants
	locals    map[*ir.LocalVar]Reg
	accs      map[*ir.Accum]*accTile
	accCur    *Reg // the AccVal being stored
	anchors   map[*ir.Tensor][]anchor
	lane      *ir.Var             // bound to %laneid where a warp operation needs it
	wgTiles   map[*ir.Tensor]bool // shared tensors that wgmma reads in this entry (wgmma.go)
	// a wgmma group may be in flight (the production version's wait_group 1): wgmmaDrain before the
	// accumulator is read
	wgInFlight bool
	block      [3]ir.IExpr // the launch's block dims, x fastest
	exit       Label       // the end of the entry (a block past its grid loop's bound leaves)

	gridDepth, threadDepth int
	nGrid, nBlock          int
	inThread               bool
}

// Lower translates f (compiled by the ptx pipeline for target, "sm_80" or "sm_90a") into PTX entries.
// It returns a "not supported yet" error, and no partial result, for IR it does not lower.
func Lower(f *ir.Func, target string) (k *Kernel, err error) {
	if f == nil || f.Kernel == nil {
		return nil, fmt.Errorf("ptx: no function to lower")
	}
	if _, ok := SubTargets[target]; !ok {
		return nil, fmt.Errorf("ptx: unknown sub-target %q (known: sm_80, sm_90a)", target)
	}
	l := &lowerer{f: f, target: target, plan: f.Plan}
	defer func() {
		if r := recover(); r != nil {
			u, ok := r.(unsupported)
			if !ok {
				panic(r)
			}
			k, err = nil, fmt.Errorf("ptx: kernel %s: not supported yet: %s", f.Kernel.Name, u.msg)
		}
	}()
	k = &Kernel{Name: f.Kernel.Name}
	l.params = append(kernelParams(f.Kernel), tmaParams(f)...) // tma.go
	k.Params = l.params
	for _, n := range f.Body {
		l.host(k, n, 0)
	}
	if len(k.Entries) == 0 {
		l.fail("the kernel has no GPU launch")
	}
	return k, nil
}

// kernelParams lists the parameters every entry of k takes: tensor and scalar parameters in declared
// order, then temporaries, then dims.
func kernelParams(k *ir.Kernel) []ParamInfo {
	var ps []ParamInfo
	shape := func(t *ir.Tensor) []string {
		var s []string
		for _, d := range t.Shape {
			s = append(s, d.Name)
		}
		return s
	}
	for _, t := range k.Params {
		if t.Kind == ir.Scalar {
			ps = append(ps, ParamInfo{Name: t.Name, Kind: PScalar, PTX: storageType(t.Type), Elem: t.Type})
		} else {
			ps = append(ps, ParamInfo{Name: t.Name, Kind: PTensor, PTX: U64, Elem: t.Type, Shape: shape(t)})
		}
	}
	for _, t := range k.Temps {
		ps = append(ps, ParamInfo{Name: t.Name, Kind: PTemp, PTX: U64, Elem: t.Type, Shape: shape(t)})
	}
	for _, d := range k.Dims {
		ps = append(ps, ParamInfo{Name: d.Name, Kind: PDim, PTX: S64})
	}
	return ps
}

// host lowers a node outside any launch: only statement groupings and launches may appear there.
func (l *lowerer) host(k *Kernel, n ir.Node, line int) {
	switch n := n.(type) {
	case *ir.Nest:
		if len(n.Stmts) > 0 {
			line = n.Stmts[0].Pos.Line
		}
		for _, c := range n.Body {
			l.host(k, c, line)
		}
	case *ir.Launch:
		e, info := l.launch(n, line)
		k.Entries = append(k.Entries, e)
		k.Launches = append(k.Launches, info)
	default:
		l.fail("host code outside a GPU launch (%T)", n)
	}
}

// launch lowers one Launch into an entry.
func (l *lowerer) launch(n *ir.Launch, line int) (*Entry, LaunchInfo) {
	if len(n.Grid) > 3 || len(n.Block) > 3 || len(n.Grid) == 0 || len(n.Block) == 0 {
		l.fail("launch %s has %d grid and %d block dims (1 to 3 each)", n.Name, len(n.Grid), len(n.Block))
	}
	info := LaunchInfo{Entry: n.Name, Line: line}
	for i := range info.Grid {
		info.Grid[i], info.Block[i] = ir.IConst{V: 1}, ir.IConst{V: 1}
	}
	threads := 1
	for i, g := range n.Grid {
		info.Grid[len(n.Grid)-1-i] = l.prep(g)
	}
	for i, b := range n.Block {
		c, ok := l.prep(b).(ir.IConst)
		if !ok || c.V <= 0 {
			l.fail("launch %s: block dim %s is not a positive constant", n.Name, b)
		}
		info.Block[len(n.Block)-1-i] = c
		threads *= c.V
	}
	if threads > 1024 {
		l.fail("launch %s: %d threads per block (at most 1024)", n.Name, threads)
	}
	l.e = NewEntry(n.Name)
	for i := range 3 {
		l.e.MaxTid[i] = info.Block[i].(ir.IConst).V
	}
	l.block = info.Block
	l.exit = l.e.NewLabel()
	l.e.Doc = fmt.Sprintf("launch %s grid(%s) block(%s)", n.Name, joinIExprs(n.Grid), joinIExprs(n.Block))
	if line > 0 {
		l.e.Doc = fmt.Sprintf("%s:%d: %s", l.f.Kernel.Pos.File, line, l.e.Doc)
	}
	l.ptrs, l.scalars, l.dims = map[*ir.Tensor]Reg{}, map[*ir.Tensor]Reg{}, map[*ir.Dim]Reg{}
	l.shared, l.vars, l.consts = map[*ir.Tensor]Sym{}, map[*ir.Var]Reg{}, map[*ir.Var]int{}
	l.locals, l.accs = map[*ir.LocalVar]Reg{}, map[*ir.Accum]*accTile{}
	l.clearAnchors()
	l.nGrid, l.nBlock, l.gridDepth, l.threadDepth, l.inThread = len(n.Grid), len(n.Block), 0, 0, false
	l.prologue()
	l.wgTiles, l.wgInFlight = l.wgmmaTensors(n.Body), false
	l.dynShared, l.sharedOff = l.sharedTotal(n.Body) > MaxStaticShared, map[*ir.Tensor]int64{}
	l.nodes(n.Body)
	l.e.Place(l.exit)
	info.SharedBytes, info.DynSharedBytes = l.e.SharedBytes(), l.e.DynamicSharedBytes()
	return l.e, info
}

// prologue declares the parameters and loads each into a register (ptxas drops the unused ones).
func (l *lowerer) prologue() {
	k := l.f.Kernel
	tensors := map[string]*ir.Tensor{}
	for _, t := range append(append([]*ir.Tensor{}, k.Params...), k.Temps...) {
		tensors[t.Name] = t
	}
	dims := map[string]*ir.Dim{}
	for _, d := range k.Dims {
		dims[d.Name] = d
	}
	l.e.Comment("parameters")
	for _, p := range l.params {
		sym := l.e.AddParam("p_"+p.Name, p.PTX)
		switch p.Kind {
		case PTensor, PTemp:
			a := l.e.Ld(Param, U64, Addr{Base: sym})
			g := l.e.Reg(U64)
			l.e.Op("cvta.to.global", U64, g, a)
			l.ptrs[tensors[p.Name]] = g
		case PScalar:
			v := l.e.Ld(Param, p.PTX, Addr{Base: sym})
			l.scalars[tensors[p.Name]] = l.widen(v, p.Elem)
		case PDim:
			l.dims[dims[p.Name]] = l.e.Ld(Param, S64, Addr{Base: sym})
		case PTensorMap: // tma.go: read by the TMA unit in place
			l.e.Params[len(l.e.Params)-1] = EntryParam{Name: string(tmapSym(tensors[p.Name])), Bytes: 128, Align: 64}
		}
	}
}

func (l *lowerer) nodes(body []ir.Node) {
	for _, n := range body {
		l.node(n)
	}
}

// node lowers one node inside a launch.
func (l *lowerer) node(n ir.Node) {
	switch n := n.(type) {
	case *ir.Nest:
		var lines []string
		for _, s := range n.Stmts {
			lines = append(lines, fmt.Sprintf("line %d: %s", s.Pos.Line, stmtString(s)))
		}
		if len(lines) > 0 {
			l.e.Comment(strings.Join(lines, "\n"))
		}
		l.nodes(n.Body)
	case *ir.Loop:
		l.loop(n)
	case *ir.Alloc:
		l.alloc(n)
	case *ir.Decl:
		l.needThread("a local declaration")
		r := l.e.Reg(computeType(n.L.T))
		l.e.Op("mov", r.T, r, l.valAs(n.Init, n.L.T))
		l.locals[n.L] = r
	case *ir.Assign:
		l.needThread("an assignment")
		r, ok := l.locals[n.L]
		if !ok {
			l.fail("assignment to undeclared local %%%s", n.L.Name)
		}
		l.e.Op("mov", r.T, r, l.valAs(n.Value, n.L.T))
	case *ir.Store:
		l.needThread("a store")
		l.e.Comment(fmt.Sprintf("%s[%s] = %s", n.T.Name, joinIExprs(n.Idx), ir.FormatExpr(n.Value)))
		l.store(n.T, n.Idx, n.Value)
	case *ir.If:
		l.needThread("a condition")
		p := l.pred(n.Cond)
		els, end := l.e.NewLabel(), l.e.NewLabel()
		l.e.Bra(els, &p, true)
		l.nodes(n.Then)
		l.e.Bra(end, nil, false)
		l.e.Place(els)
		l.nodes(n.Else)
		l.e.Place(end)
	case *ir.Barrier:
		switch n.Scope {
		case ir.ScopeBlock:
			l.e.Op0("bar.sync", Imm(0))
		case ir.ScopeWarp:
			l.e.Op0("bar.warp.sync", Imm(-1))
		default:
			l.fail("a %s barrier", n.Scope)
		}
	case *ir.AsyncCommit:
		l.e.Op0("cp.async.commit_group")
	case *ir.AsyncWait:
		l.e.Op0("cp.async.wait_group", Imm(n.N))
		if len(l.wgTiles) > 0 {
			// the landed tiles are read by wgmma, through the async proxy (wgmma.go)
			l.e.Op0("fence.proxy.async.shared::cta")
		}
	case *ir.Copy:
		l.needThread("a copy")
		if n.Bar != nil {
			l.bulkCopy(n) // tma.go
			break
		}
		l.copyTile(n)
	case *ir.WarpReduce:
		l.warpReduce(n)
	case *ir.AccDecl:
		l.needThread("an accumulator")
		l.accDecl(n.Acc)
	case *ir.MMA:
		l.mma(n)
	case *ir.AccStore:
		l.accStore(n)
	default:
		if !l.mbarNode(n) { // tma.go
			l.fail("IR node %T in a GPU launch", n)
		}
	}
}

func (l *lowerer) needThread(what string) {
	if !l.inThread {
		l.fail("%s outside a GPU thread body", what)
	}
}

// alloc declares a shared array (block level) for the duration of its body.
func (l *lowerer) alloc(n *ir.Alloc) {
	if n.T.Space != ir.Shared {
		l.fail("a %s scratch buffer %s inside a launch (only shared arrays)", n.T.Space, n.T.Name)
	}
	if l.inThread {
		l.fail("shared buffer %s allocated inside a thread body", n.T.Name)
	}
	size, ok := l.prep(n.T.Size).(ir.IConst)
	if !ok || size.V <= 0 {
		l.fail("shared buffer %s has a size %s that is not a positive constant (dynamic shared memory)", n.T.Name, n.T.Size)
	}
	name := "s_" + n.T.Name
	for _, s := range l.e.Shared {
		if s.Name == name {
			name = fmt.Sprintf("%s_%d", name, len(l.e.Shared))
		}
	}
	align := l.sharedAlign(n.T)
	if l.dynShared {
		// the next aligned offset of the extern array, which is 1024-byte aligned itself
		if len(l.e.Shared) == 0 || !l.e.Shared[0].Extern {
			l.e.Shared = append([]SharedArray{{Name: DynSharedSym, T: B16, Align: wgmmaGroup, Extern: true}}, l.e.Shared...)
		}
		d := &l.e.Shared[0]
		off := (d.Count + align - 1) / align * align
		d.Count = off + size.V*storageType(n.T.Type).Bits()/8
		l.shared[n.T], l.sharedOff[n.T] = Sym(d.Name), int64(off)
		l.nodes(n.Body)
		return
	}
	l.shared[n.T] = l.e.AddShared(name, storageType(n.T.Type), size.V, align)
	l.nodes(n.Body)
}

// MaxStaticShared is the most static shared memory a block may declare (48 KiB); an entry needing
// more declares its arrays in dynamic shared memory, which the launcher sizes at launch
// (cuFuncSetAttribute MAX_DYNAMIC_SHARED_SIZE_BYTES, then sharedMemBytes of cuLaunchKernel).
const MaxStaticShared = 48 << 10

// DynSharedSym is the module-level extern array of the entries' dynamic shared memory.
const DynSharedSym = "kgen_smem"

// sharedAlign is the alignment of shared array t.
func (l *lowerer) sharedAlign(t *ir.Tensor) int {
	if l.wgTiles[t] {
		return wgmmaGroup // the 128-byte swizzle's pattern repeats every 1024 bytes (wgmma.go)
	}
	return 16
}

// sharedTotal is the shared memory the allocations of a launch body take, laid out in order as the
// static declarations would be (a size that is not constant counts 0: alloc refuses it).
func (l *lowerer) sharedTotal(body []ir.Node) int {
	n := 0
	ir.WalkNodes(body, func(x ir.Node) bool {
		if a, ok := x.(*ir.Alloc); ok && a.T.Space == ir.Shared {
			if size, ok := l.prep(a.T.Size).(ir.IConst); ok && size.V > 0 {
				al := l.sharedAlign(a.T)
				n = (n+al-1)/al*al + size.V*storageType(a.T.Type).Bits()/8
			}
		}
		return true
	})
	return n
}

// loop lowers a loop: grid loops read %ctaid, thread loops %tid, other loops run serially.
func (l *lowerer) loop(n *ir.Loop) {
	l.e.Comment(fmt.Sprintf("%s %s = %s .. %s step %s", n.Kind, n.Var.Name, n.Lo, n.Hi, n.Step))
	switch n.Kind {
	case ir.GPUGrid:
		if l.inThread || l.gridDepth >= l.nGrid {
			l.fail("grid loop %s out of place", n.Var.Name)
		}
		axis := l.nGrid - 1 - l.gridDepth
		l.gridDepth++
		l.bindIndex(n, "%ctaid."+"xyz"[axis:axis+1])
		// The grid has ceil((Hi-Lo)/Step) blocks along this loop, so no block is past Hi; the guard
		// costs one compare per block and keeps a launch with a larger grid correct. Every thread of
		// a block leaves together, so no barrier is left waiting.
		past := l.e.Setp("ge", S64, l.vars[n.Var], l.ival(n.Hi))
		l.e.Bra(l.exit, &past, false)
		l.nodes(n.Body)
		l.gridDepth--
	case ir.GPUBlock, ir.GPUWarp, ir.GPUThread:
		if l.threadDepth >= l.nBlock {
			l.fail("thread loop %s nested deeper than the block has dims", n.Var.Name)
		}
		// Every thread nest has as many iterations as the block has threads (ir.VerifyFunc), and
		// the launch's block dims are these loops' trip counts: thread t runs iteration t, no guard.
		axis := l.nBlock - 1 - l.threadDepth
		// Thread t runs iteration t: the loop must have exactly as many iterations as the block has
		// threads along its dim (ir.VerifyFunc checks it; a loop this cannot prove is refused rather
		// than guarded, since a guard would keep threads from the loop's barriers).
		lo, hi, step := l.prep(n.Lo), l.prep(n.Hi), l.prep(n.Step)
		cl, ok1 := lo.(ir.IConst)
		ch, ok2 := hi.(ir.IConst)
		cs, ok3 := step.(ir.IConst)
		if !ok1 || !ok2 || !ok3 || cs.V <= 0 || (ch.V-cl.V+cs.V-1)/cs.V != l.block[axis].(ir.IConst).V {
			l.fail("thread loop %s = %s .. %s step %s does not match the block dim %s", n.Var.Name, n.Lo, n.Hi, n.Step, l.block[axis])
		}
		l.threadDepth++
		outer := l.inThread
		if l.threadDepth == l.nBlock {
			l.inThread = true
		}
		l.bindIndex(n, "%tid."+"xyz"[axis:axis+1])
		l.nodes(n.Body)
		l.inThread = outer
		l.threadDepth--
	case ir.Serial, ir.Parallel, ir.Unrolled:
		l.needThread("a loop")
		l.serial(n)
	default:
		l.fail("a %s loop", n.Kind)
	}
}

// bindIndex sets a grid or thread loop's variable to Lo + special·Step.
func (l *lowerer) bindIndex(n *ir.Loop, special string) {
	id := l.e.Mov(U32, Sym(special))
	v := l.e.Cvt(S64, U32, "", id)
	step := l.ival(n.Step)
	lo := l.ival(n.Lo)
	x := l.e.Reg(S64)
	l.e.Op("mul.lo", S64, x, v, step)
	r := l.e.Reg(S64)
	l.e.Op("add", S64, r, x, lo).Comment = n.Var.Name
	l.vars[n.Var] = r
}

// serial lowers an ordinary loop: for v = Lo; v < Hi; v += Step (Hi evaluated before each trip).
func (l *lowerer) serial(n *ir.Loop) {
	l.serialFunc(n.Var, n.Lo, n.Hi, n.Step, func() { l.nodes(n.Body) })
}

// serialFunc emits a loop of v over [lo, hi) by step whose body body emits.
func (l *lowerer) serialFunc(v *ir.Var, lo, hi, step ir.IExpr, body func()) {
	r := l.e.Reg(S64)
	l.e.Op("mov", S64, r, l.ival(lo)).Comment = v.Name
	l.vars[v] = r
	head, end := l.e.NewLabel(), l.e.NewLabel()
	l.e.Place(head)
	done := l.e.Setp("ge", S64, r, l.ival(hi))
	l.e.Bra(end, &done, false)
	body()
	l.e.Op("add", S64, r, r, l.ival(step))
	l.e.Bra(head, nil, false)
	l.e.Place(end)
	delete(l.vars, v)
}

func stmtString(s *ir.Stmt) string {
	var vs []string
	for _, v := range s.Vars {
		vs = append(vs, v.Name)
	}
	return fmt.Sprintf("%s[%s] = %s", s.Out.Name, strings.Join(vs, ", "), ir.FormatExpr(s.Value))
}

func joinIExprs(es []ir.IExpr) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.String()
	}
	return strings.Join(s, ", ")
}
