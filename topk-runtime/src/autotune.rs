//! Autotuning records: which candidate Spec ran fastest for a shape bucket on a device.
//!
//! A sweep times every candidate of a shape bucket (verifying each output), and stores *all*
//! timings, not only the winner, as JSON keyed by device name, compute capability, driver,
//! bucket and a checksum of the candidate set. The planner consults the store: a record made
//! on another device or driver ("foreign"), or for another candidate set ("stale", e.g. after
//! new kernels were added), is ignored with a reason the caller can print.
//!
//! This module is device-independent (it never touches CUDA); the GPU measurement lives in
//! `cuda::tune`.

use crate::{policy, Error, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use topk_dsl::{Centi, Mapping, Proposal, RowLocalVariant, Spec};

/// Version of the JSON layout; records of another version are ignored as stale.
pub const FORMAT_VERSION: u32 = 1;

/// The device a record was measured on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceKey {
    /// Device name as the driver reports it.
    pub name: String,
    /// Compute capability, major.
    pub cc_major: u32,
    /// Compute capability, minor.
    pub cc_minor: u32,
    /// Driver version (`cuDriverGetVersion`): a new driver may time differently.
    pub driver_version: i32,
}

/// Shapes that share a record: K exactly, rows and width rounded up to powers of two.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ShapeBucket {
    /// K, exactly.
    pub k: u32,
    /// Row capacity, rounded up to a power of two.
    pub rows: u32,
    /// Row width, rounded up to a power of two.
    pub width: u32,
}

impl ShapeBucket {
    /// The bucket of a call planned for `k`, `m_cap` rows and `width`.
    pub fn of(k: u32, m_cap: u32, width: u32) -> ShapeBucket {
        ShapeBucket {
            k,
            rows: m_cap.max(1).next_power_of_two(),
            width: width.max(1).next_power_of_two(),
        }
    }
}

/// One candidate's outcome in a sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Canonical spec text.
    pub spec: String,
    /// Median milliseconds; `None` when the candidate failed (see `error`) or was inexact.
    pub median_ms: Option<f64>,
    /// Whether the timed output was verified exact.
    pub exact: bool,
    /// Why the candidate has no time (failed to plan or run, or inexact).
    pub error: Option<String>,
}

/// All timings of one sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// [`FORMAT_VERSION`] of the layout it was written in.
    pub format: u32,
    /// The device it was measured on.
    pub device: DeviceKey,
    /// The shapes it serves.
    pub bucket: ShapeBucket,
    /// Rows of the shape the sweep actually ran (inside `bucket`).
    pub measured_rows: u32,
    /// Width of the shape the sweep actually ran.
    pub measured_width: u32,
    /// [`checksum`] of the candidate set swept; another set makes the record stale.
    pub candidates_checksum: String,
    /// Every candidate's outcome, in sweep order.
    pub timings: Vec<Timing>,
    /// Seconds since the Unix epoch.
    pub measured_at: u64,
}

impl Record {
    /// The fastest exact candidate.
    pub fn best(&self) -> Option<&Timing> {
        self.timings
            .iter()
            .filter(|t| t.exact && t.median_ms.is_some())
            .min_by(|a, b| a.median_ms.unwrap().total_cmp(&b.median_ms.unwrap()))
    }
}

/// What the store says about a shape.
#[derive(Clone, Debug, PartialEq)]
pub enum Lookup {
    /// A current record: use this Spec.
    Tuned(Spec),
    /// No record for this device and bucket.
    Missing,
    /// A record exists but must not be used; the text says why (for a warning).
    Ignored(String),
}

/// The candidate Specs swept for a shape: the persistent default (`policy::persistent_spec`, with
/// its grouped view where it has one, its wider margin from 512K (`policy::persistent_spec_for`),
/// the same with half the pool starting late from 256K, and the default map's 256-thread
/// kernel for short rows), the persistent sampled policies on
/// the stride view (two strides, two rescue depths; all of these send rows shorter than the
/// default's `exact_below` to the exact boundary), the default margin on 256-thread CTAs for
/// rows up to 64K (four CTAs per SM keep more short rows in flight), the default map's
/// short-row kernel sampling every row (up to 64K, the other side of `exact_below`), three
/// 384-thread CTAs per SM up to 128K with the default map's prefetch and without, the
/// persistent exact proposal, the 8- and 16-CTA cluster kernels from 256K (exact) and 1M
/// (sampled) and the stage chain from 1M (for few long rows), and the row-local exact kernels
/// where the rows fit them. A record tuned over another candidate set (or another codegen
/// version) no longer matches and is ignored.
pub fn candidates(k: u32, width: u32) -> Vec<Spec> {
    // One set per shape bucket: the width thresholds below apply to the bucket's width, so a
    // record tuned anywhere in a bucket matches the set planned anywhere in it.
    let width = ShapeBucket::of(k, 1, width).width;
    let mut out = pool_candidates(k, width);
    out.push(Spec {
        k,
        proposal: Proposal::Exact,
        ..Spec::default()
    });
    out.extend(spread_row_candidates(k, width));
    out.extend(row_local_candidates(k, width));
    // Below K = 2048 the short-row default is also the stride-view 256-thread candidate.
    let mut seen = Vec::with_capacity(out.len());
    out.retain(|s| {
        let new = !seen.contains(s);
        seen.push(*s);
        new
    });
    out
}

/// The persistent pool's candidates for rows of `width` (a bucket's width), in order.
fn pool_candidates(k: u32, width: u32) -> Vec<Spec> {
    let base = Spec {
        k,
        ..Spec::default()
    };
    let mut out = Vec::new();
    let default = policy::persistent_spec(k);
    if default.view_run > 1 {
        out.push(default);
    }
    // The wide-row margin of the default map where it applies.
    let wide = policy::persistent_spec_for(k, width);
    if wide != default {
        out.push(wide);
    }
    // Half of that pool starting late, where the default map staggers calls of many such rows.
    let stagger_us = policy::persistent_stagger_us(k, width, wide.threads);
    if stagger_us > 0 {
        out.push(Spec { stagger_us, ..wide });
    }
    // The default map's short-row persistent kernel (256-thread CTAs) where it differs: its pool
    // for a call of `PERSISTENT_FROM_ROWS` rows.
    let threads = policy::persistent_threads(k, policy::PERSISTENT_FROM_ROWS, width);
    let short = Spec {
        threads,
        prefetch: policy::persistent_prefetch(k, threads),
        ..wide
    };
    if short != default {
        out.push(short);
    }
    // The default sampled policy, the paper's constants (rho 1.5, rescue 1.75) and a twice
    // denser view, with the default's short-row rule.
    if let Proposal::Sampled {
        stride,
        rho,
        exact_below,
        ..
    } = default.proposal
    {
        let sampled = |stride, rho, rescue| Spec {
            proposal: Proposal::Sampled {
                stride,
                rho,
                rescue: Some(Centi(rescue)),
                exact_below,
            },
            ..base
        };
        out.extend([
            sampled(stride, rho, 250),
            sampled(stride, Centi(150), 175),
            sampled((stride / 2).max(2), rho, 250),
        ]);
    }
    if width <= 65_536 && matches!(default.proposal, Proposal::Sampled { .. }) {
        out.push(Spec {
            threads: 256,
            view_run: 1, // the stride view, as the GPU tests' 256-thread specs
            ..default
        });
        // The short-row kernel sampling every row, short ones included.
        let sample_all = Spec {
            proposal: short.proposal.with_exact_below(0),
            ..short
        };
        if sample_all != short {
            out.push(sample_all);
        }
    }
    // Three 384-thread CTAs per SM (the default map's for calls of many rows), where they fit
    // (validation knows the K and histogram sizes that do).
    let triple = Spec {
        threads: 384,
        prefetch: policy::persistent_prefetch(k, 384),
        ..wide
    };
    if width <= policy::TRIPLE_CTA_MAX_WIDTH && triple.validate().is_ok() {
        out.push(triple);
        // And without the prefetch the default map gives it.
        out.push(Spec {
            prefetch: 0,
            ..triple
        });
    }
    out
}

/// The kernels that spread a row over many CTAs, for a few long rows of `width`.
fn spread_row_candidates(k: u32, width: u32) -> Vec<Spec> {
    let mut out = Vec::new();
    if width >= policy::SHORT_CLUSTER8_FROM_WIDTH {
        // Eight or sixteen CTAs of a cluster per row (fail to plan without clusters, before
        // sm_90).
        out.push(policy::cluster_spec(k, 8));
        out.push(policy::cluster_spec(k, 16));
    }
    if width >= policy::SAMPLED_CLUSTER8_FROM_WIDTH {
        // The same clusters on the default view and margin (one pass over the row).
        let sampled8 = policy::sampled_cluster_spec(k, 8, width);
        out.push(sampled8);
        out.push(Spec {
            threads: 512,
            ..sampled8
        });
        out.push(policy::sampled_cluster_spec(k, 16, width));
    }
    if width >= policy::STAGED_FROM_WIDTH {
        // Rows spread over chunk CTAs (its stages sample the stride view).
        out.push(policy::staged_spec(k));
    }
    out
}

/// The exact row-local kernels where rows of `width` fit them.
fn row_local_candidates(k: u32, width: u32) -> Vec<Spec> {
    let rowlocal = |variant| Spec {
        k,
        mapping: Mapping::RowLocal(variant),
        proposal: Proposal::Exact,
        threads: 1024,
        ..Spec::default()
    };
    let mut out = Vec::new();
    if width <= 65_536 {
        out.push(rowlocal(RowLocalVariant::Streaming));
    }
    if width <= topk_codegen::REGISTER_ITEMS * 1024 {
        out.push(rowlocal(RowLocalVariant::Register));
    }
    out
}

/// Checksum of a candidate set (order-sensitive canonical texts, codegen version included):
/// a record made for another set is stale.
pub fn checksum(candidates: &[Spec]) -> String {
    let mut h = Sha256::new();
    h.update(topk_codegen::CODEGEN_VERSION.to_le_bytes());
    for c in candidates {
        h.update(c.to_string().as_bytes());
        h.update([0u8]);
    }
    h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Times every candidate with `measure` (median ms and exactness, or an error: the sweep goes
/// on, the candidate scores no time) and reports progress through `progress(done, total, spec)`.
pub fn sweep(
    device: DeviceKey,
    bucket: ShapeBucket,
    measured: (u32, u32),
    candidates: &[Spec],
    mut measure: impl FnMut(&Spec) -> Result<(f64, bool)>,
    mut progress: impl FnMut(usize, usize, &Spec),
) -> Record {
    let mut timings = Vec::with_capacity(candidates.len());
    for (i, spec) in candidates.iter().enumerate() {
        progress(i, candidates.len(), spec);
        timings.push(match measure(spec) {
            Ok((ms, exact)) => Timing {
                spec: spec.to_string(),
                median_ms: exact.then_some(ms),
                exact,
                error: (!exact).then(|| "output was not exact".to_string()),
            },
            Err(e) => Timing {
                spec: spec.to_string(),
                median_ms: None,
                exact: false,
                error: Some(e.to_string()),
            },
        });
    }
    progress(
        candidates.len(),
        candidates.len(),
        candidates.last().unwrap_or(&Spec::default()),
    );
    Record {
        format: FORMAT_VERSION,
        device,
        bucket,
        measured_rows: measured.0,
        measured_width: measured.1,
        candidates_checksum: checksum(candidates),
        timings,
        measured_at: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    }
}

/// The JSON store of records: what `topk autotune` writes and the planner reads
/// ([`crate::cuda::Plan::new`] loads the one at [`Store::default_path`]).
///
/// ```no_run
/// use topk_runtime::autotune::{Lookup, ShapeBucket, Store};
/// use topk_runtime::cuda::{tune, Gpu};
///
/// # fn main() -> topk_runtime::Result<()> {
/// let path = Store::default_path().expect("a cache directory or TOPK_AUTOTUNE_DB");
/// let mut store = Store::load(&path)?; // empty when the file does not exist yet
/// let gpu = Gpu::open(0)?;
/// // Time every candidate for 512 rows of 128K on generated indexer-like scores.
/// let code = topk_runtime::data::Profile::Indexer.code();
/// let record = tune::tune_shape(&gpu, 2048, 512, 131_072, code, Default::default(), |_, _, _| {})?;
/// store.upsert(record);
/// store.save(&path)?;
/// let bucket = ShapeBucket::of(2048, 512, 131_072);
/// let candidates = topk_runtime::autotune::candidates(2048, 131_072);
/// if let Lookup::Tuned(spec) = store.lookup(&tune::device_key(&gpu), &bucket, &candidates) {
///     println!("the planner will use {spec}");
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Store {
    /// At most one record per device and bucket.
    pub records: Vec<Record>,
}

impl Store {
    /// `$TOPK_AUTOTUNE_DB`, else `autotune.json` in the kernel cache directory
    /// (`$TOPK_CACHE_DIR`, `$XDG_CACHE_HOME/topk`, `~/.cache/topk`).
    pub fn default_path() -> Option<PathBuf> {
        if let Some(p) = std::env::var_os("TOPK_AUTOTUNE_DB").filter(|v| !v.is_empty()) {
            return Some(PathBuf::from(p));
        }
        crate::cuda::cache::CacheSettings::from_env()
            .dir
            .map(|d| d.join("autotune.json"))
    }

    /// Reads a store; a missing file is an empty store.
    ///
    /// # Errors
    /// [`Error::Input`] when the file cannot be read or is not a store.
    pub fn load(path: &Path) -> Result<Store> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                Error::Input(format!(
                    "autotune store {} is not valid JSON ({e}); delete it or run `topk autotune` again",
                    path.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Store::default()),
            Err(e) => Err(Error::Input(format!(
                "cannot read autotune store {}: {e}",
                path.display()
            ))),
        }
    }

    /// Writes the store atomically (temp file in the same folder, then rename), creating the
    /// folder if needed.
    ///
    /// # Errors
    /// [`Error::Input`] when the folder or file cannot be written.
    pub fn save(&self, path: &Path) -> Result<()> {
        let fail = |e: std::io::Error| {
            Error::Input(format!(
                "cannot write autotune store {}: {e}",
                path.display()
            ))
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| Error::Input(format!("serializing the autotune store: {e}")))?;
        let temp = path.with_extension(format!("json.tmp{}", std::process::id()));
        std::fs::write(&temp, text).map_err(fail)?;
        std::fs::rename(&temp, path).map_err(fail)
    }

    /// Replaces the record of the same device and bucket, or adds it.
    pub fn upsert(&mut self, record: Record) {
        self.records
            .retain(|r| !(r.device == record.device && r.bucket == record.bucket));
        self.records.push(record);
    }

    /// The tuned Spec for `bucket` on `device`, given the current candidate set.
    pub fn lookup(&self, device: &DeviceKey, bucket: &ShapeBucket, current: &[Spec]) -> Lookup {
        let same_bucket: Vec<&Record> = self
            .records
            .iter()
            .filter(|r| r.bucket == *bucket)
            .collect();
        let Some(record) = same_bucket.iter().find(|r| r.device == *device) else {
            return match same_bucket.first() {
                Some(other) => Lookup::Ignored(format!(
                    "the autotune record for this shape was measured on {} (cc {}.{}, driver {}), not on {} (cc {}.{}, driver {})",
                    other.device.name, other.device.cc_major, other.device.cc_minor, other.device.driver_version,
                    device.name, device.cc_major, device.cc_minor, device.driver_version
                )),
                None => Lookup::Missing,
            };
        };
        if record.format != FORMAT_VERSION || record.candidates_checksum != checksum(current) {
            return Lookup::Ignored(
                "the autotune record for this shape was made for another candidate set; run `topk autotune` again"
                    .to_string(),
            );
        }
        match record.best().map(|t| Spec::parse(&t.spec)) {
            Some(Ok(spec)) if spec.validate().is_ok() => Lookup::Tuned(spec),
            Some(_) => Lookup::Ignored("the autotune record names an invalid spec".to_string()),
            None => Lookup::Ignored("no candidate of the autotune record was exact".to_string()),
        }
    }
}
