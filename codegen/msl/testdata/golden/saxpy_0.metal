// kernel saxpy, launch saxpy_0: grid (((N + 127) / 128)) of 128-thread threadgroups
// kernels.kdsl:51: y[i] = alpha * x[i] + y[i]
kernel void saxpy_0(
    device const float* x [[buffer(0)]],
    device float* y [[buffer(1)]],
    constant const float& alpha [[buffer(2)]],
    constant saxpy_0_dims& dims [[buffer(3)]],
    uint3 tg_pos [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]])
{
    const int N = dims.N;
    const int bi = int(tg_pos.x) * 128;
    if (bi < N) {
        {
            const int tidx = int(tid);
            const int ti = tidx;
            if (ti < 128) {
                for (int i = bi + ti; i < metal::min(bi + ti + 1, N); i += 1) {
                    y[i] = alpha * x[i] + y[i];
                }
            }
        }
    }
}
