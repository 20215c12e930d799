package msl

import (
	"fmt"
	"strings"

	"github.com/kgen-dev/kgen/ir"
)

// ErrNotSupported prefixes every error for IR the backend cannot emit yet: the message names the
// construct, and no partial output is produced.
const ErrNotSupported = "not supported yet"

func unsupported(format string, a ...any) error {
	return fmt.Errorf(ErrNotSupported+": "+format, a...)
}

// ParamKind says how a host binds one kernel parameter.
type ParamKind uint8

const (
	BufferParam ParamKind = iota // a device buffer of a tensor (parameter or temporary)
	ScalarParam                  // a scalar parameter, by value in constant memory
	DimsParam                    // the dims struct: one int32 per dim of the kernel, in Dims order
)

// LaunchParam is one [[buffer(i)]] parameter of an emitted kernel function, in index order.
type LaunchParam struct {
	Kind    ParamKind
	Name    string
	Tensor  *ir.Tensor // BufferParam and ScalarParam
	Written bool       // BufferParam written by the launch
}

// Launch describes one emitted `kernel void` function: what a host needs to dispatch it. Grid holds
// the threadgroup counts along x, y, z as index expressions of the kernel's dims only (plan symbols
// are substituted), Threads the threads per threadgroup (a one-dimensional threadgroup).
type Launch struct {
	Kernel   *ir.Kernel
	Function string
	Params   []LaunchParam
	Dims     []*ir.Dim
	Grid     []ir.IExpr
	Threads  int
}

// Lowered is the MSL of one kdsl kernel: its launches in order (the host runs them one after the
// other) and their functions.
type Lowered struct {
	Launches []*Launch
	Kernels  []Kernel
	Structs  []Struct
	Funcs    map[string]Func // helpers the kernels call, by name
	// SimdgroupMatrices: the kernels use simdgroup_matrix (<metal_simdgroup_matrix>, Apple7+ GPUs).
	SimdgroupMatrices bool
}

// Lower translates f, the msl pipeline's loop IR of k, into MSL kernel functions. srcName names the
// kdsl file in comments. It returns an error starting with ErrNotSupported for IR it cannot emit (and
// never a partial result).
func Lower(k *ir.Kernel, f *ir.Func, srcName string) (out *Lowered, err error) {
	out = &Lowered{Funcs: map[string]Func{}}
	var walk func(body []ir.Node, stmts []*ir.Stmt) error
	walk = func(body []ir.Node, stmts []*ir.Stmt) error {
		for _, n := range body {
			switch n := n.(type) {
			case *ir.Nest:
				if err := walk(n.Body, n.Stmts); err != nil {
					return err
				}
			case *ir.Launch:
				lw := newLowerer(k, f, srcName, out)
				kern, l, err := lw.launch(n, stmts)
				if err != nil {
					return fmt.Errorf("%s: %v", n.Name, err)
				}
				out.Launches = append(out.Launches, l)
				out.Kernels = append(out.Kernels, kern)
				out.Structs = append(out.Structs, Struct{Name: dimsStruct(n.Name), Fields: lw.dimFields()})
			default:
				return unsupported("host code outside a launch (%T): the msl pipeline should map every statement", n)
			}
		}
		return nil
	}
	if err := walk(f.Body, nil); err != nil {
		return nil, fmt.Errorf("kernel %s: %v", k.Name, err)
	}
	return out, nil
}

func dimsStruct(fn string) string { return fn + "_dims" }

// dimFields are the fields of the launch's dims struct: one int per dim of the kernel, in Dims order,
// named as the kernel's locals are (or one unused field for a kernel without dims).
func (lw *lowerer) dimFields() []string {
	var out []string
	for _, d := range lw.k.Dims {
		out = append(out, lw.names.name(d, d.Name))
	}
	if len(out) == 0 {
		out = []string{"unused_"}
	}
	return out
}

// lowerer lowers one launch.
type lowerer struct {
	k       *ir.Kernel
	f       *ir.Func
	src     string
	out     *Lowered
	names   *namer
	tg      []Stmt // kernel-scope threadgroup declarations
	threads int
	// deviceSync: the launch reads a global tensor it writes, so block barriers also order device memory.
	deviceSync bool
	// the current thread nest: simdgroup index and lane (warp nests only)
	sg, lane Expr
	// simdgroup MMA scratch declared, and its A, B and C tiles' names
	mmaScratch bool
	scratch    [3]string
	// the first error found where lowering goes on (index expressions); launch returns it
	err error
	// the accumulator element an AccStore is at
	accElem map[*ir.Accum]Expr
	accs    map[*ir.Accum]string
}

func newLowerer(k *ir.Kernel, f *ir.Func, src string, out *Lowered) *lowerer {
	return &lowerer{k: k, f: f, src: src, out: out, names: newNamer(), accElem: map[*ir.Accum]Expr{}, accs: map[*ir.Accum]string{}}
}

// fail records the first error found inside an expression.
func (lw *lowerer) fail(err error) {
	if lw.err == nil {
		lw.err = err
	}
}

// checkTypes rejects the element types Metal has no equivalent for.
func checkType(t ir.DType, what string) error {
	switch t {
	case ir.F32, ir.F16, ir.BF16, ir.I32, ir.Bool:
		return nil
	case ir.F64:
		return unsupported("f64 %s (Metal has no double type)", what)
	}
	return unsupported("%s %s", t, what)
}

func (lw *lowerer) launch(l *ir.Launch, stmts []*ir.Stmt) (Kernel, *Launch, error) {
	k := lw.k
	info := &Launch{Kernel: k, Function: l.Name, Dims: k.Dims}
	// Names: dims first (they are locals of every kernel), then the parameters.
	for _, d := range k.Dims {
		lw.names.name(d, d.Name)
	}
	read, written := map[*ir.Tensor]bool{}, map[*ir.Tensor]bool{}
	for _, t := range l.Reads {
		read[t] = true
	}
	for _, t := range l.Writes {
		written[t] = true
		if read[t] {
			lw.deviceSync = true
		}
	}
	for _, t := range append(append([]*ir.Tensor{}, l.Reads...), l.Writes...) {
		if !t.Kind.IsParam() && t.Kind != ir.Temp {
			return Kernel{}, nil, unsupported("global %s buffer %s used by a launch (only parameters and temporaries are bound)", t.Kind, t.Name)
		}
	}
	var params []Param
	var body []Stmt
	add := func(p LaunchParam, t Type) {
		params = append(params, Param{T: t, Name: p.Name, Attr: fmt.Sprintf("buffer(%d)", len(info.Params))})
		info.Params = append(info.Params, p)
	}
	for _, t := range append(append([]*ir.Tensor{}, k.Params...), k.Temps...) {
		if !read[t] && !written[t] {
			continue
		}
		if err := checkType(t.Type, "tensor "+t.Name); err != nil {
			return Kernel{}, nil, err
		}
		name := lw.names.name(t, t.Name)
		if t.Kind == ir.Scalar {
			add(LaunchParam{Kind: ScalarParam, Name: name, Tensor: t}, RefTo("constant", storageType(t.Type), true))
			continue
		}
		add(LaunchParam{Kind: BufferParam, Name: name, Tensor: t, Written: written[t]}, PtrTo("device", storageType(t.Type), !written[t]))
	}
	dims := lw.names.reserve("dims")
	add(LaunchParam{Kind: DimsParam, Name: dims}, RefTo("constant", Type{Name: dimsStruct(l.Name)}, false))
	tgPos, tid := lw.names.reserve("tg_pos"), lw.names.reserve("tid")
	params = append(params, Param{T: Uint3, Name: tgPos, Attr: "threadgroup_position_in_grid"}, Param{T: Uint, Name: tid, Attr: "thread_index_in_threadgroup"})
	for _, d := range k.Dims {
		name := lw.names.name(d, d.Name)
		body = append(body, Decl{Const: true, T: Int, Name: name, Init: Member{Ident{dims}, name}})
	}
	// Threadgroup size and grid.
	lw.threads = 1
	for _, b := range l.Block {
		c, ok := ir.Simplify(lw.plan(b)).(ir.IConst)
		if !ok {
			return Kernel{}, nil, unsupported("threadgroup dimension %s is not a constant of the plan", b)
		}
		lw.threads *= c.V
	}
	if lw.threads <= 0 || lw.threads > 1024 {
		return Kernel{}, nil, fmt.Errorf("threadgroup of %d threads (Metal allows 1..1024)", lw.threads)
	}
	info.Threads = lw.threads
	if len(l.Grid) > 3 {
		return Kernel{}, nil, unsupported("%d grid dimensions (Metal dispatches at most 3)", len(l.Grid))
	}
	for _, g := range l.Grid {
		g = ir.Simplify(lw.plan(g))
		if !ofDims(g) {
			return Kernel{}, nil, unsupported("grid dimension %s is not a function of the dims", g)
		}
		info.Grid = append(info.Grid, g)
	}
	// The body: grid loops, then the block level.
	inner, err := lw.gridLevel(l.Body, 0, Ident{tgPos}, Ident{tid}, l)
	if err != nil {
		return Kernel{}, nil, err
	}
	if lw.err != nil {
		return Kernel{}, nil, lw.err
	}
	if bytes := lw.threadgroupBytes(); bytes > MaxThreadgroupBytes {
		return Kernel{}, nil, unsupported("%d bytes of threadgroup memory (Metal allows %d): a smaller plan is needed", bytes, MaxThreadgroupBytes)
	}
	kern := Kernel{Name: l.Name, Params: params}
	kern.Doc = append(kern.Doc, fmt.Sprintf("kernel %s, launch %s: grid %s of %d-thread threadgroups", k.Name, l.Name, gridString(info.Grid), lw.threads))
	kern.Doc = append(kern.Doc, lw.sourceLines(stmts)...)
	kern.Body = append(append(body, lw.tg...), inner...)
	return kern, info, nil
}

// ofDims reports whether e uses only dims, constants and + - * / % min max: what the host evaluates.
func ofDims(e ir.IExpr) bool {
	switch e := e.(type) {
	case ir.IConst, ir.IDim:
		return true
	case ir.IBin:
		return strings.ContainsRune("+-*/%mM", rune(e.Op)) && ofDims(e.X) && ofDims(e.Y)
	}
	return false
}

func gridString(g []ir.IExpr) string {
	s := make([]string, len(g))
	for i, e := range g {
		s[i] = e.String()
	}
	return "(" + strings.Join(s, ", ") + ")"
}

// sourceLines quotes the kdsl lines of stmts as comments ("file:line: text").
func (lw *lowerer) sourceLines(stmts []*ir.Stmt) []string {
	lines := strings.Split(lw.k.Source, "\n")
	seen := map[int]bool{}
	var out []string
	for _, s := range stmts {
		if s.Pos.Line == 0 || seen[s.Pos.Line] {
			continue
		}
		seen[s.Pos.Line] = true
		text := ""
		if i := s.Pos.Line - lw.k.Pos.Line; i >= 0 && i < len(lines) {
			text = strings.TrimSpace(lines[i])
		}
		out = append(out, fmt.Sprintf("%s:%d: %s", lw.src, s.Pos.Line, text))
	}
	return out
}

var gridAxis = []string{"x", "y", "z"}

// MaxThreadgroupBytes is the threadgroup memory a Metal kernel may declare (32 KiB on Apple GPUs).
const MaxThreadgroupBytes = 32 << 10

func (lw *lowerer) threadgroupBytes() int {
	n := 0
	for _, s := range lw.tg {
		if d, ok := s.(Decl); ok {
			size := 4
			if d.T == Half || d.T == BFloat {
				size = 2
			}
			n += d.Len * size
		}
	}
	return n
}

// gridLevel lowers the launch level: each GPUGrid loop's variable is its threadgroup's position along
// its axis (outermost loop: x).
func (lw *lowerer) gridLevel(body []ir.Node, axis int, tgPos, tid Expr, l *ir.Launch) ([]Stmt, error) {
	var out []Stmt
	for _, n := range body {
		switch n := n.(type) {
		case *ir.Nest:
			s, err := lw.gridLevel(n.Body, axis, tgPos, tid, l)
			if err != nil {
				return nil, err
			}
			out = append(out, Comment{lw.sourceLines(n.Stmts)})
			out = append(out, s...)
		case *ir.Loop:
			if n.Kind != ir.GPUGrid && axis > 0 {
				s, err := lw.blockLevel([]ir.Node{n}, tid, l)
				if err != nil {
					return nil, err
				}
				out = append(out, s...)
				continue
			}
			if n.Kind != ir.GPUGrid {
				return nil, fmt.Errorf("%s loop %s at launch level", n.Kind, n.Var.Name)
			}
			if axis >= len(l.Grid) || axis >= 3 {
				return nil, fmt.Errorf("more grid loops than grid dimensions")
			}
			v := lw.names.name(n.Var, n.Var.Name)
			pos := Conv{Int, Member{tgPos, gridAxis[axis]}}
			s, err := lw.gridLevel(n.Body, axis+1, tgPos, tid, l)
			if err != nil {
				return nil, err
			}
			out = append(out,
				Decl{Const: true, T: Int, Name: v, Init: affine(lw.iexpr(n.Lo), pos, lw.iexpr(n.Step))},
				If{Cond: Binary{"<", Ident{v}, lw.iexpr(n.Hi)}, Then: s})
		default:
			if axis == 0 {
				return nil, fmt.Errorf("%T at launch level", n)
			}
			s, err := lw.blockLevel([]ir.Node{n}, tid, l)
			if err != nil {
				return nil, err
			}
			out = append(out, s...)
		}
	}
	return out, nil
}

// blockLevel lowers what runs inside the grid loops: threadgroup allocations (declared at kernel
// scope, their sizes evaluated from the plan) and thread nests.
func (lw *lowerer) blockLevel(body []ir.Node, tid Expr, l *ir.Launch) ([]Stmt, error) {
	var out []Stmt
	for _, n := range body {
		switch n := n.(type) {
		case *ir.Nest:
			s, err := lw.blockLevel(n.Body, tid, l)
			if err != nil {
				return nil, err
			}
			out = append(out, Comment{lw.sourceLines(n.Stmts)})
			out = append(out, s...)
		case *ir.Alloc:
			if n.T.Space != ir.Shared {
				return nil, unsupported("%s allocation %s at block level", n.T.Space, n.T.Name)
			}
			if err := checkType(n.T.Type, "threadgroup buffer "+n.T.Name); err != nil {
				return nil, err
			}
			size, ok := ir.Simplify(lw.plan(n.T.Size)).(ir.IConst)
			if !ok || size.V <= 0 {
				return nil, unsupported("threadgroup buffer %s of size %s: sizes must be positive constants of the plan", n.T.Name, n.T.Size)
			}
			name := lw.names.name(n.T, n.T.Name)
			lw.tg = append(lw.tg, Decl{Space: "threadgroup", T: storageType(n.T.Type), Name: name, Len: size.V})
			s, err := lw.blockLevel(n.Body, tid, l)
			if err != nil {
				return nil, err
			}
			out = append(out, s...)
		case *ir.Loop:
			if !n.Kind.IsThreadLoop() {
				return nil, fmt.Errorf("%s loop %s at block level", n.Kind, n.Var.Name)
			}
			s, err := lw.threadNest(n, tid, l)
			if err != nil {
				return nil, err
			}
			out = append(out, Block{s})
		default:
			return nil, fmt.Errorf("%T at block level", n)
		}
	}
	return out, nil
}

// threadNest binds the variables of a chain of thread loops from the thread's index in its
// threadgroup (iteration t of the nest, in loop order, is thread t) and lowers the thread body. Each
// variable is guarded by its loop's bound, which holds for every thread when the nest has as many
// iterations as the threadgroup has threads (the IR's rule; the interpreter checks it).
func (lw *lowerer) threadNest(n *ir.Loop, tid Expr, l *ir.Launch) ([]Stmt, error) {
	var chain []*ir.Loop
	for cur := n; ; {
		chain = append(chain, cur)
		if len(cur.Body) != 1 {
			break
		}
		next, ok := cur.Body[0].(*ir.Loop)
		if !ok || !next.Kind.IsThreadLoop() {
			break
		}
		cur = next
	}
	sizes := make([]int, len(chain))
	for i, lp := range chain {
		trip, ok := ir.Simplify(lw.plan(ir.IDiv(ir.IAdd(ir.ISub(lp.Hi, lp.Lo), ir.ISub(lp.Step, ir.IConst{V: 1})), lp.Step))).(ir.IConst)
		if !ok {
			return nil, unsupported("thread loop %s with a trip count that is not a constant", lp.Var.Name)
		}
		sizes[i] = trip.V
	}
	total := 1
	for _, s := range sizes {
		total *= s
	}
	if total != lw.threads {
		return nil, fmt.Errorf("thread nest of %d iterations in a threadgroup of %d threads", total, lw.threads)
	}
	t := lw.names.fresh("tidx")
	out := []Stmt{Decl{Const: true, T: Int, Name: t, Init: Conv{Int, tid}}}
	saveSG, saveLane := lw.sg, lw.lane
	defer func() { lw.sg, lw.lane = saveSG, saveLane }()
	lw.sg, lw.lane = nil, nil
	if chain[0].Kind == ir.GPUWarp {
		sg, lane := lw.names.fresh("sg_index"), lw.names.fresh("sg_lane")
		out = append(out,
			Decl{Const: true, T: Int, Name: sg, Init: Binary{"/", Ident{t}, IntLit{32}}},
			Decl{Const: true, T: Int, Name: lane, Init: Binary{"%", Ident{t}, IntLit{32}}})
		lw.sg, lw.lane = Ident{sg}, Ident{lane}
	}
	var guards []Expr
	stride := total
	for i, lp := range chain {
		stride /= sizes[i]
		var idx Expr = Ident{t}
		if stride > 1 {
			idx = Binary{"/", idx, IntLit{stride}}
		}
		if i > 0 {
			idx = Binary{"%", idx, IntLit{sizes[i]}}
		}
		v := lw.names.name(lp.Var, lp.Var.Name)
		out = append(out, Decl{Const: true, T: Int, Name: v, Init: affine(lw.iexpr(lp.Lo), idx, lw.iexpr(lp.Step))})
		guards = append(guards, Binary{"<", Ident{v}, lw.iexpr(lp.Hi)})
	}
	inner, err := lw.nodes(chain[len(chain)-1].Body)
	if err != nil {
		return nil, err
	}
	cond := guards[0]
	for _, g := range guards[1:] {
		cond = Binary{"&&", cond, g}
	}
	return append(out, If{Cond: cond, Then: inner}), nil
}

// plan substitutes the plan's values for the plan symbols of e.
func (lw *lowerer) plan(e ir.IExpr) ir.IExpr {
	switch e := e.(type) {
	case ir.ISym:
		if v, ok := lw.f.Plan[e.Name]; ok {
			return ir.IConst{V: v}
		}
		return e
	case ir.IBin:
		return ir.IBin{Op: e.Op, X: lw.plan(e.X), Y: lw.plan(e.Y)}
	}
	return e
}

// affine is lo + idx·step without the zero and unit terms.
func affine(lo, idx, step Expr) Expr {
	x := idx
	if c, ok := step.(IntLit); !ok || c.V != 1 {
		x = Binary{"*", idx, step}
	}
	if c, ok := lo.(IntLit); ok && c.V == 0 {
		return x
	}
	return Binary{"+", lo, x}
}
