// metal_shim.h: the subset of Metal's <metal_stdlib> that codegen/msl emits, implemented in C++20 so
// that the emitted MSL compiles with clang++ and runs on a Linux CPU (driver.cpp). It is a test
// harness, not a Metal implementation; what it proves and what it cannot is in codegen/msl/doc.go.
//
// Execution model (driver.cpp): every MSL thread of a threadgroup is an OS thread; threadgroups run
// one after the other, so `threadgroup` arrays are function-level statics shared by the threads of
// the running threadgroup. Every barrier and simdgroup operation is a rendezvous of its scope that
// also compares the source line each thread called it from: a thread at another barrier (or at the
// end of the kernel) aborts the run with both lines, and a thread that never arrives deadlocks the
// rest, which the driver's watchdog reports.
#pragma once

#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#define kernel
#define device
#define constant
#define threadgroup static

typedef unsigned int uint;
struct uint3 {
	uint x, y, z;
};

// half: IEEE binary16 storage with explicit conversions (round to nearest even), as the IR's stores.
struct half {
	uint16_t bits;
	half() = default;
	explicit half(float f) : bits(from(f)) {}
	explicit operator float() const { return to(bits); }
	static uint16_t from(float f) {
		uint32_t x;
		std::memcpy(&x, &f, 4);
		uint32_t sign = (x >> 16) & 0x8000u;
		uint32_t ax = x & 0x7fffffffu;
		if (ax >= 0x7f800000u) // inf or NaN
			return uint16_t(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0));
		if (ax >= 0x477ff000u) // rounds to >= 65520: overflow to inf
			return uint16_t(sign | 0x7c00u);
		if (ax < 0x38800000u) { // below the smallest normal half: subnormal or zero
			if (ax < 0x33000000u) // < 2^-25: rounds to zero
				return uint16_t(sign);
			uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
			uint32_t shift = 126 - e; // 14..24
			uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
			if (rem > halfway || (rem == halfway && (q & 1)))
				q++;
			return uint16_t(sign | q);
		}
		uint32_t r = ax - 0x38000000u; // rebias exponent 127 -> 15
		uint32_t q = r >> 13, rem = r & 0x1fffu;
		if (rem > 0x1000u || (rem == 0x1000u && (q & 1)))
			q++;
		return uint16_t(sign | q);
	}
	static float to(uint16_t h) {
		uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu, x;
		if (e == 0x1f)
			x = sign | 0x7f800000u | (m << 13);
		else if (e != 0)
			x = sign | ((e + 112) << 23) | (m << 13);
		else if (m == 0)
			x = sign;
		else {
			float f = std::ldexp(float(m), -24);
			return sign ? -f : f;
		}
		float f;
		std::memcpy(&f, &x, 4);
		return f;
	}
};

// bfloat: the upper 16 bits of a float, rounded to nearest even (Metal 3.1's bfloat).
struct bfloat {
	uint16_t bits;
	bfloat() = default;
	explicit bfloat(float f) {
		uint32_t x;
		std::memcpy(&x, &f, 4);
		if ((x & 0x7fffffffu) > 0x7f800000u)
			bits = uint16_t((x >> 16) | 0x40u);
		else
			bits = uint16_t((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
	}
	explicit operator float() const {
		uint32_t x = uint32_t(bits) << 16;
		float f;
		std::memcpy(&f, &x, 4);
		return f;
	}
};

enum class mem_flags : int { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4 };
inline mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(int(a) | int(b)); }

namespace kg {

// Group is the running threadgroup: its rendezvous points and the line each thread is at.
struct Group {
	int threads = 0;
	std::barrier<>* all = nullptr;
	std::barrier<>* simd[32] = {};
	int site[1024] = {};
	int simdSite[1024] = {};
};

inline thread_local int tid;
inline thread_local Group* group;

[[noreturn]] inline void fail(const char* msg) {
	std::fputs(msg, stderr);
	std::fflush(stderr);
	_exit(3);
}

// meet is the rendezvous of the threads [first, first+n) at line: all must be at the same line.
inline void meet(std::barrier<>& b, int* sites, int first, int n, int line, const char* what) {
	sites[tid] = line;
	b.arrive_and_wait();
	for (int i = first; i < first + n; i++) {
		if (sites[i] != line) {
			char buf[256];
			auto where = [](int l, char* out) {
				if (l < 0)
					std::snprintf(out, 32, "the end of the kernel");
				else
					std::snprintf(out, 32, "line %d", l);
			};
			char a[32], c[32];
			where(line, a);
			where(sites[i], c);
			std::snprintf(buf, sizeof buf, "%s not reached by all threads: thread %d is at %s, thread %d at %s\n", what, tid, a, i, c);
			fail(buf);
		}
	}
	b.arrive_and_wait();
}

inline void threadgroupSync(int line) { meet(*group->all, group->site, 0, group->threads, line, "threadgroup barrier"); }

inline void simdSync(int line, const char* what) {
	int s = tid / 32, first = s * 32, n = group->threads - first < 32 ? group->threads - first : 32;
	meet(*group->simd[s], group->simdSite, first, n, line, what);
}

inline int lane() { return tid % 32; }

} // namespace kg

#define threadgroup_barrier(flags) kg::threadgroupSync(__LINE__)
#define simdgroup_barrier(flags) kg::simdSync(__LINE__, "simdgroup barrier")

namespace metal {

inline float exp(float x) { return std::exp(x); }
inline float log(float x) { return std::log(x); }
inline float sqrt(float x) { return std::sqrt(x); }
inline float tanh(float x) { return std::tanh(x); }
inline float abs(float x) { return std::fabs(x); }
inline int abs(int x) { return x < 0 ? -x : x; }
inline bool isnan(float x) { return std::isnan(x); }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

// simdgroup matrices: every lane holds the whole tile (the hardware's distribution over lanes is
// unspecified by Apple and never relied on by the emitter). Each operation is a rendezvous of the
// simdgroup, so a call from divergent control flow is reported.
template <typename T, int R, int C>
struct simdgroup_matrix {
	T v[R * C];
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;

template <typename T, int R, int C>
inline simdgroup_matrix<T, R, C> make_filled_simdgroup_matrix(T x) {
	simdgroup_matrix<T, R, C> m;
	for (int i = 0; i < R * C; i++)
		m.v[i] = x;
	return m;
}

template <typename T, int R, int C>
inline void simdgroupLoad(int line, simdgroup_matrix<T, R, C>& m, const T* p, unsigned long perRow) {
	kg::simdSync(line, "simdgroup_load");
	for (int r = 0; r < R; r++)
		for (int c = 0; c < C; c++)
			m.v[r * C + c] = p[r * perRow + c];
}

// simdgroupStore: lane l writes the elements e ≡ l (mod 32), as distributed lanes would; reading
// another lane's element needs a simdgroup barrier after it.
template <typename T, int R, int C>
inline void simdgroupStore(int line, const simdgroup_matrix<T, R, C>& m, T* p, unsigned long perRow) {
	kg::simdSync(line, "simdgroup_store");
	for (int e = kg::lane(); e < R * C; e += 32)
		p[(e / C) * perRow + e % C] = m.v[e];
}

// d = a·b + c, summing over k in order from c (the IR's MMA order).
template <typename T, int M, int K, int N>
inline void simdgroupMAC(int line, simdgroup_matrix<T, M, N>& d, const simdgroup_matrix<T, M, K>& a, const simdgroup_matrix<T, K, N>& b,
                         const simdgroup_matrix<T, M, N>& c) {
	kg::simdSync(line, "simdgroup_multiply_accumulate");
	simdgroup_matrix<T, M, N> out;
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			T s = c.v[i * N + j];
			for (int k = 0; k < K; k++)
				s = s + a.v[i * K + k] * b.v[k * N + j];
			out.v[i * N + j] = s;
		}
	d = out;
}

} // namespace metal

#define simdgroup_load(...) metal::simdgroupLoad(__LINE__, __VA_ARGS__)
#define simdgroup_store(...) metal::simdgroupStore(__LINE__, __VA_ARGS__)
#define simdgroup_multiply_accumulate(...) metal::simdgroupMAC(__LINE__, __VA_ARGS__)
