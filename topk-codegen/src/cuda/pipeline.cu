// ---- Complete-row streaming through the bulk-copy engine (§5.3 on Hopper). ----
// One thread issues cp.async.bulk copies of PIPE_CHUNK scores into PIPE_STAGES shared stages,
// each completing on its own mbarrier; all threads consume a stage from shared memory. The
// bytes in flight no longer depend on registers: PIPE_STAGES * PIPE_CHUNK * 4 bytes per CTA.

__device__ __forceinline__ u32 shared_addr(const void* p) {
  u32 a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

// Once per CTA, before any row: arm one mbarrier per stage (one producer arrival per phase).
__device__ __forceinline__ void pipeline_init() {
  if (threadIdx.x == 0) {
    for (int s = 0; s < PIPE_STAGES; ++s)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(shared_addr(s_barrier(s))) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
}

// Copy `bytes` (a multiple of 16, from a 16-byte aligned address) into stage `seq % STAGES`.
__device__ __forceinline__ void pipeline_issue(u32 seq, const float* src, u32 bytes) {
  const int stage = (int)(seq % PIPE_STAGES);
  const u32 bar = shared_addr(s_barrier(stage));
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
      :: "r"(shared_addr(s_stage(stage))), "l"(src), "r"(bytes), "r"(bar) : "memory");
}

__device__ __forceinline__ void pipeline_wait(u32 seq) {
  const u32 bar = shared_addr(s_barrier((int)(seq % PIPE_STAGES)));
  const u32 parity = (seq / PIPE_STAGES) & 1u;
  u32 done = 0;
  do {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
        : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  } while (!done);
}

// Calls f(x, i) for every position of row[0, L), like stream_row, with the aligned body moved
// by the bulk-copy engine. `seq` counts the CTA's chunks (uniform across threads) so that stage
// phases stay consistent from row to row. Must be called by every thread of the CTA.
template <class F>
__device__ __forceinline__ void stream_row_bulk(const float* __restrict__ row, int L, u32& seq, F&& f) {
  const int tid = threadIdx.x;
  int head = (int)(((16u - ((u32)(u64)row & 15u)) & 15u) >> 2);
  if (head > L) head = L;
  if (tid < head) f(load_cg(row + tid), tid);
  const float* body = row + head;
  const int nbody = (L - head) & ~3;
  const int chunks = (nbody + PIPE_CHUNK - 1) / PIPE_CHUNK;
  auto chunk_bytes = [&](int c) -> u32 {
    const int n = nbody - c * PIPE_CHUNK;
    return (u32)(n < PIPE_CHUNK ? n : PIPE_CHUNK) * 4u;
  };
  if (tid == 0) {
    for (int c = 0; c < chunks && c < PIPE_STAGES; ++c)
      pipeline_issue(seq + (u32)c, body + (long long)c * PIPE_CHUNK, chunk_bytes(c));
  }
  for (int c = 0; c < chunks; ++c) {
    const u32 at = seq + (u32)c;
    pipeline_wait(at);
    const float4* stage = reinterpret_cast<const float4*>(s_stage((int)(at % PIPE_STAGES)));
    const int nvec = (int)(chunk_bytes(c) >> 4);
    const int base = head + c * PIPE_CHUNK;
    for (int v = tid; v < nvec; v += THREADS) {
      const float4 x = stage[v];
      const int i = base + 4 * v;
      f(x.x, i);
      f(x.y, i + 1);
      f(x.z, i + 2);
      f(x.w, i + 3);
    }
    __syncthreads();  // the stage is free again
    if (tid == 0 && c + PIPE_STAGES < chunks)
      pipeline_issue(at + PIPE_STAGES, body + (long long)(c + PIPE_STAGES) * PIPE_CHUNK,
                     chunk_bytes(c + PIPE_STAGES));
  }
  seq += (u32)chunks;
  const int done = head + nbody;
  if (done + tid < L) f(load_cg(row + done + tid), done + tid);
}
