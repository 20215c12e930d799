package llvm

import "github.com/kgen-dev/kgen/ir"

// vectorBody emits the body of a Vector loop as <W x T> operations; false means the loop runs lane by
// lane instead (ir.ExpandLanes).
func (g *fn) vectorBody(l *ir.Loop) (bool, error) { return false, nil }
