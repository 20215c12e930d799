//go:build purego || !(amd64 || arm64)

package probe

func hostPeaks() []peakKernel { return goPeaks }

func extraFeatures() []string { return nil }

func hostMem() memKernel { return goMem }

// hostClock: no clock loop in portable code (the compiler may schedule a Go add chain freely).
func hostClock() (run func(iters int), adds int) { return nil, 0 }
