package msl

import (
	"fmt"

	"github.com/kgen-dev/kgen/ir"
)

// The MMA nodes (ir/mma.go). A thread-scope accumulator is a register tile: a float array of the
// plan's M×N, updated by plain loops in the IR's summation order. A simdgroup-scope accumulator is a
// simdgroup_float8x8. Per K step, f32 row-major tiles that are whole (every valid extent at least 8)
// are simdgroup_load-ed where they lie; otherwise the simdgroup's lanes widen its A and B tiles into
// float 8×8 tiles in threadgroup scratch (one pair per simdgroup), zeros outside the valid extents so
// that ragged edges read nothing out of range, then simdgroup_load those; either way
// simdgroup_multiply_accumulate follows. The AccStore
// goes through simdgroup_store into scratch, from which each lane stores its elements of the epilogue.
// Whole half and bfloat tiles are loaded as simdgroup_half8x8 / simdgroup_bfloat8x8 (bfloat only
// where the package targets Metal 3.1, as every bf16 kernel does) and multiplied into the float
// accumulator; edge tiles widen exactly into the float scratch (their products are exact in float
// either way). The simdgroup's element-to-lane mapping is never relied on.

const simdTile = 8

func (lw *lowerer) accDecl(a *ir.Accum) ([]Stmt, error) {
	if err := checkType(a.T, "accumulator %"+a.Name); err != nil {
		return nil, err
	}
	name := lw.names.name(a, a.Name)
	lw.accs[a] = name
	switch a.Scope {
	case ir.ScopeThread:
		m, n, err := lw.tileSize(a)
		if err != nil {
			return nil, err
		}
		i := lw.names.fresh("i")
		return []Stmt{
			Comment{[]string{fmt.Sprintf("acc %s: a register tile", a)}},
			Decl{T: computeType(a.T), Name: name, Len: m * n},
			For{Var: i, Lo: IntLit{0}, Hi: IntLit{m * n}, Step: IntLit{1}, Body: []Stmt{
				Assign{Index{Ident{name}, Ident{i}}, "=", zero(a.T)},
			}},
		}, nil
	case ir.ScopeSimdgroup:
		if err := lw.simdAcc(a); err != nil {
			return nil, err
		}
		return []Stmt{
			Comment{[]string{fmt.Sprintf("acc %s", a)}},
			Decl{T: SimdFloat8x8, Name: name, Init: Call{"make_filled_simdgroup_matrix<float, 8, 8>", []Expr{FloatLit{0}}}},
		}, nil
	}
	return nil, unsupported("%s-scope MMA in MSL (an NVIDIA fragment; the msl pipeline maps thread and simdgroup scopes)", a.Scope)
}

func (lw *lowerer) tileSize(a *ir.Accum) (m, n int, err error) {
	mc, okm := ir.Simplify(lw.plan(a.M)).(ir.IConst)
	nc, okn := ir.Simplify(lw.plan(a.N)).(ir.IConst)
	if !okm || !okn || mc.V <= 0 || nc.V <= 0 || mc.V*nc.V > 1024 {
		return 0, 0, unsupported("register tile %%%s of %sx%s (sizes must be plan constants, at most 1024 elements)", a.Name, a.M, a.N)
	}
	return mc.V, nc.V, nil
}

func (lw *lowerer) simdAcc(a *ir.Accum) error {
	if a.T != ir.F32 {
		return unsupported("simdgroup accumulator %%%s of type %s (float only)", a.Name, a.T)
	}
	if a.Layout == nil || a.Layout.Rows != simdTile || a.Layout.Cols != simdTile {
		return unsupported("simdgroup accumulator %%%s that is not an 8x8 simdgroup matrix", a.Name)
	}
	if lw.sg == nil {
		return fmt.Errorf("simdgroup accumulator %%%s outside a simdgroup nest", a.Name)
	}
	lw.out.SimdgroupMatrices = true
	if !lw.mmaScratch {
		lw.mmaScratch = true
		n := lw.threads / 32 * simdTile * simdTile
		if lw.threads%32 != 0 {
			return fmt.Errorf("simdgroup MMA in a threadgroup of %d threads (not whole simdgroups)", lw.threads)
		}
		lw.scratch = [3]string{lw.names.fresh("kg_mma_a"), lw.names.fresh("kg_mma_b"), lw.names.fresh("kg_mma_c")}
		for _, s := range lw.scratch {
			lw.tg = append(lw.tg, Decl{Space: "threadgroup", T: Float, Name: s, Len: n})
		}
	}
	return nil
}

// unitRowMajor returns the row stride of a row-major layout with unit column stride.
func unitRowMajor(l ir.Layout) (ir.IExpr, bool) {
	st, ok := l.(*ir.Strided)
	if !ok {
		return nil, false
	}
	if c, ok := ir.Simplify(st.ColStride).(ir.IConst); !ok || c.V != 1 {
		return nil, false
	}
	return st.RowStride, true
}

// validBelow is min(valid, whole) as a bound (whole when valid is nil).
func (lw *lowerer) validBelow(valid ir.IExpr, whole ir.IExpr) Expr {
	if valid == nil {
		return lw.iexpr(whole)
	}
	return lw.iexpr(ir.IMin(valid, whole))
}

func (lw *lowerer) mma(n *ir.MMA) ([]Stmt, error) {
	a := n.Acc
	name, ok := lw.accs[a]
	if !ok {
		return nil, fmt.Errorf("mma on %%%s outside its declaration", a.Name)
	}
	for _, o := range []ir.Operand{n.A, n.B} {
		if o.T == nil || o.Off == nil || o.Layout == nil || n.K == nil {
			return nil, fmt.Errorf("mma %%%s with an incomplete operand", a.Name)
		}
		if _, frag := o.Layout.(*ir.Fragment); frag {
			return nil, unsupported("mma operand %s in a fragment layout", o.T.Name)
		}
		if err := checkType(o.T.Type, "mma operand "+o.T.Name); err != nil {
			return nil, err
		}
	}
	doc := Comment{[]string{fmt.Sprintf("mma %%%s += A·B %s k=%s A=%s B=%s", a.Name, n.In, n.K, n.A, n.B)}}
	i, j, p := &ir.Var{Name: "i"}, &ir.Var{Name: "j"}, &ir.Var{Name: "p"}
	in, jn, pn := lw.names.fresh("i"), lw.names.fresh("j"), lw.names.fresh("p")
	lw.names.of[i], lw.names.of[j], lw.names.of[p] = in, jn, pn
	aElem := fromStorage(n.A.T.Type, lw.operandElem(n.A, ir.IVar{V: i}, ir.IVar{V: p}))
	switch a.Scope {
	case ir.ScopeThread:
		bElem := fromStorage(n.B.T.Type, lw.operandElem(n.B, ir.IVar{V: p}, ir.IVar{V: j}))
		m, nn, err := lw.tileSize(a)
		if err != nil {
			return nil, err
		}
		s := lw.names.fresh("s")
		acc := Index{Ident{name}, Binary{"+", Binary{"*", Ident{in}, IntLit{nn}}, Ident{jn}}}
		// the interpreter's order: acc[i,j] = acc[i,j] + A(i,p)·B(p,j) for p = 0, 1, ...
		return []Stmt{doc,
			For{Var: in, Lo: IntLit{0}, Hi: lw.validBelow(n.ValidM, ir.IConst{V: m}), Step: IntLit{1}, Body: []Stmt{
				For{Var: jn, Lo: IntLit{0}, Hi: lw.validBelow(n.ValidN, ir.IConst{V: nn}), Step: IntLit{1}, Body: []Stmt{
					Decl{T: computeType(a.T), Name: s, Init: acc},
					For{Var: pn, Lo: IntLit{0}, Hi: lw.validBelow(n.ValidK, n.K), Step: IntLit{1}, Body: []Stmt{
						Assign{Ident{s}, "=", Binary{"+", Ident{s}, Binary{"*", aElem, bElem}}},
					}},
					Assign{acc, "=", Ident{s}},
				}},
			}},
		}, nil
	case ir.ScopeSimdgroup:
		if kc, ok := ir.Simplify(lw.plan(n.K)).(ir.IConst); !ok || kc.V != simdTile {
			return nil, unsupported("simdgroup mma with K = %s (8 only)", n.K)
		}
		e := lw.names.fresh("e")
		base := Binary{"*", lw.sg, IntLit{simdTile * simdTile}}
		slot := func(buf string) Expr { return Index{Ident{buf}, Binary{"+", base, Ident{e}}} }
		inRange := func(x string, bound Expr) Expr { return Binary{"<", Ident{x}, bound} }
		ext := func(v ir.IExpr) Expr { return lw.validBelow(v, ir.IConst{V: simdTile}) }
		// A(i, p) with i = e/8, p = e%8; B(p, j) with p = e/8, j = e%8: fresh index names per tile
		fill := []Stmt{
			Decl{Const: true, T: Int, Name: in, Init: Binary{"/", Ident{e}, IntLit{simdTile}}},
			Decl{Const: true, T: Int, Name: pn, Init: Binary{"%", Ident{e}, IntLit{simdTile}}},
			Assign{slot(lw.scratch[0]), "=", Cond{Binary{"&&", inRange(in, ext(n.ValidM)), inRange(pn, ext(n.ValidK))}, aElem, FloatLit{0}}},
		}
		p2 := &ir.Var{Name: "p"}
		p2n := lw.names.fresh("p")
		lw.names.of[p2] = p2n
		bElem2 := fromStorage(n.B.T.Type, lw.operandElem(n.B, ir.IVar{V: p2}, ir.IVar{V: j}))
		fill = append(fill,
			Decl{Const: true, T: Int, Name: p2n, Init: Binary{"/", Ident{e}, IntLit{simdTile}}},
			Decl{Const: true, T: Int, Name: jn, Init: Binary{"%", Ident{e}, IntLit{simdTile}}},
			Assign{slot(lw.scratch[1]), "=", Cond{Binary{"&&", inRange(p2n, ext(n.ValidK)), inRange(jn, ext(n.ValidN))}, bElem2, FloatLit{0}}})
		ma, mb := lw.names.fresh("mat_a"), lw.names.fresh("mat_b")
		load := func(m string, at, perRow Expr) Stmt {
			return ExprStmt{Call{"simdgroup_load", []Expr{Ident{m}, AddrOf{at}, perRow}}}
		}
		mac := func(t Type, la, lb Stmt) []Stmt {
			return []Stmt{
				Decl{T: t, Name: ma},
				Decl{T: t, Name: mb},
				la, lb,
				ExprStmt{Call{"simdgroup_multiply_accumulate", []Expr{Ident{name}, Ident{ma}, Ident{mb}, Ident{name}}}},
			}
		}
		widened := []Stmt{
			barrierCall(ir.ScopeSimdgroup, false), // every lane is done with the previous tiles
			For{Var: e, Lo: lw.lane, Hi: IntLit{simdTile * simdTile}, Step: IntLit{32}, Body: fill},
			barrierCall(ir.ScopeSimdgroup, false),
			Block{mac(SimdFloat8x8, load(ma, Index{Ident{lw.scratch[0]}, base}, IntLit{simdTile}), load(mb, Index{Ident{lw.scratch[1]}, base}, IntLit{simdTile}))},
		}
		lda, oka := unitRowMajor(n.A.Layout)
		ldb, okb := unitRowMajor(n.B.Layout)
		tile, typed := map[ir.DType]Type{ir.F32: SimdFloat8x8, ir.F16: SimdHalf8x8, ir.BF16: SimdBFloat8x8}[n.In]
		if !typed || !oka || !okb || n.A.T.Type != n.In || n.B.T.Type != n.In {
			return append([]Stmt{doc}, widened...), nil
		}
		// Row-major operands: a whole tile (every valid extent at least 8, the same in all lanes of
		// the simdgroup) is loaded where it lies, in its own type; only edge tiles go through the
		// float scratch.
		direct := mac(tile,
			load(ma, Index{Ident{lw.tensorName(n.A.T)}, lw.iexpr(n.A.Off)}, lw.iexpr(lda)),
			load(mb, Index{Ident{lw.tensorName(n.B.T)}, lw.iexpr(n.B.Off)}, lw.iexpr(ldb)))
		var whole Expr
		for _, v := range []ir.IExpr{n.ValidM, n.ValidN, n.ValidK} {
			if v == nil {
				continue
			}
			c := Binary{">=", lw.iexpr(v), IntLit{simdTile}}
			if whole == nil {
				whole = c
			} else {
				whole = Binary{"&&", whole, c}
			}
		}
		if whole == nil {
			return []Stmt{doc, Block{direct}}, nil
		}
		return []Stmt{doc, If{Cond: whole, Then: direct, Else: widened}}, nil
	}
	return nil, unsupported("%s-scope mma", a.Scope)
}

func (lw *lowerer) accStore(n *ir.AccStore) ([]Stmt, error) {
	a := n.Acc
	name, ok := lw.accs[a]
	if !ok {
		return nil, fmt.Errorf("accstore of %%%s outside its declaration", a.Name)
	}
	if err := checkType(n.Out.Type, "tensor "+n.Out.Name); err != nil {
		return nil, err
	}
	in, jn := lw.names.name(n.I, n.I.Name), lw.names.name(n.J, n.J.Name)
	doc := Comment{[]string{fmt.Sprintf("accstore %%%s: %s[...] = %s", a.Name, n.Out.Name, ir.FormatExpr(n.Value))}}
	var store []Stmt
	var err error
	switch a.Scope {
	case ir.ScopeThread:
		_, nn, terr := lw.tileSize(a)
		if terr != nil {
			return nil, terr
		}
		lw.accElem[a] = Index{Ident{name}, Binary{"+", Binary{"*", Ident{in}, IntLit{nn}}, Ident{jn}}}
		store, err = lw.epilogue(n, n.Value)
		delete(lw.accElem, a)
		if err != nil {
			return nil, err
		}
		return []Stmt{doc,
			For{Var: in, Lo: IntLit{0}, Hi: lw.iexpr(n.M), Step: IntLit{1}, Body: []Stmt{
				For{Var: jn, Lo: IntLit{0}, Hi: lw.iexpr(n.N), Step: IntLit{1}, Body: store},
			}},
		}, nil
	case ir.ScopeSimdgroup:
		e := lw.names.fresh("e")
		base := Binary{"*", lw.sg, IntLit{simdTile * simdTile}}
		lw.accElem[a] = Index{Ident{lw.scratch[2]}, Binary{"+", base, Ident{e}}}
		store, err = lw.epilogue(n, n.Value)
		delete(lw.accElem, a)
		if err != nil {
			return nil, err
		}
		return []Stmt{doc,
			barrierCall(ir.ScopeSimdgroup, false),
			ExprStmt{Call{"simdgroup_store", []Expr{Ident{name}, AddrOf{Index{Ident{lw.scratch[2]}, base}}, IntLit{simdTile}}}},
			barrierCall(ir.ScopeSimdgroup, false),
			For{Var: e, Lo: lw.lane, Hi: IntLit{simdTile * simdTile}, Step: IntLit{32}, Body: []Stmt{
				Decl{Const: true, T: Int, Name: in, Init: Binary{"/", Ident{e}, IntLit{simdTile}}},
				Decl{Const: true, T: Int, Name: jn, Init: Binary{"%", Ident{e}, IntLit{simdTile}}},
				If{Cond: Binary{"&&", Binary{"<", Ident{in}, lw.iexpr(n.M)}, Binary{"<", Ident{jn}, lw.iexpr(n.N)}}, Then: store},
			}},
		}, nil
	}
	return nil, unsupported("%s-scope accstore", a.Scope)
}

// epilogue stores value to n.Out under the beta rule: for each scaled-output factor f (beta in
// beta·C) the store is versioned on f == 0, and the f == 0 version does not read Out.
func (lw *lowerer) epilogue(n *ir.AccStore, value ir.Expr) ([]Stmt, error) {
	return lw.epilogueFactors(n, value, ir.BetaFactors(value, n.Out))
}

func (lw *lowerer) epilogueFactors(n *ir.AccStore, value ir.Expr, fs []ir.Expr) ([]Stmt, error) {
	if len(fs) == 0 {
		x, err := lw.expr(value)
		if err != nil {
			return nil, err
		}
		return []Stmt{Assign{lw.elem(n.Out, n.Idx), "=", toStorage(n.Out.Type, x)}}, nil
	}
	f := fs[0]
	fx, err := lw.expr(f)
	if err != nil {
		return nil, err
	}
	without, err := lw.epilogueFactors(n, ir.DropBeta(value, n.Out, f), fs[1:])
	if err != nil {
		return nil, err
	}
	with, err := lw.epilogueFactors(n, value, fs[1:])
	if err != nil {
		return nil, err
	}
	return []Stmt{If{Cond: Binary{"==", fx, zero(f.Type())}, Then: without, Else: with}}, nil
}
