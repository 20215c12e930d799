package report

import (
	"math"
	"slices"
	"strings"
)

// Stats summarises the per-round times of one library on one shape. Each
// round's figure is the median of that round's repetitions; Median, Min and
// Max are taken over the rounds.
type Stats struct {
	N                int     // rounds
	Median, Min, Max float64 // seconds per call
}

// Summarize returns the statistics of the per-round times; the zero Stats
// (N = 0) for none. Non-positive and NaN times (failed rounds) are ignored.
func Summarize(rounds []float64) Stats {
	var ok []float64
	for _, x := range rounds {
		if x > 0 && !math.IsNaN(x) && !math.IsInf(x, 0) {
			ok = append(ok, x)
		}
	}
	if len(ok) == 0 {
		return Stats{}
	}
	return Stats{N: len(ok), Median: Median(ok), Min: slices.Min(ok), Max: slices.Max(ok)}
}

// Spread is (Max − Min) / Median, the relative width of the rounds' range
// (0 for a single round, NaN for none).
func (s Stats) Spread() float64 {
	if s.N == 0 || s.Median <= 0 {
		return math.NaN()
	}
	return (s.Max - s.Min) / s.Median
}

// MinNoiseRounds is the fewest rounds for which a ratio's interval means
// anything: with R paired rounds, the interval [min, max] of the per-round
// ratios holds the true median ratio with probability 1 − 2·(1/2)^R when
// the rounds are independent (75% for 3 rounds, 94% for 5, 98% for 7).
const MinNoiseRounds = 3

// Verdicts of a Ratio.
const (
	Leads       = "leads"        // the whole interval is above 1
	Behind      = "behind"       // the whole interval is below 1
	WithinNoise = "within noise" // the interval contains 1.0
	TooFew      = "too few rounds"
)

// Ratio compares kgen with a peer on one shape: kgen's speed over the
// peer's, i.e. peer time / kgen time (> 1: kgen is faster).
type Ratio struct {
	Peer         string  // the peer compared with
	Median       float64 // median of the per-round ratios
	Lo, Hi       float64 // the interval: min and max of the per-round ratios
	Rounds       int     // paired rounds used
	Verdict      string  // Leads, Behind, WithinNoise or TooFew
	CoverageNote string  // e.g. "94%": the interval's coverage of the median for Rounds rounds
}

// Coverage is the probability that [min, max] of n independent samples
// contains their distribution's median: 1 − 2·(1/2)^n.
func Coverage(n int) float64 {
	if n < 2 {
		return 0
	}
	return 1 - 2*math.Pow(0.5, float64(n))
}

// Compare pairs kgen's and the peer's times round by round (round i of
// each ran back to back, so slow phases of a noisy host hit both), forms
// the ratios peer[i]/kgen[i], and summarises them. Rounds where either
// time is missing (≤ 0 or NaN) are dropped. The rule: "within noise" when
// Lo ≤ 1 ≤ Hi, "leads" when Lo > 1, "behind" when Hi < 1, and no verdict
// with fewer than MinNoiseRounds paired rounds.
func Compare(peer string, kgen, peerTimes []float64) Ratio {
	var rs []float64
	for i := 0; i < min(len(kgen), len(peerTimes)); i++ {
		k, p := kgen[i], peerTimes[i]
		if k > 0 && p > 0 && !math.IsNaN(k) && !math.IsNaN(p) && !math.IsInf(k, 0) && !math.IsInf(p, 0) {
			rs = append(rs, p/k)
		}
	}
	r := Ratio{Peer: peer, Rounds: len(rs), Median: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	if len(rs) == 0 {
		r.Verdict = TooFew
		return r
	}
	r.Median, r.Lo, r.Hi = Median(rs), slices.Min(rs), slices.Max(rs)
	r.CoverageNote = fmtPct(100 * Coverage(len(rs)))
	switch {
	case len(rs) < MinNoiseRounds:
		r.Verdict = TooFew
	case r.Lo > 1:
		r.Verdict = Leads
	case r.Hi < 1:
		r.Verdict = Behind
	default:
		r.Verdict = WithinNoise
	}
	return r
}

// IsKgen reports whether library name is one of kgen's (kgen, kgen-go...):
// those get a ratio against the best peer; every other library is a peer.
func IsKgen(name string) bool { return name == "kgen" || strings.HasPrefix(name, "kgen-") }

// BestPeer returns the index in rs of the fastest peer (lowest median over
// rounds) among the results for job j that succeeded, or -1.
func BestPeer(rs []Result, j Job) int {
	best := -1
	for i, r := range rs {
		if r.Job != j || IsKgen(r.Library) || r.Err != "" || r.Median <= 0 {
			continue
		}
		if best < 0 || r.Median < rs[best].Median {
			best = i
		}
	}
	return best
}

// Ratios returns, for each result of a kgen library in rs, its Ratio
// against the best peer of the same job (keyed by index in rs). Results
// without a peer, or that failed, get no entry.
func Ratios(rs []Result) map[int]Ratio {
	out := map[int]Ratio{}
	for i, r := range rs {
		if !IsKgen(r.Library) || r.Err != "" || r.Median <= 0 {
			continue
		}
		b := BestPeer(rs, r.Job)
		if b < 0 {
			continue
		}
		out[i] = Compare(rs[b].Library, r.Rounds, rs[b].Rounds)
	}
	return out
}
