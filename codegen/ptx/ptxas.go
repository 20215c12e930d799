package ptx

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// This file runs NVIDIA's assembler for the backend's tests and for kgen tune's GPU candidates (one
// copy of the tool search and of the reading of ptxas -v).

// FindTool finds one of NVIDIA's tools (ptxas, cuobjdump): $env, then PATH, then .tools/ in dir or a
// directory above it (scripts/setup.sh puts them there).
func FindTool(name, env, dir string) (string, error) {
	if p := os.Getenv(env); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for ; ; d = filepath.Dir(d) {
		p := filepath.Join(d, ".tools", name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return "", fmt.Errorf("no %s: set %s, put it on PATH, or run scripts/setup.sh", name, env)
}

// PtxasStats is what ptxas -v reports for one entry function.
type PtxasStats struct {
	Regs, Smem              int
	SpillStores, SpillLoads int
	Stack                   int
}

// SpillBytes is the entry's spill traffic, stores and loads.
func (s PtxasStats) SpillBytes() int { return s.SpillStores + s.SpillLoads }

var (
	reFunc  = regexp.MustCompile(`Compiling entry function '([^']+)'`)
	reSpill = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	reRegs  = regexp.MustCompile(`Used (\d+) registers`)
	reSmem  = regexp.MustCompile(`(\d+) bytes smem`)
)

// RunPtxas assembles a PTX module with ptxas -v for arch and returns each entry's figures; the error
// carries ptxas's message. Safe to call from several goroutines.
func RunPtxas(ptxas, arch, text string) (map[string]PtxasStats, error) {
	dir, err := os.MkdirTemp("", "kgen-ptx-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "k.ptx")
	if err := os.WriteFile(src, []byte(text), 0o644); err != nil {
		return nil, err
	}
	out, err := exec.Command(ptxas, "-arch="+arch, "-v", "-o", filepath.Join(dir, "k.cubin"), src).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("ptxas -arch=%s: %v: %s", arch, err, strings.TrimSpace(string(out)))
	}
	return ParsePtxasV(string(out)), nil
}

// ParsePtxasV reads ptxas -v output (one "Compiling entry function" block per entry).
func ParsePtxasV(out string) map[string]PtxasStats {
	stats := map[string]PtxasStats{}
	cur := ""
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	for _, line := range regexp.MustCompile(`\r?\n`).Split(out, -1) {
		if m := reFunc.FindStringSubmatch(line); m != nil {
			cur = m[1]
			stats[cur] = PtxasStats{}
			continue
		}
		if cur == "" {
			continue
		}
		s := stats[cur]
		if m := reSpill.FindStringSubmatch(line); m != nil {
			s.Stack, s.SpillStores, s.SpillLoads = atoi(m[1]), atoi(m[2]), atoi(m[3])
		}
		if m := reRegs.FindStringSubmatch(line); m != nil {
			s.Regs = atoi(m[1])
			if m := reSmem.FindStringSubmatch(line); m != nil {
				s.Smem = atoi(m[1])
			}
		}
		stats[cur] = s
	}
	return stats
}
