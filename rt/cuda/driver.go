package cuda

import (
	"errors"
	"fmt"
	"os"
	"sync"
)

// LibraryEnv is the environment variable that, when set, names the driver library Open loads
// instead of the system's (libcuda.so.1 on Linux, nvcuda.dll on Windows). Tests point it at a mock.
const LibraryEnv = "KGEN_CUDA_LIBRARY"

// Driver is a loaded and initialized CUDA driver. It is safe for concurrent use. The library stays
// loaded for the life of the process (the CUDA driver does not support being unloaded).
type Driver struct {
	path string
	api  *api
}

var (
	loadMu sync.Mutex
	loaded = map[string]*api{} // bound entry points per library path
)

// Open loads the CUDA driver library (the one LibraryEnv names, else the system's) and calls cuInit.
// Errors: ErrNoDriver (wrapped, with the reason) when the library or one of its entry points is
// missing or the OS has no CUDA driver; an *Error wrapping the Result when cuInit fails, e.g.
// CUDA_ERROR_NO_DEVICE (100) on a machine with a driver but no GPU.
func Open() (*Driver, error) {
	path := os.Getenv(LibraryEnv)
	if path == "" {
		path = defaultLibrary
	}
	return OpenLibrary(path)
}

// OpenLibrary is Open for the driver library at path (a file name searched the system's way, or a
// path). Loading and binding happen once per path; cuInit runs on every call (it is idempotent).
func OpenLibrary(path string) (*Driver, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: empty library path", ErrNoDriver)
	}
	a, err := load(path)
	if err != nil {
		return nil, err
	}
	if err := check("cuInit", a.cuInit(0)); err != nil {
		return nil, err
	}
	return &Driver{path: path, api: a}, nil
}

func load(path string) (*api, error) {
	if !supported {
		return nil, bind(nil, nil)
	}
	loadMu.Lock()
	defer loadMu.Unlock()
	if a, ok := loaded[path]; ok {
		return a, nil
	}
	lib, err := openLibrary(path)
	if err != nil {
		return nil, err
	}
	a := new(api)
	if err := bind(lib, a); err != nil {
		return nil, err
	}
	loaded[path] = a
	return a, nil
}

// IsNoDevice reports whether err means "no usable CUDA GPU here": no driver library, or a driver
// that reports no device (CUDA_ERROR_NO_DEVICE, or a stub library). Callers use it to skip.
func IsNoDevice(err error) bool {
	return errors.Is(err, ErrNoDriver) || errors.Is(err, ErrorNoDevice) || errors.Is(err, ErrorStubLibrary)
}

// Path returns the library the driver was loaded from.
func (d *Driver) Path() string { return d.path }

// Version returns the driver's CUDA version as 1000*major + 10*minor (12040 for CUDA 12.4).
func (d *Driver) Version() (int, error) {
	var v int32
	if err := check("cuDriverGetVersion", d.api.cuDriverGetVersion(&v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// DeviceCount returns the number of CUDA devices the driver sees.
func (d *Driver) DeviceCount() (int, error) {
	var n int32
	if err := check("cuDeviceGetCount", d.api.cuDeviceGetCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Device returns device ordinal (0 ≤ ordinal < DeviceCount()).
func (d *Driver) Device(ordinal int) (*Device, error) {
	if ordinal < 0 || ordinal > 1<<30 {
		return nil, fmt.Errorf("cuda: device ordinal %d out of range", ordinal)
	}
	var h int32
	if err := checkf(d.api.cuDeviceGet(&h, int32(ordinal)), "cuDeviceGet(%d)", ordinal); err != nil {
		return nil, err
	}
	return &Device{d: d, h: h, ordinal: ordinal}, nil
}
