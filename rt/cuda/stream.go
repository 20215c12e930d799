package cuda

import (
	"sync"
	"time"
)

// Stream is a CUDA stream (CUstream): work queued on one stream runs in order.
type Stream struct {
	ctx *Context
	h   uintptr

	mu     sync.Mutex
	closed bool
}

// NewStream creates a stream that does not synchronize with the default stream
// (cuStreamCreate with CU_STREAM_NON_BLOCKING).
func (c *Context) NewStream() (*Stream, error) {
	var h uintptr
	if err := c.do(func(a *api) error { return check("cuStreamCreate", a.cuStreamCreate(&h, 1)) }); err != nil {
		return nil, err
	}
	return &Stream{ctx: c, h: h}, nil
}

func (s *Stream) live() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

// Synchronize waits until all work queued on the stream has finished (cuStreamSynchronize).
func (s *Stream) Synchronize() error {
	if err := s.live(); err != nil {
		return err
	}
	return s.ctx.do(func(a *api) error { return check("cuStreamSynchronize", a.cuStreamSynchronize(s.h)) })
}

// Close destroys the stream (cuStreamDestroy_v2) once its queued work is done. Closing twice is a no-op.
func (s *Stream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.ctx.do(func(a *api) error { return check("cuStreamDestroy_v2", a.cuStreamDestroy(s.h)) })
}

// Event is a CUDA event (CUevent), used to time work on a stream.
type Event struct {
	ctx *Context
	h   uintptr

	mu     sync.Mutex
	closed bool
}

// NewEvent creates an event that records timing (cuEventCreate with CU_EVENT_DEFAULT).
func (c *Context) NewEvent() (*Event, error) {
	var h uintptr
	if err := c.do(func(a *api) error { return check("cuEventCreate", a.cuEventCreate(&h, 0)) }); err != nil {
		return nil, err
	}
	return &Event{ctx: c, h: h}, nil
}

func (e *Event) live() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	return nil
}

// Record queues the event on stream s (nil: the default stream).
func (e *Event) Record(s *Stream) error {
	if err := e.live(); err != nil {
		return err
	}
	var h uintptr
	if s != nil {
		if err := s.live(); err != nil {
			return err
		}
		h = s.h
	}
	return e.ctx.do(func(a *api) error { return check("cuEventRecord", a.cuEventRecord(e.h, h)) })
}

// Synchronize waits until the work queued before the event's last Record has finished.
func (e *Event) Synchronize() error {
	if err := e.live(); err != nil {
		return err
	}
	return e.ctx.do(func(a *api) error { return check("cuEventSynchronize", a.cuEventSynchronize(e.h)) })
}

// Elapsed returns the GPU time between two recorded, completed events (cuEventElapsedTime,
// resolution about 0.5 µs).
func Elapsed(start, end *Event) (time.Duration, error) {
	if err := start.live(); err != nil {
		return 0, err
	}
	if err := end.live(); err != nil {
		return 0, err
	}
	var ms float32
	err := start.ctx.do(func(a *api) error { return check("cuEventElapsedTime", a.cuEventElapsedTime(&ms, start.h, end.h)) })
	return time.Duration(float64(ms) * float64(time.Millisecond)), err
}

// Close destroys the event (cuEventDestroy_v2). Closing twice is a no-op.
func (e *Event) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	return e.ctx.do(func(a *api) error { return check("cuEventDestroy_v2", a.cuEventDestroy(e.h)) })
}
