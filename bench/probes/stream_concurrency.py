"""Memory-system probes behind the persistent pool's design (not part of the selector).

1. `stream`: aggregate read bandwidth when only G CTAs stream, each its own 4 MB (float4
   cache-global loads, UNROLL vectors in flight per thread): how much of the DRAM one CTA, or one
   CTA per SM, pulls while the other workers idle. Up to 12 CTAs the 4 MB blocks stay in L2 (50
   MB) between repetitions, so those rows measure L2.
2. `view`: every one of 264 CTAs reads 1024 8-byte pairs from its own 1 MB row at once, as the
   first wave of a call proposes: one pair per 1 KB, or 2 / 4 pairs 128 bytes apart in chunks
   2 / 4 KB apart (the same pairs, fewer DRAM rows opened); from DRAM (`dram_cold`, four 264 MB
   regions in turn) or from L2. `view_phased` is the selector's own layout (the row's phase).
   `empty` is the launch-and-event overhead the other times include.
Prints one JSON line per measurement (`views` as the argument: the view probes alone). Needs
cupy and a GPU:

    python3 bench/probes/stream_concurrency.py [views]
"""
import json
import sys

import cupy as cp

SRC = r"""
#ifndef UNROLL
#define UNROLL 6
#endif
#ifndef PAIRS_PER_CHUNK
#define PAIRS_PER_CHUNK 1
#endif
extern "C" __global__ void __launch_bounds__(THREADS, 1)
stream(const float4* __restrict__ base, long long row_vecs, float* __restrict__ out) {
  const float4* row = base + (long long)blockIdx.x * row_vecs;
  float acc = 0.f;
  for (long long j = threadIdx.x; j < row_vecs; j += (long long)UNROLL * THREADS) {
    float4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long long k = j + (long long)u * THREADS;
      if (k < row_vecs)
        asm volatile("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];"
                     : "=f"(v[u].x), "=f"(v[u].y), "=f"(v[u].z), "=f"(v[u].w) : "l"(row + k));
      else v[u] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc = fmaxf(acc, fmaxf(fmaxf(v[u].x, v[u].y), fmaxf(v[u].z, v[u].w)));
  }
  if (acc == 12345.f) out[blockIdx.x] = acc;
}

// PAIRS_PER_CHUNK pairs in each chunk touched (1: one pair per `period`; 2, 4: pairs 128 bytes
// apart in chunks of 256 / 512 bytes, chunks that many periods apart): the same number of pairs,
// fewer DRAM rows opened.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
view(const float* __restrict__ base, long long row_floats, long long region_floats, int groups,
     int period_floats, float* __restrict__ out) {
  const float* row = base + region_floats + (long long)blockIdx.x * row_floats;
  float acc = 0.f;
  for (int g0 = threadIdx.x; g0 < groups; g0 += 4 * THREADS) {
    float2 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int g = g0 + u * THREADS;
      long long at;
      at = (long long)(g / PAIRS_PER_CHUNK) * PAIRS_PER_CHUNK * period_floats +
           (g % PAIRS_PER_CHUNK) * 32;
      if (g < groups)
        asm volatile("ld.global.cg.v2.f32 {%0,%1}, [%2];" : "=f"(v[u].x), "=f"(v[u].y) : "l"(row + at));
      else v[u] = make_float2(0.f, 0.f);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) acc = fmaxf(acc, fmaxf(v[u].x, v[u].y));
  }
  if (acc == 12345.f) out[blockIdx.x] = acc;
}
// The proposal's view as the selector reads it: pair g of row r at (phase(r) + g * 128) * 2
// floats, phase(r) = (17 r + 13) mod 128.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
view_phased(const float* __restrict__ base, long long row_floats, long long region_floats,
            int groups, float* __restrict__ out) {
  const float* row = base + region_floats + (long long)blockIdx.x * row_floats;
  const int phase = (int)(((unsigned)blockIdx.x * 17u + 13u) & 127u);
  float acc = 0.f;
  for (int g0 = threadIdx.x; g0 < groups; g0 += 4 * THREADS) {
    float2 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int g = g0 + u * THREADS;
      const long long at = (long long)(phase + g * 128) * 2;
      if (g < groups)
        asm volatile("ld.global.cg.v2.f32 {%0,%1}, [%2];" : "=f"(v[u].x), "=f"(v[u].y) : "l"(row + at));
      else v[u] = make_float2(0.f, 0.f);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) acc = fmaxf(acc, fmaxf(v[u].x, v[u].y));
  }
  if (acc == 12345.f) out[blockIdx.x] = acc;
}

extern "C" __global__ void empty(float* __restrict__ out) {
  if (threadIdx.x == 12345) out[0] = 1.f;
}
"""


def kernel(name, **defs):
    opts = tuple("-D%s=%d" % kv for kv in defs.items()) + ("--std=c++17",)
    return cp.RawModule(code=SRC, options=opts).get_function(name)


def time_ms(fn, reps=20):
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    times.sort()
    return times[len(times) // 2]


def main():
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    row_bytes = 4 << 20  # 4 MB per CTA: launch and tail costs stay small
    max_ctas = 2 * sms
    data = cp.random.random((max_ctas * row_bytes) // 4, dtype=cp.float32)
    out = cp.zeros(max_ctas, dtype=cp.float32)
    row_vecs = row_bytes // 16
    views_only = sys.argv[1:] == ["views"]
    for threads, unroll in [] if views_only else [(512, 6), (512, 12), (384, 6), (1024, 6)]:
        k = kernel("stream", THREADS=threads, UNROLL=unroll)
        for g in [1, 2, 8, 33, 66, 99, 132, 198, 264]:
            if g > max_ctas:
                continue
            ms = time_ms(lambda: k((g,), (threads,), (data, cp.int64(row_vecs), out)))
            print(json.dumps({"probe": "stream", "threads": threads, "unroll": unroll, "ctas": g,
                              "ms": round(ms, 4), "tbps": round(g * row_bytes / ms / 1e9, 3)}))
            sys.stdout.flush()
    # The proposal's first wave: 264 rows of 1 MB, 1024 pairs each (one per 1 KB), read from
    # DRAM: four 264 MB regions in turn (L2 holds 50 MB); `dram_cold` false: one region, L2-warm.
    row_floats = (1 << 20) // 4
    region = 264 * row_floats
    for pairs_per_chunk in [1, 2, 4]:
        k = kernel("view", THREADS=512, PAIRS_PER_CHUNK=pairs_per_chunk)
        for cold in [True, False]:
            turn = [0]

            def launch():
                r = turn[0] % 4 if cold else 0
                turn[0] += 1
                k((264,), (512,), (data, cp.int64(row_floats), cp.int64(r * region),
                                   cp.int32(1024), cp.int32(256), out))
            ms = time_ms(launch)
            print(json.dumps({"probe": "view", "pairs_per_chunk": pairs_per_chunk, "ctas": 264,
                              "dram_cold": cold, "us": round(ms * 1e3, 2)}))
            sys.stdout.flush()
    k = kernel("empty", THREADS=512)
    ms = time_ms(lambda: k((264,), (512,), (out,)))
    print(json.dumps({"probe": "empty", "ctas": 264, "us": round(ms * 1e3, 2)}))
    # The selector's own view layout, from DRAM and from L2.
    k = kernel("view_phased", THREADS=512)
    for cold in [True, False]:
        turn = [0]

        def launch():
            r = turn[0] % 4 if cold else 0
            turn[0] += 1
            k((264,), (512,), (data, cp.int64(row_floats), cp.int64(r * region), cp.int32(1024),
                               out))
        ms = time_ms(launch)
        print(json.dumps({"probe": "view_phased", "ctas": 264, "span_bytes": row_floats * 4,
                          "dram_cold": cold, "us": round(ms * 1e3, 2)}))
        sys.stdout.flush()

if __name__ == "__main__":
    main()
