package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/kgen-dev/kgen/bench/internal/peercfg"
)

// forceVar is the environment variable that forces peer name's kernels.
func forceVar(name string) string {
	switch name {
	case "openblas":
		return "OPENBLAS_CORETYPE"
	case "blis":
		return "BLIS_ARCH_TYPE"
	}
	return ""
}

// peerEnv is the child's environment: parent (ours, os.Environ()) without
// any library variable, plus the thread counts and, when force is not
// empty, the peer's forcing variable (forceVar) set to force.
func peerEnv(c config, name, force string, parent []string) []string {
	drop := []string{"OPENBLAS_", "BLIS_", "OMP_NUM_THREADS=", "GOMAXPROCS="}
	var env []string
	for _, e := range parent {
		keep := true
		for _, d := range drop {
			if strings.HasPrefix(e, d) {
				keep = false
			}
		}
		if keep {
			env = append(env, e)
		}
	}
	t := strconv.Itoa(c.threads)
	env = append(env, "GOMAXPROCS="+t, "OMP_NUM_THREADS="+t)
	switch name {
	case "openblas":
		env = append(env, "OPENBLAS_NUM_THREADS="+t)
	case "blis":
		env = append(env, "BLIS_NUM_THREADS="+t)
	}
	if force != "" && forceVar(name) != "" {
		env = append(env, forceVar(name)+"="+force)
	}
	return env
}

// forceValue is what forceVar takes for choice ch: the core name for
// OpenBLAS, the arch_t number for BLIS.
func forceValue(name string, ch peercfg.Choice) string {
	if name == "blis" {
		return strconv.Itoa(ch.ID)
	}
	return ch.Name
}

// startConfigured starts peer name's child in the best configuration for
// host and returns it with a sentence saying what runs and why. With the
// peer's flag (-openblas-coretype, -blis-arch) not "auto", it starts the
// child as the flag says. Otherwise it starts the peer once unforced to see
// what it detects (and, for BLIS, which configurations it names), asks
// package peercfg for better candidates, and starts the first candidate the
// child confirms running (a configuration may be named but not compiled
// in); with none, the peer runs what it detects.
func startConfigured(c config, name string, host peercfg.CPU) (*peerProc, string, error) {
	flagVal := c.coretype
	if name == "blis" {
		flagVal = c.blisArch
	}
	env := os.Environ()
	if flagVal != "auto" {
		p, err := startPeer(c, name, peerEnv(c, name, flagVal, env))
		if err != nil {
			return nil, fmt.Sprintf("%s: %v", name, err), err
		}
		if flagVal == "" {
			return p, fmt.Sprintf("%s: runs %q as it detects it (not forced: flag empty)", name, p.h.Config), nil
		}
		return p, fmt.Sprintf("%s: runs %q (%s=%s from the flag)", name, p.h.Config, forceVar(name), flagVal), nil
	}
	probe, err := startPeer(c, name, peerEnv(c, name, "", env))
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", name, err), err
	}
	detected, archs := probe.h.Config, probe.h.Archs
	probe.close()
	var cands []peercfg.Choice
	switch name {
	case "openblas":
		if ch, ok := peercfg.OpenBLAS(host, detected); ok {
			cands = append(cands, ch)
		}
	case "blis":
		cands = peercfg.BLIS(host, detected, archs)
	}
	var tried []string
	for _, ch := range cands {
		v := forceValue(name, ch)
		p, err := startPeer(c, name, peerEnv(c, name, v, env))
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s=%s failed (%v)", forceVar(name), v, err))
			continue
		}
		if !strings.EqualFold(p.h.Config, ch.Name) {
			tried = append(tried, fmt.Sprintf("%s=%s ran %q, not %s", forceVar(name), v, p.h.Config, ch.Name))
			p.close()
			continue
		}
		note := fmt.Sprintf("%s: detects %q; forced %s (%s=%s): %s", name, detected, ch.Name, forceVar(name), v, ch.Why)
		if len(tried) > 0 {
			note += "; first tried " + strings.Join(tried, ", ")
		}
		return p, note, nil
	}
	p, err := startPeer(c, name, peerEnv(c, name, "", env))
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", name, err), err
	}
	note := fmt.Sprintf("%s: runs %q as it detects it: the best it has for %s", name, detected, host.ISA())
	if len(tried) > 0 {
		note = fmt.Sprintf("%s: runs %q as it detects it: %s", name, detected, strings.Join(tried, ", "))
	}
	return p, note, nil
}
