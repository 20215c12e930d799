package metal

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// Library is an MTLLibrary compiled from Metal Shading Language source at run time.
type Library struct {
	dev      *Device
	h        handle
	warnings string

	mu     sync.Mutex
	closed bool
}

// Compile compiles MSL source for language version v (Metal30 or Metal31) with
// newLibraryWithSource:options:error:. On failure the *Error carries the compiler's diagnostics
// (the NSError's localizedDescription). src must be valid UTF-8 without NUL bytes; an empty source
// is refused.
func (d *Device) Compile(src string, v LanguageVersion) (*Library, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	if err := checkSource(src); err != nil {
		return nil, err
	}
	if v>>16 < 1 || v>>16 > 0xffff {
		return nil, fmt.Errorf("metal: Compile: language version %#x is not (major<<16)+minor", uint64(v))
	}
	h, warnings, err := d.drv.compile(src, v)
	if err != nil {
		return nil, err
	}
	return &Library{dev: d, h: h, warnings: warnings}, nil
}

// checkSource refuses what NSString or the compiler would misread: invalid UTF-8
// (initWithBytes:length:encoding: returns nil) and NUL bytes (the source would be cut there).
func checkSource(src string) error {
	switch {
	case strings.TrimSpace(src) == "":
		return fmt.Errorf("metal: Compile: empty source")
	case !utf8.ValidString(src):
		return fmt.Errorf("metal: Compile: source is not valid UTF-8")
	case strings.IndexByte(src, 0) >= 0:
		return fmt.Errorf("metal: Compile: source contains a NUL byte at offset %d", strings.IndexByte(src, 0))
	}
	return nil
}

// Warnings returns the compiler's diagnostics when compilation succeeded with warnings, else "".
func (l *Library) Warnings() string { return l.warnings }

func (l *Library) live() error {
	if l == nil {
		return fmt.Errorf("metal: nil *Library")
	}
	if err := l.dev.live(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	return nil
}

// Close releases the library. Functions made from it stay usable (their pipeline states hold what
// they need). Closing twice is a no-op.
func (l *Library) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		l.dev.drv.release(l.h)
	}
	return nil
}
