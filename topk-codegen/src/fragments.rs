//! The CUDA building blocks (`cuda/*.cu`), each with its file name. A generated source is a
//! prelude generated from the Spec followed by whole fragments ([`crate::Composition`]).

/// One file of `cuda/`, included whole.
#[derive(Debug, PartialEq, Eq)]
pub struct Fragment {
    /// The file name under `topk-codegen/src/cuda/`.
    pub name: &'static str,
    pub text: &'static str,
}

macro_rules! fragments {
    ($($(#[$doc:meta])* $id:ident = $file:literal;)*) => {
        $($(#[$doc])* pub const $id: Fragment = Fragment {
            name: $file,
            text: include_str!(concat!("cuda/", $file)),
        };)*
        /// Every fragment, in the order the selector families include them.
        pub const ALL: &[&Fragment] = &[$(&$id),*];
    };
}

fragments! {
    /// Ordered keys and the coarse projection (§4.1).
    KEYS = "keys.cu";
    /// Loads and the row stream.
    MEMORY = "memory.cu";
    /// Shared-memory layout and block primitives.
    BLOCK = "block.cu";
    /// Per-row state, the route decision, length checks.
    ROW = "row.cu";
    /// The call interface: row sources, the row descriptor, sorted output.
    CALLIO = "callio.cu";
    /// The stride-view proposal (§4.2).
    PROPOSE = "propose.cu";
    /// The grouped-view proposal (`view=run(R)`).
    PROPOSE_RUNS = "propose_runs.cu";
    /// Certification and collection (§4.3).
    CERTIFY = "certify.cu";
    /// Radix refinement of the frontier (§4.4).
    REFINE = "refine.cu";
    /// Phase-probe hooks, empty unless `PHASE_PROBE` is defined ([`crate::probe`]).
    PROBE = "probe.cu";
    /// One row through the three phases.
    SELECT = "select.cu";
    /// The persistent mapping.
    PERSISTENT = "persistent.cu";
    /// The row-local mappings.
    ROWLOCAL = "rowlocal.cu";
    /// The KV-split mapping.
    KVSPLIT = "kvsplit.cu";
    /// The cluster mapping.
    CLUSTER = "cluster.cu";
    /// The context-parallel stage chain.
    SHARDED = "sharded.cu";
    /// The device-side exactness check ([`crate::verifier`]).
    VERIFY = "verify.cu";
}
