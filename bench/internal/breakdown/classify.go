// Package breakdown says where kgen's GEMM time goes: it attributes the
// samples of a CPU profile (runtime/pprof) of a benchmark loop to packing,
// microkernel, edges, synchronisation, the loop nest and other, by the
// names of the functions on each sample's stack and, inside the assembly
// microkernels, by the label of the source line the sample hit.
package breakdown

import (
	"regexp"
	"strings"
)

// Category is where a sample's time goes.
type Category int

// The categories, in table order.
const (
	Micro Category = iota // the microkernels' full-tile code (kloop, epilogue, full stores)
	Edges                 // partial tiles: the microkernels' masked paths, k remainder; portable fall-backs for edge rows
	Pack                  // packing A and B panels
	Sync                  // fork/join: rt.ParallelFor, the worker pool, the scheduler, spinning or parking
	Loop                  // kgen's generated loop nest and slice adapters (kernels.*, rt.* except ParallelFor)
	Other                 // everything else: GC, allocation, the harness loop
	NumCategories
)

var catNames = [...]string{"microkernel", "edges", "packing", "sync", "loop nest", "other"}

func (c Category) String() string {
	if c < 0 || c >= NumCategories {
		return "?"
	}
	return catNames[c]
}

// Frame is one entry of a sample's stack, leaf first.
type Frame struct {
	Func string // fully qualified, e.g. "github.com/kgen-dev/kgen/kernels.sgemm14x32AVX512"
	File string
	Line int
}

// LabelFunc returns the assembly label a line of file lies under ("" when
// unknown).
type LabelFunc func(file string, line int) string

var (
	// The assembly microkernels: sgemm14x32AVX512, dgemm6x8AVX2U, bgemm14x32AVX512, sgemmRowsAVX512, ...
	microRE = regexp.MustCompile(`^[sdbh]gemm(\d+x\d+|Rows)[A-Za-z0-9]*$`)
	// Labels of the microkernels' partial-tile and k-remainder paths.
	edgeLabelRE = regexp.MustCompile(`(edge|_row\d+$|^kremainder$|^kloop1$)`)
	// Portable fall-backs that run only on edges: rows kernels for more rows than the assembly handles.
	edgeFuncRE = regexp.MustCompile(`^rowsCoreGo\d+$`)
	// Portable microkernels (the "go" variant).
	goMicroRE = regexp.MustCompile(`^(micro|microU|rows)Go\w*$`)
	// Frames that make the runtime time under them synchronisation.
	syncRE = regexp.MustCompile(`^(runtime\.(schedule|findRunnable|park_m|gopark|goparkunlock|mcall|chansend1?|chanrecv[12]?|selectgo|notesleep|notetsleepg?|stopm|futexsleep|futexwakeup|semacquire1?|semrelease1?|procyield|osyield|usleep|runqgrab|stealWork|wakep|startm|ready|goready|netpoll|mPark|lock2|unlock2)|sync\.\(\*WaitGroup\)\.(Wait|Add|Done)|sync\.runtime_Sem\w+|internal/sync\.\w+)$`)
)

// short strips the package path: "github.com/x/kernels.sgemm14x32AVX512" →
// "kernels.sgemm14x32AVX512".
func short(fn string) string {
	if i := strings.LastIndex(fn, "/"); i >= 0 {
		return fn[i+1:]
	}
	return fn
}

// pkgAndName splits "kernels.sgemm14x32AVX512" into "kernels" and the rest.
func pkgAndName(fn string) (string, string) {
	s := short(fn)
	if i := strings.Index(s, "."); i >= 0 {
		return s[:i], s[i+1:]
	}
	return "", s
}

var gcRE = regexp.MustCompile(`^runtime\.(gc\w*|mallocgc\w*|scanobject|markroot\w*|bgsweep|bgscavenge|sweepone|mProf_\w*|sigprof|profilealloc)$`)

func isRuntime(fn string) bool {
	pkg, _ := pkgAndName(fn)
	return pkg == "runtime" || pkg == "sync" || pkg == "internal" || strings.HasPrefix(fn, "internal/") || strings.HasPrefix(fn, "sync/")
}

// Classify attributes one sample, given its stack (leaf first), to a
// category:
//   - kernels.pack* → Pack
//   - a kernels assembly microkernel → Edges when the sample's line lies
//     under a label naming an edge path (…edge…, beta_rowN, store_rowN,
//     kremainder, kloop1; labels(file, line)), Micro otherwise
//   - kernels.rowsCoreGo* (rows beyond what the assembly rows kernel takes) → Edges
//   - kernels.microGo*/rowsGo* (the portable variant's kernels) → Micro
//   - other kernels.* and rt.* → Loop, except rt.ParallelFor and the pool
//     workers' own code (rt.startPool*) → Sync
//   - a runtime/sync leaf: its run of runtime/sync callers decides: GC,
//     allocation or profiling there → Other; the scheduler, a park, a
//     channel, futex or WaitGroup operation → Sync; otherwise the first
//     caller outside the runtime is classified as above (runtime.memmove
//     under a pack function is packing), and Other when there is none
//   - anything else → Other
func Classify(stack []Frame, labels LabelFunc) Category {
	for i, f := range stack {
		if !isRuntime(f.Func) {
			if i == 0 {
				return classifyLeaf(f, labels)
			}
			return classifyLeaf(Frame{Func: f.Func}, nil)
		}
		s := short(f.Func)
		if gcRE.MatchString(s) {
			return Other
		}
		if syncRE.MatchString(s) {
			return Sync
		}
	}
	return Other
}

func classifyLeaf(leaf Frame, labels LabelFunc) Category {
	pkg, name := pkgAndName(leaf.Func)
	switch pkg {
	case "kernels":
		switch {
		case strings.HasPrefix(name, "pack"):
			return Pack
		case microRE.MatchString(name):
			if labels != nil && edgeLabelRE.MatchString(labels(leaf.File, leaf.Line)) {
				return Edges
			}
			return Micro
		case edgeFuncRE.MatchString(name):
			return Edges
		case goMicroRE.MatchString(name):
			return Micro
		}
		return Loop
	case "rt":
		if strings.HasPrefix(name, "ParallelFor") || strings.HasPrefix(name, "startPool") {
			return Sync
		}
		return Loop
	}
	return Other
}
