package gpuprobe

import (
	"errors"
	"time"

	"github.com/kgen-dev/kgen/rt/cuda"
)

// Events times work queued on a context's default stream between two events.
type Events struct{ start, end *cuda.Event }

// NewEvents makes the two events in ctx.
func NewEvents(ctx *cuda.Context) (*Events, error) {
	start, err := ctx.NewEvent()
	if err != nil {
		return nil, err
	}
	end, err := ctx.NewEvent()
	if err != nil {
		start.Close()
		return nil, err
	}
	return &Events{start, end}, nil
}

// Close releases the events.
func (e *Events) Close() {
	e.start.Close()
	e.end.Close()
}

// Time records the start event, runs queue (which queues work on the default stream), records the end
// event, waits for it and returns the time between the two.
func (e *Events) Time(queue func() error) (time.Duration, error) {
	if err := e.start.Record(nil); err != nil {
		return 0, err
	}
	if err := queue(); err != nil {
		return 0, err
	}
	if err := e.end.Record(nil); err != nil {
		return 0, err
	}
	if err := e.end.Synchronize(); err != nil {
		return 0, err
	}
	return cuda.Elapsed(e.start, e.end)
}

// ErrNoTime is Best's error when no run measured a positive time.
var ErrNoTime = errors.New("the events measured no time")

// Best is the shortest positive Time of n runs of queue.
func (e *Events) Best(n int, queue func() error) (time.Duration, error) {
	best := time.Duration(0)
	for r := 0; r < n; r++ {
		d, err := e.Time(queue)
		if err != nil {
			return 0, err
		}
		if d > 0 && (best == 0 || d < best) {
			best = d
		}
	}
	if best == 0 {
		return 0, ErrNoTime
	}
	return best, nil
}
