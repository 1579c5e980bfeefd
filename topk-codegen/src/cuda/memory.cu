// ---- Memory access: cache-global loads (§5.3) and a warp-uniform row stream. ----
__device__ __forceinline__ float4 load_cg4(const float4* p) {
  float4 v;
  asm("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
      : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
  return v;
}

__device__ __forceinline__ float load_cg(const float* p) {
  float v;
  asm("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p));
  return v;
}

// Calls f(x, i, valid) for every position i of row[0, L). Every thread of the CTA makes the same
// number of calls (invalid slots have valid == false), so f may use warp collectives. Up to three
// leading elements are peeled so the body runs on 16-byte aligned float4 loads whatever the pitch
// or base alignment; the last partial vector is read as scalars.
template <class F>
__device__ __forceinline__ void stream_row(const float* __restrict__ row, int L, F&& f) {
  const int tid = threadIdx.x;
  int head = (int)(((16u - ((u32)(u64)row & 15u)) & 15u) >> 2);
  if (head > L) head = L;
  {
    bool v = tid < head;
    f(v ? load_cg(row + tid) : 0.0f, tid, v);
  }
  const float4* body = reinterpret_cast<const float4*>(row + head);
  const int nvec = (L - head) >> 2;
  for (int base = 0; base < nvec; base += THREADS * UNROLL) {
    float4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      int j = base + u * THREADS + tid;
      if (j < nvec) v[u] = load_cg4(body + j);
      else { v[u].x = 0.0f; v[u].y = 0.0f; v[u].z = 0.0f; v[u].w = 0.0f; }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      int j = base + u * THREADS + tid;
      bool ok = j < nvec;
      int i = head + 4 * j;
      f(v[u].x, i, ok);
      f(v[u].y, i + 1, ok);
      f(v[u].z, i + 2, ok);
      f(v[u].w, i + 3, ok);
    }
  }
  const int done = head + 4 * nvec;
  {
    bool v = done + tid < L;
    f(v ? load_cg(row + done + tid) : 0.0f, done + tid, v);
  }
}
