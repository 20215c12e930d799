// Package probe describes the machine a kernel package runs on: the profile `kgen probe` measures and
// writes as JSON, and that `kgen tune` keys its lockfile by. This file is the contract between them; the
// measurements live beside it.
package probe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"

	"golang.org/x/sys/cpu"
)

// Version is the profile format's version; Load refuses other versions.
const Version = 1

// Profile is one machine's measured capabilities. Every field is plain data with a stable JSON key, so
// that two profiles of the same machine differ only in measured figures.
type Profile struct {
	Version int    `json:"version"`
	GOOS    string `json:"goos"`
	GOARCH  string `json:"goarch"`
	// CPU is the processor's model name as the OS reports it ("" when unknown).
	CPU string `json:"cpu"`
	// ISA is the best vector level kgen's generated code selects on this CPU: avx512bf16, avx512, avx2 or
	// go on amd64; neon or go on arm64; go elsewhere.
	ISA string `json:"isa"`
	// Features are the CPU features relevant to kernels (sorted lower-case names, e.g. "avx512fp16").
	Features []string `json:"features"`
	Cores    int      `json:"cores"`
	// Caches are the data/unified cache levels, L1 first.
	Caches []Cache `json:"caches"`
	// ClockGHz is the clock measured on a chain of dependent one-cycle integer adds (the frequency scalar
	// code runs at; wide vector code may run slower), 0 where not measured. It bounds Peak: a core does
	// at most (vector FMA pipes × lanes × 2) flops per cycle.
	ClockGHz float64 `json:"clock_ghz,omitempty"`
	// Peak is the measured FMA throughput, GFLOP/s, keyed "<isa>/<type>/<cores>c" (e.g. "avx512/f32/1c").
	// isa is the instruction set the loop needs: avx2, avx512 (VFMADD231PS/PD), avx512bf16 (VDPBF16PS,
	// type bf16: 4 flops per f32 lane), avx512fp16 (VFMADD231PH, type f16), neon (FMLA) or go (portable
	// scalar Go: a multiply and an add, fused or not as the compiler chooses).
	Peak map[string]float64 `json:"peak_gflops,omitempty"`
	// Bandwidth is the measured bandwidth, GB/s, keyed "<level>/<kind>/<cores>c" (level L1, L2, L3, DRAM;
	// kind read or copy; copy counts the bytes read plus the bytes written). Working sets: half of L1,
	// half of L2, half of L3 per core, 4× L3 for DRAM.
	Bandwidth map[string]float64 `json:"bandwidth_gbs,omitempty"`
	// LatencyNS is the measured load-to-use latency, ns, keyed by level.
	LatencyNS map[string]float64 `json:"latency_ns,omitempty"`
	// GPUs are the accelerators found (empty without one).
	GPUs []GPU `json:"gpus,omitempty"`
	// GPU says what the GPU probe found: "none (reason)" without a GPU ("none (no CUDA GPU (cuda: no
	// CUDA driver: ...))"), else the prober's note ("1 CUDA device(s)", what it could not measure).
	GPU string `json:"gpu,omitempty"`
}

// Cache is one cache level.
type Cache struct {
	Level int `json:"level"`
	Size  int `json:"size_bytes"`
	Ways  int `json:"ways"`
	Line  int `json:"line_bytes"`
	// Source says where the size came from: "sysfs", "cpuid" or "measured".
	Source string `json:"source"`
}

// GPU is one accelerator's profile.
type GPU struct {
	API         string `json:"api"` // cuda or metal
	Name        string `json:"name"`
	Arch        string `json:"arch"` // sm_90, apple9, ...
	Units       int    `json:"units"`
	SharedBytes int    `json:"shared_bytes"`
	// SharedPerBlock is the shared memory one block may use with the opt-in, bytes.
	SharedPerBlock int `json:"shared_per_block_bytes,omitempty"`
	// BandwidthGBs is the device memory's write bandwidth (cuMemsetD8); CopyGBs its copy bandwidth
	// (a copy kernel, bytes read plus bytes written), GB/s.
	BandwidthGBs float64 `json:"bandwidth_gbs,omitempty"`
	CopyGBs      float64 `json:"copy_gbs,omitempty"`
	// PeakTFLOPs is the measured tensor-core throughput keyed by the instruction and types, e.g.
	// "mma.m16n8k16/bf16" (gpuprobe's microbenchmark).
	PeakTFLOPs map[string]float64 `json:"peak_tflops,omitempty"`
}

// Class is the class of a GPU that its tuned plans (kgen.lock entries of a GPU target) hold for: API,
// architecture and multiprocessor count, "cuda-sm90-132sm" (the shared memory follows from the
// architecture; clocks and bandwidth do not enter the class).
func (g GPU) Class() string {
	return fmt.Sprintf("%s-%s-%dsm", g.API, strings.ReplaceAll(g.Arch, "_", ""), g.Units)
}

// Class is the coarse machine class a tuned schedule is valid for: architecture, vector level, core count
// and the L1/L2 sizes per core (the quantities the register tiles and cache blocks depend on). Two
// machines of one class may share a lock entry; measured figures do not enter the class.
func (p *Profile) Class() string {
	s := fmt.Sprintf("%s-%s-c%d", p.GOARCH, p.ISA, p.Cores)
	for _, c := range p.Caches {
		if c.Level <= 2 {
			s += fmt.Sprintf("-l%d_%s", c.Level, sizeName(c.Size))
		}
	}
	return s
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmt.Sprint(n)
}

// Marshal writes p as indented JSON with sorted keys and a final newline.
func (p *Profile) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Load reads a profile written by Marshal.
func Load(path string) (*Profile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p Profile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%s: not a kgen machine profile: %v", path, err)
	}
	if p.Version != Version {
		return nil, fmt.Errorf("%s: profile version %d, want %d (run kgen probe again)", path, p.Version, Version)
	}
	return &p, nil
}

// Static returns what is known about this machine without measuring: OS, architecture, CPU model,
// features, vector level, cores and cache sizes (Linux sysfs, else CPUID). The measured maps are empty.
func Static() *Profile {
	p := facts()
	p.CPU = cpuModel()
	return p
}

// HostClass is Static().Class() without reading the CPU's model name (/proc/cpuinfo, long on machines
// with many cores): the class a generated package compares with its kgen.lock classes at init (NearestHost).
func HostClass() string { return facts().Class() }

// facts is Static without the model name.
func facts() *Profile {
	p := &Profile{Version: Version, GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, Cores: runtime.NumCPU(), ISA: "go"}
	switch runtime.GOARCH {
	case "amd64":
		f := map[string]bool{"avx2": cpu.X86.HasAVX2, "fma": cpu.X86.HasFMA, "f16c": cpu.X86.HasF16C,
			"avx512f": cpu.X86.HasAVX512F, "avx512dq": cpu.X86.HasAVX512DQ, "avx512vl": cpu.X86.HasAVX512VL,
			"avx512bw": cpu.X86.HasAVX512BW, "avx512bf16": cpu.X86.HasAVX512BF16,
			"amx_bf16": cpu.X86.HasAMXBF16, "avx512vnni": cpu.X86.HasAVX512VNNI}
		for k, v := range f {
			if v {
				p.Features = append(p.Features, k)
			}
		}
		switch {
		case f["avx512f"] && f["avx512dq"] && f["avx512vl"] && f["avx2"] && f["fma"] && f["avx512bf16"]:
			p.ISA = "avx512bf16"
		case f["avx512f"] && f["avx512dq"] && f["avx512vl"] && f["avx2"] && f["fma"]:
			p.ISA = "avx512"
		case f["avx2"] && f["fma"]:
			p.ISA = "avx2"
		}
	case "arm64":
		p.ISA = "neon"
		if cpu.ARM64.HasFPHP && cpu.ARM64.HasASIMDHP {
			p.Features = append(p.Features, "fp16")
		}
	}
	p.Features = append(p.Features, extraFeatures()...)
	sort.Strings(p.Features)
	p.Caches = HostCaches()
	return p
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
