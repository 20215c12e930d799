// metal_shim.h: the subset of Metal's <metal_stdlib> that codegen/msl emits, implemented in C++20 so
// that the emitted MSL compiles with clang++ and runs on a Linux CPU (driver.cpp). It is a test
// harness, not a Metal implementation; what it proves and what it cannot is in codegen/msl/doc.go.
//
// Execution model (driver.cpp): every MSL thread of a threadgroup is a fiber, run one at a time by
// kg::Sched between rendezvous (barriers, simdgroup operations); threadgroups run one after the
// other, so `threadgroup` arrays are function-level statics shared by the threads of the running
// threadgroup.
#pragma once

#include <cmath>
#include <string>
#include <sys/mman.h>
#include <ucontext.h>
#include <vector>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#define kernel
#ifdef KG_STRICT
// Strict mode, for a syntax-only build: the address spaces are clang address spaces, so a pointer or
// reference into one space does not convert to another (as in Metal), and half and bfloat are
// __fp16 stand-ins (type checking only: nothing built this way runs).
#define device __attribute__((address_space(1)))
#define constant __attribute__((address_space(2)))
#define KG_TG __attribute__((address_space(3)))
#else
#define device
#define constant
#define KG_TG
#endif
// threadgroup arrays: statics in one section, which the driver fills with 0xff bytes (NaN in every
// float type) before each threadgroup, so a read of an element no thread wrote shows as NaN.
#define threadgroup static KG_TG __attribute__((section("kg_threadgroup")))

typedef unsigned int uint;
struct uint3 {
	uint x, y, z;
};

#ifdef KG_STRICT
typedef __fp16 half;
typedef __fp16 bfloat;
#else
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

#endif

enum class mem_flags : int { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4 };
inline mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(int(a) | int(b)); }

namespace kg {

// Fiber switching. On x86-64, kg_switch saves the callee-saved registers on the current stack,
// stores the stack pointer in *from and resumes the fiber whose stack pointer is to (no system call,
// unlike swapcontext, which saves the signal mask); elsewhere ucontext does it.
#if defined(__x86_64__)
extern "C" void kg_switch(void** from, void* to);
asm(R"(
	.text
	.globl kg_switch
	.type kg_switch, @function
kg_switch:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, (%rdi)
	movq %rsi, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret
	.size kg_switch, .-kg_switch
)");

struct Context {
	void* sp = nullptr;
};
inline void (*fiberEntry)();
[[noreturn]] inline void fiberStart();
// prepare makes a fiber that starts in fiberStart on stack [base, base+size).
inline void prepare(Context& c, char* base, size_t size) {
	uintptr_t top = (reinterpret_cast<uintptr_t>(base) + size) & ~uintptr_t(15);
	void** sp = reinterpret_cast<void**>(top) - 8; // 6 registers, the return address, padding
	for (int i = 0; i < 6; i++)
		sp[i] = nullptr;
	sp[6] = reinterpret_cast<void*>(&fiberStart); // entered with rsp % 16 == 8, as after a call
	sp[7] = nullptr;
	c.sp = sp;
}
inline void jump(Context& from, Context& to) { kg_switch(&from.sp, to.sp); }
#else
struct Context {
	ucontext_t uc;
};
inline void (*fiberEntry)();
inline void fiberStartUC();
inline void prepare(Context& c, char* base, size_t size) {
	getcontext(&c.uc);
	c.uc.uc_stack.ss_sp = base;
	c.uc.uc_stack.ss_size = size;
	c.uc.uc_link = nullptr;
	makecontext(&c.uc, fiberStartUC, 0);
}
inline void jump(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
#endif

// Sched runs the threads of a threadgroup as fibers, one at a time and deterministically:
// the running thread keeps going until it reaches a rendezvous (a barrier, a simdgroup operation, the
// end of the threadgroup); then the lowest-numbered runnable thread runs (the highest with reverse).
// A rendezvous completes when every thread of its scope waits at it; if they wait at different lines,
// or no thread can run while some wait, the run stops with the lines they are at. A missing barrier
// therefore shows up the same way on every run: in forward order a lower thread reads what a higher
// one has not written yet, in reverse order the other way round; unwritten threadgroup memory reads
// as NaN (the driver fills it with 0xff bytes before every threadgroup).
struct Sched {
	enum { runnable, waiting, done };
	int threads = 0;
	bool reverse = false;
	int current = -1;
	Context main;
	std::vector<Context> ctx;
	char* stacks = nullptr; // one mapping for all fiber stacks, never unmapped (the driver exits)
	std::vector<int> state;   // runnable, waiting or done
	std::vector<int> scope;   // while waiting: -1 the threadgroup, s the simdgroup s
	std::vector<int> line;    // while waiting: the source line (-1 the end of the threadgroup)
	std::vector<int> arrived; // per simdgroup, and the threadgroup last
	void (*onGroupEnd)() = nullptr;

	[[noreturn]] static void fail(const std::string& msg) {
		std::fputs((msg + "\n").c_str(), stderr);
		std::fflush(stderr);
		_exit(3);
	}
	int pick() const {
		for (int i = 0; i < threads; i++) {
			int t = reverse ? threads - 1 - i : i;
			if (state[t] == runnable)
				return t;
		}
		return -1;
	}
	// run runs body(t) for every thread t until all are done.
	void run(int n, bool rev, void (*body)()) {
		fiberEntry = body;
		threads = n;
		reverse = rev;
		ctx.resize(n);
		const size_t stack = 64 << 10;
		stacks = static_cast<char*>(mmap(nullptr, stack * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
		if (stacks == MAP_FAILED)
			fail("mmap of the fiber stacks failed");
		state.assign(n, runnable);
		scope.assign(n, 0);
		line.assign(n, 0);
		arrived.assign((n + 31) / 32 + 1, 0);
		for (int t = 0; t < n; t++) {
			prepare(ctx[t], stacks + t * stack, stack);
		}
		for (;;) {
			int t = pick();
			if (t < 0)
				break;
			current = t;
			jump(main, ctx[t]);
		}
		for (int t = 0; t < n; t++)
			if (state[t] != done)
				stuck();
	}
	[[noreturn]] void stuck() {
		std::string msg = "a barrier or simdgroup operation not reached by all threads of its scope (deadlock):";
		int shown = 0;
		for (int t = 0; t < threads && shown < 8; t++)
			if (state[t] == waiting) {
				msg += " thread " + std::to_string(t) + (line[t] < 0 ? " at the end of the threadgroup;" : " at line " + std::to_string(line[t]) + ";");
				shown++;
			}
		fail(msg);
	}
	// meet is the running thread's rendezvous with the threads [first, first+n) of scope s at line l.
	void meet(int s, int first, int n, int l, const char* what) {
		int t = current;
		state[t] = waiting;
		scope[t] = s;
		line[t] = l;
		int& count = arrived[s < 0 ? arrived.size() - 1 : s];
		if (++count == n) {
			count = 0;
			for (int i = first; i < first + n; i++) {
				if (state[i] != waiting || scope[i] != s || line[i] != l) {
					auto at = [&](int x) {
						if (state[x] != waiting || scope[x] != s)
							return std::string("another rendezvous");
						return line[x] < 0 ? std::string("the end of the threadgroup") : "line " + std::to_string(line[x]);
					};
					fail(std::string(what) + " not reached by all threads: thread " + std::to_string(t) + " is at " + at(t) + ", thread " + std::to_string(i) + " at " + at(i));
				}
			}
			if (l < 0 && onGroupEnd)
				onGroupEnd();
			for (int i = first; i < first + n; i++)
				state[i] = runnable;
		}
		jump(ctx[t], main);
	}
	// finish ends the running thread: it never runs again.
	[[noreturn]] void finish() {
		state[current] = done;
		jump(ctx[current], main);
		fail("a finished fiber was resumed");
	}
};

inline Sched sched;

#if defined(__x86_64__)
[[noreturn]] inline void fiberStart() {
	fiberEntry(); // ends in Sched::finish
	Sched::fail("a fiber returned");
}
#else
inline void fiberStartUC() {
	fiberEntry();
	Sched::fail("a fiber returned");
}
#endif

inline int tid() { return sched.current; }

inline void threadgroupSync(int line) { sched.meet(-1, 0, sched.threads, line, "threadgroup barrier"); }

inline void simdSync(int line, const char* what) {
	int s = tid() / 32, first = s * 32, n = sched.threads - first < 32 ? sched.threads - first : 32;
	sched.meet(s, first, n, line, what);
}

inline int lane() { return tid() % 32; }

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
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

template <typename T, int R, int C>
inline simdgroup_matrix<T, R, C> make_filled_simdgroup_matrix(T x) {
	simdgroup_matrix<T, R, C> m;
	for (int i = 0; i < R * C; i++)
		m.v[i] = x;
	return m;
}

template <typename T, int R, int C, typename P>
inline void simdgroupLoadFrom(int line, simdgroup_matrix<T, R, C>& m, P p, unsigned long perRow) {
	kg::simdSync(line, "simdgroup_load");
	for (int r = 0; r < R; r++)
		for (int c = 0; c < C; c++)
			m.v[r * C + c] = p[r * perRow + c];
}

// simdgroupStoreTo: lane l writes the elements e ≡ l (mod 32), as distributed lanes would; reading
// another lane's element needs a simdgroup barrier after it.
template <typename T, int R, int C, typename P>
inline void simdgroupStoreTo(int line, const simdgroup_matrix<T, R, C>& m, P p, unsigned long perRow) {
	kg::simdSync(line, "simdgroup_store");
	for (int e = kg::lane(); e < R * C; e += 32)
		p[(e / C) * perRow + e % C] = m.v[e];
}

// Metal's simdgroup_load and simdgroup_store take device or threadgroup pointers (one overload each
// in strict mode, where the spaces differ).
template <typename T, int R, int C>
inline void simdgroupLoad(int line, simdgroup_matrix<T, R, C>& m, const KG_TG T* p, unsigned long perRow) {
	simdgroupLoadFrom(line, m, p, perRow);
}
template <typename T, int R, int C>
inline void simdgroupStore(int line, const simdgroup_matrix<T, R, C>& m, KG_TG T* p, unsigned long perRow) {
	simdgroupStoreTo(line, m, p, perRow);
}
#ifdef KG_STRICT
template <typename T, int R, int C>
inline void simdgroupLoad(int line, simdgroup_matrix<T, R, C>& m, const device T* p, unsigned long perRow) {
	simdgroupLoadFrom(line, m, p, perRow);
}
template <typename T, int R, int C>
inline void simdgroupStore(int line, const simdgroup_matrix<T, R, C>& m, device T* p, unsigned long perRow) {
	simdgroupStoreTo(line, m, p, perRow);
}
#endif

// d = a·b + c, summing over k in order from c (the IR's MMA order), in the accumulator's type T: 16-bit
// operands (simdgroup_half8x8, simdgroup_bfloat8x8 into a float accumulator) are widened exactly, so
// their products are exact.
template <typename T, typename In, int M, int K, int N>
inline void simdgroupMAC(int line, simdgroup_matrix<T, M, N>& d, const simdgroup_matrix<In, M, K>& a, const simdgroup_matrix<In, K, N>& b,
                         const simdgroup_matrix<T, M, N>& c) {
	kg::simdSync(line, "simdgroup_multiply_accumulate");
	simdgroup_matrix<T, M, N> out;
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			T s = c.v[i * N + j];
			for (int k = 0; k < K; k++)
				s = s + T(a.v[i * K + k]) * T(b.v[k * N + j]);
			out.v[i * N + j] = s;
		}
	d = out;
}

// Simd-group functions: a lane exchange is two rendezvous of the simdgroup at one source line (so a
// call from divergent control flow is reported): every lane deposits its value, then reads the lanes'
// values once all have deposited, and the second rendezvous keeps a fast lane's next deposit from
// overwriting a value another lane has not read yet.
template <typename T>
inline std::vector<T> simdGather(int line, const char* what, T x) {
	static T slot[1024];
	slot[kg::tid()] = x;
	kg::simdSync(line, what);
	int first = kg::tid() / 32 * 32, n = kg::sched.threads - first < 32 ? kg::sched.threads - first : 32;
	std::vector<T> v(slot + first, slot + first + n);
	kg::simdSync(line, what);
	return v;
}

template <typename T>
inline T simdShuffleXor(int line, T x, int mask) {
	std::vector<T> v = simdGather(line, "simd_shuffle_xor", x);
	int j = kg::lane() ^ mask;
	if (mask < 0 || mask > 31 || j >= int(v.size()))
		kg::Sched::fail("simd_shuffle_xor at line " + std::to_string(line) + ": lane " + std::to_string(kg::lane()) + " reads lane " + std::to_string(j) + ", which is not active");
	return v[j];
}

// simd_max and simd_min fold the lanes in lane order with fmax/fmin semantics (a NaN lane is dropped,
// as Metal may do: it does not specify NaN handling), so code that must propagate NaN checks for it.
template <typename T>
inline T simdFold(int line, const char* what, T x, bool isMax) {
	std::vector<T> v = simdGather(line, what, x);
	T r = v[0];
	for (size_t i = 1; i < v.size(); i++)
		r = isMax ? metal::max(r, v[i]) : metal::min(r, v[i]);
	return r;
}

inline bool simdAny(int line, bool x) {
	std::vector<bool> v;
	for (char c : simdGather<char>(line, "simd_any", x))
		v.push_back(c != 0);
	for (bool b : v)
		if (b)
			return true;
	return false;
}

} // namespace metal

#define simd_shuffle_xor(...) metal::simdShuffleXor(__LINE__, __VA_ARGS__)
#define simd_max(x) metal::simdFold(__LINE__, "simd_max", (x), true)
#define simd_min(x) metal::simdFold(__LINE__, "simd_min", (x), false)
#define simd_any(x) metal::simdAny(__LINE__, (x))
#define simdgroup_load(...) metal::simdgroupLoad(__LINE__, __VA_ARGS__)
#define simdgroup_store(...) metal::simdgroupStore(__LINE__, __VA_ARGS__)
#define simdgroup_multiply_accumulate(...) metal::simdgroupMAC(__LINE__, __VA_ARGS__)
