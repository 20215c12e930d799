package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/passes"
	"github.com/kgen-dev/kgen/target"
	"github.com/kgen-dev/kgen/tune"
)

// lockFlagHelp documents the -lock flag of gen and ir.
const lockFlagHelp = "kgen.lock to apply (default: kgen.lock beside the .kdsl file when there is one; none: no lock)"

// kgenLock is the lock of a kdsl file and the hashes of its kernels: nil when there is none.
type kgenLock struct {
	lock   *tune.Lock
	hashes map[string]string
	warned map[string]bool
}

// loadLocked reads and checks one kdsl file (load) and reads its lock (readLock).
func loadLocked(path, lockFlag string) ([]*ir.Kernel, *kgenLock, error) {
	ks, err := load(path)
	if err != nil {
		return nil, nil, err
	}
	kl, err := readLock(path, lockFlag)
	return ks, kl, err
}

// readLock reads the lock a -lock flag names for the kdsl file at path ("" for the default place).
func readLock(path, flagVal string) (*kgenLock, error) {
	lp := flagVal
	switch flagVal {
	case "none":
		return nil, nil
	case "":
		lp = filepath.Join(filepath.Dir(path), "kgen.lock")
		if _, err := os.Stat(lp); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	l, err := tune.Load(lp)
	if err != nil {
		return nil, err
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	h, err := tune.KernelHashes(path, src)
	if err != nil {
		return nil, err
	}
	return &kgenLock{lock: l, hashes: h, warned: map[string]bool{}}, nil
}

// compile compiles k for m with the lock's values for it (passes.Options.Tuned); stale entries are
// warned about once and left out, and an entry naming a symbol that is not a run-time plan symbol of the
// kernel is an error.
func (kl *kgenLock) compile(k *ir.Kernel, m target.Machine, opt passes.Options, stderr io.Writer) (*ir.Func, error) {
	if kl == nil {
		return passes.Compile(k, m, opt)
	}
	tuned, stale := kl.lock.Tuned(k.Name, kl.hashes[k.Name], m.Name)
	for _, e := range stale {
		if key := fmt.Sprint(e.Line); !kl.warned[key] {
			kl.warned[key] = true
			fmt.Fprintf(stderr, "kgen: warning: %s:%d: kernel %s changed since it was tuned: entry not applied (kgen verify lists stale entries)\n", kl.lock.Path, e.Line, k.Name)
		}
	}
	if tune.IsGPUTarget(m.Name) {
		// A GPU entry's values are applied by the backend (gpuPlan), not by the passes.
		return passes.Compile(k, m, opt)
	}
	opt.Tuned = tuned
	f, err := passes.Compile(k, m, opt)
	if err != nil {
		return nil, err
	}
	if err := kl.lock.Check(f, kl.hashes[k.Name], m.Name); err != nil {
		return nil, err
	}
	return f, nil
}

// gpuPlan returns the lock's fresh values for k on GPU target m (its sub-target the entry's variant),
// for the backend (codegen.Kernel.GPUPlan); nil without an entry. The values become constants of the
// generated code (block shape, shared memory), so one entry a kernel and sub-target may apply: entries
// of two GPU classes for it are an error.
func (kl *kgenLock) gpuPlan(k *ir.Kernel, m target.Machine) (map[string]int, error) {
	if kl == nil || !tune.IsGPUTarget(m.Name) {
		return nil, nil
	}
	var plan map[string]int
	var at []tune.Entry
	for _, e := range kl.lock.Entries {
		if e.Kernel == k.Name && e.Target == m.Name && e.Variant == m.Sub && e.Hash == kl.hashes[k.Name] {
			at = append(at, e)
		}
	}
	switch len(at) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, fmt.Errorf("%s:%d: kernel %s has entries for %s/%s of two GPU classes (%s on line %d, %s here): kgen gen compiles one plan a kernel and sub-target; keep one",
			kl.lock.Path, at[1].Line, k.Name, m.Name, m.Sub, at[0].Class, at[0].Line, at[1].Class)
	}
	plan, err := tune.GPUPlan(m.Name, m.Sub, at[0].Values)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %v", kl.lock.Path, at[0].Line, err)
	}
	return plan, nil
}
