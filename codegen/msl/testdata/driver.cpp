// driver.cpp runs the emitted MSL kernels on the CPU for codegen/msl's tests:
//
//	driver FUNCTION REQUEST RESULT [reverse]
//
// REQUEST holds, little endian: the grid (3 × u32, threadgroups along x, y, z), the threads per
// threadgroup (u32), the number of buffers (u32), then each buffer as a u64 byte count and its bytes,
// in [[buffer(i)]] order. Every buffer is placed so that it ends exactly at a PROT_NONE guard page: an
// access past its end kills the run with "out-of-range access". RESULT receives every buffer's bytes
// after the run, in order. Each threadgroup's threads are fibers run one at a time between
// rendezvous, lowest first (highest first with "reverse"), by kg::Sched (metal_shim.h); threadgroups
// run one after the other, their threadgroup memory filled with 0xff bytes (NaN) before each. A
// watchdog stops a run that does not finish. Exit status 0 on success; the error is on stderr
// otherwise.
//
// The build includes the emitted source (kernels.metal) and the generated table of entries
// (entries.inc: kg_entries, one function per kernel binding its parameters).
#include "metal_shim.h"

#include "kernels.metal"

#include <csignal>
#include <sys/mman.h>
#include <vector>

namespace kg {

struct Args {
	std::vector<char*> bufs;
	// C-style casts: T may be in another address space (strict mode), which reinterpret_cast refuses.
	template <typename T>
	T* ptr(int i) const {
		return (T*)bufs[i];
	}
	template <typename T>
	T& ref(int i) const {
		return *(T*)bufs[i];
	}
};

typedef void (*Entry)(const Args&, uint3, uint);
struct EntryName {
	const char* name;
	Entry fn;
};

} // namespace kg

#include "entries.inc"

extern char __start_kg_threadgroup[] __attribute__((weak));
extern char __stop_kg_threadgroup[] __attribute__((weak));

// poison fills every threadgroup array with 0xff bytes: NaN as float, half and bfloat.
static void poison() {
	if (__start_kg_threadgroup)
		std::memset(__start_kg_threadgroup, 0xff, size_t(__stop_kg_threadgroup - __start_kg_threadgroup));
}

// run is what every fiber runs: all threadgroups in order, meeting at the end of each.
static struct {
	kg::Entry entry;
	const kg::Args* args;
	uint3 grid;
} run;

static void threadBody() {
	int t = kg::tid();
	for (uint z = 0; z < run.grid.z; z++)
		for (uint y = 0; y < run.grid.y; y++)
			for (uint x = 0; x < run.grid.x; x++) {
				run.entry(*run.args, uint3{x, y, z}, uint(t));
				// every thread ends the threadgroup here: one still at a barrier is reported
				kg::sched.meet(-1, 0, kg::sched.threads, -1, "threadgroup barrier");
			}
	kg::sched.finish();
}

static void onSegv(int) {
	const char msg[] = "out-of-range access (a guard page was touched)\n";
	if (write(2, msg, sizeof msg - 1) < 0) {
	}
	_exit(4);
}

static void onAlarm(int) {
	const char msg[] = "timeout: the kernel did not finish (a barrier not reached by every thread?)\n";
	if (write(2, msg, sizeof msg - 1) < 0) {
	}
	_exit(5);
}

// guarded returns n bytes that end at a guard page.
static char* guarded(size_t n) {
	size_t page = size_t(sysconf(_SC_PAGESIZE));
	size_t span = (n + page - 1) / page * page;
	char* base = static_cast<char*>(mmap(nullptr, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	if (base == MAP_FAILED) {
		std::perror("mmap");
		std::exit(2);
	}
	if (mprotect(base + span, page, PROT_NONE) != 0) {
		std::perror("mprotect");
		std::exit(2);
	}
	return base + span - n;
}

int main(int argc, char** argv) {
	if (argc != 4 && !(argc == 5 && std::strcmp(argv[4], "reverse") == 0)) {
		std::fprintf(stderr, "usage: driver FUNCTION REQUEST RESULT [reverse]\n");
		return 2;
	}
	kg::Entry entry = nullptr;
	for (const auto& e : kg_entries)
		if (std::strcmp(e.name, argv[1]) == 0)
			entry = e.fn;
	if (!entry) {
		std::fprintf(stderr, "no kernel function %s\n", argv[1]);
		return 2;
	}
	FILE* in = std::fopen(argv[2], "rb");
	if (!in) {
		std::perror(argv[2]);
		return 2;
	}
	uint32_t hdr[5];
	if (std::fread(hdr, 4, 5, in) != 5 || hdr[3] == 0 || hdr[3] > 1024) {
		std::fprintf(stderr, "bad request header\n");
		return 2;
	}
	uint3 grid{hdr[0], hdr[1], hdr[2]};
	int threads = int(hdr[3]);
	kg::Args args;
	std::vector<size_t> sizes;
	for (uint32_t i = 0; i < hdr[4]; i++) {
		uint64_t n;
		if (std::fread(&n, 8, 1, in) != 1) {
			std::fprintf(stderr, "bad request: buffer %u\n", i);
			return 2;
		}
		char* p = guarded(n);
		if (n > 0 && std::fread(p, 1, n, in) != n) {
			std::fprintf(stderr, "bad request: buffer %u data\n", i);
			return 2;
		}
		args.bufs.push_back(p);
		sizes.push_back(n);
	}
	std::fclose(in);
	std::signal(SIGSEGV, onSegv);
	std::signal(SIGBUS, onSegv);
	std::signal(SIGALRM, onAlarm);
	alarm(20);

	kg::sched.onGroupEnd = poison;
	poison();
	run.entry = entry;
	run.args = &args;
	run.grid = grid;
	kg::sched.run(threads, argc == 5, threadBody);
	alarm(0);

	FILE* out = std::fopen(argv[3], "wb");
	if (!out) {
		std::perror(argv[3]);
		return 2;
	}
	for (size_t i = 0; i < args.bufs.size(); i++)
		if (sizes[i] > 0 && std::fwrite(args.bufs[i], 1, sizes[i], out) != sizes[i]) {
			std::perror("write");
			return 2;
		}
	return std::fclose(out) == 0 ? 0 : 2;
}
