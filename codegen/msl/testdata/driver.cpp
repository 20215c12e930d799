// driver.cpp runs the emitted MSL kernels on the CPU for codegen/msl's tests:
//
//	driver FUNCTION REQUEST RESULT
//
// REQUEST holds, little endian: the grid (3 × u32, threadgroups along x, y, z), the threads per
// threadgroup (u32), the number of buffers (u32), then each buffer as a u64 byte count and its bytes,
// in [[buffer(i)]] order. Every buffer is placed so that it ends exactly at a PROT_NONE guard page: an
// access past its end kills the run with "out-of-range access". RESULT receives every buffer's bytes
// after the run, in order. Each threadgroup's threads are OS threads (metal_shim.h); threadgroups run
// one after the other. A watchdog reports a run that does not finish (a barrier some thread never
// reaches). Exit status 0 on success; the error is on stderr otherwise.
//
// The build includes the emitted source (kernels.metal) and the generated table of entries
// (entries.inc: kg_entries, one function per kernel binding its parameters).
#include "metal_shim.h"

#include "kernels.metal"

#include <csignal>
#include <sys/mman.h>
#include <thread>
#include <vector>

namespace kg {

struct Args {
	std::vector<char*> bufs;
	template <typename T>
	T* ptr(int i) const {
		return reinterpret_cast<T*>(bufs[i]);
	}
	template <typename T>
	T& ref(int i) const {
		return *reinterpret_cast<T*>(bufs[i]);
	}
};

typedef void (*Entry)(const Args&, uint3, uint);
struct EntryName {
	const char* name;
	Entry fn;
};

} // namespace kg

#include "entries.inc"

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
	if (argc != 4) {
		std::fprintf(stderr, "usage: driver FUNCTION REQUEST RESULT\n");
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

	kg::Group g;
	g.threads = threads;
	std::barrier<> all(threads);
	g.all = &all;
	std::vector<std::barrier<>*> simd;
	for (int s = 0; s * 32 < threads; s++) {
		int n = threads - s * 32 < 32 ? threads - s * 32 : 32;
		g.simd[s] = new std::barrier<>(n);
	}
	std::vector<std::thread> ts;
	for (int t = 0; t < threads; t++) {
		ts.emplace_back([&, t] {
			kg::tid = t;
			kg::group = &g;
			for (uint z = 0; z < grid.z; z++)
				for (uint y = 0; y < grid.y; y++)
					for (uint x = 0; x < grid.x; x++) {
						entry(args, uint3{x, y, z}, uint(t));
						// every thread ends the threadgroup here: one still at a barrier is reported
						kg::meet(*g.all, g.site, 0, threads, -1, "threadgroup barrier");
					}
		});
	}
	for (auto& t : ts)
		t.join();
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
