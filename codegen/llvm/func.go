package llvm

import (
	"fmt"

	"github.com/kgen-dev/kgen/codegen"
	"github.com/kgen-dev/kgen/ir"
	lir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// Status codes the kernel functions return (the package doc lists them).
const (
	StatusOK     = 0
	StatusDim    = 1
	StatusLength = 2
	StatusIndex  = 3
	StatusAlloc  = 4
)

// maxDim is rt.MaxDim on 64-bit machines: the largest dim a kernel accepts.
const maxDim = 1<<61 - 1

// allocaMax is the largest constant-size scratch buffer (in bytes) placed on the stack.
const allocaMax = 16 << 10

// fn builds one kernel function.
type fn struct {
	m      *module
	k      *ir.Kernel
	f      *ir.Func
	fn     *lir.Func
	entry  *lir.Block // allocas; branches to the first code block when finished
	cur    *lir.Block
	nblk   int
	dims   map[*ir.Dim]value.Value
	ptrs   map[*ir.Tensor]value.Value // element pointers of tensors, temporaries and scratch buffers
	lens   map[*ir.Tensor]value.Value
	scal   map[*ir.Tensor]value.Value // scalar parameters, as values of their compute type
	vars   map[*ir.Var]*lir.InstAlloca
	locals map[*ir.LocalVar]*lir.InstAlloca
	heap   []value.Value // malloc'd buffers, freed before returning
	// fixed holds the tile bounds min(c, e) (by their text) that the whole-tile version of a loop body
	// is emitted for: there they are the constant c (version.go).
	fixed map[string]int64
	// konst holds the variables of completely unrolled loops, regs the register tiles emitted as
	// allocas of element groups, unrolled the product of the unrolled loops' trip counts (unroll.go).
	konst    map[*ir.Var]int64
	regs     map[*ir.Tensor]*regTile
	unrolled int64
	// cse holds the index values computed in block cseBlock, by their text: straight-line code (an
	// unrolled tile) computes each once. Stores to loop counters clear it.
	cse      map[string]value.Value
	cseBlock *lir.Block
	// inK is set while the body of a register tile's k loop is emitted (prefetch.go).
	inK bool
	// vec is the vector loop whose body is being emitted as <W x T> operations (vector.go), or nil.
	vec *vloop
}

// kernel adds the function of kernel k to the module.
func (m *module) kernel(pkg string, k codegen.Kernel) error {
	g := &fn{m: m, k: k.K, f: k.F, dims: map[*ir.Dim]value.Value{}, ptrs: map[*ir.Tensor]value.Value{},
		lens: map[*ir.Tensor]value.Value{}, scal: map[*ir.Tensor]value.Value{}, vars: map[*ir.Var]*lir.InstAlloca{},
		locals: map[*ir.LocalVar]*lir.InstAlloca{}, fixed: map[string]int64{},
		konst: map[*ir.Var]int64{}, regs: map[*ir.Tensor]*regTile{}, unrolled: 1}
	var params []*lir.Param
	for _, d := range g.k.Dims {
		p := lir.NewParam(d.Name, types.I64)
		params = append(params, p)
		g.dims[d] = p
	}
	scalars := map[*ir.Tensor]*lir.Param{}
	for _, t := range g.k.Params {
		if t.Kind == ir.Scalar {
			p := lir.NewParam(t.Name, storageType(t.Type))
			params = append(params, p)
			scalars[t] = p
			continue
		}
		p := lir.NewParam(t.Name, types.NewPointer(storageType(t.Type)))
		p.Attrs = append(p.Attrs, enum.ParamAttrNoAlias, enum.ParamAttrNoCapture)
		if t.Kind == ir.In {
			p.Attrs = append(p.Attrs, enum.ParamAttrReadOnly)
		}
		n := lir.NewParam(t.Name+"_len", types.I64)
		params = append(params, p, n)
		g.ptrs[t], g.lens[t] = p, n
	}
	g.fn = m.m.NewFunc(FuncName(pkg, g.k.Name), types.I32, params...)
	g.fn.FuncAttrs = append(g.fn.FuncAttrs, enum.FuncAttrNoUnwind)
	g.entry = g.fn.NewBlock("entry")
	g.cur = g.block("start")
	for t, p := range scalars {
		g.scal[t] = g.decode(p, t.Type)
	}
	if err := g.checks(); err != nil {
		return err
	}
	if err := g.allocate(); err != nil {
		return err
	}
	if err := g.nodes(g.f.Body); err != nil {
		return err
	}
	g.finish(StatusOK)
	g.entry.NewBr(g.fn.Blocks[1])
	return nil
}

// block appends a new block named after what it does (numbered: names are unique).
func (g *fn) block(what string) *lir.Block {
	g.nblk++
	return g.fn.NewBlock(fmt.Sprintf("%s%d", what, g.nblk))
}

// fail branches to a block returning status when cond holds, and continues in a new block otherwise.
func (g *fn) fail(cond value.Value, status int) {
	bad, ok := g.block("bad"), g.block("ok")
	g.cur.NewCondBr(cond, bad, ok)
	g.cur = bad
	g.finish(status)
	g.cur = ok
}

// finish frees the heap buffers allocated so far and returns status from the current block.
func (g *fn) finish(status int) {
	free := g.m.declare("free", types.Void, types.I8Ptr)
	for _, p := range g.heap {
		g.cur.NewCall(free, p)
	}
	g.cur.NewRet(constant.NewInt(types.I32, int64(status)))
}

func i64(v int64) *constant.Int { return constant.NewInt(types.I64, v) }

// checks emits the argument checks of the Go wrapper: dims, lengths, index ranges, then the early
// return when every output is empty.
func (g *fn) checks() error {
	for _, d := range g.k.Dims {
		g.fail(g.cur.NewICmp(enum.IPredUGT, g.dims[d], i64(maxDim)), StatusDim)
	}
	for _, t := range g.k.Params {
		if t.Kind == ir.Scalar {
			continue
		}
		n, ok := g.numel(t.Shape)
		bad := g.cur.NewOr(g.cur.NewXor(ok, constant.True), g.cur.NewICmp(enum.IPredNE, n, g.lens[t]))
		g.fail(bad, StatusLength)
	}
	if err := g.indexChecks(); err != nil {
		return err
	}
	var empty value.Value
	for _, t := range g.k.Params {
		if t.Kind != ir.Out && t.Kind != ir.InOut {
			continue
		}
		if len(t.Shape) == 0 {
			return nil // a one-element output is never empty
		}
		e := g.cur.NewICmp(enum.IPredEQ, g.lens[t], i64(0))
		if empty == nil {
			empty = e
		} else {
			empty = g.cur.NewAnd(empty, e)
		}
	}
	if empty != nil {
		done, next := g.block("empty"), g.block("work")
		g.cur.NewCondBr(empty, done, next)
		g.cur = done
		g.finish(StatusOK)
		g.cur = next
	}
	return nil
}

// numel returns the element count of shape (dims already checked to be in [0, 2^61)) and whether it
// is representable: as rt.Numel, 0 whenever a dim is 0, else the exact product if below 2^63.
func (g *fn) numel(shape []*ir.Dim) (n, ok value.Value) {
	n, ok = i64(1), constant.True
	var zero value.Value = constant.False
	umul := g.m.declare("llvm.umul.with.overflow.i64", types.NewStruct(types.I64, types.I1), types.I64, types.I64)
	for _, d := range shape {
		r := g.cur.NewCall(umul, n, g.dims[d])
		n = g.cur.NewExtractValue(r, 0)
		ovf := g.cur.NewExtractValue(r, 1)
		ok = g.cur.NewAnd(ok, g.cur.NewXor(ovf, constant.True))
		zero = g.cur.NewOr(zero, g.cur.NewICmp(enum.IPredEQ, g.dims[d], i64(0)))
	}
	ok = g.cur.NewAnd(ok, g.cur.NewICmp(enum.IPredSGE, n, i64(0)))
	ok = g.cur.NewOr(ok, zero)
	n = g.cur.NewSelect(zero, i64(0), n)
	return n, ok
}
