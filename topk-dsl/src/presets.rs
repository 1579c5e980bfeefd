//! Named Specs reproducing the paper's constants (§5.5 and the sampled-path ablations of §6): K = 2048, an 11-bit coarse key and
//! 11+11+10 refinement digits throughout.
use crate::{Centi, Digits, Dtype, Io, Mapping, Proposal, RowLocalVariant, Spec};

/// A named Spec.
#[derive(Clone, Copy, Debug)]
pub struct Preset {
    pub name: &'static str,
    pub about: &'static str,
    pub spec: Spec,
}

/// The wide-row persistent policy; equal to `Spec::default()` (a test holds them together).
const BASE: Spec = Spec {
    k: 2048,
    dtype: Dtype::F32,
    mapping: Mapping::Persistent,
    proposal: SAMPLED_S128_RESCUE,
    coarse_bits: 11,
    digits: Digits::new3(11, 11, 10),
    threads: 512,
    view_run: 1,
    stagger_us: 0,
    tail_rows: 0,
    tail_rho: Centi(0),
    prefetch: 0,
    io: Io::DEFAULT,
};

/// Stride 128, primary target 1.5 K, secondary target 1.75 K (the paper's default policy).
const SAMPLED_S128_RESCUE: Proposal = Proposal::Sampled {
    stride: 128,
    rho: Centi(150),
    rescue: Some(Centi(175)),
    exact_below: 0,
};

const fn kvsplit(splits: u8) -> Spec {
    Spec {
        mapping: Mapping::KvSplit { splits },
        ..BASE
    }
}

const fn exact_1024(mapping: Mapping) -> Spec {
    Spec {
        mapping,
        proposal: Proposal::Exact,
        threads: 1024,
        ..BASE
    }
}

/// Every preset, in a stable order.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "persistent-s64",
        about: "persistent 512-thread CTA per row, stride-64 view at 1.5 K, no rescue (standard policy)",
        spec: Spec {
            proposal: Proposal::Sampled {
                stride: 64,
                rho: Centi(150),
                rescue: None,
                exact_below: 0,
            },
            ..BASE
        },
    },
    Preset {
        name: "persistent-s128-rescue",
        about: "persistent 512-thread CTA per row, stride-128 view at 1.5 K with rescue at 1.75 K (the paper's wide-row policy, Spec::default())",
        spec: BASE,
    },
    Preset {
        name: "persistent-exact",
        about: "persistent 512-thread CTA per row, exact coarse boundary from the whole row",
        spec: Spec {
            proposal: Proposal::Exact,
            ..BASE
        },
    },
    Preset {
        name: "kvsplit2",
        about: "2 CTAs per row over disjoint segments, stride-128 view with rescue, last CTA finishes",
        spec: kvsplit(2),
    },
    Preset {
        name: "kvsplit4",
        about: "4 CTAs per row over disjoint segments, stride-128 view with rescue, last CTA finishes",
        spec: kvsplit(4),
    },
    Preset {
        name: "kvsplit8",
        about: "8 CTAs per row over disjoint segments, stride-128 view with rescue, last CTA finishes",
        spec: kvsplit(8),
    },
    Preset {
        name: "rowlocal-register",
        about: "one 1024-thread CTA per row, exact boundary, short row held in registers",
        spec: exact_1024(Mapping::RowLocal(RowLocalVariant::Register)),
    },
    Preset {
        name: "rowlocal-streaming",
        about: "one 1024-thread CTA per row, exact boundary, row streamed from global memory",
        spec: exact_1024(Mapping::RowLocal(RowLocalVariant::Streaming)),
    },
    Preset {
        name: "cluster8",
        about: "8-CTA thread-block cluster per row, exact boundary, histogram combined in distributed shared memory",
        spec: exact_1024(Mapping::Cluster { ctas: 8 }),
    },
    Preset {
        name: "cluster8-sampled",
        about: "8-CTA thread-block cluster per row, stride-128 view summed in distributed shared memory, one pass",
        spec: Spec {
            mapping: Mapping::Cluster { ctas: 8 },
            threads: 1024,
            ..BASE
        },
    },
    Preset {
        name: "persistent-t384",
        about: "persistent pool of three 384-thread CTAs per SM, stride-128 pair view (many rows up to 128K)",
        spec: Spec {
            threads: 384,
            view_run: 2,
            proposal: Proposal::Sampled {
                stride: 128,
                rho: Centi(175),
                rescue: Some(Centi(250)),
                exact_below: 0,
            },
            ..BASE
        },
    },
    Preset {
        name: "persistent-exact-k512",
        about: "persistent 512-thread CTA per row at K = 512, exact coarse boundary",
        spec: Spec {
            k: 512,
            proposal: Proposal::Exact,
            ..BASE
        },
    },
];

/// Look a preset up by name.
pub fn preset(name: &str) -> Option<Spec> {
    PRESETS.iter().find(|p| p.name == name).map(|p| p.spec)
}

/// One spec of every kernel family for each of a few call interfaces (`docs/interface.md`),
/// which together put every part of the interface (each row source, transform, values, sorted
/// order and lowest-index ties) on every family: what the code-generation checks compile and
/// hash (`topk-runtime`'s NVRTC and CUBIN-hash tests).
pub fn call_interface_samples() -> Vec<Spec> {
    let mut specs = Vec::new();
    for family in SAMPLE_FAMILIES {
        for io in SAMPLE_INTERFACES {
            specs.push(parse_sample(&format!("{family},{io}")));
        }
    }
    specs
}

/// One spec of every kernel family with 16-bit scores (`dtype=f16` and `dtype=bf16`), plain and
/// with a call interface (together: values, sorted order, lowest-index ties, windows, decode
/// rows, both transforms), and the grouped views: what the code-generation checks compile for
/// the 16-bit row stream.
pub fn sixteen_bit_samples() -> Vec<Spec> {
    // Each dtype with the plain operator and one interface; f16 and bf16 differ only in how a
    // score is widened and narrowed, so the two interfaces are split between them.
    const DTYPES: [(&str, &str); 2] = [
        (
            "f16",
            ",rows=window(absolute),transform=paged,values=true,order=sorted,ties=lowest",
        ),
        ("bf16", ",rows=decode,transform=offset,values=true"),
    ];
    let mut specs = Vec::new();
    for (dtype, io) in DTYPES {
        for family in SAMPLE_FAMILIES {
            for io in ["", io] {
                specs.push(parse_sample(&format!("dtype={dtype},{family}{io}")));
            }
        }
        for run in [2, 4, 8] {
            specs.push(parse_sample(&format!(
                "dtype={dtype},map=persistent,view=run({run}),values=true"
            )));
        }
    }
    specs
}

/// A row's prior and boundary output (`prior=P/R`, `boundary=true`) on every family that
/// generates them (persistent, row-local and cluster kernels), alone, together,
/// with the rest of the call interface and with 16-bit scores: what the code-generation checks
/// compile.
pub fn prior_samples() -> Vec<Spec> {
    const FAMILIES: [&str; 6] = [
        "map=persistent",
        "map=persistent,propose=exact",
        "map=rowlocal(register),propose=exact,threads=1024",
        "map=rowlocal(streaming),propose=exact,threads=1024",
        "map=cluster(8),propose=exact,threads=1024",
        "map=cluster(16),propose=sampled(stride=128,rho=1.75,rescue=2.5),threads=1024",
    ];
    const INTERFACES: [&str; 4] = [
        "prior=2/8",
        "boundary=true,values=true,order=sorted,ties=lowest,rows=decode,transform=paged(rows)",
        "prior=0/0,boundary=true,values=true,order=sorted,ties=lowest,rows=decode,transform=paged",
        "dtype=bf16,prior=2/8,boundary=true,values=true,rows=window(relative)",
    ];
    let mut specs = Vec::new();
    for family in FAMILIES {
        for io in INTERFACES {
            specs.push(parse_sample(&format!("{family},{io}")));
        }
    }
    specs
}

fn parse_sample(text: &str) -> Spec {
    match Spec::parse(text) {
        Ok(spec) => spec,
        Err(e) => unreachable!("{text}: {e}"),
    }
}

/// A spec of every kernel family, for the samples above.
const SAMPLE_FAMILIES: [&str; 8] = [
    "map=persistent",
    "map=persistent,propose=exact",
    "map=rowlocal(register),propose=exact,threads=1024",
    "map=rowlocal(streaming),propose=exact,threads=1024",
    "map=kvsplit(4)",
    "map=cluster(8),propose=exact,threads=1024",
    "map=cluster(16),propose=sampled(stride=128,rho=1.75,rescue=2.5),threads=1024",
    "map=staged",
];

/// The call interfaces of [`call_interface_samples`].
const SAMPLE_INTERFACES: [&str; 3] = [
    "rows=window(absolute),transform=offset,values=true,order=sorted,ties=lowest",
    "rows=decode,transform=paged,values=true,ties=lowest",
    "rows=window(relative),transform=paged(rows),order=sorted",
];
