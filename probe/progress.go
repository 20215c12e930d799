package probe

import (
	"fmt"
	"io"
	"strings"
)

// Progress shows Measure's steps on w: on a terminal one bar redrawn in place, elsewhere one plain line
// per finished step. A nil *Progress shows nothing.
type Progress struct {
	w           io.Writer
	term        bool
	done, total int
}

// NewProgress returns a Progress writing to w; term says whether w is a terminal.
func NewProgress(w io.Writer, term bool) *Progress { return &Progress{w: w, term: term} }

func (p *Progress) grow(n int) {
	if p != nil {
		p.total += n
	}
}

func (p *Progress) step(what, result string) {
	if p == nil {
		return
	}
	p.done++
	line := what
	if result != "" {
		line += ": " + result
	}
	if !p.term {
		fmt.Fprintf(p.w, "kgen probe: %s\n", line)
		return
	}
	const width = 30
	fill := width * p.done / max(p.total, 1)
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d %s", strings.Repeat("#", fill), strings.Repeat(".", width-fill), p.done, p.total, line)
}

// Note prints one message on its own line (above the bar on a terminal).
func (p *Progress) Note(msg string) {
	if p == nil {
		return
	}
	if p.term {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, "kgen probe: %s\n", msg)
}

func (p *Progress) finish() {
	if p != nil && p.term {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
