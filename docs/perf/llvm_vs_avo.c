/* The C half of docs/perf/llvm_vs_avo.sh: kgen's kernels through the LLVM path (kernels.ll, opt/llc -O3
   -mcpu=native), the same shapes, inputs and timing rule (best of reps) as llvm_vs_avo_driver.go.txt. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kernels.h"
/* 64-byte aligned buffers, as Go's allocator gives slices of these sizes (page-aligned spans): an
   unaligned zmm access crossing a cache line costs a second line access. */
static void *amalloc(size_t n) { return aligned_alloc(64, (n + 63) / 64 * 64); }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv) {
    int64_t n = atoi(argv[1]);
    int64_t cols = argc > 3 ? atoi(argv[3]) : 1024; /* softmax and layernorm rows */
    if (argc > 2 && !strcmp(argv[2], "batch")) {
        float *A = amalloc(4 * n * n), *B = amalloc(4 * n * n), *C = amalloc(4 * n * n);
        for (int64_t i = 0; i < n * n; i++) { A[i] = 1; B[i] = 0.5f; C[i] = 0; }
        double bs = 1e9;
        for (int r = 0; r < 5; r++) { double t = now(); for (int q = 0; q < 1000; q++) kernels_sgemm(n, n, n, A, n * n, B, n * n, C, n * n, 1, 0); t = now() - t; if (t < bs) bs = t; }
        printf("1000x sgemm %lld^3 %.1f GFLOP/s\n", (long long)n, 2.0 * n * n * n * 1000 / bs / 1e9);
        return 0;
    }
    if (argc > 2 && !strcmp(argv[2], "skinny")) {
        int64_t K = 4096, N = 4096;
        float *A = amalloc(4 * n * K), *B = amalloc(4 * K * N), *C = amalloc(4 * n * N);
        for (int64_t i = 0; i < K * N; i++) B[i] = 1.0f / (i % 5 + 1);
        for (int64_t i = 0; i < n * K; i++) A[i] = 1;
        double bs = 1e9;
        for (int r = 0; r < 5; r++) { double t = now(); kernels_sgemm(n, K, N, A, n * K, B, K * N, C, n * N, 1, 0); t = now() - t; if (t < bs) bs = t; }
        printf("sgemm %lldx4096x4096 %.2f GFLOP/s\n", (long long)n, 2.0 * n * K * N / bs / 1e9);
        return 0;
    }
    if (argc > 2 && !strcmp(argv[2], "softmax")) {
        float *X = amalloc(4 * n * cols), *Y = amalloc(4 * n * cols);
        for (int64_t i = 0; i < n * cols; i++) X[i] = (float)(i % 13) / 7;
        double bs = 1e9;
        for (int r = 0; r < 20; r++) { double t = now(); kernels_softmax(n, cols, X, n * cols, Y, n * cols); t = now() - t; if (t < bs) bs = t; }
        printf("softmax %lldx%lld %.3f ns/element\n", (long long)n, (long long)cols, bs / (n * cols) * 1e9);
        return 0;
    }
    if (argc > 2 && !strcmp(argv[2], "layernorm")) {
        float *X = amalloc(4 * n * cols), *Y = amalloc(4 * n * cols), *g = amalloc(4 * cols), *b = amalloc(4 * cols);
        for (int64_t i = 0; i < n * cols; i++) X[i] = (float)(i % 13) / 7;
        for (int64_t j = 0; j < cols; j++) { g[j] = 1 + (float)(j % 3) / 4; b[j] = (float)(j % 5) / 8; }
        double bs = 1e9;
        for (int r = 0; r < 20; r++) { double t = now(); kernels_layernorm(n, cols, X, n * cols, g, cols, b, cols, Y, n * cols, 1e-5f); t = now() - t; if (t < bs) bs = t; }
        printf("layernorm %lldx%lld %.3f ns/element\n", (long long)n, (long long)cols, bs / (n * cols) * 1e9);
        return 0;
    }
    if (argc > 2 && !strcmp(argv[2], "saxpy")) {
        int64_t N = n * 1024;
        float *x = amalloc(4 * N), *y = amalloc(4 * N);
        for (int64_t i = 0; i < N; i++) { x[i] = (float)(i % 13) / 7; y[i] = 0; }
        double bs = 1e9;
        for (int r = 0; r < 200; r++) { double t = now(); kernels_saxpy(N, x, N, y, N, 0.5f); t = now() - t; if (t < bs) bs = t; }
        printf("saxpy %lldx1024 %.3f ns/element\n", (long long)n, bs / N * 1e9);
        return 0;
    }
    float *A = amalloc(4 * n * n), *B = amalloc(4 * n * n), *C = amalloc(4 * n * n);
    double *a = amalloc(8 * n * n), *b = amalloc(8 * n * n), *c = amalloc(8 * n * n);
    for (int64_t i = 0; i < n * n; i++) { a[i] = 1.0 / (i % 7 + 1); b[i] = 1.0 / (i % 5 + 1); A[i] = a[i]; B[i] = b[i]; C[i] = c[i] = 0; }
    int reps = n >= 2048 ? 2 : (n >= 1024 ? 3 : 10);
    double bs = 1e9, bd = 1e9;
    for (int r = 0; r < reps; r++) { double t = now(); kernels_sgemm(n, n, n, A, n * n, B, n * n, C, n * n, 1, 0); t = now() - t; if (t < bs) bs = t; }
    for (int r = 0; r < reps; r++) { double t = now(); kernels_dgemm(n, n, n, a, n * n, b, n * n, c, n * n, 1, 0); t = now() - t; if (t < bd) bd = t; }
    printf("n=%lld sgemm %.1f dgemm %.1f GFLOP/s\n", (long long)n, 2.0 * n * n * n / bs / 1e9, 2.0 * n * n * n / bd / 1e9);
    return 0;
}
