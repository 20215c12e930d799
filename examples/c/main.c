/* A C program calling kgen's sgemm through the LLVM backend (kernels.ll, kernels.h from
 * `kgen gen -targets llvm -pkg kernels kernels.kdsl`), checked against a naive triple loop.
 * Build and run: ./run.sh (in this directory). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels.h"

static float frand(void) { return (float)((double)rand() / RAND_MAX * 2 - 1); }

/* check runs C = alpha·A·B + beta·C for one shape and compares it with the naive loop. */
static int check(int64_t M, int64_t K, int64_t N) {
	float *A = malloc(sizeof(float) * (M * K + 1)), *B = malloc(sizeof(float) * (K * N + 1));
	float *C = malloc(sizeof(float) * (M * N + 1)), *R = malloc(sizeof(float) * (M * N + 1));
	float alpha = 1.5f, beta = -0.5f;
	for (int64_t i = 0; i < M * K; i++) A[i] = frand();
	for (int64_t i = 0; i < K * N; i++) B[i] = frand();
	for (int64_t i = 0; i < M * N; i++) C[i] = R[i] = frand();
	int32_t st = kernels_sgemm(M, K, N, A, M * K, B, K * N, C, M * N, alpha, beta);
	if (st != KGEN_OK) {
		fprintf(stderr, "sgemm %lldx%lldx%lld: status %d\n", (long long)M, (long long)K, (long long)N, st);
		return 1;
	}
	int bad = 0;
	for (int64_t i = 0; i < M; i++) {
		for (int64_t j = 0; j < N; j++) {
			double s = 0, mag = 0;
			for (int64_t k = 0; k < K; k++) {
				s += (double)A[i * K + k] * B[k * N + j];
				mag += fabs((double)A[i * K + k] * B[k * N + j]);
			}
			double want = alpha * s + beta * R[i * N + j];
			double tol = 4 * (K + 2) * 0x1p-24 * (fabs(alpha) * mag + fabs(beta * R[i * N + j]) + 1e-30);
			if (fabs(C[i * N + j] - want) > tol) {
				if (bad++ < 5) fprintf(stderr, "C[%lld,%lld] = %g, want %g\n", (long long)i, (long long)j, C[i * N + j], want);
			}
		}
	}
	/* A wrong length is refused and C is left alone. */
	C[0] = 42;
	if (kernels_sgemm(M, K, N, A, M * K + 1, B, K * N, C, M * N, alpha, beta) != KGEN_ELEN || C[0] != 42) {
		fprintf(stderr, "a wrong length was not refused\n");
		bad++;
	}
	free(A), free(B), free(C), free(R);
	return bad != 0;
}

int main(void) {
	int64_t shapes[][3] = {{1, 1, 1}, {7, 13, 5}, {64, 64, 64}, {97, 301, 67}};
	int fails = 0;
	for (unsigned s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		fails += check(shapes[s][0], shapes[s][1], shapes[s][2]);
	if (fails) {
		printf("FAIL\n");
		return 1;
	}
	printf("ok: sgemm matches the naive loop\n");
	return 0;
}
