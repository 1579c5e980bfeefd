//! `.npy` files (format versions 1.0 to 3.0), read straight into typed vectors and written
//! with a 64-byte aligned version 1.0 header (2.0 when the header needs it).

pub mod header;

use super::array_file::{read_up_to, ArrayFile, FileDtype};
use super::atomic::AtomicFile;
use super::{Element, IoError, Result};
use header::Descr;
use std::fs::File;
use std::path::Path;

/// Headers longer than this are not something numpy writes; refuse rather than allocate.
const MAX_HEADER: usize = 1 << 20;

pub(crate) fn open(path: &Path, mut file: File) -> Result<ArrayFile> {
    let corrupt = |reason: String| IoError::NpyHeader {
        path: path.to_path_buf(),
        reason,
    };
    let read_err = |source| IoError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut prefix = [0u8; 12];
    let got = read_up_to(&mut file, &mut prefix).map_err(read_err)?;
    let total = header::header_len(&prefix[..got]).map_err(corrupt)?;
    if total > MAX_HEADER {
        return Err(corrupt(format!(
            "a header of {total} bytes is implausibly long"
        )));
    }
    let mut bytes = vec![0u8; total];
    let got = {
        use std::io::{Seek, SeekFrom};
        file.seek(SeekFrom::Start(0)).map_err(read_err)?;
        read_up_to(&mut file, &mut bytes).map_err(read_err)?
    };
    if got < total {
        return Err(corrupt("the file ends inside its header".into()));
    }
    let h = header::parse(&bytes).map_err(corrupt)?;
    let file_len = file.metadata().map_err(read_err)?.len();
    Ok(ArrayFile {
        path: path.to_path_buf(),
        dtype: match h.descr {
            Descr::Supported(t) => FileDtype::Supported(t),
            Descr::BigEndian(d) => FileDtype::BigEndian(d),
            Descr::Other(d) => FileDtype::Other(d),
        },
        shape: h.shape,
        fortran_order: h.fortran_order,
        file,
        data_offset: h.data_offset as u64,
        available: file_len.saturating_sub(h.data_offset as u64),
        exclusive: true,
    })
}

/// Write `data` with `shape` (C order) to `path`. The file appears only when complete.
pub fn write<T: Element>(path: &Path, shape: &[usize], data: &[T]) -> Result<()> {
    let mut out = AtomicFile::create(path)?;
    write_to(&mut out, shape, data)?;
    out.commit()
}

/// Serialize `data` with `shape` into `out`: header, then little-endian elements.
///
/// # Panics
/// When `data.len()` is not the product of `shape`.
pub fn write_to<T: Element>(out: &mut impl Sink, shape: &[usize], data: &[T]) -> Result<()> {
    assert_eq!(
        shape.iter().product::<usize>(),
        data.len(),
        "shape and data length disagree"
    );
    out.put(&header::encode(T::TYPE.npy_descr(), shape))?;
    let mut buf = Vec::with_capacity(1 << 20);
    for piece in data.chunks((1 << 20) / T::TYPE.size()) {
        buf.clear();
        for &x in piece {
            x.extend_le(&mut buf);
        }
        out.put(&buf)?;
    }
    Ok(())
}

/// Where serialized bytes go: a file being written, or memory.
pub trait Sink {
    fn put(&mut self, bytes: &[u8]) -> Result<()>;
}

impl Sink for AtomicFile {
    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.write_all(bytes)
    }
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.extend_from_slice(bytes);
        Ok(())
    }
}
