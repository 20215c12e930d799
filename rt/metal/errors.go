package metal

import (
	"errors"
	"fmt"
)

// ErrNoDevice reports that this process cannot use Metal: the build has no Metal support (not
// darwin, or -tags kgen_nometal), the frameworks failed to load, or MTLCreateSystemDefaultDevice
// returned nil (no GPU, or a session without access to one). The wrapping error says which.
var ErrNoDevice = errors.New("metal: no Metal device")

// ErrClosed reports the use of a Device, Library, Function or Buffer after its Close (or Free), or
// of an object whose Device was closed.
var ErrClosed = errors.New("metal: use of a closed object")

// IsNoDevice reports whether err means that Metal is unavailable here (tests skip on it), as
// opposed to a failure of a device that exists.
func IsNoDevice(err error) bool { return errors.Is(err, ErrNoDevice) }

// Error is a failure reported by Metal through an NSError (or a nil result without one): Op is the
// selector that failed, Domain and Code the NSError's, Description its localizedDescription (for a
// compile failure, the compiler's diagnostics).
type Error struct {
	Op          string
	Domain      string
	Code        int
	Description string
}

func (e *Error) Error() string {
	name := codeName(e.Domain, e.Code)
	switch {
	case e.Domain == "":
		return fmt.Sprintf("metal: %s: %s", e.Op, e.Description)
	case e.Description == "":
		return fmt.Sprintf("metal: %s: %s", e.Op, name)
	}
	return fmt.Sprintf("metal: %s: %s: %s", e.Op, name, e.Description)
}

// Error domains whose codes codeName knows (MTLLibrary.h, MTLCommandBuffer.h).
const (
	LibraryErrorDomain       = "MTLLibraryErrorDomain"
	CommandBufferErrorDomain = "MTLCommandBufferErrorDomain"
)

// libraryErrors and commandBufferErrors are the enum names of MTLLibraryError and
// MTLCommandBufferError (NSUInteger enums; the numbers are Apple's ABI). Code 4 of
// MTLCommandBufferError is named Blacklisted in older headers and AccessRevoked in newer ones.
var (
	libraryErrors = map[int]string{
		1: "MTLLibraryErrorUnsupported",
		2: "MTLLibraryErrorInternal",
		3: "MTLLibraryErrorCompileFailure",
		4: "MTLLibraryErrorCompileWarning",
		5: "MTLLibraryErrorFunctionNotFound",
		6: "MTLLibraryErrorFileNotFound",
	}
	commandBufferErrors = map[int]string{
		0:  "MTLCommandBufferErrorNone",
		1:  "MTLCommandBufferErrorInternal",
		2:  "MTLCommandBufferErrorTimeout",
		3:  "MTLCommandBufferErrorPageFault",
		4:  "MTLCommandBufferErrorAccessRevoked",
		7:  "MTLCommandBufferErrorNotPermitted",
		8:  "MTLCommandBufferErrorOutOfMemory",
		9:  "MTLCommandBufferErrorInvalidResource",
		10: "MTLCommandBufferErrorMemoryless",
		11: "MTLCommandBufferErrorDeviceRemoved",
		12: "MTLCommandBufferErrorStackOverflow",
	}
)

// codeName names an NSError code: "MTLLibraryErrorCompileFailure (3)" for the Metal domains it
// knows, "<domain> <code>" otherwise.
func codeName(domain string, code int) string {
	var names map[int]string
	switch domain {
	case LibraryErrorDomain:
		names = libraryErrors
	case CommandBufferErrorDomain:
		names = commandBufferErrors
	}
	if n, ok := names[code]; ok {
		return fmt.Sprintf("%s (%d)", n, code)
	}
	return fmt.Sprintf("%s %d", domain, code)
}

// CommandBufferStatus is MTLCommandBufferStatus.
type CommandBufferStatus uint64

// MTLCommandBufferStatus values (MTLCommandBuffer.h).
const (
	StatusNotEnqueued CommandBufferStatus = 0
	StatusEnqueued    CommandBufferStatus = 1
	StatusCommitted   CommandBufferStatus = 2
	StatusScheduled   CommandBufferStatus = 3
	StatusCompleted   CommandBufferStatus = 4
	StatusError       CommandBufferStatus = 5
)

func (s CommandBufferStatus) String() string {
	names := [...]string{"NotEnqueued", "Enqueued", "Committed", "Scheduled", "Completed", "Error"}
	if s < CommandBufferStatus(len(names)) {
		return "MTLCommandBufferStatus" + names[s]
	}
	return fmt.Sprintf("MTLCommandBufferStatus(%d)", uint64(s))
}
