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
    threadgroup float red[64];
    threadgroup float red2[64];
    const int bi = int(tg_pos.x);
    if (bi < M) {
        {
            const int tidx = int(tid);
            const int ti = tidx;
            if (ti < 64) {
                for (int i = bi; i < bi + 1; i += 1) {
                    float acc = -INFINITY;
                    for (int j = ti; j < N; j += 64) {
                        acc = kg_max(acc, X[i * N + j]);
                    }
                    red[ti] = acc;
                    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
                    if (ti == 0) {
                        for (int u = 1; u < 64; u += 1) {
                            acc = kg_max(acc, red[u]);
                        }
                        m[i] = acc;
                    }
                    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
                    for (int j_2 = ti; j_2 < N; j_2 += 64) {
                        Y[i * N + j_2] = metal::exp(X[i * N + j_2] - m[i]);
                    }
                    float acc2 = 0.0f;
                    for (int j_3 = ti; j_3 < N; j_3 += 64) {
                        acc2 = acc2 + Y[i * N + j_3];
                    }
                    red2[ti] = acc2;
                    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
                    if (ti == 0) {
                        for (int u2 = 1; u2 < 64; u2 += 1) {
                            acc2 = acc2 + red2[u2];
                        }
                        s[i] = acc2;
                    }
                    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
                    for (int j_4 = ti; j_4 < N; j_4 += 64) {
                        Y[i * N + j_4] = Y[i * N + j_4] / s[i];
                    }
                }
            }
        }
    }
}
