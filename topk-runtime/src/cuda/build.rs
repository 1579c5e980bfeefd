//! A plan's spec and kernel: the spec chosen on the device's facts (given; else the autotune
//! record; else the default map, [`crate::policy`]), with every device adjustment made before
//! the one compile; then the kernel built and its residency checked against those facts.

use super::device::{Gpu, Loaded};
use super::plan::{PlanRequest, SpecSource};
use crate::autotune::{candidates, Lookup, ShapeBucket, Store};
use crate::policy::{self, DeviceFacts, MeasuredOccupancy};
use crate::{Error, Result};
use topk_codegen::{Family, KernelSource};
use topk_dsl::{Mapping, Spec};

/// A plan's spec and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Choice {
    pub spec: Spec,
    pub source: SpecSource,
}

/// A generated kernel loaded for a plan, with its residency.
pub(super) struct Built {
    pub kernel: KernelSource,
    pub loaded: Loaded,
    /// CTAs resident per SM, from the occupancy calculator.
    pub ctas_per_sm: u32,
    /// Clusters resident on the whole device, for the cluster family when the driver says.
    pub clusters: Option<u32>,
}

/// Chooses the spec of `request` and builds its kernel: one compile. Where the device then
/// contradicts the facts the default map or an autotune record's tail was chosen on (see
/// [`reported_facts`]), the spec is chosen again on what the device reported, and built again
/// only if that changed it.
pub(super) fn choose_and_build(
    gpu: &Gpu,
    request: &PlanRequest,
    store: Option<&Store>,
) -> Result<(Choice, Built)> {
    let facts = request.spec.is_none().then(|| gpu.facts());
    let choice = choose(gpu, facts.as_ref(), request, store)?;
    let built = load_kernel(gpu, &choice.spec, request);
    let reported = facts.and_then(|f| reported_facts(&f, &choice, &built, request));
    let Some(reported) = reported else {
        return Ok((choice, built?));
    };
    let again = choose(gpu, Some(&reported), request, store)?;
    match built {
        Ok(built) if again.spec == choice.spec => Ok((again, built)),
        _ => {
            let built = load_kernel(gpu, &again.spec, request)?;
            Ok((again, built))
        }
    }
}

/// The spec for `request`: the given one; else the autotune store's record for this device and
/// shape bucket, with the tail margin sized to the pool on `facts` (candidates are the same on
/// every device, so they cannot carry it); else the default map on `facts`.
fn choose(
    gpu: &Gpu,
    facts: Option<&DeviceFacts>,
    request: &PlanRequest,
    store: Option<&Store>,
) -> Result<Choice> {
    let (k, m_cap, width) = (request.k, request.m_cap, request.width);
    let (spec, source) = match (request.spec, facts) {
        (Some(spec), _) => (spec, SpecSource::Given),
        (None, facts) => {
            let facts = facts.copied().unwrap_or_else(|| gpu.facts());
            let default = policy::default_spec(&facts, k, m_cap, width);
            let bucket = ShapeBucket::of(k, m_cap, width);
            let current = candidates(k, width);
            match store.map(|s| s.lookup(&super::tune::device_key(gpu), &bucket, &current)) {
                Some(Lookup::Tuned(spec)) => (
                    policy::with_tail(&facts, spec, m_cap, width),
                    SpecSource::Tuned,
                ),
                Some(Lookup::Ignored(why)) => (default, SpecSource::DefaultIgnoring(why)),
                Some(Lookup::Missing) | None => (default, SpecSource::Default),
            }
        }
    };
    if spec.k != request.k {
        return Err(Error::Input(format!(
            "spec has k = {} but the plan asks for K = {}",
            spec.k, request.k
        )));
    }
    Ok(Choice { spec, source })
}

/// `facts` corrected by what building `choice` showed, where they differ in what the choice
/// rests on: the resident clusters of a default cluster kernel of one CTA per SM (none of 16
/// CTAs where that kernel does not load: the non-portable size is refused), and the CTAs per SM
/// of a persistent pool ([`DeviceFacts::ctas_per_sm`] against the occupancy calculator). `None`
/// when the device agrees, and for given specs, which are planned as given.
fn reported_facts(
    facts: &DeviceFacts,
    choice: &Choice,
    built: &Result<Built>,
    request: &PlanRequest,
) -> Option<DeviceFacts> {
    let default = matches!(
        choice.source,
        SpecSource::Default | SpecSource::DefaultIgnoring(_)
    );
    let spec = &choice.spec;
    let one_cta_clusters = match spec.mapping {
        Mapping::Cluster { ctas } if default && spec.threads == 1024 => Some(ctas),
        _ => None,
    };
    let built = match built {
        Err(_) if one_cta_clusters == Some(16) => {
            return Some(DeviceFacts {
                clusters16: 0,
                ..*facts
            })
        }
        Err(_) => return None,
        Ok(built) => built,
    };
    match (one_cta_clusters, built.clusters) {
        (Some(16), Some(n)) if n != facts.clusters16 && n < request.m_cap => {
            return Some(DeviceFacts {
                clusters16: n,
                ..*facts
            })
        }
        (Some(8), Some(n)) if n != facts.clusters8 => {
            return Some(DeviceFacts {
                clusters8: n,
                ..*facts
            })
        }
        _ => {}
    }
    let layout = &built.kernel.layout;
    let pool = choice.source != SpecSource::Given && spec.mapping == Mapping::Persistent;
    (pool && built.ctas_per_sm != facts.ctas_per_sm(spec)).then_some(DeviceFacts {
        measured: Some(MeasuredOccupancy {
            threads: layout.threads,
            dynamic_smem: layout.dynamic_smem,
            ctas_per_sm: built.ctas_per_sm,
        }),
        ..*facts
    })
}

/// Generates `spec` (with phase timers when asked), refuses what the plan cannot run, and
/// loads it through the caches.
fn load_kernel(gpu: &Gpu, spec: &Spec, request: &PlanRequest) -> Result<Built> {
    let kernel = if request.phase_probe {
        topk_codegen::probe::generate_probed(spec)?
    } else {
        topk_codegen::generate(spec)?
    };
    if let Some(max) = kernel.layout.max_row {
        if request.width > max {
            return Err(Error::Input(format!(
                "`{spec}` holds rows of at most {max} scores in registers, but the width is {}: \
                 use rowlocal(streaming) or a persistent mapping",
                request.width
            )));
        }
    }
    let smem = kernel.layout.dynamic_smem;
    let block = kernel.layout.threads;
    let loaded = gpu.load(&kernel.source, &kernel.entry, smem)?;
    let mut clusters = None;
    if let Family::Cluster { ctas } = kernel.family {
        if ctas > 8 {
            gpu.allow_non_portable_clusters(&loaded)?;
        }
        clusters = gpu.resident_clusters(&loaded, ctas as u32, block, smem);
        if clusters == Some(0) {
            return Err(Error::Input(format!(
                "`{spec}`: no cluster of {ctas} CTAs of {block} threads fits on this device; use \
                 map=cluster(8) or a persistent mapping"
            )));
        }
    }
    let ctas_per_sm = loaded
        .func
        .occupancy_max_active_blocks_per_multiprocessor(block, smem as usize, None)
        .map_err(Error::driver(&format!("occupancy of `{}`", kernel.entry)))?
        .max(1) as u32;
    Ok(Built {
        kernel,
        loaded,
        ctas_per_sm,
        clusters,
    })
}
