package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress is a textual progress bar: redrawn in place on a terminal, one
// line per step otherwise.
type progress struct {
	w           io.Writer
	total, done int
	tty         bool
	start       time.Time
}

func newProgress(w io.Writer, total int) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progress{w: w, total: max(total, 1), tty: tty, start: time.Now()}
}

// bar renders done of total steps in width cells.
func bar(done, total, width int) string {
	n := min(width, done*width/max(total, 1))
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

// step announces the step now starting.
func (p *progress) step(what string) {
	line := fmt.Sprintf("%s %3d/%d %5.0fs  %s", bar(p.done, p.total, 30), p.done, p.total, time.Since(p.start).Seconds(), what)
	p.done++
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
}

// setTotal changes the number of steps (once the libraries that start are known).
func (p *progress) setTotal(n int) { p.total = max(n, 1) }

// finish ends the bar.
func (p *progress) finish() {
	line := fmt.Sprintf("%s %3d/%d %5.0fs  done", bar(p.total, p.total, 30), p.total, p.total, time.Since(p.start).Seconds())
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s\n", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
}
