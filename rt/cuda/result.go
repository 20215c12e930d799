package cuda

import (
	"errors"
	"fmt"
)

// Result is a CUresult, the status code every CUDA driver API call returns. A nonzero Result is an
// error; its message is the driver's enum name with the numeric code, for example
// "CUDA_ERROR_NO_DEVICE (100)". Compare with errors.Is(err, cuda.ErrorNoDevice).
type Result int32

// Named CUresult values (cuda.h, enum cudaError_enum). The numbers are the driver's stable ABI.
const (
	Success                         Result = 0
	ErrorInvalidValue               Result = 1
	ErrorOutOfMemory                Result = 2
	ErrorNotInitialized             Result = 3
	ErrorDeinitialized              Result = 4
	ErrorStubLibrary                Result = 34
	ErrorDeviceUnavailable          Result = 46
	ErrorNoDevice                   Result = 100
	ErrorInvalidDevice              Result = 101
	ErrorDeviceNotLicensed          Result = 102
	ErrorInvalidImage               Result = 200
	ErrorInvalidContext             Result = 201
	ErrorNoBinaryForGPU             Result = 209
	ErrorInvalidPTX                 Result = 218
	ErrorJITCompilerNotFound        Result = 221
	ErrorUnsupportedPTXVersion      Result = 222
	ErrorJITCompilationDisabled     Result = 223
	ErrorInvalidHandle              Result = 400
	ErrorNotFound                   Result = 500
	ErrorNotReady                   Result = 600
	ErrorIllegalAddress             Result = 700
	ErrorLaunchOutOfResources       Result = 701
	ErrorLaunchTimeout              Result = 702
	ErrorIllegalInstruction         Result = 715
	ErrorMisalignedAddress          Result = 716
	ErrorLaunchFailed               Result = 719
	ErrorNotPermitted               Result = 800
	ErrorNotSupported               Result = 801
	ErrorSystemNotReady             Result = 802
	ErrorSystemDriverMismatch       Result = 803
	ErrorCompatNotSupportedOnDevice Result = 804
	ErrorUnknown                    Result = 999
)

// resultNames maps every CUresult of cuda.h 12.x to its enum name.
var resultNames = map[Result]string{
	0: "CUDA_SUCCESS", 1: "CUDA_ERROR_INVALID_VALUE", 2: "CUDA_ERROR_OUT_OF_MEMORY",
	3: "CUDA_ERROR_NOT_INITIALIZED", 4: "CUDA_ERROR_DEINITIALIZED", 5: "CUDA_ERROR_PROFILER_DISABLED",
	6: "CUDA_ERROR_PROFILER_NOT_INITIALIZED", 7: "CUDA_ERROR_PROFILER_ALREADY_STARTED",
	8: "CUDA_ERROR_PROFILER_ALREADY_STOPPED", 34: "CUDA_ERROR_STUB_LIBRARY",
	46: "CUDA_ERROR_DEVICE_UNAVAILABLE", 100: "CUDA_ERROR_NO_DEVICE", 101: "CUDA_ERROR_INVALID_DEVICE",
	102: "CUDA_ERROR_DEVICE_NOT_LICENSED", 200: "CUDA_ERROR_INVALID_IMAGE", 201: "CUDA_ERROR_INVALID_CONTEXT",
	202: "CUDA_ERROR_CONTEXT_ALREADY_CURRENT", 205: "CUDA_ERROR_MAP_FAILED", 206: "CUDA_ERROR_UNMAP_FAILED",
	207: "CUDA_ERROR_ARRAY_IS_MAPPED", 208: "CUDA_ERROR_ALREADY_MAPPED", 209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
	210: "CUDA_ERROR_ALREADY_ACQUIRED", 211: "CUDA_ERROR_NOT_MAPPED", 212: "CUDA_ERROR_NOT_MAPPED_AS_ARRAY",
	213: "CUDA_ERROR_NOT_MAPPED_AS_POINTER", 214: "CUDA_ERROR_ECC_UNCORRECTABLE",
	215: "CUDA_ERROR_UNSUPPORTED_LIMIT", 216: "CUDA_ERROR_CONTEXT_ALREADY_IN_USE",
	217: "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", 218: "CUDA_ERROR_INVALID_PTX",
	219: "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT", 220: "CUDA_ERROR_NVLINK_UNCORRECTABLE",
	221: "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", 222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	223: "CUDA_ERROR_JIT_COMPILATION_DISABLED", 224: "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY",
	225: "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC", 226: "CUDA_ERROR_CONTAINED",
	300: "CUDA_ERROR_INVALID_SOURCE", 301: "CUDA_ERROR_FILE_NOT_FOUND",
	302: "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND", 303: "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
	304: "CUDA_ERROR_OPERATING_SYSTEM", 400: "CUDA_ERROR_INVALID_HANDLE", 401: "CUDA_ERROR_ILLEGAL_STATE",
	402: "CUDA_ERROR_LOSSY_QUERY", 500: "CUDA_ERROR_NOT_FOUND", 600: "CUDA_ERROR_NOT_READY",
	700: "CUDA_ERROR_ILLEGAL_ADDRESS", 701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	702: "CUDA_ERROR_LAUNCH_TIMEOUT", 703: "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING",
	704: "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", 705: "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
	708: "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", 709: "CUDA_ERROR_CONTEXT_IS_DESTROYED",
	710: "CUDA_ERROR_ASSERT", 711: "CUDA_ERROR_TOO_MANY_PEERS",
	712: "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", 713: "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
	714: "CUDA_ERROR_HARDWARE_STACK_ERROR", 715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	716: "CUDA_ERROR_MISALIGNED_ADDRESS", 717: "CUDA_ERROR_INVALID_ADDRESS_SPACE", 718: "CUDA_ERROR_INVALID_PC",
	719: "CUDA_ERROR_LAUNCH_FAILED", 720: "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
	800: "CUDA_ERROR_NOT_PERMITTED", 801: "CUDA_ERROR_NOT_SUPPORTED", 802: "CUDA_ERROR_SYSTEM_NOT_READY",
	803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", 804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
	805: "CUDA_ERROR_MPS_CONNECTION_FAILED", 806: "CUDA_ERROR_MPS_RPC_FAILURE",
	807: "CUDA_ERROR_MPS_SERVER_NOT_READY", 808: "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED",
	809: "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED", 810: "CUDA_ERROR_MPS_CLIENT_TERMINATED",
	811: "CUDA_ERROR_CDP_NOT_SUPPORTED", 812: "CUDA_ERROR_CDP_VERSION_MISMATCH",
	900: "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", 901: "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
	902: "CUDA_ERROR_STREAM_CAPTURE_MERGE", 903: "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
	904: "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", 905: "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
	906: "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", 907: "CUDA_ERROR_CAPTURED_EVENT",
	908: "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", 909: "CUDA_ERROR_TIMEOUT",
	910: "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE", 911: "CUDA_ERROR_EXTERNAL_DEVICE",
	912: "CUDA_ERROR_INVALID_CLUSTER_SIZE", 999: "CUDA_ERROR_UNKNOWN",
}

// Name returns the cuda.h enum name of r, or "CUDA_ERROR_<n>" for a code this package does not know.
func (r Result) Name() string {
	if s, ok := resultNames[r]; ok {
		return s
	}
	return fmt.Sprintf("CUDA_ERROR_%d", int32(r))
}

// Error returns the enum name followed by the numeric code, e.g. "CUDA_ERROR_NO_DEVICE (100)".
func (r Result) Error() string { return fmt.Sprintf("%s (%d)", r.Name(), int32(r)) }

// Error is a failed driver call: Op names the entry point (and what it was doing), Code is what it
// returned, Log holds the JIT compiler's error log when a module load failed.
type Error struct {
	Op   string
	Code Result
	Log  string
}

func (e *Error) Error() string {
	if e.Log != "" {
		return fmt.Sprintf("cuda: %s: %v\n%s", e.Op, e.Code, e.Log)
	}
	return fmt.Sprintf("cuda: %s: %v", e.Op, e.Code)
}

// Unwrap returns the Result so that errors.Is(err, cuda.ErrorInvalidPTX) works.
func (e *Error) Unwrap() error { return e.Code }

// check turns a CUresult into nil or an *Error naming op.
func check(op string, r int32) error {
	if r == 0 {
		return nil
	}
	return &Error{Op: op, Code: Result(r)}
}

// checkf is check with the op formatted only on failure, keeping successful calls allocation-light.
func checkf(r int32, format string, args ...any) error {
	if r == 0 {
		return nil
	}
	return &Error{Op: fmt.Sprintf(format, args...), Code: Result(r)}
}

// ErrNoDriver says the CUDA driver library could not be loaded (not installed, not a supported OS,
// or a library lacking an entry point this package needs). The wrapped message says which.
var ErrNoDriver = errors.New("cuda: no CUDA driver")

// ErrClosed is returned by operations on a Driver, Context, Module, Buffer, Stream or Event that
// was already closed or freed.
var ErrClosed = errors.New("cuda: use of a closed or freed object")
