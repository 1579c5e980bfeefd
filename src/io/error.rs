use std::path::PathBuf;

/// Why an array file could not be read or written. Every message names the file, says what is
/// wrong with it, and how to produce a file that works.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    #[error("`{path}` does not exist; check the path")]
    NotFound { path: PathBuf },
    #[error("cannot read `{path}`: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write `{path}`: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("`{path}` is neither a .npy nor a .safetensors file; save the array with numpy.save or safetensors")]
    UnknownFormat { path: PathBuf },
    #[error("`{path}` has a corrupt .npy header ({reason}); re-save the array with numpy.save")]
    NpyHeader { path: PathBuf, reason: String },
    #[error("`{path}` has a corrupt .safetensors header ({reason}); re-save the tensors with safetensors")]
    SafetensorsHeader { path: PathBuf, reason: String },
    #[error("`{path}` has no tensor named `{name}`; it holds: {available}")]
    TensorNotFound {
        path: PathBuf,
        name: String,
        available: String,
    },
    #[error(
        "`{path}` is a .npy file, which holds one unnamed array; drop the tensor name `{name}`"
    )]
    TensorNameOnNpy { path: PathBuf, name: String },
    #[error("`{path}` holds several tensors ({available}); name the one to read")]
    TensorAmbiguous { path: PathBuf, available: String },
    #[error("`{path}` is big-endian ({descr}); save a little-endian copy, e.g. numpy.save(path, a.astype(a.dtype.newbyteorder('<')))")]
    BigEndian { path: PathBuf, descr: String },
    #[error("`{path}` holds {found} values; expected {expected} (convert it, e.g. numpy.save(path, a.astype(numpy.{numpy_name})))")]
    Dtype {
        path: PathBuf,
        found: String,
        expected: String,
        numpy_name: &'static str,
    },
    #[error("`{path}` is stored in Fortran (column-major) order; save a C-order copy with numpy.save(path, numpy.ascontiguousarray(a))")]
    FortranOrder { path: PathBuf },
    #[error("`{path}` has shape {found}; expected a {expected}-D array{hint}")]
    Rank {
        path: PathBuf,
        found: String,
        expected: usize,
        hint: &'static str,
    },
    #[error("`{path}` is truncated: its header promises {expected} bytes of data but only {found} follow; the file is incomplete, write it again")]
    Truncated {
        path: PathBuf,
        expected: u64,
        found: u64,
    },
    #[error(
        "`{path}` has {extra} unexpected bytes after its data; the file is corrupt, write it again"
    )]
    TrailingBytes { path: PathBuf, extra: u64 },
    #[error("`{path}`: shape {shape} is too large to address on this machine")]
    TooLarge { path: PathBuf, shape: String },
    #[error("index {value} at position {position} of `{path}` does not fit in int32")]
    IndexRange {
        path: PathBuf,
        position: usize,
        value: i64,
    },
}

pub type Result<T> = std::result::Result<T, IoError>;

/// `(a, b)` in numpy's tuple notation, `(a,)` for one dimension.
pub(crate) fn shape_text(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => {
            let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            format!("({})", dims.join(", "))
        }
    }
}
