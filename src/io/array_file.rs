//! An opened array file of either format: its header is parsed, its data not yet read.

use super::error::shape_text;
use super::{Element, ElementType, IoError, Result};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// An n-dimensional array in C order.
#[derive(Clone, Debug, PartialEq)]
pub struct Array<T> {
    pub shape: Vec<usize>,
    pub data: Vec<T>,
}

/// The element type a file declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileDtype {
    Supported(ElementType),
    /// A big-endian multi-byte type, as the file spells it.
    BigEndian(String),
    /// Anything else, by its numpy name where known.
    Other(String),
}

/// An array file whose header has been read and whose data can be read next.
pub struct ArrayFile {
    pub(crate) path: PathBuf,
    pub(crate) dtype: FileDtype,
    pub(crate) shape: Vec<usize>,
    pub(crate) fortran_order: bool,
    pub(crate) file: File,
    pub(crate) data_offset: u64,
    /// Bytes from `data_offset` to the end of the region that belongs to this array (the end of
    /// the file for `.npy`).
    pub(crate) available: u64,
    /// Whether bytes after the array's data are an error (`.npy`) or other tensors (`.safetensors`).
    pub(crate) exclusive: bool,
}

/// Read in pieces of this size, so reading needs no second copy of the array.
const CHUNK: usize = 1 << 20;

impl ArrayFile {
    /// Open a `.npy` or `.safetensors` file; the format is told by content. `tensor` names the
    /// tensor of a `.safetensors` file; `None` takes its only tensor (or the one named
    /// `default_name`, when given and present).
    pub fn open(
        path: &Path,
        tensor: Option<&str>,
        default_name: Option<&str>,
    ) -> Result<ArrayFile> {
        let mut file = File::open(path).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => IoError::NotFound {
                path: path.to_path_buf(),
            },
            _ => IoError::Read {
                path: path.to_path_buf(),
                source,
            },
        })?;
        let mut magic = [0u8; 9];
        let got = read_up_to(&mut file, &mut magic).map_err(|source| IoError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        file.seek(SeekFrom::Start(0))
            .map_err(|source| IoError::Read {
                path: path.to_path_buf(),
                source,
            })?;
        if got >= 6 && &magic[..6] == super::npy::header::MAGIC {
            if let Some(name) = tensor {
                return Err(IoError::TensorNameOnNpy {
                    path: path.to_path_buf(),
                    name: name.to_string(),
                });
            }
            super::npy::open(path, file)
        } else if got == 9 && magic[8] == b'{' || has_extension(path, "safetensors") {
            super::safetensors::open(path, file, tensor, default_name)
        } else if has_extension(path, "npy") {
            Err(IoError::NpyHeader {
                path: path.to_path_buf(),
                reason: "the file does not start with the .npy magic".into(),
            })
        } else {
            Err(IoError::UnknownFormat {
                path: path.to_path_buf(),
            })
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The declared element type, when it is one this crate reads.
    pub fn element_type(&self) -> Option<ElementType> {
        match self.dtype {
            FileDtype::Supported(t) => Some(t),
            _ => None,
        }
    }

    /// Error unless the array has `rank` dimensions; `hint` is appended to the message.
    pub fn expect_rank(&self, rank: usize, hint: &'static str) -> Result<()> {
        if self.shape.len() == rank {
            Ok(())
        } else {
            Err(IoError::Rank {
                path: self.path.clone(),
                found: shape_text(&self.shape),
                expected: rank,
                hint,
            })
        }
    }

    /// The error for a file whose element type is not one of `expected` (numpy names, e.g.
    /// "int32 or int64"); `convert_to` is the numpy type the message suggests converting to.
    pub fn dtype_error(&self, expected: &str, convert_to: ElementType) -> IoError {
        match &self.dtype {
            FileDtype::BigEndian(descr) => IoError::BigEndian {
                path: self.path.clone(),
                descr: descr.clone(),
            },
            FileDtype::Supported(t) => self.dtype_mismatch(t.numpy_name(), expected, convert_to),
            FileDtype::Other(name) => self.dtype_mismatch(name, expected, convert_to),
        }
    }

    fn dtype_mismatch(&self, found: &str, expected: &str, convert_to: ElementType) -> IoError {
        IoError::Dtype {
            path: self.path.clone(),
            found: found.to_string(),
            expected: expected.to_string(),
            numpy_name: convert_to.numpy_name(),
        }
    }

    /// Number of elements, checked against overflow.
    pub fn len(&self) -> Result<usize> {
        self.shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| IoError::TooLarge {
                path: self.path.clone(),
                shape: shape_text(&self.shape),
            })
    }

    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Read the data as `T`. `progress(done, total)` is called with byte counts as it goes.
    pub fn read<T: Element>(mut self, progress: &mut dyn FnMut(u64, u64)) -> Result<Array<T>> {
        if self.dtype != FileDtype::Supported(T::TYPE) {
            return Err(self.dtype_error(T::TYPE.numpy_name(), T::TYPE));
        }
        let n = self.len()?;
        if self.fortran_order && self.shape.iter().filter(|&&d| d > 1).count() > 1 {
            return Err(IoError::FortranOrder { path: self.path });
        }
        let size = T::TYPE.size();
        let expected = (n as u64)
            .checked_mul(size as u64)
            .ok_or_else(|| IoError::TooLarge {
                path: self.path.clone(),
                shape: shape_text(&self.shape),
            })?;
        if self.available < expected {
            return Err(IoError::Truncated {
                path: self.path,
                expected,
                found: self.available,
            });
        }
        if self.exclusive && self.available > expected {
            return Err(IoError::TrailingBytes {
                path: self.path,
                extra: self.available - expected,
            });
        }
        let read_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| IoError::Read { path, source }
        };
        self.file
            .seek(SeekFrom::Start(self.data_offset))
            .map_err(read_err(&self.path))?;
        let mut data: Vec<T> = Vec::new();
        data.try_reserve_exact(n).map_err(|_| IoError::TooLarge {
            path: self.path.clone(),
            shape: shape_text(&self.shape),
        })?;
        let mut chunk = vec![0u8; CHUNK.min(expected as usize).max(size)];
        let mut done = 0u64;
        while done < expected {
            let want = ((expected - done) as usize).min(chunk.len());
            let buf = &mut chunk[..want];
            self.file.read_exact(buf).map_err(|source| {
                if source.kind() == std::io::ErrorKind::UnexpectedEof {
                    // The file shrank after it was opened.
                    IoError::Truncated {
                        path: self.path.clone(),
                        expected,
                        found: done,
                    }
                } else {
                    IoError::Read {
                        path: self.path.clone(),
                        source,
                    }
                }
            })?;
            data.extend(buf.chunks_exact(size).map(T::from_le_slice));
            done += want as u64;
            progress(done, expected);
        }
        Ok(Array {
            shape: self.shape,
            data,
        })
    }
}

fn has_extension(path: &Path, ext: &str) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

/// Fill as much of `buf` as the file has; returns the count read.
pub(crate) fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}
