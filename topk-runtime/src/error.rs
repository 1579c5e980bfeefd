/// Every error of the runtime; each message says what is wrong and what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The spec breaks a rule of its form (`topk_dsl::Spec::validate`).
    #[error(transparent)]
    Spec(#[from] topk_dsl::SpecError),
    /// Code generation refused the spec (e.g. an interface the kernels do not generate yet).
    #[error(transparent)]
    Codegen(#[from] topk_codegen::CodegenError),
    /// Inputs that do not fit together or break the contract (shapes, pitches, windows, the
    /// status word a launch raised, a file that is not a store).
    #[error("invalid input: {0}")]
    Input(String),
    /// A NaN among the valid scores: outside the contract.
    #[error("score at row {row}, column {col} is NaN: NaN is outside the Top-K contract; clean or mask the scores (e.g. to -inf) first")]
    NaN {
        /// Row of the NaN.
        row: usize,
        /// Column of the NaN.
        col: usize,
    },
    /// A valid length outside `[0, width]`.
    #[error("row {row} has length {len}, outside [0, {width}]: each valid length must be between 0 and the matrix width")]
    Length {
        /// The row.
        row: usize,
        /// Its length.
        len: i64,
        /// The matrix width.
        width: usize,
    },
    /// K out of range, or not the rank the buffers or spec were made for.
    #[error("K = {k} is not supported here: {why}")]
    K {
        /// The K asked for.
        k: usize,
        /// Why it cannot be used.
        why: String,
    },
    /// The CUDA driver or device: missing, or an operation that failed.
    #[error("CUDA: {0}")]
    Cuda(String),
    /// NVRTC rejected generated source.
    #[error("NVRTC could not compile `{entry}` for {arch}; fix the kernel source (compiler log below)\n{log}")]
    Compile {
        /// The kernel's entry point.
        entry: String,
        /// The architecture compiled for (`sm_90a`).
        arch: String,
        /// NVRTC's log.
        log: String,
    },
    /// The on-disk kernel cache cannot be read or written.
    #[error("kernel cache: {0}")]
    Cache(String),
}

/// The runtime's result.
pub type Result<T> = std::result::Result<T, Error>;
