// Package gpuprobe finds CUDA GPUs for kgen probe (probe.Options.GPUs). It is separate from package
// probe because it links rt/cuda and purego: generated kernel packages import probe for the machine
// class and must not pull in a GPU driver binding.
package gpuprobe

import (
	"fmt"
	"github.com/kgen-dev/kgen/probe"
	"math"

	"github.com/kgen-dev/kgen/rt/cuda"
)

// CUDA lists the CUDA devices with their SM count, shared memory (per SM, and per block with the
// opt-in), a measured write bandwidth and, from sm_80 on, a copy bandwidth (copyBandwidth) and an
// mma.sync peak (mmaPeak), and says in
// note what it found and what it could not measure (or why there is no GPU). No GPU is not an error:
// the list is then empty.
func CUDA(quick bool) (gpus []probe.GPU, note string) {
	drv, err := cuda.Open()
	if err != nil {
		if cuda.IsNoDevice(err) {
			return nil, "no CUDA GPU (" + err.Error() + ")"
		}
		return nil, "CUDA driver unusable: " + err.Error()
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return nil, "CUDA device count: " + err.Error()
	}
	for i := 0; i < n; i++ {
		dev, err := drv.Device(i)
		if err != nil {
			return gpus, fmt.Sprintf("CUDA device %d: %v", i, err)
		}
		props, err := dev.Props()
		if err != nil {
			return gpus, fmt.Sprintf("CUDA device %d: %v", i, err)
		}
		g := probe.GPU{API: "cuda", Name: props.Name, Arch: fmt.Sprintf("sm_%d", props.SM()),
			Units: props.Multiprocessors, SharedBytes: props.SharedMemoryPerSM, SharedPerBlock: props.SharedMemoryPerBlockOptin}
		g.BandwidthGBs, err = memsetBandwidth(dev, quick)
		if err != nil {
			note += fmt.Sprintf("CUDA device %d: bandwidth not measured: %v; ", i, err)
		}
		if props.SM() >= 80 {
			if g.CopyGBs, err = copyBandwidth(dev, props.Multiprocessors, quick); err != nil {
				note += fmt.Sprintf("CUDA device %d: copy bandwidth not measured: %v; ", i, err)
			}
			peak, err := mmaPeak(dev, props.Multiprocessors, quick)
			if err != nil {
				note += fmt.Sprintf("CUDA device %d: mma peak not measured: %v; ", i, err)
			} else {
				g.PeakTFLOPs = map[string]float64{"mma.m16n8k16/bf16": peak}
			}
		}
		gpus = append(gpus, g)
	}
	return gpus, note + fmt.Sprintf("%d CUDA device(s)", len(gpus))
}

// memsetBandwidth times cuMemsetD8 over a memSize buffer between two events on the default stream: a
// write bandwidth of device memory, GB/s, the best of 5.
func memsetBandwidth(dev *cuda.Device, quick bool) (float64, error) {
	size := memSize(quick)
	return bench(dev, "", "", func(ctx *cuda.Context, _ *cuda.Function, ev *Events) (float64, error) {
		buf, err := ctx.Alloc(size)
		if err != nil {
			return 0, err
		}
		defer buf.Free()
		best, err := ev.Best(5, buf.Zero)
		if err != nil {
			return 0, err
		}
		return math.Round(1000*float64(size)/best.Seconds()/1e9) / 1000, nil
	})
}

// memSize is the working set of the bandwidth figures: 256 MiB, 64 MiB with quick.
func memSize(quick bool) int {
	if quick {
		return 64 << 20
	}
	return 256 << 20
}

// bench runs measure on dev's primary context with a pair of events and, when text is not empty, the
// function entry of PTX module text loaded there; it releases them all afterwards.
func bench(dev *cuda.Device, text, entry string, measure func(*cuda.Context, *cuda.Function, *Events) (float64, error)) (float64, error) {
	ctx, err := dev.PrimaryContext()
	if err != nil {
		return 0, err
	}
	defer ctx.Close()
	var fn *cuda.Function
	if text != "" {
		mod, err := ctx.LoadModule([]byte(text))
		if err != nil {
			return 0, err
		}
		defer mod.Unload()
		if fn, err = mod.Function(entry); err != nil {
			return 0, err
		}
	}
	ev, err := NewEvents(ctx)
	if err != nil {
		return 0, err
	}
	defer ev.Close()
	return measure(ctx, fn, ev)
}
