package ir

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// FormatExpr prints an expression in kdsl-like syntax with full parentheses for binary operators.
func FormatExpr(e Expr) string {
	switch e := e.(type) {
	case *Const:
		return strconv.FormatFloat(e.Val, 'g', -1, 64) + ":" + e.T.String()
	case *Load:
		if len(e.Idx) == 0 {
			return e.T.Name
		}
		return e.T.Name + "[" + joinI(e.Idx) + "]"
	case *DimVal:
		return e.D.Name + ":" + e.T.String()
	case *VarVal:
		return e.V.Name + ":" + e.T.String()
	case *Local:
		return "%" + e.L.Name
	case *AccVal:
		return "%" + e.Acc.Name
	case *PlanVal:
		return "plan(" + e.Name + ")"
	case *Unary:
		return string(e.Op) + "(" + FormatExpr(e.X) + ")"
	case *Binary:
		if e.Op == Min || e.Op == Max {
			return string(e.Op) + "(" + FormatExpr(e.X) + ", " + FormatExpr(e.Y) + ")"
		}
		return "(" + FormatExpr(e.X) + " " + string(e.Op) + " " + FormatExpr(e.Y) + ")"
	case *Select:
		return "select(" + FormatExpr(e.C) + ", " + FormatExpr(e.A) + ", " + FormatExpr(e.B) + ")"
	case *Cast:
		return e.T.String() + "(" + FormatExpr(e.X) + ")"
	case *Reduce:
		names := make([]string, len(e.Vars))
		for i, v := range e.Vars {
			names[i] = v.Name
			if v.Range == nil && v.Const > 0 {
				names[i] += " < " + strconv.Itoa(v.Const) // a window
			}
		}
		op := map[Op]string{Add: "sum", Max: "max", Min: "min"}[e.Op]
		return op + "(" + strings.Join(names, ", ") + ": " + FormatExpr(e.X) + ")"
	}
	return fmt.Sprintf("?%T", e)
}

func joinI(idx []IExpr) string {
	s := make([]string, len(idx))
	for i, x := range idx {
		s[i] = x.String()
	}
	return strings.Join(s, ", ")
}

func shapeString(t *Tensor) string {
	if t.Kind == Scalar {
		return t.Type.String()
	}
	d := make([]string, len(t.Shape))
	for i, x := range t.Shape {
		d[i] = x.Name
	}
	return t.Type.String() + "[" + strings.Join(d, ", ") + "]"
}

// String prints the algorithm-level IR of k. The format is stable (golden tests depend on it).
func (k *Kernel) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kernel %s\n", k.Name)
	dims := make([]string, len(k.Dims))
	for i, d := range k.Dims {
		dims[i] = d.Name
	}
	fmt.Fprintf(&b, "  dims %s\n", strings.Join(dims, ", "))
	for _, p := range k.Params {
		fmt.Fprintf(&b, "  param %s %s %s\n", p.Kind, p.Name, shapeString(p))
	}
	for _, t := range k.Temps {
		fmt.Fprintf(&b, "  temp %s %s\n", t.Name, shapeString(t))
	}
	for _, s := range k.Stmts {
		vs := make([]string, len(s.Vars))
		for i, v := range s.Vars {
			vs[i] = v.Name + "<" + v.RangeName()
		}
		fmt.Fprintf(&b, "  %s[%s] = %s    // for %s\n", s.Out.Name, joinVars(s.Vars), FormatExpr(s.Value), strings.Join(vs, ", "))
	}
	for _, d := range k.Schedule {
		fmt.Fprintf(&b, "  schedule %s\n", FormatDirective(d))
	}
	return b.String()
}

// FormatDirective prints a directive in kdsl syntax (with its target block, if any).
func FormatDirective(d *Directive) string {
	args := make([]string, len(d.Args))
	for i, a := range d.Args {
		s := a.Name
		for _, n := range a.Sizes {
			s += " " + strconv.Itoa(n)
		}
		args[i] = s
	}
	s := d.Name + " " + strings.Join(args, ", ")
	if d.Target != "" {
		s = "for " + d.Target + " { " + s + " }"
	}
	return s
}

func joinVars(vs []*Var) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = v.Name
	}
	return strings.Join(s, ", ")
}

// String prints the loop-level IR. The format is stable (golden tests and `kgen ir` use it).
func (f *Func) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "func %s\n", f.Kernel.Name)
	if len(f.Plan) > 0 {
		keys := make([]string, 0, len(f.Plan))
		for k := range f.Plan {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "  plan %s = %d\n", k, f.Plan[k])
		}
	}
	for _, pv := range f.Variants {
		keys := make([]string, 0, len(pv.Plan))
		for k := range pv.Plan {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			host := ""
			if slices.Contains(pv.Host, k) {
				host = " (static model; host caches at init)"
			}
			fmt.Fprintf(&b, "  plan[%s] %s = %d%s\n", pv.Name, k, pv.Plan[k], host)
		}
		for _, class := range slices.Sorted(maps.Keys(pv.Tuned)) {
			for _, k := range slices.Sorted(maps.Keys(pv.Tuned[class])) {
				where := "where this class is the nearest"
				if IsCacheBlock(k) {
					where += " and its L1 and L2 match"
				}
				fmt.Fprintf(&b, "  plan[%s on %s] %s = %d (kgen.lock: installed at init %s)\n", pv.Name, class, k, pv.Tuned[class][k], where)
			}
		}
	}
	printNodes(&b, f.Body, 1)
	return b.String()
}

func printNodes(b *strings.Builder, body []Node, depth int) {
	ind := strings.Repeat("  ", depth)
	for _, n := range body {
		switch n := n.(type) {
		case *Nest:
			var lines []string
			for _, s := range n.Stmts {
				lines = append(lines, strconv.Itoa(s.Pos.Line))
			}
			fmt.Fprintf(b, "%snest // line %s\n", ind, strings.Join(lines, ", "))
			printNodes(b, n.Body, depth+1)
		case *Loop:
			w := ""
			if n.Width > 0 {
				w = "<" + strconv.Itoa(n.Width) + ">"
			}
			red := ""
			if r := n.Reduce; r != nil {
				parts := make([]string, len(r.Parts))
				for i, p := range r.Parts {
					parts[i] = "%" + p.Name
				}
				red = fmt.Sprintf(" reduce %s %%%s lanes [%s]", r.Op, r.Acc.Name, strings.Join(parts, ", "))
			}
			fmt.Fprintf(b, "%s%s%s %s = %s .. %s step %s%s\n", ind, n.Kind, w, n.Var.Name, n.Lo, n.Hi, n.Step, red)
			printNodes(b, n.Body, depth+1)
		case *Decl:
			fmt.Fprintf(b, "%svar %%%s %s = %s\n", ind, n.L.Name, n.L.T, FormatExpr(n.Init))
		case *Assign:
			fmt.Fprintf(b, "%s%%%s = %s\n", ind, n.L.Name, FormatExpr(n.Value))
		case *Store:
			fmt.Fprintf(b, "%s%s[%s] = %s\n", ind, n.T.Name, joinI(n.Idx), FormatExpr(n.Value))
		case *Alloc:
			fmt.Fprintf(b, "%salloc %s %s %s[%s]\n", ind, n.T.Space, n.T.Name, n.T.Type, n.T.Size)
			printNodes(b, n.Body, depth+1)
		case *If:
			fmt.Fprintf(b, "%sif %s\n", ind, FormatExpr(n.Cond))
			printNodes(b, n.Then, depth+1)
			fmt.Fprintf(b, "%selse\n", ind)
			printNodes(b, n.Else, depth+1)
		case *Pack:
			fmt.Fprintf(b, "%spack %s+%s panel %s, %s x %s, (%s, %s) <- %s\n", ind, n.Dst.Name, n.DstOff, n.Panel, n.N, n.Depth, n.P.Name, n.D.Name, FormatExpr(n.Value))
		case *Micro:
			bias := ""
			if n.Bias != nil {
				bias = fmt.Sprintf(", bias %s+%s", n.Bias.Name, n.BiasOff)
			}
			kind := "micro"
			switch n.Kind() {
			case MicroRows:
				kind = "micro rows"
			case MicroBatched:
				b := n.Batch
				kind = fmt.Sprintf("micro batch %s strides A %s B %s C %s", b.Count, b.AStride, b.BStride, b.CStride)
			}
			fmt.Fprintf(b, "%s%s %s %s %sx%s kc=%s A=%s B=%s C=%s+%s ldc=%s m=%s n=%s alpha=%s beta=%s%s ep=%s\n",
				ind, kind, n.Slot, n.Elem, n.MR, n.NR, n.KC, n.A, n.B, n.C.Name, n.COff, n.LDC, n.M, n.N,
				FormatExpr(n.Alpha), FormatExpr(n.Beta), bias, FormatExpr(n.EP))
		case *Transpose:
			fmt.Fprintf(b, "%stranspose %s %s rows=%s cols=%s %s+%s lds=%s -> %s+%s ldd=%s\n", ind, n.Slot, n.Elem, n.Rows, n.Cols,
				n.Src.Name, n.SrcOff, n.LDS, n.Dst.Name, n.DstOff, n.LDD)
		default:
			if !printMMA(b, ind, n) && !printGPU(b, n, depth) {
				fmt.Fprintf(b, "%s?%T\n", ind, n)
			}
		}
	}
}
