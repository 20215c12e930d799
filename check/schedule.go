package check

import (
	"slices"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/parse"
	"github.com/kgen-dev/kgen/target"
)

// schedule checks a schedule against its kernel and records the directives on it.
func (c *checker) schedule(k *ir.Kernel, s *parse.Schedule) {
	for _, d := range s.Directives {
		c.directive(k, d, "")
	}
	seen := map[string]bool{}
	for _, t := range s.Targets {
		if !slices.Contains(target.Names(), t.Target) {
			c.errorf(t.Pos, "unknown target %s: expected one of %v", t.Target, target.Names())
			continue
		}
		if seen[t.Target] {
			c.errorf(t.Pos, "second block for target %s", t.Target)
			continue
		}
		seen[t.Target] = true
		for _, d := range t.Directives {
			c.directive(k, d, t.Target)
		}
	}
}

// indexInfo describes an index name across the kernel's statements.
type indexInfo struct {
	lhs, reduced bool
	stmts        []*ir.Stmt
}

func kernelIndices(k *ir.Kernel) map[string]*indexInfo {
	m := map[string]*indexInfo{}
	get := func(n string) *indexInfo {
		if m[n] == nil {
			m[n] = &indexInfo{}
		}
		return m[n]
	}
	for _, s := range k.Stmts {
		for _, v := range s.Vars {
			i := get(v.Name)
			i.lhs = true
			i.stmts = append(i.stmts, s)
		}
		ir.Walk(s.Value, func(e ir.Expr) {
			if r, ok := e.(*ir.Reduce); ok {
				for _, v := range r.Vars {
					i := get(v.Name)
					i.reduced = true
					i.stmts = append(i.stmts, s)
				}
			}
		})
	}
	return m
}

func (c *checker) directive(k *ir.Kernel, d *parse.Directive, target string) {
	idx := kernelIndices(k)
	out := &ir.Directive{Name: d.Name, Target: target, Pos: irPos(d.Pos)}
	bad := false
	needIndex := func(a *parse.DirArg) *indexInfo {
		info := idx[a.Name]
		if info == nil {
			c.errorf(a.Pos, "%s: unknown index %s in kernel %s", d.Name, a.Name, k.Name)
			bad = true
		}
		return info
	}
	if len(d.Args) == 0 {
		c.errorf(d.Pos, "%s needs arguments", d.Name)
		return
	}
	for _, a := range d.Args {
		out.Args = append(out.Args, ir.DirArg{Name: a.Name, Sizes: a.Sizes})
		for _, sz := range a.Sizes {
			if sz <= 0 {
				c.errorf(a.Pos, "%s %s: sizes must be positive", d.Name, a.Name)
				bad = true
			}
		}
	}
	switch d.Name {
	case "tile":
		for _, a := range d.Args {
			if needIndex(a) == nil {
				continue
			}
			switch len(a.Sizes) {
			case 1:
			case 2:
				if a.Sizes[1] > 0 && a.Sizes[0]%a.Sizes[1] != 0 {
					c.errorf(a.Pos, "tile %s %d %d: the outer tile must be a multiple of the inner tile", a.Name, a.Sizes[0], a.Sizes[1])
					bad = true
				}
			default:
				c.errorf(a.Pos, "tile %s: give one size, or an outer (cache) and an inner (register) size", a.Name)
				bad = true
			}
		}
	case "reorder":
		seen := map[string]bool{}
		for _, a := range d.Args {
			needIndex(a)
			if seen[a.Name] {
				c.errorf(a.Pos, "reorder: index %s listed twice", a.Name)
				bad = true
			}
			seen[a.Name] = true
			if len(a.Sizes) > 0 {
				c.errorf(a.Pos, "reorder takes index names only")
				bad = true
			}
		}
	case "vectorize", "unroll":
		for _, a := range d.Args {
			info := needIndex(a)
			if len(a.Sizes) > 1 || (len(a.Sizes) == 1 && a.Sizes[0] > 64) {
				c.errorf(a.Pos, "%s %s: give at most one factor, at most 64", d.Name, a.Name)
				bad = true
			}
			if info == nil || d.Name != "vectorize" {
				continue
			}
			for _, s := range info.stmts {
				if inner := innermost(k, s, target); inner != a.Name {
					c.errorf(a.Pos, "vectorize %s: %s is not the innermost loop of the statement at line %d (the innermost is %s); reorder first", a.Name, a.Name, s.Pos.Line, inner)
					bad = true
					break
				}
			}
		}
	case "parallel":
		for _, a := range d.Args {
			info := needIndex(a)
			if info != nil && info.reduced {
				c.errorf(a.Pos, "parallel %s: %s is a reduction index; running its iterations in parallel would race on the sum", a.Name, a.Name)
				bad = true
			}
			if len(a.Sizes) > 0 {
				c.errorf(a.Pos, "parallel takes index names only")
				bad = true
			}
		}
	case "pack", "nopack":
		for _, a := range d.Args {
			p := k.Param(a.Name)
			if p == nil || p.Kind != ir.In || len(p.Shape) < 2 {
				c.errorf(a.Pos, "%s %s: only input tensors of rank 2 or more can be packed", d.Name, a.Name)
				bad = true
			}
		}
	case "precision":
		if len(d.Args) != 1 || len(d.Args[0].Sizes) != 0 {
			c.errorf(d.Pos, "precision takes one accumulation type: precision f64")
			bad = true
			break
		}
		if d.Args[0].Name == "tf32" {
			break // f32 GEMMs may round their inputs to tf32 on tensor cores (LANGUAGE.md)
		}
		t := ir.ParseDType(d.Args[0].Name)
		if !t.IsFloat() || t == ir.F16 || t == ir.BF16 {
			c.errorf(d.Args[0].Pos, "precision %s: the accumulation type must be f32 or f64, or tf32 for tensor-core f32 GEMMs", d.Args[0].Name)
			bad = true
		}
	}
	if !bad {
		k.Schedule = append(k.Schedule, out)
	}
}

// innermost is the name of the innermost loop of statement s under the directives seen so far: the
// reduction indices (innermost last) when there are any, else the last LHS index after reorder.
// A statement that is a GEMM-like contraction vectorizes its output's last index inside the microkernel.
func innermost(k *ir.Kernel, s *ir.Stmt, target string) string {
	order := make([]string, 0, len(s.Vars))
	for _, v := range s.Vars {
		order = append(order, v.Name)
	}
	var red []string
	ir.Walk(s.Value, func(e ir.Expr) {
		if r, ok := e.(*ir.Reduce); ok {
			for _, v := range r.Vars {
				red = append(red, v.Name)
			}
		}
	})
	if len(red) == 1 && len(order) >= 2 && isContraction(s) {
		return order[len(order)-1]
	}
	for _, d := range k.Directives(target) {
		if d.Name != "reorder" {
			continue
		}
		var names []string
		for _, a := range d.Args {
			names = append(names, a.Name)
		}
		order = reorderNames(order, names)
	}
	if len(red) > 0 {
		return red[len(red)-1]
	}
	if len(order) == 0 {
		return ""
	}
	return order[len(order)-1]
}

// reorderNames puts the listed names, in the listed order, into the positions those names occupy.
func reorderNames(order, names []string) []string {
	var pos []int
	for i, n := range order {
		if slices.Contains(names, n) {
			pos = append(pos, i)
		}
	}
	out := slices.Clone(order)
	j := 0
	for _, n := range names {
		if slices.Contains(order, n) {
			out[pos[j]] = n
			j++
		}
	}
	return out
}

// isContraction reports whether s contains a sum of a product of two loads (a GEMM-like statement).
func isContraction(s *ir.Stmt) bool {
	found := false
	ir.Walk(s.Value, func(e ir.Expr) {
		if r, ok := e.(*ir.Reduce); ok && r.Op == ir.Add {
			if b, ok := r.X.(*ir.Binary); ok && b.Op == ir.Mul {
				found = true
			}
		}
	})
	return found
}
