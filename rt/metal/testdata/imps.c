// imps.c: C functions with the signatures of the Objective-C method implementations (IMPs) that
// rt/metal sends messages to: id self and SEL _cmd first, then the selector's arguments with the
// types of Apple's headers (NSUInteger = uint64_t, MTLSize by value, BOOL, CFTimeInterval, an
// NSError** out-parameter). objc_msgSend jumps to the IMP with the argument registers untouched,
// so calling these through purego with the Go types rt/metal passes checks the same ABI: TestStructABI
// builds this file with clang and compares what each function recorded with what Go sent.
#include <stdint.h> // the only header: the file also builds freestanding, for aarch64 without a sysroot

typedef struct {
	uint64_t width, height, depth; // NSUInteger
} MTLSize;

static uint64_t rec[16];
static unsigned char bytes_seen[64];

uint64_t mock_rec(int i) { return rec[i]; }
unsigned char mock_byte(int i) { return bytes_seen[i]; }

// -[MTLComputeCommandEncoder dispatchThreadgroups:threadsPerThreadgroup:]
void imp_dispatch(void *self, void *cmd, MTLSize grid, MTLSize threads) {
	rec[0] = (uintptr_t)self;
	rec[1] = (uintptr_t)cmd;
	rec[2] = grid.width;
	rec[3] = grid.height;
	rec[4] = grid.depth;
	rec[5] = threads.width;
	rec[6] = threads.height;
	rec[7] = threads.depth;
}

// -[MTLDevice maxThreadsPerThreadgroup]: a 24-byte struct returned in memory.
MTLSize imp_max_threads(void *self, void *cmd) {
	MTLSize s = {(uintptr_t)self + 1, (uintptr_t)cmd + 2, 1024};
	return s;
}

// -[MTLComputeCommandEncoder setBytes:length:atIndex:]
void imp_set_bytes(void *self, void *cmd, const void *bytes, uint64_t length, uint64_t index) {
	rec[0] = (uintptr_t)self;
	rec[1] = length;
	rec[2] = index;
	for (uint64_t i = 0; i < length && i < sizeof bytes_seen; i++)
		bytes_seen[i] = ((const unsigned char *)bytes)[i];
}

// -[MTLComputeCommandEncoder setBuffer:offset:atIndex:]
void imp_set_buffer(void *self, void *cmd, void *buffer, uint64_t offset, uint64_t index) {
	rec[0] = (uintptr_t)self;
	rec[1] = (uintptr_t)buffer;
	rec[2] = offset;
	rec[3] = index;
}

// -[MTLCommandBuffer GPUStartTime]: CFTimeInterval (double).
double imp_gpu_time(void *self, void *cmd) { return (double)(uintptr_t)self * 0.5 + 0.25; }

// -[MTLCompileOptions setFastMathEnabled:] (BOOL is bool on arm64, signed char on x86_64).
void imp_set_bool(void *self, void *cmd, _Bool v) { rec[0] = v ? 7 : 3; }

// -[MTLDevice newLibraryWithSource:options:error:] failing: nil, with *error set.
void *imp_new_library(void *self, void *cmd, void *source, void *options, void **error) {
	rec[0] = (uintptr_t)source;
	rec[1] = (uintptr_t)options;
	*error = (void *)0x5eed;
	return 0;
}

// -[NSError code]: NSInteger.
long imp_code(void *self, void *cmd) { return -(long)(uintptr_t)self; }

// -[MTLCommandBuffer status]: an NSUInteger enum.
uint64_t imp_status(void *self, void *cmd) { return 5; }
