//! Runtime errors as Python exceptions, and the guard that keeps panics on this side.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::PyErr;
use topk_runtime::Error;

/// Bad input (shapes, lengths, K, NaN, a spec) is a `ValueError`; a failing device, driver,
/// compiler or cache a `RuntimeError`. The message is the runtime's, which says what to do.
pub fn to_py(e: Error) -> PyErr {
    match e {
        Error::Input(_)
        | Error::NaN { .. }
        | Error::Length { .. }
        | Error::K { .. }
        | Error::Spec(_) => PyValueError::new_err(e.to_string()),
        Error::Codegen(_)
        | Error::Cuda(_)
        | Error::Driver { .. }
        | Error::Nvrtc { .. }
        | Error::Compile { .. }
        | Error::Cache(_)
        | Error::CacheIo { .. } => PyRuntimeError::new_err(e.to_string()),
    }
}

/// Runs `f`, turning a panic into a `RuntimeError` so that none reaches PyO3's
/// `PanicException` (a panic here is a bug: the message asks for a report).
pub fn guard<T>(f: impl FnOnce() -> pyo3::PyResult<T>) -> pyo3::PyResult<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(PyRuntimeError::new_err(format!(
                "internal error in topk ({what}); please report it with the call that caused it"
            )))
        }
    }
}
