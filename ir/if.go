package ir

// If runs Then when Cond (a Bool expression over dims, plan values and bound variables) holds, else
// Else. Passes use it for multi-versioning: two schedules of the same computation, picked at run time
// by the problem's shape (for example an unpacked GEMM for small or skinny problems). Both branches
// must compute the same result up to rounding.
type If struct {
	Cond       Expr
	Then, Else []Node
}

func (*If) node() {}
