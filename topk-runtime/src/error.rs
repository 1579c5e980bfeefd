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
    /// The CUDA driver, device or a CUDA library: missing or unfit (no driver, no device, too old
    /// a compute capability, no NVRTC or NCCL), or a failure that carries no library error.
    #[error("CUDA: {0}")]
    Cuda(String),
    /// A CUDA driver call failed.
    #[error("CUDA: {during}: {source}")]
    Driver {
        /// What the runtime was doing (e.g. "launching `topk_persistent_..`").
        during: String,
        /// The driver's error code.
        #[source]
        source: cudarc::driver::DriverError,
    },
    /// An NVRTC call other than the compilation itself failed (that one is [`Error::Compile`]).
    #[error("NVRTC: {during}: {source}")]
    Nvrtc {
        /// The NVRTC call.
        during: &'static str,
        /// NVRTC's error code.
        #[source]
        source: cudarc::nvrtc::result::NvrtcError,
    },
    /// A file of the kernel cache or of the kernel dump could not be written or read.
    #[error("kernel cache: could not {during} {}: {source}; {fix}", path.display())]
    CacheIo {
        /// What was being done ("create the directory", "write", ...).
        during: &'static str,
        /// The file or directory.
        path: std::path::PathBuf,
        /// What to do about it.
        fix: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
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

impl Error {
    /// Maps a driver error to [`Error::Driver`] with what the runtime was doing, for
    /// `map_err`.
    pub(crate) fn driver(
        during: &str,
    ) -> impl FnOnce(cudarc::driver::DriverError) -> Error + use<> {
        let during = during.to_string();
        move |source| Error::Driver { during, source }
    }
}

/// The runtime's result.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::Error;
    use cudarc::driver::{sys::CUresult, DriverError};

    #[test]
    fn a_driver_error_keeps_what_was_being_done_and_the_driver_code_as_its_source() {
        let err = Error::driver("launching `k`")(DriverError(CUresult::CUDA_ERROR_INVALID_VALUE));
        match &err {
            Error::Driver { during, source } => {
                assert_eq!(during, "launching `k`");
                assert_eq!(source.0, CUresult::CUDA_ERROR_INVALID_VALUE);
            }
            other => panic!("expected Error::Driver, got {other:?}"),
        }
        let source = std::error::Error::source(&err).expect("the driver error is the source");
        let code = source.downcast_ref::<DriverError>().expect("a DriverError");
        assert_eq!(code.0, CUresult::CUDA_ERROR_INVALID_VALUE);
    }
}
