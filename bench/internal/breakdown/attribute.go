package breakdown

import (
	"fmt"
	"sort"
	"time"

	"github.com/google/pprof/profile"
)

// Breakdown is the attribution of one profile.
type Breakdown struct {
	Samples int64                        // profiler samples (a record of the profile may stand for several)
	CPU     time.Duration                // sampled CPU time, all threads
	ByCat   [NumCategories]time.Duration // CPU time per category
	ByFunc  map[string]time.Duration     // CPU time per leaf function (short name; "+edge" for edge lines)
}

// Frac is category c's share of the sampled CPU time (0 without samples).
func (b Breakdown) Frac(c Category) float64 {
	if b.CPU <= 0 {
		return 0
	}
	return float64(b.ByCat[c]) / float64(b.CPU)
}

// TopFuncs returns the n leaf functions with the most CPU time, most first.
func (b Breakdown) TopFuncs(n int) []string {
	type kv struct {
		k string
		v time.Duration
	}
	var s []kv
	for k, v := range b.ByFunc {
		s = append(s, kv{k, v})
	}
	sort.Slice(s, func(i, j int) bool { return s[i].v > s[j].v || s[i].v == s[j].v && s[i].k < s[j].k })
	var out []string
	for i := 0; i < min(n, len(s)); i++ {
		out = append(out, s[i].k)
	}
	return out
}

// cpuIndex finds the sample value holding CPU time in nanoseconds.
func cpuIndex(p *profile.Profile) (int, error) {
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			return i, nil
		}
	}
	return 0, fmt.Errorf("breakdown: the profile has no cpu/nanoseconds sample type (%d types)", len(p.SampleType))
}

// Stack returns a sample's frames, leaf first; inlined functions appear as
// their own frames (pprof lists a location's lines innermost first).
func Stack(s *profile.Sample) []Frame {
	var out []Frame
	for _, loc := range s.Location {
		for _, ln := range loc.Line {
			f := Frame{Line: int(ln.Line)}
			if ln.Function != nil {
				f.Func, f.File = ln.Function.Name, ln.Function.Filename
			}
			out = append(out, f)
		}
	}
	return out
}

// countIndex finds the sample value counting samples (-1 if none).
func countIndex(p *profile.Profile) int {
	for i, st := range p.SampleType {
		if st.Type == "samples" && st.Unit == "count" {
			return i
		}
	}
	return -1
}

// Attribute classifies every sample of p (see Classify) and sums their CPU
// time per category and per leaf function.
func Attribute(p *profile.Profile, labels LabelFunc) (Breakdown, error) {
	vi, err := cpuIndex(p)
	if err != nil {
		return Breakdown{}, err
	}
	ci := countIndex(p)
	b := Breakdown{ByFunc: map[string]time.Duration{}}
	for _, s := range p.Sample {
		if vi >= len(s.Value) {
			continue
		}
		d := time.Duration(s.Value[vi])
		st := Stack(s)
		c := Classify(st, labels)
		if ci >= 0 && ci < len(s.Value) {
			b.Samples += s.Value[ci] // identical stacks are merged into one record
		} else {
			b.Samples++
		}
		b.CPU += d
		b.ByCat[c] += d
		name := "?"
		if len(st) > 0 {
			name = short(st[0].Func)
		}
		if _, n := pkgAndName(name); c == Edges && microRE.MatchString(n) {
			name += " (edge paths)"
		}
		b.ByFunc[name] += d
	}
	return b, nil
}
