//! Spec -> self-contained CUDA C++ source (no `#include`), one emitter per kernel family.
//!
//! The CUDA building blocks live in `cuda/*.cu`, one file per concern, and are composed per
//! family: `propose.cu` (paper §4.2), `certify.cu` (§4.3), `refine.cu` (§4.4), with the
//! mappings (§4.5, §5.5) in `persistent.cu`, `rowlocal.cu`, `kvsplit.cu` and `cluster.cu`; the
//! `staged` mapping is the context-parallel stage chain of [`sharded`] on one device.
//! Everything a Spec specializes is emitted as `constexpr` constants at the top of the file, so
//! the same Spec always gives the same bytes and NVRTC folds every policy branch away.

mod constants;
pub mod endpoint_probe;
mod family;
pub mod fragments;
pub mod generator;
pub mod interface;
pub mod probe;
pub mod sharded;
pub mod verifier;

pub use family::{Family, Layout, REGISTER_ITEMS, SEGMENT_CAP};
pub use fragments::Fragment;

use sha2::{Digest, Sha256};
use topk_dsl::Spec;

/// Bumped whenever the emitted CUDA changes meaning; part of every kernel hash.
pub const CODEGEN_VERSION: u32 = 33;

/// Generated source of one specialized selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSource {
    pub spec: Spec,
    pub family: Family,
    /// Name of the `extern "C" __global__` entry point; carries the spec hash.
    pub entry: String,
    /// 16 hex digits of sha256(canonical spec text, codegen version).
    pub hash: String,
    /// Launch-relevant facts the runtime needs (threads, shared memory, capacities).
    pub layout: Layout,
    pub source: String,
}

/// How a generated source is put together: a prelude generated from the Spec (header comment,
/// `constexpr` constants, the host-kernel interface's `#define`s), then whole fragments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Composition {
    pub prelude: String,
    pub fragments: Vec<&'static Fragment>,
}

impl Composition {
    /// The CUDA source: the prelude, then each fragment after a blank line.
    pub fn source(&self) -> String {
        let len = self.fragments.iter().map(|f| f.text.len() + 1);
        let mut source = String::with_capacity(self.prelude.len() + len.sum::<usize>());
        source.push_str(&self.prelude);
        for fragment in &self.fragments {
            source.push('\n');
            source.push_str(fragment.text);
        }
        source
    }

    /// The prelude and the fragments' names, one per line: what differs between two Specs'
    /// sources (the fragments themselves are shared).
    pub fn outline(&self) -> String {
        let mut text = self.prelude.clone();
        text.push_str("\n// fragments, in order:\n");
        for fragment in &self.fragments {
            text.push_str(&format!("//   cuda/{}\n", fragment.name));
        }
        text
    }
}

/// Why a Spec could not be turned into source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodegenError {
    #[error(transparent)]
    Spec(#[from] topk_dsl::SpecError),
    /// A valid Spec that this build cannot serve, and why.
    #[error("cannot generate {0}")]
    Unsupported(String),
    /// The spec asks for a dtype or interface feature the kernels do not generate yet
    /// ([`Spec::gpu_unsupported`]); it runs on the CPU backend.
    #[error("{0}")]
    CpuOnly(String),
}

/// Refuse a spec the kernels would not honour, before any source is emitted for it.
fn refuse_cpu_only(spec: &Spec) -> Result<(), CodegenError> {
    spec.gpu_unsupported()
        .map_or(Ok(()), |why| Err(CodegenError::CpuOnly(why)))
}

/// 16 hex digits identifying a Spec's generated code.
pub fn spec_hash(spec: &Spec) -> String {
    let mut h = Sha256::new();
    h.update(spec.to_string().as_bytes());
    h.update(CODEGEN_VERSION.to_le_bytes());
    h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Generate the CUDA source of `spec`. Same Spec -> same bytes.
pub fn generate(spec: &Spec) -> Result<KernelSource, CodegenError> {
    generate_with(spec, "")
}

/// How [`generate`] puts the source of `spec` together.
pub fn composition(spec: &Spec) -> Result<Composition, CodegenError> {
    Ok(compose(spec, "")?.1)
}

/// [`generate`] with `defines` (hooks such as the phase probe's) at the end of the prelude.
pub(crate) fn generate_with(spec: &Spec, defines: &str) -> Result<KernelSource, CodegenError> {
    let (mut kernel, composition) = compose(spec, defines)?;
    kernel.source = composition.source();
    Ok(kernel)
}

/// The kernel's facts (its `source` left empty) and how its source is put together.
fn compose(spec: &Spec, defines: &str) -> Result<(KernelSource, Composition), CodegenError> {
    spec.validate()?;
    refuse_cpu_only(spec)?;
    let family = Family::of(spec);
    let hash = spec_hash(spec);
    let layout = Layout::of(spec, family);
    let (entry, mut composition) = if family == Family::Staged {
        // One device running the context-parallel stages: rank 0 of 1.
        let (staged, composition) = sharded::compose(spec)?;
        (staged.entry, composition)
    } else {
        let entry = format!("topk_{}_{}", family.name(), hash);
        let mut prelude = format!(
            "// Generated by topk-codegen {CODEGEN_VERSION}: exact sample-guided Top-K.\n// spec: {spec}\n// family: {}\n\n",
            family.name()
        );
        prelude.push_str(&constants::emit(spec, family, &layout, &entry));
        prelude.push_str(&interface::emit(family, &spec.io));
        let fragments = family.parts(spec);
        (entry, Composition { prelude, fragments })
    };
    composition.prelude.push_str(defines);
    let kernel = KernelSource {
        spec: *spec,
        family,
        entry,
        hash,
        layout,
        source: String::new(),
    };
    Ok((kernel, composition))
}
