package tune

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/parse"
	"github.com/kgen-dev/kgen/passes"
	"github.com/kgen-dev/kgen/target"
)

// Options configure a tuning run.
type Options struct {
	Path string // the kdsl file (for messages and hashes)
	Src  []byte // its text
	// Kernels are the kernels to tune (empty: every kernel with a GEMM slot).
	Kernels []string
	// Shapes are the tuning shapes (empty: DefaultShapes).
	Shapes []Shape
	// Budget bounds the search, all kernels together; building the scratch package comes first and
	// is not counted. Every kernel gets at least one candidate.
	Budget time.Duration
	// Class is the machine class the entries are for (probe.Profile.Class).
	Class string
	// Target is the target whose variants are tuned: the machine's architecture (amd64, arm64).
	Target string
	// Generate writes the Go package for the kdsl file kdsl into dir with package name pkg for the
	// targets go and Target, without tests, with the lock file lock ("": none; the tuner's own lock of
	// microkernel candidates, kernels.go) (cmd/kgen passes its gen command).
	Generate func(kdsl, dir, pkg, lock string) error
	// Root is the directory of kgen's module, where the scratch package is built (it imports kgen's
	// packages); empty: found with go list.
	Root string
	// Progress, when not nil, gets a progress bar redrawn in place (a terminal).
	Progress io.Writer
	// Log gets one line per kernel result and per rejected candidate (nil: none).
	Log io.Writer
	// Variant forces a variant (Use) instead of the one the machine selects.
	Variant string
	// Start replaces default plan values before the search (symbol → value): the incumbent the search
	// starts from, for tests that plant a slow default and for a search that starts from a lock entry
	// (kernel fields choose the microkernel candidate that has exactly them; startFor).
	Start map[string]int
	// Extra, when not nil, proposes one extra candidate every few steps (tests plant a generator of
	// broken candidates here); it may name any integer field of a slot.
	Extra func(cur map[string]int) map[string]int
	// Trace, when not nil, gets every timed comparison's paired ratios.
	Trace io.Writer
	// Symbols are the slot fields searched (default: passes.TunedSymbols).
	Symbols []string
	// Pairs is the number of paired batches per shape (default 8) and Batch the time of one batch
	// (default 20 ms).
	Pairs int
	Batch time.Duration
	// Seed seeds the random search (default 1).
	Seed uint64
}

// DefaultShapes are the tuning shapes: small, mid (around the small-problem cut-off), skinny (few rows),
// square and large.
var DefaultShapes = []Shape{{64, 64, 64}, {100, 100, 100}, {4, 1024, 1024}, {256, 256, 256}, {768, 768, 768}}

// Rejection is a candidate that failed the interpreter check.
type Rejection struct {
	Cfg map[string]int
	Err string
}

// Result is the outcome for one kernel.
type Result struct {
	Kernel  string
	Variant string // the variant plan the slot values belong to ("" when the running variant has none)
	Default map[string]int
	Best    map[string]int // the values that differ from Default (empty: the default stayed best)
	// Found is where the search ended: the values that differ from Default, or from the planted start.
	Found map[string]int
	// Speedup and Noise as in Entry (Best against Default, measured at the end); Faster lists the shapes
	// where Best was faster beyond noise.
	Speedup, Noise float64
	Faster         []string
	Tried          int
	Rejected       []Rejection
}

// Report is a tuning run's outcome.
type Report struct {
	Variant string  // the running variant
	Shapes  []Shape // the tuning shapes
	Results []Result
}

// Entries returns the lock entries of the results that found faster values with a variant plan.
func (r *Report) Entries(hashes map[string]string, tgt, class string) []Entry {
	var out []Entry
	var ss []string
	for _, s := range r.Shapes {
		ss = append(ss, s.String())
	}
	for _, res := range r.Results {
		if len(res.Best) == 0 || res.Variant == "" {
			continue
		}
		out = append(out, Entry{Kernel: res.Kernel, Hash: hashes[res.Kernel], Target: tgt, Variant: res.Variant, Class: class,
			Values: res.Best, Speedup: res.Speedup, Noise: res.Noise, Shapes: ss})
	}
	return out
}

// Run tunes the kernels of opt.Src.
func Run(opt Options) (*Report, error) {
	if opt.Pairs == 0 {
		opt.Pairs = 8
	}
	if opt.Batch == 0 {
		opt.Batch = 20 * time.Millisecond
	}
	if len(opt.Shapes) == 0 {
		opt.Shapes = DefaultShapes
	}
	if opt.Seed == 0 {
		opt.Seed = 1
	}
	m, err := target.Lookup(opt.Target)
	if err != nil {
		return nil, err
	}
	f, err := parse.Parse(opt.Path, string(opt.Src))
	if err != nil {
		return nil, err
	}
	all, err := check.File(opt.Path, string(opt.Src))
	if err != nil {
		return nil, err
	}
	// The kernels with GEMM slots, compiled for the target: their slots and variant plans.
	var ks []*ir.Kernel
	funcs := map[string]*ir.Func{}
	slots := map[string][]string{}
	isa := kernelISA(opt.Target, opt.Variant, opt.Class)
	cands := map[string]map[string][]map[string]int{} // kernel → slot → microkernel candidates
	for _, k := range all {
		if len(opt.Kernels) > 0 && !slices.Contains(opt.Kernels, k.Name) {
			continue
		}
		fn, err := passes.Compile(k, m, passes.Options{})
		if err != nil {
			return nil, fmt.Errorf("kernel %s: %v", k.Name, err)
		}
		for sym := range fn.Plan {
			if s, ok := strings.CutSuffix(sym, ".SmallWork"); ok {
				slots[k.Name] = append(slots[k.Name], s)
			}
		}
		if len(slots[k.Name]) == 0 {
			if len(opt.Kernels) > 0 {
				return nil, fmt.Errorf("kernel %s has no GEMM slot: nothing to tune", k.Name)
			}
			continue
		}
		if _, _, _, ok := gemmDims(k); !ok {
			continue
		}
		sort.Strings(slots[k.Name])
		ks, funcs[k.Name] = append(ks, k), fn
		if c := slotCandidates(fn, isa); len(c) > 0 {
			cands[k.Name] = c
		}
	}
	for _, name := range opt.Kernels {
		if funcs[name] == nil {
			return nil, fmt.Errorf("no kernel %s with a GEMM slot in %s", name, opt.Path)
		}
	}
	if len(ks) == 0 {
		return nil, fmt.Errorf("%s: no kernel with a GEMM slot: nothing to tune", opt.Path)
	}
	d, err := startDriver(opt, f, ks, slots, isa, cands)
	if err != nil {
		return nil, err
	}
	defer d.close()
	rep := &Report{Shapes: opt.Shapes}
	info, err := d.info()
	if err != nil {
		return nil, err
	}
	rep.Variant = info.Variant
	// The interpreter's results on the check's ragged shapes, and a check of the defaults, before the
	// clock starts.
	for _, k := range ks {
		st, dropped := startFor(opt.Start, slots[k.Name], cands[k.Name])
		if len(dropped) > 0 && opt.Log != nil {
			fmt.Fprintf(opt.Log, "%s: the starting kernel fields %s are no microkernel candidate's: the search starts from the plan's kernel\n", k.Name, strings.Join(dropped, "; "))
		}
		if err := d.check(k.Name, st); err != nil {
			return nil, fmt.Errorf("kernel %s: the starting values fail the interpreter check: %v", k.Name, err)
		}
	}
	deadline := time.Now().Add(opt.Budget)
	start := time.Now()
	rng := rand.New(rand.NewPCG(opt.Seed, 2))
	for i, k := range ks {
		left := time.Until(deadline)
		s := &search{opt: opt, d: d, k: k, rng: rng, start: start, deadline: deadline,
			until: time.Now().Add(left / time.Duration(len(ks)-i)), slots: slots[k.Name], info: info, done: i, total: len(ks),
			cands: cands[k.Name]}
		res, err := s.run()
		if err != nil {
			return nil, fmt.Errorf("kernel %s: %v", k.Name, err)
		}
		res.Variant = planVariant(funcs[k.Name], m, info.Variant, slots[k.Name][0])
		rep.Results = append(rep.Results, *res)
		if opt.Log != nil {
			if opt.Progress != nil {
				fmt.Fprint(opt.Progress, "\r\033[K")
			}
			fmt.Fprintln(opt.Log, res.summary())
		}
	}
	if opt.Progress != nil {
		fmt.Fprint(opt.Progress, "\r\033[K")
	}
	return rep, nil
}

// startFor is the part of the starting values that names one of slots (a -start list may hold values
// for several kernels).
// Kernel fields among them (a lock entry's MR=12) become the slot's microkernel candidate with exactly
// those fields (slot.Kernel = i+1); fields that are no candidate's are left out, and dropped says which.
func startFor(start map[string]int, slots []string, cands map[string][]map[string]int) (out map[string]int, dropped []string) {
	out = map[string]int{}
	kf := map[string]map[string]int{} // slot → its kernel fields in start
	for k, v := range start {
		slot, f, _ := strings.Cut(k, ".")
		if !slices.Contains(slots, slot) {
			continue
		}
		if ir.IsKernelField(f) {
			if kf[slot] == nil {
				kf[slot] = map[string]int{}
			}
			kf[slot][f] = v
			continue
		}
		out[k] = v
	}
	for _, slot := range slices.Sorted(maps.Keys(kf)) {
		i := slices.IndexFunc(cands[slot], func(c map[string]int) bool { return maps.Equal(c, kf[slot]) })
		if i < 0 {
			dropped = append(dropped, fmt.Sprintf("%s: %s", slot, cfgString(kf[slot])))
			continue
		}
		out[slot+"."+kernelField] = i + 1
	}
	return out, dropped
}

func (r Result) summary() string {
	if len(r.Best) == 0 {
		if r.Speedup > 0 { // measured against the defaults at the end, without a win (a seeded start, say)
			return fmt.Sprintf("%s: %s does not beat the defaults on every shape (%.3f×, noise %.3f): no entry (%d candidates, %d rejected)",
				r.Kernel, cfgString(r.Found), r.Speedup, r.Noise, r.Tried, len(r.Rejected))
		}
		return fmt.Sprintf("%s: default kept (%d candidates, %d rejected)", r.Kernel, r.Tried, len(r.Rejected))
	}
	return fmt.Sprintf("%s: %s: %.3f× (noise %.3f; faster on %s; %d candidates, %d rejected)", r.Kernel, cfgString(r.Best),
		r.Speedup, r.Noise, strings.Join(r.Faster, ", "), r.Tried, len(r.Rejected))
}

func cfgString(cfg map[string]int) string {
	var s []string
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		s = append(s, fmt.Sprintf("%s=%d", k, cfg[k]))
	}
	return strings.Join(s, " ")
}

// planVariant is the variant whose plan the running variant installs in slot: the running one, or the
// next of the machine's list that plans the slot (avx512bf16 runs avx512's plan for f32 GEMMs).
func planVariant(f *ir.Func, m target.Machine, running, slot string) string {
	i := slices.IndexFunc(m.Variants, func(v target.Variant) bool { return v.Name == running })
	if i < 0 {
		return ""
	}
	for _, v := range m.Variants[i:] {
		for _, pv := range f.Variants {
			if _, ok := pv.Plan[slot+".MR"]; ok && pv.Name == v.Name {
				return v.Name
			}
		}
	}
	return ""
}

// gemmDims returns the dims of the first GEMM-like statement of k: the output's last two (M rows, N
// columns) and the summed one (K).
func gemmDims(k *ir.Kernel) (mm, n, kk *ir.Dim, ok bool) {
	for _, s := range k.Stmts {
		var red *ir.Reduce
		ir.Walk(s.Value, func(e ir.Expr) {
			if r, isR := e.(*ir.Reduce); isR && red == nil && r.Op == ir.Add && len(r.Vars) == 1 {
				red = r
			}
		})
		if red == nil || len(s.Vars) < 2 || red.Vars[0].Range == nil {
			continue
		}
		return s.Vars[len(s.Vars)-2].Range, s.Vars[len(s.Vars)-1].Range, red.Vars[0].Range, true
	}
	return nil, nil, nil, false
}

// shapeDims gives every dim of k the value 1 and the GEMM's M, N, K those of s.
func shapeDims(k *ir.Kernel, s Shape) map[string]int {
	dims := map[string]int{}
	for _, d := range k.Dims {
		dims[d.Name] = 1
	}
	m, n, kk, _ := gemmDims(k)
	dims[m.Name], dims[n.Name], dims[kk.Name] = s.M, s.N, s.K
	return dims
}

// search is the tuning of one kernel.
type search struct {
	opt             Options
	d               *driver
	k               *ir.Kernel
	rng             *rand.Rand
	start, deadline time.Time
	until           time.Time // this kernel's share of the budget
	slots           []string
	info            driverInfo
	done, total     int
	tried           int
	cands           map[string][]map[string]int // slot → microkernel candidates (kernels.go)
	maxShape        Shape                       // the largest M, N and K of the tuning shapes
	span            float64                     // widening of the random moves (log2) when the search is stuck
	best            float64
}

// symbols lists the tuned symbols of the kernel's slots.
func (s *search) symbols() []string {
	var out []string
	syms := s.opt.Symbols
	if len(syms) == 0 {
		syms = passes.TunedSymbols
	}
	for _, slot := range s.slots {
		for _, f := range syms {
			out = append(out, slot+"."+f)
		}
	}
	return out
}

func (s *search) field(cfg map[string]int, sym string) int {
	if v, ok := cfg[sym]; ok {
		return v
	}
	slot, f, _ := strings.Cut(sym, ".")
	return s.info.Slots[slot][f]
}

// round brings a value of sym to its grid: MC to multiples of MR, NC and RowsNB of NR, KC of 16, and
// at least one step of it.
func (s *search) round(sym string, v float64) int {
	step := s.step(sym)
	n := int(math.Round(v/float64(step))) * step
	// A block past the largest tuning extent acts as that extent: nothing measured says more.
	_, f, _ := strings.Cut(sym, ".")
	if ext := map[string]int{"MC": s.maxShape.M, "NC": s.maxShape.N, "KC": s.maxShape.K}[f]; ext > 0 {
		n = min(n, (ext+step-1)/step*step)
	}
	return min(max(n, step), 1<<30)
}

// step is the grid of sym's values.
func (s *search) step(sym string) int {
	slot, f, _ := strings.Cut(sym, ".")
	step := 1
	switch f {
	case "MC":
		step = s.info.Slots[slot]["MR"]
	case "NC", "RowsNB":
		step = s.info.Slots[slot]["NR"]
	case "KC":
		step = 16
	}
	return max(step, 1)
}

// neighbours are the local moves from cur: each block ×/÷ 1.25, each threshold ×/÷ 2.
func (s *search) neighbours(cur map[string]int) []map[string]int {
	var out []map[string]int
	for _, sym := range s.symbols() {
		_, f, _ := strings.Cut(sym, ".")
		fac := 2.0
		if f == "MC" || f == "KC" || f == "NC" {
			fac = 1.25
		}
		for _, x := range []float64{fac, 1 / fac} {
			c := maps.Clone(cur)
			old := s.field(cur, sym)
			c[sym] = s.round(sym, float64(old)*x)
			if c[sym] == old && (x > 1 || old > s.step(sym)) {
				// a small value on a coarse grid: one grid step instead
				c[sym] = old + s.step(sym)*int(math.Copysign(1, x-1))
			}
			out = append(out, c)
		}
	}
	s.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// mutate is the random search's move: one to three symbols of cur scaled by a random factor of up to
// 2^1.5 (thresholds 2^3) either way, more when the search is stuck.
func (s *search) mutate(cur map[string]int) map[string]int {
	c := maps.Clone(cur)
	syms := s.symbols()
	for n := 1 + s.rng.IntN(3); n > 0; n-- {
		sym := syms[s.rng.IntN(len(syms))]
		_, f, _ := strings.Cut(sym, ".")
		span := 1.5 + s.span
		if f != "MC" && f != "KC" && f != "NC" {
			span = 3 + s.span
		}
		c[sym] = s.round(sym, float64(s.field(cur, sym))*math.Exp2((s.rng.Float64()*2-1)*span))
	}
	return c
}

// key is a configuration's identity: its full values.
func (s *search) key(cfg map[string]int) string {
	full := map[string]int{}
	for _, sym := range s.symbols() {
		full[sym] = s.field(cfg, sym)
	}
	for k, v := range cfg {
		full[k] = v
	}
	return cfgString(full)
}

// verdict compares candidate b with incumbent a on every shape.
type verdict struct {
	win, slower bool
	speedup     float64 // geometric mean of the per-shape median ratios
	noise       float64 // median of the per-shape relative spreads
	faster      []string
	logSum      float64
	shapes      int
	spreads     []float64
}

func (s *search) compare(a, b map[string]int, pairs int, all bool) (verdict, error) {
	var v verdict
	for _, sh := range s.opt.Shapes {
		ta, tb, err := s.d.time(s.k.Name, shapeDims(s.k, sh), a, b, pairs, s.opt.Batch)
		if err != nil {
			return v, fmt.Errorf("shape %s: %v", sh, err)
		}
		if s.opt.Trace != nil {
			r := make([]float64, len(ta))
			for i := range ta {
				r[i] = ta[i] / tb[i]
			}
			sort.Float64s(r)
			fmt.Fprintf(s.opt.Trace, "%s: %s: {%s} over {%s}: ratios %.3f\n", s.k.Name, sh, cfgString(b), cfgString(a), r)
		}
		if v.add(sh.String(), ta, tb) && !all {
			break // slower on this shape: no need to time the others
		}
	}
	v.finish()
	return v, nil
}

// add takes one shape's paired times of the incumbent (ta) and the candidate (tb) into v and reports
// whether the candidate is slower there. Sign tests on the pairs: faster when all but at most one pair
// favour the candidate (8 pairs: p ≈ 0.035 one-sided); slower, which rules it out, already when all but
// two favour the incumbent (p ≈ 0.14).
func (v *verdict) add(shape string, ta, tb []float64) (slower bool) {
	r := make([]float64, len(ta))
	up, down := 0, 0
	for i := range ta {
		r[i] = ta[i] / tb[i]
		if ta[i] > tb[i] {
			up++
		} else if ta[i] < tb[i] {
			down++
		}
	}
	sort.Float64s(r)
	med := r[len(r)/2]
	v.logSum += math.Log(med)
	v.shapes++
	v.spreads = append(v.spreads, (r[len(r)*3/4]-r[len(r)/4])/med)
	if up >= len(r)-1 {
		v.faster = append(v.faster, shape)
	}
	if down >= len(r)-2 {
		v.slower = true
	}
	return down >= len(r)-2
}

// finish computes the speed-up, the noise and the decision: a win is faster on some shape, slower on
// none, and a geometric-mean median ratio above 1.
func (v *verdict) finish() {
	sort.Float64s(v.spreads)
	v.speedup, v.noise = math.Exp(v.logSum/float64(v.shapes)), v.spreads[len(v.spreads)/2]
	v.win = !v.slower && len(v.faster) > 0 && v.speedup > 1
}

func (s *search) progress(note string) {
	if s.opt.Progress == nil {
		return
	}
	total := s.deadline.Sub(s.start)
	frac := 1.0
	if total > 0 {
		frac = min(1, float64(time.Since(s.start))/float64(total))
	}
	const width = 30
	bar := strings.Repeat("#", int(frac*width)) + strings.Repeat(".", width-int(frac*width))
	eta := max(0, time.Until(s.deadline)).Round(time.Second)
	fmt.Fprintf(s.opt.Progress, "\r\033[K[%s] %3.0f%% ETA %s  kernel %d/%d %s: %d candidates, %s", bar, frac*100, eta, s.done+1, s.total, s.k.Name, s.tried, note)
}

func (s *search) run() (*Result, error) {
	for _, sh := range s.opt.Shapes {
		s.maxShape = Shape{max(s.maxShape.M, sh.M), max(s.maxShape.N, sh.N), max(s.maxShape.K, sh.K)}
	}
	res := &Result{Kernel: s.k.Name, Default: map[string]int{}}
	for _, sym := range s.symbols() {
		res.Default[sym] = s.field(nil, sym)
	}
	cur, _ := startFor(s.opt.Start, s.slots, s.cands)
	bestSpeed := 1.0
	// The microkernel first (its tile and prefetch change what the blocks should be): every candidate
	// checked, then timed against the plan's kernel; the fastest winner stays for the search below. A
	// search over some fields (Symbols) that starts from a microkernel (a lock entry's, kgen tune
	// -symbols) keeps it: those fields were tuned with it, and shapes chosen for them may never run it
	// (a -symbols RowsNB search over 1…4-row products once took an 8×48 tile on noise).
	for _, slot := range slices.Sorted(maps.Keys(s.cands)) {
		if len(s.opt.Symbols) > 0 && cur[slot+"."+kernelField] > 0 {
			continue
		}
		bestI := 0
		for i := range s.cands[slot] {
			if i > 0 && time.Now().After(s.until) {
				break // out of this kernel's share of the budget
			}
			if cur[slot+"."+kernelField] == i+1 {
				continue // the starting kernel itself
			}
			cand := maps.Clone(cur)
			cand[slot+"."+kernelField] = i + 1
			s.tried++
			res.Tried = s.tried
			s.progress(fmt.Sprintf("microkernel %d/%d, %d rejected", i+1, len(s.cands[slot]), len(res.Rejected)))
			v, ok, err := s.try(res, cur, cand)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			if s.opt.Log != nil && s.opt.Trace != nil {
				fmt.Fprintf(s.opt.Log, "%s: microkernel %v: %.3f× (win %v)\n", s.k.Name, s.cands[slot][i], v.speedup, v.win)
			}
			if v.win && v.speedup > bestSpeed {
				bestI, bestSpeed = i+1, v.speedup
			}
		}
		if bestI > 0 {
			cur[slot+"."+kernelField] = bestI
		}
	}
	seen := map[string]bool{s.key(cur): true}
	queue := s.neighbours(cur)
	stuck := 0
	for step := 0; step == 0 || time.Now().Before(s.until); step++ {
		var cand map[string]int
		switch {
		case s.opt.Extra != nil && step%4 == 3:
			cand = s.opt.Extra(cur)
		case step%3 == 2 || len(queue) == 0:
			cand = s.mutate(cur)
		default:
			cand, queue = queue[0], queue[1:]
		}
		if k := s.key(cand); seen[k] {
			// Stuck where every move was tried: widen the random moves, and stop when even those
			// find nothing new.
			if stuck++; stuck%16 == 0 {
				s.span++
			}
			if stuck > 1000 {
				break
			}
			continue
		} else {
			seen[k] = true
			stuck = 0
		}
		s.tried++
		res.Tried = s.tried
		s.progress(fmt.Sprintf("%d rejected, best %.3f×", len(res.Rejected), bestSpeed))
		v, ok, err := s.try(res, cur, cand)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if v.win {
			cur = cand
			bestSpeed *= v.speedup
			queue = s.neighbours(cur)
		}
	}
	// The result against the true default, measured with twice the pairs; kept only when faster beyond
	// noise on some shape and slower on none.
	res.Found = cur
	best := map[string]int{}
	for k, v := range cur {
		if res.Default[k] != v {
			best[k] = v
		}
	}
	if len(best) == 0 {
		res.Found = kernelValues(res.Found, s.cands)
		return res, nil
	}
	def := maps.Clone(res.Default)
	v, err := s.compare(def, cur, 2*s.opt.Pairs, true)
	if err != nil {
		return nil, err
	}
	res.Speedup, res.Noise, res.Faster = v.speedup, v.noise, v.faster
	if v.win {
		res.Best = kernelValues(best, s.cands)
	}
	res.Found = kernelValues(res.Found, s.cands)
	return res, nil
}

// try checks cand against the interpreter on ragged shapes and, when it passes, times it against cur;
// ok is false when cand was rejected (wrong on the check, or it faulted on a timing shape).
func (s *search) try(res *Result, cur, cand map[string]int) (v verdict, ok bool, err error) {
	if err := s.check(cand); err != nil {
		s.reject(res, cand, err)
		return v, false, nil
	}
	v, err = s.compare(cur, cand, s.opt.Pairs, false)
	if errors.Is(err, errCrashed) {
		s.reject(res, cand, err)
		return v, false, nil
	}
	return v, err == nil, err
}

func (s *search) reject(res *Result, cand map[string]int, err error) {
	res.Rejected = append(res.Rejected, Rejection{Cfg: cand, Err: err.Error()})
	if s.opt.Log != nil {
		if s.opt.Progress != nil {
			fmt.Fprint(s.opt.Progress, "\r\033[K")
		}
		fmt.Fprintf(s.opt.Log, "%s: rejected %s: %v\n", s.k.Name, cfgString(cand), firstLine(err.Error()))
	}
}

// check runs the interpreter comparison for cand, and again with its thresholds overridden so that each
// version of every GEMM slot (packed, unpacked, rows) runs with cand's blocks on the ragged shapes: a
// threshold only chooses among versions, and which one a ragged shape takes must not hide a block that
// breaks another (the shapes of the check are small, the tuning shapes larger).
func (s *search) check(cand map[string]int) error {
	forced := []map[string]int{{}, {"SmallWork": 0, "SmallDeep": 0, "RowsMax": 0}, {"SmallWork": 1 << 40, "RowsMax": 0}, {"RowsMax": 1 << 30}}
	for _, f := range forced {
		c := maps.Clone(cand)
		for _, slot := range s.slots {
			for k, v := range f {
				c[slot+"."+k] = v
			}
		}
		if err := s.d.check(s.k.Name, c); err != nil {
			if len(f) > 0 {
				return fmt.Errorf("with %v: %w", f, err)
			}
			return err
		}
	}
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// driver is the running tuning driver process.
type driver struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *bytes.Buffer
	dir    string
	bin    string
	opt    Options
}

type driverInfo struct {
	Variant string
	Slots   map[string]map[string]int
}

// startDriver generates the scratch package of the kernels under Root, builds the driver and starts it.
func startDriver(opt Options, f *parse.File, ks []*ir.Kernel, slots map[string][]string, isa string, cands map[string]map[string][]map[string]int) (*driver, error) {
	root := opt.Root
	if root == "" {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/kgen-dev/kgen").Output()
		if err != nil {
			return nil, fmt.Errorf("finding kgen's module (run kgen tune inside it): %v", err)
		}
		root = strings.TrimSpace(string(out))
	}
	// A directory starting with "_": go's ./... patterns skip it, and an import path may contain it.
	dir, err := os.MkdirTemp(root, "_kgentune")
	if err != nil {
		return nil, err
	}
	d := &driver{dir: dir, opt: opt}
	ok := false
	defer func() {
		if !ok {
			d.close()
		}
	}()
	var names []string
	for _, k := range ks {
		names = append(names, k.Name)
	}
	kdsl := filepath.Join(dir, "tune.kdsl")
	text := parse.Print(KernelFile(f, names...))
	if err := os.WriteFile(kdsl, []byte(text), 0o644); err != nil {
		return nil, err
	}
	lock := ""
	if len(cands) > 0 {
		hashes, err := KernelHashes(kdsl, []byte(text))
		if err != nil {
			return nil, err
		}
		lock = filepath.Join(dir, "tune.lock")
		if err := os.WriteFile(lock, candidateLock(lock, hashes, isa, cands).Format(), 0o644); err != nil {
			return nil, err
		}
	}
	pkg := filepath.Join(dir, "tunepkg")
	if err := opt.Generate(kdsl, pkg, "tunepkg", lock); err != nil {
		return nil, fmt.Errorf("generating the scratch package: %v", err)
	}
	src, err := driverSource("tunepkg", "github.com/kgen-dev/kgen", ks, slots, len(cands) > 0)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(pkg, "tune_driver_test.go"), src, 0o644); err != nil {
		return nil, err
	}
	if opt.Progress != nil {
		fmt.Fprintf(opt.Progress, "\r\033[Kkgen tune: building the driver of %d kernels...", len(ks))
	}
	d.bin = filepath.Join(dir, "driver.test")
	build := exec.Command("go", "test", "-c", "-o", d.bin, ".")
	build.Dir = pkg
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the tuning driver: %v\n%s", err, out)
	}
	if err := d.start(); err != nil {
		return nil, err
	}
	if opt.Variant != "" {
		if _, err := d.call(map[string]any{"op": "use", "variant": opt.Variant}); err != nil {
			return nil, err
		}
	}
	ok = true
	return d, nil
}

func (d *driver) start() error {
	d.cmd = exec.Command(d.bin, "-test.run=^TestTuneDriver_$")
	d.cmd.Env = append(os.Environ(), "KGEN_TUNE_DRIVER=1")
	d.stderr = &bytes.Buffer{}
	d.cmd.Stderr = d.stderr
	var err error
	if d.in, err = d.cmd.StdinPipe(); err != nil {
		return err
	}
	out, err := d.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	d.out = bufio.NewReaderSize(out, 1<<20)
	return d.cmd.Start()
}

func (d *driver) close() {
	if d.cmd != nil && d.cmd.Process != nil {
		d.in.Close()
		d.cmd.Wait()
	}
	if d.dir != "" {
		os.RemoveAll(d.dir)
	}
}

var errCrashed = errors.New("the driver process died")

// call sends one request and reads its answer; a crash of the driver (a candidate that faults) is an
// error of that request, and the driver is started again for the next.
func (d *driver) call(req map[string]any) (json.RawMessage, error) {
	b, _ := json.Marshal(req)
	if _, err := d.in.Write(append(b, '\n')); err == nil {
		line, err := d.out.ReadBytes('\n')
		if err == nil && bytes.HasPrefix(line, []byte("{")) {
			var r struct{ Err string }
			if err := json.Unmarshal(line, &r); err != nil {
				return nil, err
			}
			if r.Err != "" {
				return nil, errors.New(r.Err)
			}
			return line, nil
		}
	}
	d.in.Close()
	d.cmd.Wait()
	msg := firstLine(strings.TrimSpace(d.stderr.String()))
	if err := d.start(); err != nil {
		return nil, err
	}
	if d.opt.Variant != "" {
		if _, err := d.call(map[string]any{"op": "use", "variant": d.opt.Variant}); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: %s", errCrashed, msg)
}

func (d *driver) info() (driverInfo, error) {
	var info driverInfo
	line, err := d.call(map[string]any{"op": "info"})
	if err == nil {
		err = json.Unmarshal(line, &info)
	}
	return info, err
}

func (d *driver) check(kernel string, cfg map[string]int) error {
	_, err := d.call(map[string]any{"op": "check", "kernel": kernel, "cfg": cfg})
	return err
}

func (d *driver) time(kernel string, dims, a, b map[string]int, pairs int, batch time.Duration) (ta, tb []float64, err error) {
	line, err := d.call(map[string]any{"op": "time", "kernel": kernel, "dims": dims, "a": a, "b": b, "pairs": pairs, "batch_ns": float64(batch.Nanoseconds())})
	if err != nil {
		return nil, nil, err
	}
	var r struct{ TA, TB []float64 }
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, nil, err
	}
	if len(r.TA) == 0 || len(r.TA) != len(r.TB) {
		return nil, nil, fmt.Errorf("driver: %d and %d timings", len(r.TA), len(r.TB))
	}
	return r.TA, r.TB, nil
}
