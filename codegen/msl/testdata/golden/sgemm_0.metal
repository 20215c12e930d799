// kernel sgemm, launch sgemm_0: grid (((M + 31) / 32), ((N + 7) / 8)) of 128-thread threadgroups
// kernels.kdsl:5: C[i, j] = alpha * sum(k: A[i, k] * B[k, j]) + beta * C[i, j]
kernel void sgemm_0(
    device const float* A [[buffer(0)]],
    device const float* B [[buffer(1)]],
    device float* C [[buffer(2)]],
    constant const float& alpha [[buffer(3)]],
    constant const float& beta [[buffer(4)]],
    constant sgemm_0_dims& dims [[buffer(5)]],
    uint3 tg_pos [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]])
{
    const int M = dims.M;
    const int K = dims.K;
    const int N = dims.N;
    threadgroup float As[768];
    threadgroup float Bs[192];
    threadgroup float kg_mma_a[256];
    threadgroup float kg_mma_b[256];
    threadgroup float kg_mma_c[256];
    const int bi = int(tg_pos.x) * 32;
    if (bi < M) {
        const int bj = int(tg_pos.y) * 8;
        if (bj < N) {
            {
                const int tidx = int(tid);
                const int sg_index = tidx / 32;
                const int sg_lane = tidx % 32;
                const int w = tidx / 32;
                const int lane = tidx % 32;
                if (w < 4 && lane < 32) {
                    // acc %acc2 f32[8 x 8] simdgroup metal.simdgroup8x8
                    simdgroup_float8x8 acc2 = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
                    for (int s = 0; s < 2; s += 1) {
                        for (int t = s; t < metal::min(s + 1, (K + 7) / 8); t += 1) {
                            for (int ra = 32 * w + lane; ra < 32; ra += 128) {
                                // copy 1x8 As+(((t % 3) * ((gpu.W * 8) * 8)) + (ra * 8)) rowmajor(ld=8) <- A+(((bi * K) + (t * 8)) + (ra * K)) rowmajor(ld=K) valid ((M - bi) - ra)x(K - (t * 8)) async group t (a plain copy: Metal has no cp.async)
                                for (int r = 0; r < 1; r += 1) {
                                    for (int c = 0; c < 8; c += 1) {
                                        As[t % 3 * 256 + 8 * ra + 8 * r + c] = r < M - bi - ra && c < K - 8 * t ? A[bi * K + 8 * t + ra * K + r * K + c] : 0.0f;
                                    }
                                }
                            }
                            for (int rb = 32 * w + lane; rb < 8; rb += 128) {
                                // copy 1x8 Bs+(((t % 3) * 64) + (rb * 8)) rowmajor(ld=8) <- B+((((t * 8) * N) + bj) + (rb * N)) rowmajor(ld=N) valid ((K - (t * 8)) - rb)x(N - bj) async group t (a plain copy: Metal has no cp.async)
                                for (int r_2 = 0; r_2 < 1; r_2 += 1) {
                                    for (int c_2 = 0; c_2 < 8; c_2 += 1) {
                                        Bs[t % 3 * 64 + 8 * rb + 8 * r_2 + c_2] = r_2 < K - 8 * t - rb && c_2 < N - bj ? B[8 * t * N + bj + rb * N + r_2 * N + c_2] : 0.0f;
                                    }
                                }
                            }
                        }
                        // async.commit: Metal has no asynchronous copies; the copies above completed synchronously
                    }
                    for (int kt = 0; kt < (K + 7) / 8; kt += 1) {
                        // async.wait 1: nothing to wait for (synchronous copies)
                        threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
                        for (int t2 = kt + 2; t2 < metal::min(kt + 3, (K + 7) / 8); t2 += 1) {
                            for (int ra2 = 32 * w + lane; ra2 < 32; ra2 += 128) {
                                // copy 1x8 As+(((t2 % 3) * ((gpu.W * 8) * 8)) + (ra2 * 8)) rowmajor(ld=8) <- A+(((bi * K) + (t2 * 8)) + (ra2 * K)) rowmajor(ld=K) valid ((M - bi) - ra2)x(K - (t2 * 8)) async group t2 (a plain copy: Metal has no cp.async)
                                for (int r_3 = 0; r_3 < 1; r_3 += 1) {
                                    for (int c_3 = 0; c_3 < 8; c_3 += 1) {
                                        As[t2 % 3 * 256 + 8 * ra2 + 8 * r_3 + c_3] = r_3 < M - bi - ra2 && c_3 < K - 8 * t2 ? A[bi * K + 8 * t2 + ra2 * K + r_3 * K + c_3] : 0.0f;
                                    }
                                }
                            }
                            for (int rb2 = 32 * w + lane; rb2 < 8; rb2 += 128) {
                                // copy 1x8 Bs+(((t2 % 3) * 64) + (rb2 * 8)) rowmajor(ld=8) <- B+((((t2 * 8) * N) + bj) + (rb2 * N)) rowmajor(ld=N) valid ((K - (t2 * 8)) - rb2)x(N - bj) async group t2 (a plain copy: Metal has no cp.async)
                                for (int r_4 = 0; r_4 < 1; r_4 += 1) {
                                    for (int c_4 = 0; c_4 < 8; c_4 += 1) {
                                        Bs[t2 % 3 * 64 + 8 * rb2 + 8 * r_4 + c_4] = r_4 < K - 8 * t2 - rb2 && c_4 < N - bj ? B[8 * t2 * N + bj + rb2 * N + r_4 * N + c_4] : 0.0f;
                                    }
                                }
                            }
                        }
                        // async.commit: Metal has no asynchronous copies; the copies above completed synchronously
                        // mma %acc2 += A·B f32 k=8 A=As+(((kt % 3) * ((gpu.W * 8) * 8)) + ((w * 8) * 8)) rowmajor(ld=8) B=Bs+((kt % 3) * 64) rowmajor(ld=8)
                        if (M - bi - 8 * w >= 8 && N - bj >= 8 && K - 8 * kt >= 8) {
                            simdgroup_float8x8 mat_a;
                            simdgroup_float8x8 mat_b;
                            simdgroup_load(mat_a, &As[kt % 3 * 256 + 64 * w], 8);
                            simdgroup_load(mat_b, &Bs[kt % 3 * 64], 8);
                            simdgroup_multiply_accumulate(acc2, mat_a, mat_b, acc2);
                        } else {
                            simdgroup_barrier(mem_flags::mem_threadgroup);
                            for (int e = sg_lane; e < 64; e += 32) {
                                const int i = e / 8;
                                const int p = e % 8;
                                kg_mma_a[sg_index * 64 + e] = i < metal::min(M - bi - 8 * w, 8) && p < metal::min(K - 8 * kt, 8) ? As[kt % 3 * 256 + 64 * w + 8 * i + p] : 0.0f;
                                const int p_2 = e / 8;
                                const int j = e % 8;
                                kg_mma_b[sg_index * 64 + e] = p_2 < metal::min(K - 8 * kt, 8) && j < metal::min(N - bj, 8) ? Bs[kt % 3 * 64 + 8 * p_2 + j] : 0.0f;
                            }
                            simdgroup_barrier(mem_flags::mem_threadgroup);
                            {
                                simdgroup_float8x8 mat_a;
                                simdgroup_float8x8 mat_b;
                                simdgroup_load(mat_a, &kg_mma_a[sg_index * 64], 8);
                                simdgroup_load(mat_b, &kg_mma_b[sg_index * 64], 8);
                                simdgroup_multiply_accumulate(acc2, mat_a, mat_b, acc2);
                            }
                        }
                    }
                    // async.wait 0: nothing to wait for (synchronous copies)
                    // accstore %acc2: C[...] = ((alpha * %acc2) + (beta * C[((bi + (w * 8)) + ei), (bj + ej)]))
                    simdgroup_barrier(mem_flags::mem_threadgroup);
                    simdgroup_store(acc2, &kg_mma_c[sg_index * 64], 8);
                    simdgroup_barrier(mem_flags::mem_threadgroup);
                    for (int e_2 = sg_lane; e_2 < 64; e_2 += 32) {
                        const int ei = e_2 / 8;
                        const int ej = e_2 % 8;
                        if (ei < metal::min(M - bi - 8 * w, 8) && ej < metal::min(N - bj, 8)) {
                            if (beta == 0.0f) {
                                C[(bi + 8 * w + ei) * N + bj + ej] = alpha * kg_mma_c[sg_index * 64 + e_2];
                            } else {
                                C[(bi + 8 * w + ei) * N + bj + ej] = alpha * kg_mma_c[sg_index * 64 + e_2] + beta * C[(bi + 8 * w + ei) * N + bj + ej];
                            }
                        }
                    }
                }
            }
        }
    }
}
