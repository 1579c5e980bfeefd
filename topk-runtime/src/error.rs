/// Every error of the runtime; each message says what is wrong and what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Spec(#[from] topk_dsl::SpecError),
    #[error(transparent)]
    Codegen(#[from] topk_codegen::CodegenError),
    #[error("invalid input: {0}")]
    Input(String),
    #[error("score at row {row}, column {col} is NaN: NaN is outside the Top-K contract; clean or mask the scores (e.g. to -inf) first")]
    NaN { row: usize, col: usize },
    #[error("row {row} has length {len}, outside [0, {width}]: each valid length must be between 0 and the matrix width")]
    Length { row: usize, len: i64, width: usize },
    #[error("K = {k} is not supported here: {why}")]
    K { k: usize, why: String },
    #[error("CUDA: {0}")]
    Cuda(String),
    #[error("NVRTC could not compile `{entry}` for {arch}; fix the kernel source (compiler log below)\n{log}")]
    Compile {
        entry: String,
        arch: String,
        log: String,
    },
    #[error("kernel cache: {0}")]
    Cache(String),
}

pub type Result<T> = std::result::Result<T, Error>;
