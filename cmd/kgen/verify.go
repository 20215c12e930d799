package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kgen-dev/kgen/passes"
	"github.com/kgen-dev/kgen/probe"
	"github.com/kgen-dev/kgen/target"
	"github.com/kgen-dev/kgen/tune"
)

// cmdVerify checks that a lock is fresh for a kdsl file: every entry's kernel exists with the hash it
// was tuned at, its symbols are run-time plan symbols of that kernel, and, with -profile, its class is
// the profile's. It lists every stale entry and fails when there is one.
func cmdVerify(args []string, stdout, stderr io.Writer) error {
	flags := newFlags("verify", stderr, "[-lock kgen.lock] [-profile p.json] file.kdsl")
	lockPath := flags.String("lock", "", "the lock (default: kgen.lock beside the .kdsl file)")
	profile := flags.String("profile", "", "machine profile (kgen probe): entries of other classes are stale too")
	if err := parseFlags(flags, args); err != nil {
		return err
	}
	path, err := oneFile(flags)
	if err != nil {
		return err
	}
	if *lockPath == "" {
		*lockPath = filepath.Join(filepath.Dir(path), "kgen.lock")
		if _, err := os.Stat(*lockPath); errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stdout, "kgen verify: no %s: nothing to verify\n", *lockPath)
			return nil
		}
	}
	class, gpuClasses := "", []string{}
	if *profile != "" {
		p, err := probe.Load(*profile)
		if err != nil {
			return err
		}
		class = p.Class()
		for _, g := range p.GPUs {
			gpuClasses = append(gpuClasses, g.Class())
		}
	}
	ks, kl, err := loadLocked(path, *lockPath)
	if err != nil {
		return err
	}
	if kl == nil {
		return usageError{"-lock none: nothing to verify"}
	}
	problems := tune.Verify(kl.lock, path, kl.hashes, class, gpuClasses...)
	// The fresh entries must also apply: compile their kernels with them.
	for _, k := range ks {
		for _, tgt := range kl.lock.Targets(k.Name) {
			m, err := target.Lookup(tgt)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: target %s: %v", kl.lock.Path, tgt, err))
				continue
			}
			if _, err := kl.compile(k, m, passes.Options{}, io.Discard); err != nil {
				problems = append(problems, err.Error())
			}
			if _, err := kl.gpuPlan(k, m); err != nil {
				problems = append(problems, err.Error())
			}
		}
	}
	for _, p := range problems {
		fmt.Fprintln(stderr, cleanMessage(p))
	}
	if len(problems) > 0 {
		return compileError{fmt.Sprintf("kgen verify: %s: %d problems (stale or invalid entries)\n", kl.lock.Path, len(problems))}
	}
	fmt.Fprintf(stdout, "kgen verify: %s: %d entries fresh for %s\n", kl.lock.Path, len(kl.lock.Entries), path)
	return nil
}
