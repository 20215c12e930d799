// mockcuda.c: a stand-in for libcuda.so.1 that rt/cuda's tests build with clang and load through
// the same purego path as the real driver. It implements each entry point rt/cuda binds with the
// signature of cuda.h (64-bit), so a wrong argument order, width or pointer level in the Go
// bindings shows up as a wrong recorded value or a CUresult error:
//   - host memory stands in for device memory; copies really copy and are bounds-checked against
//     live allocations (CUDA_ERROR_INVALID_VALUE otherwise);
//   - cuModuleLoadDataEx keeps the PTX text, parses each .entry's parameter list the way the real
//     driver learns parameter sizes, and fills the JIT error/info log buffers it is handed;
//   - cuLaunchKernel records grid, block, shared memory, stream and each parameter's bytes, read
//     through the void** kernelParams array; for an entry named "vadd" (u64 a, u64 b, u64 c, u32 n)
//     it also computes c[i] = a[i] + b[i] on the host;
//   - the current context is per thread, as in the real driver;
//   - mock_fail(name, code) makes the next call of entry point `name` return `code`;
//   - -DMOCK_OLD_DRIVER (a driver before CUDA 12) leaves out cuTensorMapEncodeTiled,
//     cuFuncGetParamInfo and cuEventElapsedTime_v2; -DMOCK_NO_LAUNCH leaves out cuLaunchKernel.
// mock_* functions let the test read what was recorded. Not thread-safe beyond the context.
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
	OK = 0, INVALID_VALUE = 1, NOT_INITIALIZED = 3, INVALID_DEVICE = 101, INVALID_CONTEXT = 201,
	INVALID_PTX = 218, UNSUPPORTED_PTX_VERSION = 222, INVALID_HANDLE = 400, NOT_FOUND = 500,
	ILLEGAL_ADDRESS = 700, LAUNCH_OUT_OF_RESOURCES = 701,
};

#define MAXP 32
#define MAXF 128
#define MAXLOG 64
#define MAXALLOC 4096
#define OPTIN_SMEM 232448

struct kfunc {
	char name[128];
	int nparams;
	int size[MAXP];
	int offset[MAXP];
	int max_dyn_smem;
	int carveout;
};

struct module {
	char *ptx;
	int nfuncs;
	struct kfunc funcs[MAXF];
};

struct stream { unsigned flags; int live; };
struct event { double t; int recorded; int live; };

static int initialized;
static int ctx_refs;
static char primary_ctx; // the primary context's handle is &primary_ctx
static __thread void *current_ctx;
static char fail_name[64];
static int fail_code;
static CUresult sticky; // an asynchronous error, reported by the next synchronizing call

static struct { void *p; size_t n; } allocs[MAXALLOC];
static int nallocs;

static char *last_ptx;
static int nmodules, nsyncs, nlaunches, nstreams, nevents, nelapsed_v2;
static double clock_ms; // mock GPU time: each launch takes 1.5 ms
static struct {
	unsigned grid[3], block[3], smem;
	void *stream;
	struct kfunc *f;
	int nparams;
	int size[MAXP];
	unsigned char bytes[MAXP][256];
} launch;
// launch_log keeps the last MAXLOG launches (launch i at i % MAXLOG) (entry name, grid, block, shared
// memory, parameter bytes), for tests of launch sequences.
static struct {
	char name[128];
	unsigned grid[3], block[3], smem;
	int nparams;
	int size[MAXP];
	unsigned char bytes[MAXP][128];
} launch_log[MAXLOG];
static int cc_major = 9, cc_minor = 0;
static long long last_attr = -1, last_attr_value = -1, last_stream_flags = -1, last_event_flags = -1;

static int failing(const char *name) {
	if (fail_code && strcmp(fail_name, name) == 0) {
		int c = fail_code;
		fail_code = 0;
		return c;
	}
	return 0;
}

#define ENTER(name)                                    \
	do {                                           \
		int c_ = failing(name);                \
		if (c_) return c_;                     \
		if (!initialized) return NOT_INITIALIZED; \
	} while (0)
#define ENTER_CTX(name)                                               \
	do {                                                          \
		ENTER(name);                                          \
		if (current_ctx != &primary_ctx || ctx_refs == 0) return INVALID_CONTEXT; \
	} while (0)

// ---- test hooks -----------------------------------------------------------------------------

void mock_fail(const char *name, int code) {
	snprintf(fail_name, sizeof fail_name, "%s", name);
	fail_code = code;
}

void mock_reset(void) {
	for (int i = 0; i < nallocs; i++) free(allocs[i].p);
	nallocs = 0;
	free(last_ptx);
	last_ptx = NULL;
	nmodules = nsyncs = nlaunches = nstreams = nevents = nelapsed_v2 = 0;
	fail_code = 0;
	sticky = OK;
	ctx_refs = 0;
	clock_ms = 0;
	memset(&launch, 0, sizeof launch);
	last_attr = last_attr_value = last_stream_flags = last_event_flags = -1;
	cc_major = 9, cc_minor = 0;
}

// mock_set_cc sets the compute capability the device reports (9.0 after mock_reset).
void mock_set_cc(int major, int minor) {
	cc_major = major, cc_minor = minor;
}

// mock_launch_at describes launch i (0 = the first since mock_reset): its entry name (into name, at
// most cap bytes with the NUL) and grid, block and shared memory (into dims[7]); it returns the
// launch's number of parameters, or -1 when there was no such launch (or it is older than the last MAXLOG).
int mock_launch_at(int i, char *name, int cap, unsigned *dims) {
	if (i < 0 || i >= nlaunches || i < nlaunches - MAXLOG) return -1;
	i %= MAXLOG;
	snprintf(name, (size_t)cap, "%s", launch_log[i].name);
	for (int j = 0; j < 3; j++) dims[j] = launch_log[i].grid[j], dims[3 + j] = launch_log[i].block[j];
	dims[6] = launch_log[i].smem;
	return launch_log[i].nparams;
}

// mock_launch_param_at copies at most cap bytes of parameter p of launch i (first 128 bytes kept: a whole CUtensorMap) and
// returns its size, or -1.
int mock_launch_param_at(int i, int p, void *out, int cap) {
	if (i < 0 || i >= nlaunches || i < nlaunches - MAXLOG) return -1;
	i %= MAXLOG;
	if (p < 0 || p >= launch_log[i].nparams) return -1;
	int n = launch_log[i].size[p] < cap ? launch_log[i].size[p] : cap;
	n = n < 128 ? n : 128;
	memcpy(out, launch_log[i].bytes[p], n);
	return launch_log[i].size[p];
}

long long mock_get(const char *key) {
	if (!strcmp(key, "allocs")) return nallocs;
	if (!strcmp(key, "ctx_refs")) return ctx_refs;
	if (!strcmp(key, "modules")) return nmodules;
	if (!strcmp(key, "syncs")) return nsyncs;
	if (!strcmp(key, "launches")) return nlaunches;
	if (!strcmp(key, "streams")) return nstreams;
	if (!strcmp(key, "events")) return nevents;
	if (!strcmp(key, "attr")) return last_attr;
	if (!strcmp(key, "attr_value")) return last_attr_value;
	if (!strcmp(key, "stream_flags")) return last_stream_flags;
	if (!strcmp(key, "event_flags")) return last_event_flags;
	if (!strcmp(key, "elapsed_v2")) return nelapsed_v2;
	if (!strcmp(key, "launch_stream")) return (long long)(uintptr_t)launch.stream;
	if (!strcmp(key, "grid_x")) return launch.grid[0];
	if (!strcmp(key, "grid_y")) return launch.grid[1];
	if (!strcmp(key, "grid_z")) return launch.grid[2];
	if (!strcmp(key, "block_x")) return launch.block[0];
	if (!strcmp(key, "block_y")) return launch.block[1];
	if (!strcmp(key, "block_z")) return launch.block[2];
	if (!strcmp(key, "smem")) return launch.smem;
	if (!strcmp(key, "nparams")) return launch.nparams;
	return -1;
}

// mock_launch_param copies the bytes of the last launch's parameter i to out (at most cap) and
// returns the parameter's size, or -1.
int mock_launch_param(int i, void *out, int cap) {
	if (i < 0 || i >= launch.nparams) return -1;
	int n = launch.size[i] < cap ? launch.size[i] : cap;
	memcpy(out, launch.bytes[i], n);
	return launch.size[i];
}

// mock_last_ptx copies the last PTX text loaded to out (at most cap bytes) and returns its length.
int mock_last_ptx(char *out, int cap) {
	if (!last_ptx) return -1;
	int n = (int)strlen(last_ptx);
	memcpy(out, last_ptx, n < cap ? n : cap);
	return n;
}

// ---- init and device ------------------------------------------------------------------------

CUresult cuInit(unsigned flags) {
	int c = failing("cuInit");
	if (c) return c;
	if (flags != 0) return INVALID_VALUE;
	initialized = 1;
	return OK;
}

CUresult cuDriverGetVersion(int *v) {
	int c = failing("cuDriverGetVersion");
	if (c) return c;
	if (!v) return INVALID_VALUE;
	*v = 12040;
	return OK;
}

CUresult cuDeviceGetCount(int *n) {
	ENTER("cuDeviceGetCount");
	if (!n) return INVALID_VALUE;
	*n = 1;
	return OK;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
	ENTER("cuDeviceGet");
	if (!d) return INVALID_VALUE;
	if (ordinal != 0) return INVALID_DEVICE;
	*d = 0;
	return OK;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
	ENTER("cuDeviceGetName");
	if (!name || len <= 0) return INVALID_VALUE;
	if (dev != 0) return INVALID_DEVICE;
	snprintf(name, (size_t)len, "%s", "kgen mock GPU (sm_90)");
	return OK;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice dev) {
	ENTER("cuDeviceGetAttribute");
	if (!v) return INVALID_VALUE;
	if (dev != 0) return INVALID_DEVICE;
	switch (attr) {
	case 1: *v = 1024; break;          // MAX_THREADS_PER_BLOCK
	case 8: *v = 49152; break;         // MAX_SHARED_MEMORY_PER_BLOCK
	case 10: *v = 32; break;           // WARP_SIZE
	case 12: *v = 65536; break;        // MAX_REGISTERS_PER_BLOCK
	case 16: *v = 132; break;          // MULTIPROCESSOR_COUNT
	case 75: *v = cc_major; break;     // COMPUTE_CAPABILITY_MAJOR
	case 76: *v = cc_minor; break;     // COMPUTE_CAPABILITY_MINOR
	case 81: *v = 233472; break;       // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
	case 82: *v = 65536; break;        // MAX_REGISTERS_PER_MULTIPROCESSOR
	case 97: *v = OPTIN_SMEM; break;   // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
	default: return INVALID_VALUE;
	}
	return OK;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
	ENTER("cuDeviceTotalMem_v2");
	if (!bytes) return INVALID_VALUE;
	if (dev != 0) return INVALID_DEVICE;
	*bytes = (size_t)141 << 30; // above 4 GiB: a 32-bit size would be cut
	return OK;
}

// ---- contexts -------------------------------------------------------------------------------

CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice dev) {
	ENTER("cuDevicePrimaryCtxRetain");
	if (!ctx) return INVALID_VALUE;
	if (dev != 0) return INVALID_DEVICE;
	ctx_refs++;
	*ctx = &primary_ctx;
	return OK;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
	ENTER("cuDevicePrimaryCtxRelease_v2");
	if (dev != 0) return INVALID_DEVICE;
	if (ctx_refs == 0) return INVALID_CONTEXT;
	ctx_refs--;
	return OK;
}

CUresult cuCtxSetCurrent(void *ctx) {
	ENTER("cuCtxSetCurrent");
	if (ctx && ctx != &primary_ctx) return INVALID_CONTEXT;
	current_ctx = ctx;
	return OK;
}

CUresult cuCtxSynchronize(void) {
	ENTER_CTX("cuCtxSynchronize");
	nsyncs++;
	CUresult r = sticky;
	sticky = OK;
	return r;
}

// ---- modules --------------------------------------------------------------------------------

static int type_size(const char *t) {
	static const struct { const char *t; int n; } types[] = {
		{".u8", 1}, {".s8", 1}, {".b8", 1}, {".u16", 2}, {".s16", 2}, {".b16", 2}, {".f16", 2},
		{".u32", 4}, {".s32", 4}, {".b32", 4}, {".f32", 4}, {".u64", 8}, {".s64", 8}, {".b64", 8},
		{".f64", 8},
	};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if (!strcmp(t, types[i].t)) return types[i].n;
	return 0;
}

static const char *skip_space(const char *p) {
	while (*p && (isspace((unsigned char)*p) || *p == ',')) p++;
	return p;
}

// parse_params reads ".param [.align N] .type name[[count]]" items up to ')' into f, laying them
// out at their alignment (.align N, else the element size).
static const char *parse_params(const char *p, struct kfunc *f) {
	f->nparams = 0;
	int end = 0;
	for (;;) {
		p = skip_space(p);
		if (*p == ')') return p + 1;
		if (strncmp(p, ".param", 6) != 0 || f->nparams == MAXP) return NULL;
		p += 6;
		int elem = 0, count = 1, align = 0;
		for (;;) {
			p = skip_space(p);
			char tok[64];
			int n = 0;
			while (*p && !isspace((unsigned char)*p) && *p != ',' && *p != ')' && *p != '[' && n < 63)
				tok[n++] = *p++;
			tok[n] = 0;
			if (n == 0) return NULL;
			if (tok[0] == '.') {
				if (!strcmp(tok, ".align")) {
					char *e;
					align = (int)strtol(skip_space(p), &e, 10);
					p = e;
				} else if (type_size(tok)) {
					elem = type_size(tok);
				} // else .ptr, .global...: qualifiers
				continue;
			}
			p = skip_space(p);
			if (*p == '[') {
				char *end;
				count = (int)strtol(p + 1, &end, 10);
				if (*end != ']' || count <= 0) return NULL;
				p = end + 1;
			}
			break;
		}
		if (!elem || elem * count > 256) return NULL;
		if (align <= 0) align = elem;
		end = (end + align - 1) / align * align;
		f->offset[f->nparams] = end;
		f->size[f->nparams++] = elem * count;
		end += elem * count;
	}
}

// parse_entries finds every ".entry name(params)" of ptx; -1 on a malformed list.
static int parse_entries(const char *ptx, struct module *m) {
	const char *p = ptx;
	m->nfuncs = 0;
	while ((p = strstr(p, ".entry")) != NULL) {
		p += 6;
		if (m->nfuncs == MAXF) return -1;
		struct kfunc *f = &m->funcs[m->nfuncs];
		memset(f, 0, sizeof *f);
		p = skip_space(p);
		int n = 0;
		while (*p && (isalnum((unsigned char)*p) || *p == '_' || *p == '$') && n < 127) f->name[n++] = *p++;
		f->name[n] = 0;
		p = skip_space(p);
		if (n == 0) return -1;
		if (*p == '(') {
			if (!(p = parse_params(p + 1, f))) return -1;
		}
		f->max_dyn_smem = 49152;
		m->nfuncs++;
	}
	return m->nfuncs;
}

static void put_log(char *buf, unsigned cap, void **size_slot, const char *msg) {
	if (!buf || cap == 0) return;
	int n = snprintf(buf, cap, "%s", msg);
	if (size_slot) *size_slot = (void *)(uintptr_t)(n < (int)cap ? n : (int)cap - 1);
}

CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned nopts, int *opts, void **vals) {
	ENTER_CTX("cuModuleLoadDataEx");
	if (!mod || !image || (nopts && (!opts || !vals))) return INVALID_VALUE;
	char *errbuf = NULL, *infobuf = NULL;
	unsigned errcap = 0, infocap = 0;
	void **errsize = NULL, **infosize = NULL;
	for (unsigned i = 0; i < nopts; i++) {
		switch (opts[i]) {
		case 3: infobuf = vals[i]; break;
		case 4: infocap = (unsigned)(uintptr_t)vals[i]; infosize = &vals[i]; break;
		case 5: errbuf = vals[i]; break;
		case 6: errcap = (unsigned)(uintptr_t)vals[i]; errsize = &vals[i]; break;
		default: return INVALID_VALUE;
		}
	}
	const char *ptx = image;
	free(last_ptx);
	last_ptx = strdup(ptx);
	if (strstr(ptx, ".version 99.")) {
		put_log(errbuf, errcap, errsize, "ptxas fatal   : Unsupported .version 99.0; current version is '8.4'");
		return UNSUPPORTED_PTX_VERSION;
	}
	const char *bad = strstr(ptx, "MOCK_SYNTAX_ERROR");
	if (!strstr(ptx, ".version") || bad) {
		int line = 1;
		for (const char *q = ptx; bad && q < bad; q++) line += *q == '\n';
		char msg[160];
		snprintf(msg, sizeof msg, "ptxas application ptx input, line %d; error   : syntax error", line);
		put_log(errbuf, errcap, errsize, msg);
		return INVALID_PTX;
	}
	struct module *m = calloc(1, sizeof *m);
	if (parse_entries(ptx, m) < 0) {
		free(m);
		put_log(errbuf, errcap, errsize, "mock: malformed .entry parameter list");
		return INVALID_PTX;
	}
	m->ptx = strdup(ptx);
	char msg[96];
	snprintf(msg, sizeof msg, "mock ptxas info    : %d entry function(s) for 'sm_90'", m->nfuncs);
	put_log(infobuf, infocap, infosize, msg);
	nmodules++;
	*mod = m;
	return OK;
}

CUresult cuModuleUnload(void *mod) {
	ENTER_CTX("cuModuleUnload");
	if (!mod) return INVALID_HANDLE;
	struct module *m = mod;
	free(m->ptx);
	free(m);
	nmodules--;
	return OK;
}

CUresult cuModuleGetFunction(void **fn, void *mod, const char *name) {
	ENTER_CTX("cuModuleGetFunction");
	if (!fn || !mod || !name) return INVALID_VALUE;
	struct module *m = mod;
	for (int i = 0; i < m->nfuncs; i++) {
		if (!strcmp(m->funcs[i].name, name)) {
			*fn = &m->funcs[i];
			return OK;
		}
	}
	return NOT_FOUND;
}

CUresult cuFuncGetAttribute(int *v, int attr, void *fn) {
	ENTER_CTX("cuFuncGetAttribute");
	if (!v || !fn) return INVALID_VALUE;
	struct kfunc *f = fn;
	switch (attr) {
	case 0: *v = 1024; break;
	case 1: case 2: case 3: *v = 0; break;
	case 4: *v = 12 + f->nparams; break; // registers: something that depends on the kernel
	case 5: *v = 70; break;
	case 6: *v = 90; break;
	case 8: *v = f->max_dyn_smem; break;
	case 9: *v = f->carveout; break;
	default: return INVALID_VALUE;
	}
	return OK;
}

CUresult cuFuncSetAttribute(void *fn, int attr, int value) {
	ENTER_CTX("cuFuncSetAttribute");
	if (!fn) return INVALID_HANDLE;
	struct kfunc *f = fn;
	last_attr = attr;
	last_attr_value = value;
	switch (attr) {
	case 8:
		if (value < 0 || value > OPTIN_SMEM) return INVALID_VALUE;
		f->max_dyn_smem = value;
		return OK;
	case 9:
		if (value < -1 || value > 100) return INVALID_VALUE;
		f->carveout = value;
		return OK;
	default:
		return INVALID_VALUE; // read-only or unknown
	}
}

#ifndef MOCK_OLD_DRIVER
CUresult cuFuncGetParamInfo(void *fn, size_t index, size_t *offset, size_t *size) {
	ENTER_CTX("cuFuncGetParamInfo");
	struct kfunc *f = fn;
	if (!f || !offset || !size || index >= (size_t)f->nparams) return INVALID_VALUE;
	*offset = (size_t)f->offset[index];
	*size = (size_t)f->size[index];
	return OK;
}
#endif

// ---- memory ---------------------------------------------------------------------------------

// find returns the index of the allocation holding [p, p+n), or -1.
static int find(CUdeviceptr p, size_t n) {
	for (int i = 0; i < nallocs; i++) {
		uintptr_t b = (uintptr_t)allocs[i].p;
		if (p >= b && p - b <= allocs[i].n && n <= allocs[i].n - (p - b)) return i;
	}
	return -1;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t n) {
	ENTER_CTX("cuMemAlloc_v2");
	if (!dptr || n == 0 || nallocs == MAXALLOC) return INVALID_VALUE;
	void *p = malloc(n);
	if (!p) return 2;
	allocs[nallocs].p = p;
	allocs[nallocs].n = n;
	nallocs++;
	*dptr = (CUdeviceptr)(uintptr_t)p;
	return OK;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
	ENTER_CTX("cuMemFree_v2");
	for (int i = 0; i < nallocs; i++) {
		if ((CUdeviceptr)(uintptr_t)allocs[i].p == dptr) {
			free(allocs[i].p);
			allocs[i] = allocs[--nallocs];
			return OK;
		}
	}
	return INVALID_VALUE;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
	ENTER_CTX("cuMemcpyHtoD_v2");
	if (!src || find(dst, n) < 0) return INVALID_VALUE;
	memcpy((void *)(uintptr_t)dst, src, n);
	return OK;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
	ENTER_CTX("cuMemcpyDtoH_v2");
	if (!dst || find(src, n) < 0) return INVALID_VALUE;
	if (sticky) { // a synchronous copy reports an earlier kernel's fault
		CUresult r = sticky;
		sticky = OK;
		return r;
	}
	memcpy(dst, (void *)(uintptr_t)src, n);
	return OK;
}

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n) {
	ENTER_CTX("cuMemsetD8_v2");
	if (find(dst, n) < 0) return INVALID_VALUE;
	memset((void *)(uintptr_t)dst, v, n);
	return OK;
}

// ---- launch ---------------------------------------------------------------------------------

__attribute__((unused)) static void run_vadd(void) {
	CUdeviceptr a, b, c;
	unsigned n;
	memcpy(&a, launch.bytes[0], 8);
	memcpy(&b, launch.bytes[1], 8);
	memcpy(&c, launch.bytes[2], 8);
	memcpy(&n, launch.bytes[3], 4);
	unsigned long long threads = (unsigned long long)launch.grid[0] * launch.block[0];
	unsigned long long m = n < threads ? n : threads;
	if (m == 0) return;
	if (find(a, m * 4) < 0 || find(b, m * 4) < 0 || find(c, m * 4) < 0) {
		sticky = ILLEGAL_ADDRESS;
		return;
	}
	float *A = (float *)(uintptr_t)a, *B = (float *)(uintptr_t)b, *C = (float *)(uintptr_t)c;
	for (unsigned long long i = 0; i < m; i++) C[i] = A[i] + B[i];
}

#ifndef MOCK_NO_LAUNCH // -DMOCK_NO_LAUNCH: a library missing a required entry point
CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			unsigned bz, unsigned smem, void *stream, void **params, void **extra) {
	ENTER_CTX("cuLaunchKernel");
	if (!fn || extra) return INVALID_VALUE;
	struct kfunc *f = fn;
	if (!gx || !gy || !gz || !bx || !by || !bz) return INVALID_VALUE;
	if ((unsigned long long)bx * by * bz > 1024 || gy > 65535 || gz > 65535) return INVALID_VALUE;
	if ((int)smem > f->max_dyn_smem) return LAUNCH_OUT_OF_RESOURCES;
	if (stream) {
		struct stream *s = stream;
		if (!s->live) return INVALID_HANDLE;
	}
	if (f->nparams > 0 && !params) return INVALID_VALUE;
	launch.grid[0] = gx, launch.grid[1] = gy, launch.grid[2] = gz;
	launch.block[0] = bx, launch.block[1] = by, launch.block[2] = bz;
	launch.smem = smem;
	launch.stream = stream;
	launch.f = f;
	launch.nparams = f->nparams;
	for (int i = 0; i < f->nparams; i++) {
		if (!params[i]) return INVALID_VALUE;
		launch.size[i] = f->size[i];
		memcpy(launch.bytes[i], params[i], f->size[i]);
	}
	{
		int l = nlaunches % MAXLOG;
		snprintf(launch_log[l].name, sizeof launch_log[l].name, "%s", f->name);
		memcpy(launch_log[l].grid, launch.grid, sizeof launch.grid);
		memcpy(launch_log[l].block, launch.block, sizeof launch.block);
		launch_log[l].smem = smem;
		launch_log[l].nparams = f->nparams;
		for (int i = 0; i < f->nparams; i++) {
			launch_log[l].size[i] = f->size[i];
			memcpy(launch_log[l].bytes[i], params[i], f->size[i] < 128 ? f->size[i] : 128);
		}
	}
	nlaunches++;
	clock_ms += 1.5;
	if (!strcmp(f->name, "vadd") && f->nparams == 4) run_vadd();
	return OK;
}
#endif

// ---- streams and events ---------------------------------------------------------------------

CUresult cuStreamCreate(void **s, unsigned flags) {
	ENTER_CTX("cuStreamCreate");
	if (!s || flags > 1) return INVALID_VALUE;
	struct stream *st = calloc(1, sizeof *st);
	st->flags = flags;
	st->live = 1;
	last_stream_flags = flags;
	nstreams++;
	*s = st;
	return OK;
}

CUresult cuStreamDestroy_v2(void *s) {
	ENTER_CTX("cuStreamDestroy_v2");
	struct stream *st = s;
	if (!st || !st->live) return INVALID_HANDLE;
	st->live = 0; // kept allocated so a use after destroy is caught, not a crash
	nstreams--;
	return OK;
}

CUresult cuStreamSynchronize(void *s) {
	ENTER_CTX("cuStreamSynchronize");
	struct stream *st = s;
	if (st && !st->live) return INVALID_HANDLE;
	nsyncs++;
	CUresult r = sticky;
	sticky = OK;
	return r;
}

CUresult cuEventCreate(void **e, unsigned flags) {
	ENTER_CTX("cuEventCreate");
	if (!e) return INVALID_VALUE;
	struct event *ev = calloc(1, sizeof *ev);
	ev->live = 1;
	last_event_flags = flags;
	nevents++;
	*e = ev;
	return OK;
}

CUresult cuEventDestroy_v2(void *e) {
	ENTER_CTX("cuEventDestroy_v2");
	struct event *ev = e;
	if (!ev || !ev->live) return INVALID_HANDLE;
	ev->live = 0;
	nevents--;
	return OK;
}

CUresult cuEventRecord(void *e, void *s) {
	ENTER_CTX("cuEventRecord");
	struct event *ev = e;
	struct stream *st = s;
	if (!ev || !ev->live || (st && !st->live)) return INVALID_HANDLE;
	ev->t = clock_ms;
	ev->recorded = 1;
	return OK;
}

CUresult cuEventSynchronize(void *e) {
	ENTER_CTX("cuEventSynchronize");
	struct event *ev = e;
	if (!ev || !ev->live) return INVALID_HANDLE;
	return OK;
}

static CUresult elapsed(float *ms, void *start, void *end) {
	struct event *a = start, *b = end;
	if (!ms || !a || !b || !a->live || !b->live || !a->recorded || !b->recorded) return INVALID_HANDLE;
	*ms = (float)(b->t - a->t);
	return OK;
}

CUresult cuEventElapsedTime(float *ms, void *start, void *end) {
	ENTER_CTX("cuEventElapsedTime");
	return elapsed(ms, start, end);
}

#ifndef MOCK_OLD_DRIVER // an old driver has neither
CUresult cuEventElapsedTime_v2(float *ms, void *start, void *end) {
	ENTER_CTX("cuEventElapsedTime_v2");
	nelapsed_v2++;
	return elapsed(ms, start, end);
}
#endif

// ---- TMA descriptors ------------------------------------------------------------------------
#ifndef MOCK_OLD_DRIVER // -DMOCK_OLD_DRIVER: a driver older than CUDA 12.0

// cuTensorMapEncodeTiled writes a mock encoding the test decodes: u64 address at 0; u32 data
// type, rank, interleave, swizzle, L2 promotion, OOB fill at 8..31; u64 dims[5] at 32; u64
// strides[4] at 72; u16 box[5] at 104; u8 element strides[5] at 114.
CUresult cuTensorMapEncodeTiled(void *tmap, int dtype, unsigned rank, void *gaddr, const unsigned long long *dims,
				const unsigned long long *strides, const unsigned *box, const unsigned *estrides,
				int interleave, int swizzle, int l2, int oob) {
	int c = failing("cuTensorMapEncodeTiled");
	if (c) return c;
	if (!tmap || (uintptr_t)tmap % 64 || rank < 1 || rank > 5 || !dims || !box || !estrides) return INVALID_VALUE;
	if ((uintptr_t)gaddr % 16 || (rank > 1 && !strides)) return INVALID_VALUE;
	for (unsigned i = 0; i + 1 < rank; i++)
		if (strides[i] % 16) return INVALID_VALUE;
	unsigned char *m = tmap;
	memset(m, 0, 128);
	unsigned long long a = (uintptr_t)gaddr;
	memcpy(m, &a, 8);
	int small[6] = {dtype, (int)rank, interleave, swizzle, l2, oob};
	memcpy(m + 8, small, sizeof small);
	for (unsigned i = 0; i < rank; i++) {
		memcpy(m + 32 + 8 * i, &dims[i], 8);
		if (i + 1 < rank) memcpy(m + 72 + 8 * i, &strides[i], 8);
		unsigned short b = (unsigned short)box[i];
		memcpy(m + 104 + 2 * i, &b, 2);
		m[114 + i] = (unsigned char)estrides[i];
	}
	return OK;
}
#endif
