package target

import (
	"fmt"
	"slices"
	"strings"
)

// A target spec is a target of the table, optionally with a sub-target after a colon: "ptx:sm_80",
// "ptx:sm_90a", "msl", "msl:3.1". The sub-target picks the instructions the passes may use (the MMA
// shapes of target/mma.go); the rest of the model (caches, knobs, the pass pipeline) is the target's.
// A bare GPU target means its first sub-target.

// subTargets lists the sub-targets of each target that has them, the default first.
var subTargets = map[string][]string{
	"ptx": {"sm_80", "sm_90a"},
	"msl": {"3.0", "3.1"},
}

// freeSubs lists the targets whose sub-target is free-form, with its default: llvm takes any LLVM target
// triple (the backend, not this table, knows which triples LLVM accepts).
var freeSubs = map[string]string{"llvm": "x86_64-unknown-linux-gnu"}

// SubTargets returns the known sub-targets of target name, the default first (nil when it has none).
func SubTargets(name string) []string { return slices.Clone(subTargets[name]) }

// ParseSpec splits a target spec into the target and its sub-target (the default one when the spec
// names none and the target has sub-targets). Unknown targets and sub-targets are errors that list the
// known ones.
func ParseSpec(spec string) (name, sub string, err error) {
	name, sub, hasSub := strings.Cut(spec, ":")
	if _, ok := static[name]; !ok {
		return "", "", fmt.Errorf("unknown target %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	if def, ok := freeSubs[name]; ok {
		if !hasSub {
			return name, def, nil
		}
		if !validTriple(sub) {
			return "", "", fmt.Errorf("bad %s sub-target %q: want a target triple such as %s (letters, digits, '_', '.', separated by '-')", name, sub, def)
		}
		return name, sub, nil
	}
	subs := subTargets[name]
	if !hasSub {
		if len(subs) > 0 {
			sub = subs[0]
		}
		return name, sub, nil
	}
	if !slices.Contains(subs, sub) {
		if len(subs) == 0 {
			return "", "", fmt.Errorf("target %s has no sub-targets (%q given)", name, spec)
		}
		return "", "", fmt.Errorf("unknown sub-target %q of %s (known: %s)", sub, name, strings.Join(qualified(name, subs), ", "))
	}
	return name, sub, nil
}

func qualified(name string, subs []string) []string {
	out := make([]string, len(subs))
	for i, s := range subs {
		out[i] = name + ":" + s
	}
	return out
}

// Spec returns m's target spec: its name, with its sub-target after a colon when it has one.
func (m Machine) Spec() string {
	if m.Sub == "" {
		return m.Name
	}
	return m.Name + ":" + m.Sub
}

// MMAKey is the key of m's shapes in the MMA table (MMAShapes, LookupMMA): the PTX sub-target selects
// mma.sync (sm_80) or wgmma (sm_90a); Metal's shapes are one list for every version; llvm with
// 64-byte vectors (Host on an AVX-512 machine) takes its AVX-512-wide tiles.
func (m Machine) MMAKey() string {
	if m.Name == "ptx" && m.Sub != "" {
		return m.Spec()
	}
	if m.Name == "llvm" && m.VecBytes >= 64 {
		return "llvm:avx512" // the wide register tile for 32 zmm registers
	}
	return m.Name
}

// validTriple reports whether s looks like an LLVM target triple: two or more non-empty parts of
// letters, digits, '_' and '.' separated by '-'.
func validTriple(s string) bool {
	parts := strings.Split(s, "-")
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if p == "" {
			return false
		}
		for _, c := range p {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
				return false
			}
		}
	}
	return true
}

// ParseSpecList parses a comma-separated list of target specs as `kgen gen -targets` takes it: a token
// with a colon or naming a target starts a spec; any other token continues the sub-targets of the spec
// before it, so "go,ptx:sm_80,sm_90a,msl" is go, ptx:sm_80, ptx:sm_90a and msl:3.0. Every spec comes
// back complete (its sub-target filled in when the target has them), without duplicates, in order.
func ParseSpecList(list string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	prev := ""
	for _, tok := range strings.Split(list, ",") {
		tok = strings.TrimSpace(tok)
		if tok == "" {
			continue
		}
		spec := tok
		if _, isTarget := static[tok]; !isTarget && !strings.Contains(tok, ":") && prev != "" {
			if _, free := freeSubs[prev]; free || len(subTargets[prev]) > 0 {
				spec = prev + ":" + tok
			}
		}
		name, sub, err := ParseSpec(spec)
		if err != nil {
			return nil, err
		}
		prev = name
		if sub != "" {
			spec = name + ":" + sub
		}
		if !seen[spec] {
			seen[spec] = true
			out = append(out, spec)
		}
	}
	return out, nil
}
