//go:build peers && cgo

package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kgen-dev/kgen/bench/internal/peercfg"
	"github.com/kgen-dev/kgen/bench/internal/report"
	"github.com/kgen-dev/kgen/bench/peers/blis"
	"github.com/kgen-dev/kgen/bench/peers/openblas"
)

// TestMain lets the test binary serve as a peer child: startPeer re-executes
// os.Executable() (here, the test binary) with -peer NAME.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "-peer" {
		c, err := parseConfig(os.Args[1:])
		if err == nil {
			err = child(c)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "test peer child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// needLib skips (or, with KGEN_REQUIRE_TOOLS=1, fails) without the library.
func needLib(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("KGEN_REQUIRE_TOOLS") == "1" {
			t.Fatalf("%s missing (run bench/setup-peers.sh): %v", path, err)
		}
		t.Skipf("%s missing (run bench/setup-peers.sh)", path)
	}
}

// The peers, configured for this CPU and driven over pipes through
// interleaved rounds, give checked results and say what they run.
func TestPeersEndToEnd(t *testing.T) {
	needLib(t, openblas.DefaultPath)
	needLib(t, blis.DefaultPath)
	c, err := parseConfig([]string{"-threads", "1", "-reps", "1", "-mintime", "1ms"})
	if err != nil {
		t.Fatal(err)
	}
	host := peercfg.Host()
	var ms []measurer
	config := map[string]string{}
	defer func() {
		for _, m := range ms {
			m.close()
		}
	}()
	for _, name := range []string{"openblas", "blis"} {
		p, note, err := startConfigured(c, name, host)
		if err != nil {
			t.Fatalf("%s: %v (%s)", name, err, note)
		}
		t.Logf("%s", note)
		ms = append(ms, p)
		config[name] = p.h.Config
		if p.h.Config == "" {
			t.Errorf("%s reports no configuration", name)
		}
		// BLIS 0.9.0 detects new AVX-512 CPUs as "generic": auto must not leave it there.
		if name == "blis" && host.AVX512() && p.h.Config == "generic" {
			t.Errorf("blis runs generic on an AVX-512 CPU: %s", note)
		}
		if name == "blis" && len(p.h.Archs) == 0 {
			t.Error("blis named no configurations")
		}
		if rt, err := p.roundTrip(3); err != nil || rt <= 0 || rt > time.Second {
			t.Errorf("%s round trip %v %v", name, rt, err)
		}
	}
	jobs := []report.Job{
		{Kind: report.Square, Op: "sgemm", M: 37, K: 29, N: 41, Batch: 1},
		{Kind: report.Square, Op: "dgemm", M: 13, K: 7, N: 5, Batch: 1},
		{Kind: report.Batch, Op: "sgemm", M: 8, K: 8, N: 8, Batch: 7},
	}
	rs := interleave(ms, jobs, 3, 0, func(measurer, report.Job, int) {})
	if len(rs) != len(jobs)*len(ms) {
		t.Fatalf("%d results", len(rs))
	}
	for _, r := range rs {
		if r.Err != "" || len(r.Rounds) != 3 || r.Median <= 0 || r.Min > r.Median || r.Max < r.Median {
			t.Errorf("%s %s %s: %+v", r.Library, r.Op, r.Shape(), r)
		}
		if !strings.Contains(r.Kernel, config[r.Library]) {
			t.Errorf("%s: kernel %q does not name its configuration %q", r.Library, r.Kernel, config[r.Library])
		}
	}
}

// A configuration that BLIS names but was not built with fails cleanly (an
// error, not a hang or a wrong label); knc (arch 2) is not in Debian's build.
func TestBLISUnbuiltConfig(t *testing.T) {
	needLib(t, blis.DefaultPath)
	c, err := parseConfig([]string{"-blis-arch", "2"})
	if err != nil {
		t.Fatal(err)
	}
	p, note, err := startConfigured(c, "blis", peercfg.Host())
	if err == nil {
		defer p.close()
		if p.h.Config == "knc" {
			t.Skip("this BLIS was built with knc")
		}
		t.Logf("BLIS_ARCH_TYPE=2 ran %q: %s", p.h.Config, note)
		if !strings.Contains(note, p.h.Config) {
			t.Errorf("the note %q hides what ran (%q)", note, p.h.Config)
		}
		return
	}
	t.Logf("BLIS_ARCH_TYPE=2: %v", err)
}
