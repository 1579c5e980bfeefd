//! The `constexpr` block that specializes the shared CUDA body to one Spec.
use crate::family::{samples, Family, Layout, REGISTER_ITEMS, SCRATCH_AND_COUNTERS, SEGMENT_CAP};
use std::fmt::Write;
use topk_dsl::{Dtype, Io, Order, Prior, Rows, Spec, Ties, Transform};

/// float4 loads in flight per thread in the complete-row pass.
const UNROLL: u32 = 6;
/// Strided view loads in flight per thread.
const VIEW_BATCH: u32 = 4;

/// One `constexpr` line of the block: name, type, value and why it is there.
struct Const {
    name: &'static str,
    ty: &'static str,
    value: String,
    why: &'static str,
}

fn konst(name: &'static str, ty: &'static str, value: impl ToString, why: &'static str) -> Const {
    Const {
        name,
        ty,
        value: value.to_string(),
        why,
    }
}

pub(crate) fn emit(spec: &Spec, family: Family, layout: &Layout, entry: &str) -> String {
    let sampled = samples(spec, family);
    let mut s = String::from(
        "typedef unsigned int u32;\ntypedef unsigned long long u64;\n#define FULL_MASK 0xffffffffu\n",
    );
    s.push_str(&score_type(spec.dtype));
    let constants = block_constants(spec, layout)
        .into_iter()
        .chain(proposal_constants(spec, sampled))
        .chain(frontier_constants(layout))
        .chain(family_constants(spec, family, sampled))
        .chain(stage_constants(family, layout));
    for c in constants {
        writeln!(
            s,
            "constexpr {} {} = {};  // {}",
            c.ty, c.name, c.value, c.why
        )
        .unwrap();
    }
    if !spec.io.is_default() {
        s.push_str(&call_interface(
            &spec.io,
            spec.k,
            spec.prior_cap(),
            layout.sort_keys_staged,
        ));
    }
    writeln!(s, "#define ENTRY {entry}").unwrap();
    s.push_str(&digit_functions(spec));
    s
}

/// The CTA's shape, its loads in flight, the coarse and refinement histograms.
fn block_constants(spec: &Spec, layout: &Layout) -> Vec<Const> {
    vec![
        konst("K", "int", spec.k, "rank"),
        konst("THREADS", "int", spec.threads, "threads per CTA"),
        konst("NUM_WARPS", "int", spec.threads / 32, "warps per CTA"),
        konst(
            "MIN_BLOCKS",
            "int",
            layout.min_blocks,
            "CTAs per SM (launch bounds)",
        ),
        konst("UNROLL", "int", UNROLL, "float4 loads in flight per thread"),
        konst(
            "PREFETCH_AHEAD",
            "int",
            spec.prefetch,
            "row-stream batches sent to L2 ahead of their loads",
        ),
        konst(
            "VIEW_BATCH",
            "int",
            VIEW_BATCH,
            "view loads in flight per thread",
        ),
        konst(
            "COARSE_SHIFT",
            "u32",
            spec.coarse_shift(),
            "FP16 key -> coarse bin",
        ),
        konst(
            "COARSE_BINS",
            "int",
            spec.coarse_bins(),
            "coarse bins (eq. 11)",
        ),
        konst(
            "HIST_BINS",
            "int",
            spec.hist_bins(),
            "the one reused shared histogram",
        ),
        konst(
            "SCRATCH_AND_COUNTERS",
            "int",
            SCRATCH_AND_COUNTERS,
            "words the host reserves between histogram and frontiers",
        ),
        konst(
            "NUM_DIGITS",
            "int",
            spec.kernel_digits().as_slice().len(),
            "refinement digits of the FP32 key",
        ),
    ]
}

/// The sampled proposal (eq. 15-19): view stride, sample ranks, margins; a kernel that does
/// not sample gets the exact coarse boundary's values.
fn proposal_constants(spec: &Spec, sampled: bool) -> Vec<Const> {
    let stride = spec.stride().filter(|_| sampled).unwrap_or(1);
    let q = spec.sample_rank().filter(|_| sampled).unwrap_or(1);
    let q1 = spec.rescue_rank().filter(|_| sampled);
    vec![
        konst(
            "SAMPLED",
            "bool",
            sampled,
            "stride-view proposal (else exact coarse)",
        ),
        konst("STRIDE", "int", stride, "view stride s"),
        konst("SAMPLE_RANK", "int", q, "q = ceil(rho K / s)"),
        konst(
            "TAIL_RANK",
            "int",
            spec.tail_rank().filter(|_| sampled).unwrap_or(q),
            "q on a persistent call's tail rows: ceil(tail_rho K / s)",
        ),
        konst("RESCUE", "bool", q1.is_some(), "nested rescue boundary"),
        konst(
            "RESCUE_RANK",
            "int",
            q1.unwrap_or(q),
            "q1 = ceil(rescue K / s)",
        ),
        konst(
            "MIN_VIEW",
            "int",
            spec.min_view_len().filter(|_| sampled).unwrap_or(q),
            "samples a usable view needs",
        ),
        konst(
            "EXACT_BELOW",
            "int",
            spec.exact_below(),
            "rows shorter than this take the exact coarse boundary",
        ),
    ]
}

/// The shared frontier buffers.
fn frontier_constants(layout: &Layout) -> Vec<Const> {
    vec![
        konst(
            "CAP",
            "int",
            layout.frontier_cap,
            "shared frontier pairs per buffer on average",
        ),
        konst(
            "CAP0",
            "int",
            layout.frontier_cap0,
            "shared pairs of frontier buffer 0 (a row's candidates)",
        ),
        konst(
            "CAP1",
            "int",
            layout.frontier_cap1,
            "shared pairs of frontier buffer 1 (the refinement's boundary groups)",
        ),
    ]
}

/// The cluster CTA's segment stage (`Layout::segment_stage`).
fn stage_constants(family: Family, layout: &Layout) -> Vec<Const> {
    if !matches!(family, Family::Cluster { .. }) {
        return Vec::new();
    }
    vec![
        konst(
            "STAGE_CAP",
            "int",
            layout.segment_stage,
            "scores of a segment held in shared memory between the exact passes",
        ),
        konst(
            "STAGE_AT",
            "int",
            layout.segment_stage_at(),
            "word offset of that stage in the dynamic shared memory",
        ),
    ]
}

/// What only some kernels read: the grouped view, the cluster and KV-split shapes, the
/// persistent pool's stagger and tail, the row-local tile.
fn family_constants(spec: &Spec, family: Family, sampled: bool) -> Vec<Const> {
    let mut out = Vec::new();
    if sampled && spec.view_run > 1 {
        out.push(konst(
            "VIEW_RUN",
            "int",
            spec.view_run,
            "contiguous scores per view group",
        ));
    }
    if let Family::Cluster { ctas } = family {
        out.push(konst(
            "CLUSTER_CTAS",
            "u32",
            ctas,
            "CTAs per cluster (one row)",
        ));
    }
    if let Family::KvSplit { splits } = family {
        out.push(konst("SPLITS", "int", splits, "segment CTAs per row"));
        out.push(konst(
            "SEG_CAP",
            "int",
            SEGMENT_CAP,
            "staged pairs per segment",
        ));
    }
    if family == Family::Persistent {
        out.extend([
            konst(
                "STAGGER_NS",
                "u64",
                u64::from(spec.stagger_us) * 1000,
                "late start of the pool's second half",
            ),
            konst(
                "TAIL_ROWS",
                "int",
                spec.tail_rows,
                "a call's last rows with the tail margin (0: none)",
            ),
            konst(
                "TAIL_MAX_WAVES",
                "int",
                topk_dsl::TAIL_MAX_WAVES,
                "longest call with a tail margin, in pools of rows",
            ),
        ]);
    }
    if matches!(family, Family::RowLocalRegister | Family::RowLocalStreaming) {
        out.extend([
            konst(
                "REGISTER_ROW",
                "bool",
                family == Family::RowLocalRegister,
                "row held in registers",
            ),
            konst(
                "REG_ITEMS",
                "int",
                REGISTER_ITEMS,
                "scores per thread in the register tile",
            ),
        ]);
    }
    out
}

/// `digit_shift(j)` and `digit_width(j)` of the kernel's refinement digits, as constant
/// expressions the unrolled rounds fold.
fn digit_functions(spec: &Spec) -> String {
    let select = |vals: Vec<String>| -> String {
        let mut e = String::new();
        for (j, v) in vals.iter().enumerate().take(vals.len() - 1) {
            write!(e, "j == {j} ? {v} : ").unwrap();
        }
        e.push_str(vals.last().unwrap());
        e
    };
    let shifts = spec.kernel_digit_shifts();
    let digits = spec.kernel_digits();
    let mut s = String::new();
    writeln!(
        s,
        "__device__ __forceinline__ constexpr int digit_shift(int j) {{ return {}; }}",
        select(shifts.iter().map(|x| x.to_string()).collect())
    )
    .unwrap();
    writeln!(
        s,
        "__device__ __forceinline__ constexpr int digit_width(int j) {{ return {}; }}",
        select(digits.as_slice().iter().map(|x| x.to_string()).collect())
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
fn call_interface(io: &Io, k: u32, prior_cap: u32, sort_keys_staged: bool) -> String {
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
        Transform::Paged | Transform::PagedRows => "TRANSFORM_PAGED",
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
    c(
        "SORT_KEYS_STAGED",
        "bool",
        sort_keys_staged.to_string(),
        "a sorted row's keys staged in the workspace as committed",
    );
    if io.transform == Transform::PagedRows {
        s.push_str("#define CALL_PAGE_ROWS 1  // row r reads page-table row page_rows[r]\n");
    }
    if let Prior::Bins { primary, rescue } = io.prior {
        s.push_str("#define CALL_PRIOR 1  // a row proposes from its prior boundary first\n");
        let mut c = |name: &str, value: String, why: &str| {
            writeln!(s, "constexpr int {name} = {value};  // {why}").unwrap();
        };
        c(
            "PRIOR_PRIMARY_BINS",
            primary.to_string(),
            "coarse bins below the prior's that its cutoff reaches",
        );
        c(
            "PRIOR_RESCUE_BINS",
            rescue.to_string(),
            "coarse bins below the prior's that its band reaches",
        );
        c(
            "PRIOR_CAP",
            prior_cap.to_string(),
            "most scores a prior may admit (Spec::prior_cap)",
        );
    }
    if io.boundary {
        s.push_str("#define CALL_BOUNDARY 1  // each row's K-th largest score is written\n");
    }
    s
}

/// Pairs the in-kernel sort of an output row orders: K rounded up to a power of two.
pub(crate) fn sort_slots(k: u32) -> u32 {
    k.next_power_of_two()
}
