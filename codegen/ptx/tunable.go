package ptx

import (
	"maps"

	"github.com/kgen-dev/kgen/ir"
)

// ProdCandidate compiles k's production sm_90a version with plan (ProdPlan's symbols, some of them
// changed: kgen tune's candidates, a kgen.lock entry) and lowers it as the backend does; nil when no
// tile of k is loaded by TMA (k has no production version).
func ProdCandidate(k *ir.Kernel, plan map[string]int) (*Kernel, error) { return prodVariant(k, plan) }

// prodPlanOf is the production plan of one kernel: ProdPlan, with the values of a kgen.lock entry
// (codegen.Kernel.GPUPlan) over it.
func prodPlanOf(tuned map[string]int) map[string]int {
	if len(tuned) == 0 {
		return ProdPlan
	}
	p := maps.Clone(ProdPlan)
	maps.Copy(p, tuned)
	return p
}
