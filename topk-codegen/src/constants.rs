//! The `constexpr` block that specializes the shared CUDA body to one Spec.
use crate::family::{samples, Family, Layout, REGISTER_ITEMS, SCRATCH_AND_COUNTERS, SEGMENT_CAP};
use std::fmt::Write;
use topk_dsl::{Dtype, Io, Order, Rows, Spec, Ties, Transform};

/// float4 loads in flight per thread in the complete-row pass.
const UNROLL: u32 = 6;
/// Strided view loads in flight per thread.
const VIEW_BATCH: u32 = 4;

pub(crate) fn emit(spec: &Spec, family: Family, layout: &Layout, entry: &str) -> String {
    let sampled = samples(spec, family);
    let stride = spec.stride().filter(|_| sampled).unwrap_or(1);
    let q = spec.sample_rank().filter(|_| sampled).unwrap_or(1);
    let q1 = spec.rescue_rank().filter(|_| sampled);
    let shifts = spec.kernel_digit_shifts();
    let kernel_digits = spec.kernel_digits();
    let widths = kernel_digits.as_slice();
    let mut s = String::from(
        "typedef unsigned int u32;\ntypedef unsigned long long u64;\n#define FULL_MASK 0xffffffffu\n",
    );
    s.push_str(&score_type(spec.dtype));
    let mut c = |name: &str, ty: &str, value: String, why: &str| {
        writeln!(s, "constexpr {ty} {name} = {value};  // {why}").unwrap();
    };
    c("K", "int", spec.k.to_string(), "rank");
    c(
        "THREADS",
        "int",
        spec.threads.to_string(),
        "threads per CTA",
    );
    c(
        "NUM_WARPS",
        "int",
        (spec.threads / 32).to_string(),
        "warps per CTA",
    );
    c(
        "MIN_BLOCKS",
        "int",
        layout.min_blocks.to_string(),
        "CTAs per SM (launch bounds)",
    );
    c(
        "UNROLL",
        "int",
        UNROLL.to_string(),
        "float4 loads in flight per thread",
    );
    c(
        "PREFETCH_AHEAD",
        "int",
        spec.prefetch.to_string(),
        "row-stream batches sent to L2 ahead of their loads",
    );
    c(
        "VIEW_BATCH",
        "int",
        VIEW_BATCH.to_string(),
        "view loads in flight per thread",
    );
    c(
        "COARSE_SHIFT",
        "u32",
        spec.coarse_shift().to_string(),
        "FP16 key -> coarse bin",
    );
    c(
        "COARSE_BINS",
        "int",
        spec.coarse_bins().to_string(),
        "coarse bins (eq. 11)",
    );
    let hist = spec.hist_bins();
    c(
        "HIST_BINS",
        "int",
        hist.to_string(),
        "the one reused shared histogram",
    );
    c(
        "SCRATCH_AND_COUNTERS",
        "int",
        SCRATCH_AND_COUNTERS.to_string(),
        "words the host reserves between histogram and frontiers",
    );
    c(
        "NUM_DIGITS",
        "int",
        widths.len().to_string(),
        "refinement digits of the FP32 key",
    );
    c(
        "SAMPLED",
        "bool",
        sampled.to_string(),
        "stride-view proposal (else exact coarse)",
    );
    c("STRIDE", "int", stride.to_string(), "view stride s");
    c("SAMPLE_RANK", "int", q.to_string(), "q = ceil(rho K / s)");
    c(
        "TAIL_RANK",
        "int",
        spec.tail_rank()
            .filter(|_| sampled)
            .unwrap_or(q)
            .to_string(),
        "q on a persistent call's tail rows: ceil(tail_rho K / s)",
    );
    c(
        "RESCUE",
        "bool",
        q1.is_some().to_string(),
        "nested rescue boundary",
    );
    c(
        "RESCUE_RANK",
        "int",
        q1.unwrap_or(q).to_string(),
        "q1 = ceil(rescue K / s)",
    );
    c(
        "MIN_VIEW",
        "int",
        spec.min_view_len()
            .filter(|_| sampled)
            .unwrap_or(q)
            .to_string(),
        "samples a usable view needs",
    );
    c(
        "EXACT_BELOW",
        "int",
        spec.exact_below().to_string(),
        "rows shorter than this take the exact coarse boundary",
    );
    c(
        "CAP",
        "int",
        layout.frontier_cap.to_string(),
        "shared frontier pairs per buffer on average",
    );
    c(
        "CAP0",
        "int",
        layout.frontier_cap0.to_string(),
        "shared pairs of frontier buffer 0 (a row's candidates)",
    );
    c(
        "CAP1",
        "int",
        layout.frontier_cap1.to_string(),
        "shared pairs of frontier buffer 1 (the refinement's boundary groups)",
    );
    if sampled && spec.view_run > 1 {
        c(
            "VIEW_RUN",
            "int",
            spec.view_run.to_string(),
            "contiguous scores per view group",
        );
    }
    if let Family::Cluster { ctas } = family {
        c(
            "CLUSTER_CTAS",
            "u32",
            ctas.to_string(),
            "CTAs per cluster (one row)",
        );
    }
    if let Family::KvSplit { splits } = family {
        c("SPLITS", "int", splits.to_string(), "segment CTAs per row");
        c(
            "SEG_CAP",
            "int",
            SEGMENT_CAP.to_string(),
            "staged pairs per segment",
        );
    }
    if family == Family::Persistent {
        c(
            "STAGGER_NS",
            "u64",
            (u64::from(spec.stagger_us) * 1000).to_string(),
            "late start of the pool's second half",
        );
        c(
            "TAIL_ROWS",
            "int",
            spec.tail_rows.to_string(),
            "a call's last rows with the tail margin (0: none)",
        );
        c(
            "TAIL_MAX_WAVES",
            "int",
            topk_dsl::TAIL_MAX_WAVES.to_string(),
            "longest call with a tail margin, in pools of rows",
        );
    }
    if matches!(family, Family::RowLocalRegister | Family::RowLocalStreaming) {
        let register = family == Family::RowLocalRegister;
        c(
            "REGISTER_ROW",
            "bool",
            register.to_string(),
            "row held in registers",
        );
        c(
            "REG_ITEMS",
            "int",
            REGISTER_ITEMS.to_string(),
            "scores per thread in the register tile",
        );
    }
    if !spec.io.is_default() {
        s.push_str(&call_interface(&spec.io, spec.k));
    }
    writeln!(s, "#define ENTRY {entry}").unwrap();
    let select = |vals: Vec<String>| -> String {
        let mut e = String::new();
        for (j, v) in vals.iter().enumerate().take(vals.len() - 1) {
            write!(e, "j == {j} ? {v} : ").unwrap();
        }
        e.push_str(vals.last().unwrap());
        e
    };
    writeln!(
        s,
        "__device__ __forceinline__ constexpr int digit_shift(int j) {{ return {}; }}",
        select(shifts.iter().map(|x| x.to_string()).collect())
    )
    .unwrap();
    writeln!(
        s,
        "__device__ __forceinline__ constexpr int digit_width(int j) {{ return {}; }}",
        select(widths.iter().map(|x| x.to_string()).collect())
    )
    .unwrap();
    s
}

/// The scores' element type in memory (`score_t`) and its width as a `#define` (the row stream
/// and the value stores choose their code by it). Every pass past the loads works on the exact
/// FP32 value of a score, so a 16-bit score needs no other code of its own.
fn score_type(dtype: Dtype) -> String {
    let (ty, bits, bf16) = match dtype {
        Dtype::F32 => ("float", 32, false),
        // FP16 and bfloat16 scores are loaded as their bits and widened (memory.cu).
        Dtype::F16 => ("unsigned short", 16, false),
        Dtype::Bf16 => ("unsigned short", 16, true),
    };
    // SCORE_BF16 is a macro: a namespace-scope `constexpr bool` of its own changed the f32
    // kernels' CUBIN (scripts/cubin-hashes.sh), a `#define` leaves it as it was.
    format!(
        "typedef {ty} score_t;  // a score as stored ({dtype})\n#define SCORE_BITS {bits}\n\
         #define SCORE_BF16 {bf16}  // 16-bit scores are bfloat16 (else FP16)\n\n"
    )
}

/// The call interface's constants (`docs/interface.md`), for a spec beyond the plain operator
/// only: `CALL_IO` switches the fragments' interface code on, so a plain spec's source is the
/// plain operator's.
fn call_interface(io: &Io, k: u32) -> String {
    let mut s = String::from("#define CALL_IO 1  // the call interface (docs/interface.md)\n");
    let mut c = |name: &str, ty: &str, value: String, why: &str| {
        writeln!(s, "constexpr {ty} {name} = {value};  // {why}").unwrap();
    };
    c(
        "VALUES",
        "bool",
        io.values.to_string(),
        "the selected scores beside the indices",
    );
    c(
        "SORTED",
        "bool",
        (io.order == Order::Sorted).to_string(),
        "output rows descending by value",
    );
    c(
        "LOWEST_TIES",
        "bool",
        (io.ties == Ties::Lowest).to_string(),
        "ties at rank K go to the lowest positions",
    );
    c("ROWS_LENGTHS", "int", "0".into(), "row source kinds");
    c("ROWS_WINDOW", "int", "1".into(), "");
    c("ROWS_DECODE", "int", "2".into(), "");
    let (rows, absolute) = match io.rows {
        Rows::Lengths => ("ROWS_LENGTHS", false),
        Rows::Window { relative } => ("ROWS_WINDOW", !relative),
        Rows::Decode => ("ROWS_DECODE", false),
    };
    c(
        "ROW_SOURCE",
        "int",
        rows.into(),
        "where a row's valid scores lie",
    );
    c(
        "ABSOLUTE_INDICES",
        "bool",
        absolute.to_string(),
        "indices written as positions in the whole row",
    );
    c("TRANSFORM_NONE", "int", "0".into(), "index transform kinds");
    c("TRANSFORM_OFFSET", "int", "1".into(), "");
    c("TRANSFORM_PAGED", "int", "2".into(), "");
    let transform = match io.transform {
        Transform::None => "TRANSFORM_NONE",
        Transform::Offset => "TRANSFORM_OFFSET",
        Transform::Paged => "TRANSFORM_PAGED",
    };
    c(
        "INDEX_TRANSFORM",
        "int",
        transform.into(),
        "what is written for a position",
    );
    c(
        "SORT_SLOTS",
        "int",
        sort_slots(k).to_string(),
        "pairs of the output sort: K up to a power of two",
    );
    s
}

/// Pairs the in-kernel sort of an output row orders: K rounded up to a power of two.
pub(crate) fn sort_slots(k: u32) -> u32 {
    k.next_power_of_two()
}
