// Package peercfg chooses the configuration each peer library should run
// on this CPU: the OpenBLAS core (OPENBLAS_CORETYPE) and the BLIS
// configuration (BLIS_ARCH_TYPE), from what the CPU has rather than from
// the libraries' own detection, which lags new CPUs (BLIS 0.9.0 runs its
// "generic" reference kernels on an AMD Zen 5; OpenBLAS 0.3.21 picked
// Prescott SSE3 kernels on a Sapphire Rapids Xeon under KVM). The choice is
// pure (CPU features in, candidates out) so that it is testable.
package peercfg

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/cpu"
)

// CPU is what the choice looks at.
type CPU struct {
	Vendor        string // "AMD", "Intel" or what /proc/cpuinfo says
	Family, Model int
	SSE3, SSSE3   bool
	AVX, AVX2     bool
	FMA           bool
	AVX512F       bool
	AVX512DQ      bool
	AVX512BW      bool
	AVX512VL      bool
	AVX512BF16    bool
}

// AVX512 reports whether the CPU has the AVX-512 subsets the libraries'
// skx-class kernels use (F, DQ, BW, VL).
func (c CPU) AVX512() bool { return c.AVX512F && c.AVX512DQ && c.AVX512BW && c.AVX512VL }

// ISA names the widest vector ISA the choice uses.
func (c CPU) ISA() string {
	switch {
	case c.AVX512():
		return "AVX-512 F/DQ/BW/VL"
	case c.AVX2 && c.FMA:
		return "AVX2+FMA"
	case c.AVX:
		return "AVX"
	case c.SSSE3 || c.SSE3:
		return "SSE3"
	}
	return "baseline x86-64"
}

// Cap returns c held to vector ISA isa: "" leaves c as it is; "avx2" drops
// the AVX-512 subsets (the choice then picks the libraries' AVX2 kernels, as
// on a CPU without AVX-512); "avx512" drops only BF16. It fails when c lacks
// isa or isa is none of these.
func (c CPU) Cap(isa string) (CPU, error) {
	switch isa {
	case "":
		return c, nil
	case "avx2":
		if !c.AVX2 || !c.FMA {
			return c, fmt.Errorf("this CPU has no AVX2+FMA (it has %s)", c.ISA())
		}
		c.AVX512F, c.AVX512DQ, c.AVX512BW, c.AVX512VL, c.AVX512BF16 = false, false, false, false, false
		return c, nil
	case "avx512":
		if !c.AVX512() {
			return c, fmt.Errorf("this CPU has no AVX-512 F/DQ/BW/VL (it has %s)", c.ISA())
		}
		c.AVX512BF16 = false
		return c, nil
	}
	return c, fmt.Errorf("unknown ISA %q (want avx2 or avx512)", isa)
}

// Host returns this machine's CPU (x/sys/cpu for the features,
// /proc/cpuinfo for the vendor, family and model; missing fields stay zero).
func Host() CPU {
	c := CPU{
		SSE3: cpu.X86.HasSSE3, SSSE3: cpu.X86.HasSSSE3, AVX: cpu.X86.HasAVX, AVX2: cpu.X86.HasAVX2, FMA: cpu.X86.HasFMA,
		AVX512F: cpu.X86.HasAVX512F, AVX512DQ: cpu.X86.HasAVX512DQ, AVX512BW: cpu.X86.HasAVX512BW,
		AVX512VL: cpu.X86.HasAVX512VL, AVX512BF16: cpu.X86.HasAVX512BF16,
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		c.Vendor, c.Family, c.Model = parseCPUInfo(f)
	}
	return c
}

// parseCPUInfo reads the first processor's vendor, family and model.
func parseCPUInfo(r io.Reader) (vendor string, family, model int) {
	sc := bufio.NewScanner(r)
	seen := 0
	for sc.Scan() && seen < 3 {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "vendor_id":
			switch v {
			case "AuthenticAMD", "HygonGenuine":
				vendor = "AMD"
			case "GenuineIntel":
				vendor = "Intel"
			default:
				vendor = v
			}
			seen++
		case "cpu family":
			family, _ = strconv.Atoi(v)
			seen++
		case "model":
			model, _ = strconv.Atoi(v)
			seen++
		}
	}
	return vendor, family, model
}

// Zen returns the AMD Zen generation (1–5) from the family and model, or 0.
// Family 0x17 is Zen/Zen+ (models < 0x30) and Zen 2; 0x19 is Zen 3 and
// Zen 4 (models 0x10–0x1f and 0x60–0xaf); 0x1a is Zen 5.
func (c CPU) Zen() int {
	if c.Vendor != "AMD" {
		return 0
	}
	switch c.Family {
	case 0x17:
		if c.Model >= 0x30 {
			return 2
		}
		return 1
	case 0x19:
		if (c.Model >= 0x10 && c.Model <= 0x1f) || (c.Model >= 0x60 && c.Model <= 0xaf) {
			return 4
		}
		return 3
	case 0x1a:
		return 5
	}
	return 0
}
