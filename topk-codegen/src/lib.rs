//! Spec -> self-contained CUDA C++ source (no `#include`), one emitter per kernel family.
use topk_dsl::Spec;

/// Generated source of one specialized selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSource {
    pub spec: Spec,
    /// Name of the `extern "C" __global__` entry point; carries the spec hash.
    pub entry: String,
    /// 16 hex digits of sha256(canonical spec text, codegen version).
    pub hash: String,
    pub source: String,
}

/// Why a Spec could not be turned into source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodegenError {
    #[error(transparent)]
    Spec(#[from] topk_dsl::SpecError),
    #[error("no kernel family is generated yet for mapping `{0}`")]
    Unsupported(String),
}

/// Generate the CUDA source of `spec`. Same Spec -> same bytes.
pub fn generate(spec: &Spec) -> Result<KernelSource, CodegenError> {
    spec.validate()?;
    Err(CodegenError::Unsupported(spec.to_string()))
}
