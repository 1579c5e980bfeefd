// ---- Per-row state and row sources. ----
#define ROUTE_SHORT 0
#define ROUTE_PRIMARY 1
#define ROUTE_RESCUE 2
#define ROUTE_RECOVERY 3
#define ROUTE_DIRECT_EXACT 4

#define STATUS_NAN 1u
#define STATUS_BAD_LENGTH 2u
#define STATUS_BAD_ROWS 4u

// CTA-owned state of the row in flight: the reused histogram (§5.2-5.4), block scratch, the two
// ping-pong frontiers and their global spill slices, and shared counters.
struct RowCtx {
  int* hist;          // HIST_BINS bins, reused: sample -> leading digit -> next digits
  int* scratch;       // SCRATCH_WORDS words
  int* count;         // items in the current frontier
  int* next_count;    // items appended to the next frontier
  int* out_count;     // committed output slots
  int* tie_count;     // boundary ties taken at the last digit
  Frontier cur, next;
  int spill_cap;
  bool nan;           // this thread saw a NaN
};

// A row streamed from global memory.
struct GlobalRow {
  const float* p;
  int L;
  template <class F> __device__ __forceinline__ void for_each(F&& f) const { stream_row(p, L, f); }
};
