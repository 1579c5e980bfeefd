//! The host-kernel interface, written once: the entry points' parameters, the route codes, the
//! status bits, the control block's words and the stage chain's codes. The generated source
//! gets them as `#define`s (`emit`); the runtime pushes its launch arguments against
//! [`Entry::params`] and reads routes, status and control words from the same constants.
//!
//! An entry's parameter list is a function of the spec's call interface ([`topk_dsl::Io`]): its
//! row source stands where the plain operator's `lengths` stands, and the transform's and the
//! values' parameters follow the plain list, each only for a spec that uses it. A plain spec's
//! list is the plain operator's.

use crate::Family;
use std::fmt::Write;
use topk_dsl::{Io, Prior, Rows, Transform};

/// Route codes a kernel writes into a row's route info (paper Table 2); `topk_runtime::Route`
/// takes its discriminants from here.
pub mod route {
    /// `L <= K`: every valid index, then `-1`.
    pub const SHORT: u8 = 0;
    /// The primary boundary certified.
    pub const PRIMARY: u8 = 1;
    /// The primary boundary underfilled; the rescue band certified.
    pub const RESCUE: u8 = 2;
    /// The proposal underfilled; exact coarse recovery.
    pub const RECOVERY: u8 = 3;
    /// The exact coarse route from the start.
    pub const DIRECT_EXACT: u8 = 4;
    /// The row's prior boundary certified at its cutoff.
    pub const PRIOR_PRIMARY: u8 = 5;
    /// The prior's cutoff underfilled; its rescue band certified.
    pub const PRIOR_RESCUE: u8 = 6;
}

/// Status bits the kernels raise in a launch's status word.
pub mod status {
    /// A valid score was NaN: outside the contract, the row's output is unspecified.
    pub const NAN: u32 = 1;
    /// A length was outside `[0, width]`: the row was treated as empty.
    pub const BAD_LENGTH: u32 = 2;
    /// The live row count was outside `[0, M_cap]`: it was clamped.
    pub const BAD_ROWS: u32 = 4;
    /// A row's written indices would leave the non-negative int32 range (its offset range, a
    /// page beyond the page table's columns, a page size below 1, or a used page entry that is
    /// negative or too large): the row's output is unspecified (`docs/interface.md`).
    pub const BAD_TRANSFORM: u32 = 8;
}

/// Words of the control block at the start of a single-kernel family's workspace.
pub mod control {
    /// Rows (work items) claimed so far by the persistent pool, past the first wave.
    pub const CURSOR: usize = 0;
    /// CTAs that have finished; the last one zeroes the cursor and this counter.
    pub const EXITS: usize = 1;
    /// The status bits ([`super::status`]).
    pub const STATUS: usize = 2;
    /// Words of the block (the last one is padding).
    pub const WORDS: usize = 4;
}

/// The stage chain (`sharded.cu`): stage codes (the stage entry's `stage` argument) and the
/// per-row and per-call words of its workspace.
pub mod staged {
    pub const SAMPLE: i32 = 0;
    pub const PROPOSAL: i32 = 1;
    pub const CERTIFY: i32 = 2;
    pub const ROUTE: i32 = 3;
    pub const DIGIT: i32 = 4;
    pub const BOUNDARY: i32 = 5;
    pub const COUNT: i32 = 6;
    pub const EMIT: i32 = 7;
    pub const COPY: i32 = 8;
    /// Words of per-row state (boundaries, route, radix prefix and quota).
    pub const STATE_WORDS: usize = 8;
    /// Words of per-row cursors (candidates, emitted scores and ties).
    pub const CURSOR_WORDS: usize = 4;
    /// Words of the status region; the first holds the status bits.
    pub const STATUS_WORDS: usize = 4;
}

/// How a parameter's value travels from the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostArg {
    /// A device address (`CUdeviceptr`, 64 bits).
    DevicePtr,
    /// `int`.
    I32,
    /// `long long`.
    I64,
}

/// The C type of an entry parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CType {
    /// Scores in the spec's dtype (`score_t`).
    ConstScorePtr,
    /// Values written in the spec's dtype (`score_t`).
    ScorePtr,
    ConstI32Ptr,
    I32Ptr,
    U32Ptr,
    ConstU32Ptr,
    ConstF32Ptr,
    F32Ptr,
    Int,
    LongLong,
}

impl CType {
    /// The declaration's type as the generated source spells it.
    pub const fn c(self) -> &'static str {
        match self {
            CType::ConstScorePtr => "const score_t* __restrict__",
            CType::ScorePtr => "score_t* __restrict__",
            CType::ConstI32Ptr => "const int* __restrict__",
            CType::I32Ptr => "int* __restrict__",
            CType::U32Ptr => "u32* __restrict__",
            CType::ConstU32Ptr => "const u32* __restrict__",
            CType::ConstF32Ptr => "const float* __restrict__",
            CType::F32Ptr => "float* __restrict__",
            CType::Int => "int",
            CType::LongLong => "long long",
        }
    }

    pub const fn host(self) -> HostArg {
        match self {
            CType::Int => HostArg::I32,
            CType::LongLong => HostArg::I64,
            _ => HostArg::DevicePtr,
        }
    }
}

/// One parameter of an entry point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: &'static str,
    pub ty: CType,
    pub meaning: &'static str,
}

const fn param(name: &'static str, ty: CType, meaning: &'static str) -> Param {
    Param { name, ty, meaning }
}

/// An entry point of a generated source: the macro naming it and its parameters
/// ([`Entry::params`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The `#define` that names the entry (`ENTRY`); its parameter list is `{define}_PARAMS`.
    pub define: &'static str,
    /// The parameters before the row source (all of them when `call` is false).
    pub head: &'static [Param],
    /// Whether the entry takes the call interface: the row source ([`rows_params`]) after
    /// `head`, then `tail`, then the transform's ([`transform_params`]), the values'
    /// ([`VALUES`]), the prior's ([`PRIOR`]) and the boundary's ([`BOUNDARY`]) parameters.
    pub call: bool,
    /// The parameters after the row source.
    pub tail: &'static [Param],
}

impl Entry {
    /// The parameters of this entry for a spec with call interface `io`, in order.
    pub fn params(&self, io: &Io) -> Vec<Param> {
        let mut params = self.head.to_vec();
        if self.call {
            params.extend_from_slice(rows_params(io.rows));
        }
        params.extend_from_slice(self.tail);
        if self.call {
            params.extend_from_slice(transform_params(io.transform));
            if io.values {
                params.extend_from_slice(VALUES);
            }
            if io.prior != Prior::None {
                params.extend_from_slice(PRIOR);
            }
            if io.boundary {
                params.extend_from_slice(BOUNDARY);
            }
        }
        params
    }
}

use CType::*;

/// The row source of the plain operator: one valid length per row.
pub const LENGTHS: &[Param] = &[param("lengths", ConstI32Ptr, "M_cap valid lengths")];
/// `rows=window(..)`: row r's valid scores are `[starts[r], ends[r])`.
pub const WINDOW: &[Param] = &[
    param("starts", ConstI32Ptr, "M_cap window starts"),
    param("ends", ConstI32Ptr, "M_cap window ends"),
];
/// `rows=decode`: row r is valid on `[0, seq_lens[r / next_n] - next_n + 1 + r % next_n)`.
pub const DECODE: &[Param] = &[
    param("seq_lens", ConstI32Ptr, "M_cap / next_n sequence lengths"),
    param("next_n", Int, "decode rows per sequence, >= 1"),
];
/// `transform=offset`: the index plus `offsets[r]`.
pub const OFFSET: &[Param] = &[param("offsets", ConstI32Ptr, "M_cap index offsets")];
/// `transform=paged`: `table[r * page_pitch + t / page_size] * page_size + t % page_size`.
pub const PAGED: &[Param] = &[
    param("page_table", ConstI32Ptr, "page-table rows at page_pitch"),
    param("page_columns", Int, "pages per table row"),
    param(
        "page_pitch",
        LongLong,
        "table row pitch (0: one shared row)",
    ),
    param("page_size", Int, "positions per page, >= 1"),
];
/// `transform=paged(rows)`: [`PAGED`], with row r reading table row `page_rows[r]`.
pub const PAGED_ROWS: &[Param] = &[
    PAGED[0],
    PAGED[1],
    PAGED[2],
    PAGED[3],
    PAGE_ROW_MAP[0],
    PAGE_ROW_MAP[1],
];
const _: () = assert!(
    PAGED.len() == 4,
    "PAGED_ROWS lists every parameter of PAGED"
);
/// The row map's own parameters (the tail of [`PAGED_ROWS`]), in the arguments' struct.
const PAGE_ROW_MAP: &[Param] = &[
    param(
        "page_rows",
        ConstI32Ptr,
        "M_cap table rows, one per score row",
    ),
    param("page_table_rows", Int, "rows the page table holds"),
];
/// `values=true`: the selected scores, at the index output's pitch.
pub const VALUES: &[Param] = &[param(
    "values",
    ScorePtr,
    "M_cap x out_pitch selected scores",
)];

/// `prior=P/R`: one prior boundary per row.
pub const PRIOR: &[Param] = &[param(
    "prior",
    ConstF32Ptr,
    "M_cap prior boundaries (NaN: none)",
)];
/// `boundary=true`: each row's K-th largest score.
pub const BOUNDARY: &[Param] = &[param(
    "boundary",
    F32Ptr,
    "M_cap boundaries written (NaN: L <= K)",
)];

/// The parameters of a row source, in place of the plain operator's `lengths`.
pub fn rows_params(rows: Rows) -> &'static [Param] {
    match rows {
        Rows::Lengths => LENGTHS,
        Rows::Window { .. } => WINDOW,
        Rows::Decode => DECODE,
    }
}

/// The parameters of an index transform.
pub fn transform_params(transform: Transform) -> &'static [Param] {
    match transform {
        Transform::None => &[],
        Transform::Offset => OFFSET,
        Transform::Paged => PAGED,
        Transform::PagedRows => PAGED_ROWS,
    }
}

/// The entry of every single-kernel family (persistent, row-local, KV-split, cluster).
pub const SELECTOR: Entry = Entry {
    define: "ENTRY",
    head: &[
        param("scores", ConstScorePtr, "M_cap x pitch scores"),
        param("pitch", LongLong, "row pitch of the scores, elements"),
    ],
    call: true,
    tail: &[
        param("live_rows", ConstI32Ptr, "one int: the live row count m"),
        param("m_cap", Int, "rows the buffers hold"),
        param("width", Int, "allocated row width N"),
        param("out", I32Ptr, "M_cap x out_pitch indices"),
        param("out_pitch", LongLong, "row pitch of the output, elements"),
        param(
            "spill",
            I32Ptr,
            "per-worker frontier spill slices and staging",
        ),
        param("spill_cap", Int, "pairs per spill buffer"),
        param("control", U32Ptr, "the control block (interface::control)"),
        param("row_info", I32Ptr, "2 x M_cap (route, |Q0|), or null"),
    ],
};

/// The stage entry of the stage chain: one stage over every live row of one rank.
pub const STAGE: Entry = Entry {
    define: "ENTRY",
    head: &[
        param("stage", Int, "the stage (interface::staged)"),
        param(
            "digit",
            Int,
            "the radix digit of the digit and boundary stages",
        ),
        param(
            "scores",
            ConstScorePtr,
            "M_cap x pitch scores of this rank's positions",
        ),
        param("pitch", LongLong, "row pitch of the scores, elements"),
    ],
    call: true,
    tail: &[
        param("live_rows", ConstI32Ptr, "one int: the live row count m"),
        param("m_cap", Int, "rows the buffers hold"),
        param("shard_width", Int, "positions this rank holds per row"),
        param("offset", Int, "global position of this rank's first"),
        param("total_width", Int, "positions of a whole row"),
        param("rank", Int, "this rank"),
        param("ranks", Int, "ranks in all"),
        param(
            "chunk_len",
            Int,
            "scores per position chunk (one CTA's share)",
        ),
        param("ws", U32Ptr, "the stage chain's workspace regions"),
        param("out", I32Ptr, "M_cap x out_pitch indices"),
        param("out_pitch", LongLong, "row pitch of the output, elements"),
        param("row_info", I32Ptr, "2 x M_cap (route, |Q0|), or null"),
    ],
};

/// The element-wise sum that stands in for an all-reduce between simulated ranks.
pub const SUM: Entry = Entry {
    define: "SUM_ENTRY",
    head: &[
        param("dst", U32Ptr, "words summed into"),
        param("src", ConstU32Ptr, "words added"),
        param("n", LongLong, "words"),
    ],
    call: false,
    tail: &[],
};

/// The host-kernel interface of one family's generated source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interface {
    /// Entry points, the one the plan launches first.
    pub entries: &'static [Entry],
    /// Whether the workspace starts with the control block ([`control`]); the staged family
    /// keeps its status words in the stage chain's regions ([`staged`]) instead.
    pub control_block: bool,
}

impl Family {
    /// The entry points and workspace words of this family's generated source.
    pub fn interface(self) -> Interface {
        match self {
            Family::Staged => Interface {
                entries: &[STAGE, SUM],
                control_block: false,
            },
            _ => Interface {
                entries: &[SELECTOR],
                control_block: true,
            },
        }
    }
}

/// Whether `pushed` (name and host kind of each argument, in order) is exactly `params`; a
/// `const fn`, so a launch's argument list can be checked where it is compiled.
pub const fn params_match(params: &[Param], pushed: &[(&str, HostArg)]) -> bool {
    if params.len() != pushed.len() {
        return false;
    }
    let mut i = 0;
    while i < params.len() {
        let (name, host) = pushed[i];
        if !str_eq(params[i].name, name) || !host_eq(params[i].ty.host(), host) {
            return false;
        }
        i += 1;
    }
    true
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn host_eq(a: HostArg, b: HostArg) -> bool {
    a as u8 == b as u8
}

/// The interface of `family` for a spec with call interface `io` as `#define`s: route codes,
/// status bits, the control words (or the stage codes and workspace words) and each entry's
/// parameter list; for a spec beyond the plain operator also the call's arguments as one
/// struct ([`emit_call_args`]).
pub(crate) fn emit(family: Family, io: &Io) -> String {
    let mut s = String::from("\n// Host-kernel interface (topk_codegen::interface).\n");
    let mut define = |name: &str, value: String| writeln!(s, "#define {name} {value}").unwrap();
    for (name, code) in [
        ("SHORT", route::SHORT),
        ("PRIMARY", route::PRIMARY),
        ("RESCUE", route::RESCUE),
        ("RECOVERY", route::RECOVERY),
        ("DIRECT_EXACT", route::DIRECT_EXACT),
    ] {
        define(&format!("ROUTE_{name}"), code.to_string());
    }
    // Only a kernel with a prior takes its routes (the others keep their source text).
    if io.prior != Prior::None {
        for (name, code) in [
            ("PRIOR_PRIMARY", route::PRIOR_PRIMARY),
            ("PRIOR_RESCUE", route::PRIOR_RESCUE),
        ] {
            define(&format!("ROUTE_{name}"), code.to_string());
        }
    }
    for (name, bit) in [
        ("NAN", status::NAN),
        ("BAD_LENGTH", status::BAD_LENGTH),
        ("BAD_ROWS", status::BAD_ROWS),
        ("BAD_TRANSFORM", status::BAD_TRANSFORM),
    ] {
        define(&format!("STATUS_{name}"), format!("{bit}u"));
    }
    let interface = family.interface();
    if interface.control_block {
        for (name, word) in [
            ("CURSOR", control::CURSOR),
            ("EXITS", control::EXITS),
            ("STATUS", control::STATUS),
        ] {
            define(&format!("CONTROL_{name}"), word.to_string());
        }
    } else {
        use staged::*;
        for (name, code) in [
            ("SAMPLE", SAMPLE),
            ("PROPOSAL", PROPOSAL),
            ("CERTIFY", CERTIFY),
            ("ROUTE", ROUTE),
            ("DIGIT", DIGIT),
            ("BOUNDARY", BOUNDARY),
            ("COUNT", COUNT),
            ("EMIT", EMIT),
            ("COPY", COPY),
        ] {
            define(&format!("STAGE_{name}"), code.to_string());
        }
        define("RS_WORDS", STATE_WORDS.to_string());
        define("CURSOR_WORDS", CURSOR_WORDS.to_string());
        define("STATUS_WORDS", STATUS_WORDS.to_string());
    }
    for entry in interface.entries {
        let params = entry.params(io);
        let mut lines = vec![format!("#define {}_PARAMS", entry.define)];
        for (i, p) in params.iter().enumerate() {
            let comma = if i + 1 < params.len() { "," } else { "" };
            let decl = format!("{} {}{comma}", p.ty.c(), p.name);
            lines.push(format!("  {decl:<36} /* {} */", p.meaning));
        }
        writeln!(s, "{}", lines.join(" \\\n")).unwrap();
    }
    if !io.is_default() {
        s.push_str(&emit_call_args(io));
    }
    s
}

/// Every parameter a call interface may add, in the order of the `CallArgs` struct.
const CALL_GROUPS: [&[Param]; 6] = [LENGTHS, WINDOW, DECODE, OFFSET, PAGED, VALUES];

/// The row map's, the prior's and the boundary's groups, only in the struct of a spec that has
/// them (the fragments read them under `CALL_PAGE_ROWS`, `CALL_PRIOR` and `CALL_BOUNDARY`), so
/// every other kernel keeps its source.
fn prior_groups(io: &Io) -> impl Iterator<Item = &'static [Param]> {
    [
        (io.transform == Transform::PagedRows).then_some(PAGE_ROW_MAP),
        (io.prior != Prior::None).then_some(PRIOR),
        io.boundary.then_some(BOUNDARY),
    ]
    .into_iter()
    .flatten()
}

/// The call interface's arguments as one struct the fragments take apart (`callio.cu`): every
/// parameter any interface may add, and `CALL_ARGS`, which builds it inside an entry from the
/// spec's parameters, null or 0 for those it has not.
fn emit_call_args(io: &Io) -> String {
    let ours: Vec<&str> = [rows_params(io.rows), transform_params(io.transform)]
        .into_iter()
        .chain(io.values.then_some(VALUES))
        .chain(prior_groups(io))
        .flatten()
        .map(|p| p.name)
        .collect();
    let mut fields = String::new();
    let mut init = Vec::new();
    for p in CALL_GROUPS.into_iter().chain(prior_groups(io)).flatten() {
        writeln!(fields, "  {} {};", p.ty.c(), p.name).unwrap();
        init.push(if ours.contains(&p.name) {
            p.name
        } else if p.ty.host() == HostArg::DevicePtr {
            "nullptr"
        } else {
            "0"
        });
    }
    format!(
        "// The call interface's arguments: the spec's own, null or 0 for the others.\n\
         struct CallArgs {{\n{fields}}};\n#define CALL_ARGS CallArgs{{{}}}\n",
        init.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pushed_list_matches_only_its_own_parameters() {
        let params = &SUM.params(&Io::DEFAULT);
        let ok = [
            ("dst", HostArg::DevicePtr),
            ("src", HostArg::DevicePtr),
            ("n", HostArg::I64),
        ];
        assert!(params_match(params, &ok));
        assert!(!params_match(params, &ok[..2]), "one argument short");
        let swapped = [ok[1], ok[0], ok[2]];
        assert!(!params_match(params, &swapped), "order");
        let narrow = [ok[0], ok[1], ("n", HostArg::I32)];
        assert!(!params_match(params, &narrow), "int for long long");
    }
}
