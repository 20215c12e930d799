// kernel softmax, launch softmax_0: grid (M) of 64-thread threadgroups
// kernels.kdsl:66: let m[i] = max(j: X[i, j])
// kernels.kdsl:67: Y[i, j] = exp(X[i, j] - m[i])
// kernels.kdsl:68: let s[i] = sum(j: Y[i, j])
// kernels.kdsl:69: Y[i, j] = Y[i, j] / s[i]
kernel void softmax_0(
    device const float* X [[buffer(0)]],
    device float* Y [[buffer(1)]],
    device float* m [[buffer(2)]],
    device float* s [[buffer(3)]],
    constant softmax_0_dims& dims [[buffer(4)]],
    uint3 tg_pos [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]])
{
    const int M = dims.M;
    const int N = dims.N;
    threadgroup float red[2];
    threadgroup float red2[2];
    const int bi = int(tg_pos.x);
    if (bi < M) {
        {
            const int tidx = int(tid);
            const int sg_index = tidx / 32;
            const int sg_lane = tidx % 32;
            const int wi = tidx / 32;
            const int lane = tidx % 32;
            if (wi < 2 && lane < 32) {
                for (int i = bi; i < bi + 1; i += 1) {
                    float acc = -INFINITY;
                    for (int j = 32 * wi + lane; j < N; j += 64) {
                        acc = kg_max(acc, X[i * N + j]);
                    }
                    // simdgroup.reduce max %acc: every lane gets the simdgroup's max (NaN if any lane holds one)
                    acc = simd_any(metal::isnan(acc)) ? NAN : simd_max(acc);
                    if (lane == 0) {
                        red[wi] = acc;
                    }
                    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
                    if (wi == 0) {
                        acc = -INFINITY;
                        for (int u = lane; u < 2; u += 32) {
                            acc = kg_max(acc, red[u]);
                        }
                        // simdgroup.reduce max %acc: every lane gets the simdgroup's max (NaN if any lane holds one)
                        acc = simd_any(metal::isnan(acc)) ? NAN : simd_max(acc);
                        if (lane == 0) {
                            m[i] = acc;
                        }
                    }
                    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
                    for (int j_2 = 32 * wi + lane; j_2 < N; j_2 += 64) {
                        Y[i * N + j_2] = metal::exp(X[i * N + j_2] - m[i]);
                    }
                    float acc2 = 0.0f;
                    for (int j_3 = 32 * wi + lane; j_3 < N; j_3 += 64) {
                        acc2 = acc2 + Y[i * N + j_3];
                    }
                    // simdgroup.reduce + %acc2: butterfly over the 32 lanes (xor [16 8 4 2 1]), lane 0 holds the result
                    acc2 = acc2 + simd_shuffle_xor(acc2, 16);
                    acc2 = acc2 + simd_shuffle_xor(acc2, 8);
                    acc2 = acc2 + simd_shuffle_xor(acc2, 4);
                    acc2 = acc2 + simd_shuffle_xor(acc2, 2);
                    acc2 = acc2 + simd_shuffle_xor(acc2, 1);
                    if (lane == 0) {
                        red2[wi] = acc2;
                    }
                    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
                    if (wi == 0) {
                        acc2 = -0.0f;
                        for (int u2 = lane; u2 < 2; u2 += 32) {
                            acc2 = acc2 + red2[u2];
                        }
                        // simdgroup.reduce + %acc2: butterfly over the 32 lanes (xor [16 8 4 2 1]), lane 0 holds the result
                        acc2 = acc2 + simd_shuffle_xor(acc2, 16);
                        acc2 = acc2 + simd_shuffle_xor(acc2, 8);
                        acc2 = acc2 + simd_shuffle_xor(acc2, 4);
                        acc2 = acc2 + simd_shuffle_xor(acc2, 2);
                        acc2 = acc2 + simd_shuffle_xor(acc2, 1);
                        if (lane == 0) {
                            s[i] = acc2;
                        }
                    }
                    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
                    for (int j_4 = 32 * wi + lane; j_4 < N; j_4 += 64) {
                        Y[i * N + j_4] = Y[i * N + j_4] / s[i];
                    }
                }
            }
        }
    }
}
