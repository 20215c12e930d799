package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"time"

	"github.com/kgen-dev/kgen/bench/internal/report"
	"github.com/kgen-dev/kgen/bench/internal/run"
)

// The parent and a peer child talk over pipes, one JSON value per line:
// the child first writes a hello; then, for each request the parent
// writes, it runs one round of the job (or answers a ping) and writes one
// report.Result. The child lives as long as the parent's run, so a round
// costs one request/answer round trip (measured by pings, printed) and not
// a process start, a dlopen, a thread-pool start and an operand fill.

// peerInfo is the configuration a peer child runs.
type peerInfo struct {
	Config string   `json:"config"`          // OpenBLAS core name, BLIS arch string
	Archs  []string `json:"archs,omitempty"` // BLIS: bli_arch_string(0), (1), ... (the BLIS_ARCH_TYPE numbers)
}

// hello is the first line a peer child writes.
type hello struct {
	Kernel string `json:"kernel"`
	Detail string `json:"detail"`
	peerInfo
	Err string `json:"error,omitempty"`
}

// request is one line the parent writes to a peer child.
type request struct {
	Job  *report.Job `json:"job,omitempty"`
	Ping bool        `json:"ping,omitempty"`
}

const pong = "pong"

// child serves requests on stdin until it closes.
func child(c config) error {
	runtime.GOMAXPROCS(c.threads)
	path := c.obPath
	if c.peer == "blis" {
		path = c.blisPath
	}
	enc := json.NewEncoder(os.Stdout)
	lib, info, err := openPeer(c.peer, path, c.threads)
	if err != nil {
		return enc.Encode(hello{Err: err.Error()})
	}
	if err := enc.Encode(hello{Kernel: lib.Kernel, Detail: lib.Detail, peerInfo: info}); err != nil {
		return err
	}
	rn := run.NewRunner(lib)
	o := run.Options{Reps: c.reps, MinTime: c.minTime, Threads: c.threads}
	dec := json.NewDecoder(bufio.NewReader(os.Stdin))
	for {
		var rq request
		if err := dec.Decode(&rq); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		var res report.Result
		switch {
		case rq.Ping:
			res.Library = pong
		case rq.Job != nil:
			res = rn.Round(*rq.Job, o)
		default:
			res.Err = "empty request"
		}
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
}

// measurer runs one round of a job on one library.
type measurer interface {
	name() string
	kernel() string // "kernel: detail" for the libraries list
	round(j report.Job) report.Result
	close() error
}

type inProc struct {
	rn *run.Runner
	o  run.Options
}

func (m inProc) name() string                     { return m.rn.Lib.Name }
func (m inProc) kernel() string                   { return m.rn.Lib.Kernel + ": " + m.rn.Lib.Detail }
func (m inProc) round(j report.Job) report.Result { return m.rn.Round(j, m.o) }
func (m inProc) close() error                     { return nil }

// peerProc is a long-lived peer child.
type peerProc struct {
	lib     string
	threads int
	h       hello
	cmd     *exec.Cmd
	in      io.WriteCloser
	enc     *json.Encoder
	dec     *json.Decoder
	dead    error
	startup time.Duration // from exec to the hello
}

// startPeer starts the child for peer name with environment env and waits
// for its hello.
func startPeer(c config, name string, env []string) (*peerProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"-peer", name, "-threads", strconv.Itoa(c.threads), "-reps", strconv.Itoa(c.reps),
		"-mintime", c.minTime.String(), "-openblas-lib", c.obPath, "-blis-lib", c.blisPath}
	cmd := exec.Command(exe, args...)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &peerProc{lib: name, threads: c.threads, cmd: cmd, in: in, enc: json.NewEncoder(in), dec: json.NewDecoder(bufio.NewReader(out))}
	if err := p.dec.Decode(&p.h); err != nil || p.h.Err != "" {
		in.Close()
		io.Copy(io.Discard, out)
		cmd.Wait()
		if p.h.Err != "" {
			return nil, fmt.Errorf("%s: %s", name, p.h.Err)
		}
		return nil, fmt.Errorf("%s: no answer from the child process (%v)", name, err)
	}
	p.startup = time.Since(t0)
	return p, nil
}

func (p *peerProc) name() string   { return p.lib }
func (p *peerProc) kernel() string { return p.h.Kernel + ": " + p.h.Detail }

func (p *peerProc) ask(rq request) (report.Result, error) {
	if p.dead != nil {
		return report.Result{}, p.dead
	}
	var res report.Result
	if err := p.enc.Encode(rq); err != nil {
		p.dead = fmt.Errorf("child process failed: %v", err)
		return res, p.dead
	}
	if err := p.dec.Decode(&res); err != nil {
		p.dead = fmt.Errorf("child process failed: %v", err)
		return res, p.dead
	}
	return res, nil
}

func (p *peerProc) round(j report.Job) report.Result {
	res, err := p.ask(request{Job: &j})
	if err != nil {
		return report.Result{Job: j, Library: p.lib, Kernel: p.h.Kernel, Threads: p.threads, Err: err.Error()}
	}
	return res
}

// roundTrip is the median time of n ping round trips.
func (p *peerProc) roundTrip(n int) (time.Duration, error) {
	var ts []float64
	for i := 0; i < n; i++ {
		t0 := time.Now()
		res, err := p.ask(request{Ping: true})
		if err != nil {
			return 0, err
		}
		if res.Library != pong {
			return 0, errors.New("bad answer to a ping")
		}
		ts = append(ts, float64(time.Since(t0)))
	}
	return time.Duration(report.Median(ts)), nil
}

// close ends the child (its stdin closes) and waits for it.
func (p *peerProc) close() error {
	p.in.Close()
	return p.cmd.Wait()
}
