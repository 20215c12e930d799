package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kgen-dev/kgen/check"
	"github.com/kgen-dev/kgen/ir"
	"github.com/kgen-dev/kgen/probe"
	"github.com/kgen-dev/kgen/rt/cuda"
	"github.com/kgen-dev/kgen/target"
	"github.com/kgen-dev/kgen/tune"
)

// gpuTuneJob is what kgen tune -target ptx:... works on.
type gpuTuneJob struct {
	path     string
	src      []byte
	spec     string // ptx:sm_90a
	kernels  []string
	shapes   []tune.Shape
	budget   time.Duration
	lockPath string
}

// tuneGPU checks the GPU plan candidates of the kdsl file's GEMMs (tune.RunGPU: ptxas, shared memory,
// the emulator against the interpreter on ragged shapes) and times the verified ones on a GPU of the
// sub-target's architecture when the CUDA driver has one; without one it says how many candidates it
// verified and that it cannot time them, and leaves the lock alone.
func tuneGPU(j gpuTuneJob, stdout, stderr io.Writer) error {
	m, err := target.Lookup(j.spec)
	if err != nil {
		return usageError{"-target: " + err.Error()}
	}
	if _, ok := tune.GPUSymbols[m.Name+"/"+m.Sub]; !ok {
		return usageError{fmt.Sprintf("-target %s: %s/%s has no tunable GPU plan symbol (tunable: %s)", j.spec, m.Name, m.Sub, strings.Join(gpuTunable(), ", "))}
	}
	ks, err := check.File(j.path, string(j.src))
	if err != nil {
		return err
	}
	for _, n := range j.kernels {
		if !slices.ContainsFunc(ks, func(k *ir.Kernel) bool { return k.Name == n }) {
			return usageError{fmt.Sprintf("-kernels: no kernel %s in %s", n, j.path)}
		}
	}
	if len(j.kernels) > 0 {
		ks = slices.DeleteFunc(ks, func(k *ir.Kernel) bool { return !slices.Contains(j.kernels, k.Name) })
	}
	ptxas, err := tune.FindTool("ptxas", "KGEN_PTXAS", filepath.Dir(j.path))
	if err != nil {
		if wd, werr := os.Getwd(); werr == nil {
			ptxas, err = tune.FindTool("ptxas", "KGEN_PTXAS", wd)
		}
		if err != nil {
			return fmt.Errorf("kgen tune -target %s checks every candidate with ptxas: %v", j.spec, err)
		}
	}
	timer, class, why := openGPUTimer(m.Sub)
	if timer != nil {
		defer timer.Close()
	}
	results := tune.RunGPU(tune.GPUOptions{
		Check:   tune.GPUCheck{Target: m.Name, Variant: m.Sub, Ptxas: ptxas},
		Kernels: ks, Shapes: j.shapes, Budget: j.budget, Timer: gpuTimerOrNil(timer), Log: stderr,
	})
	checked, verified, rejected, unchecked := 0, 0, 0, 0
	for _, r := range results {
		checked += len(r.Verdicts)
		verified += r.Verified()
		rejected += len(r.Verdicts) - r.Verified()
		unchecked += r.Unchecked
	}
	if unchecked > 0 {
		fmt.Fprintf(stdout, "kgen tune: the budget left %d candidates unchecked (and untimed)\n", unchecked)
	}
	if len(results) == 0 {
		return compileError{fmt.Sprintf("kgen tune: %s: no kernel has a GEMM of the %s production version to tune\n", j.path, j.spec)}
	}
	if timer == nil {
		fmt.Fprintf(stdout, "kgen tune: %s: verified %d of %d candidates of %d kernels (%d rejected); cannot time them: %s; %s not written\n",
			j.spec, verified, checked, len(results), rejected, why, j.lockPath)
		return nil
	}
	hashes, err := tune.KernelHashes(j.path, j.src)
	if err != nil {
		return err
	}
	entries := tune.GPUEntries(results, hashes, m.Name, m.Sub, class)
	lock := &tune.Lock{Path: j.lockPath}
	if _, err := os.Stat(j.lockPath); err == nil {
		if lock, err = tune.Load(j.lockPath); err != nil {
			return err
		}
	}
	for _, e := range entries {
		lock.Set(e)
	}
	f, err := newPendingFile(j.lockPath)
	if err != nil {
		return err
	}
	defer f.abort()
	if err := f.commit(lock.Format()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "kgen tune: %s, class %s: verified %d of %d candidates (%d rejected); %d of %d kernels faster; wrote %s\n",
		j.spec, class, verified, checked, rejected, len(entries), len(results), j.lockPath)
	return nil
}

func gpuTunable() []string {
	var out []string
	for tv := range tune.GPUSymbols {
		out = append(out, strings.Replace(tv, "/", ":", 1))
	}
	slices.Sort(out)
	return out
}

// gpuTimerOrNil keeps a nil *cudaTimer from becoming a non-nil interface.
func gpuTimerOrNil(t *cudaTimer) tune.GPUTimer {
	if t == nil {
		return nil
	}
	return t
}

// openGPUTimer opens the first CUDA device that runs sub-target sub's code (sm_90a: compute capability
// 9.0 exactly) and returns a timer on it with the device's class (probe.GPU.Class), or nil and why not.
func openGPUTimer(sub string) (t *cudaTimer, class, why string) {
	drv, err := cuda.Open()
	if err != nil {
		if cuda.IsNoDevice(err) {
			return nil, "", "no GPU (" + err.Error() + ")"
		}
		return nil, "", "CUDA driver unusable: " + err.Error()
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return nil, "", "CUDA device count: " + err.Error()
	}
	var seen []string
	for i := 0; i < n; i++ {
		dev, err := drv.Device(i)
		if err != nil {
			return nil, "", fmt.Sprintf("CUDA device %d: %v", i, err)
		}
		props, err := dev.Props()
		if err != nil {
			return nil, "", fmt.Sprintf("CUDA device %d: %v", i, err)
		}
		arch := fmt.Sprintf("sm_%d", props.SM())
		seen = append(seen, arch)
		if strings.TrimSuffix(sub, "a") != arch {
			continue
		}
		t, err := newCUDATimer(dev)
		if err != nil {
			return nil, "", fmt.Sprintf("CUDA device %d: %v", i, err)
		}
		g := probe.GPU{API: "cuda", Arch: arch, Units: props.Multiprocessors}
		return t, g.Class(), ""
	}
	return nil, "", fmt.Sprintf("no GPU runs %s code (devices: %s)", sub, strings.Join(seen, ", "))
}
