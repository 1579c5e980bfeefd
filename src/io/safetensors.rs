//! `.safetensors` files through the `safetensors` crate. Only the header is parsed up front;
//! the chosen tensor's bytes are then read straight from the file, never the whole file.

use super::array_file::{read_up_to, ArrayFile, FileDtype};
use super::atomic::AtomicFile;
use super::{Element, ElementType, IoError, Result};
use safetensors::tensor::{Dtype, Metadata, TensorView};
use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::path::Path;

/// The format's own limit on header size.
const MAX_HEADER: u64 = 100_000_000;

pub(crate) fn open(
    path: &Path,
    mut file: File,
    tensor: Option<&str>,
    default_name: Option<&str>,
) -> Result<ArrayFile> {
    let corrupt = |reason: &str| IoError::SafetensorsHeader {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    let read_err = |source| IoError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file_len = file.metadata().map_err(read_err)?.len();
    let mut len_bytes = [0u8; 8];
    if read_up_to(&mut file, &mut len_bytes).map_err(read_err)? < 8 {
        return Err(corrupt("the file is shorter than the 8-byte header length"));
    }
    let n = u64::from_le_bytes(len_bytes);
    if n > MAX_HEADER || 8 + n > file_len {
        return Err(corrupt("the header length runs past the end of the file"));
    }
    let mut text = vec![0u8; n as usize];
    if read_up_to(&mut file, &mut text).map_err(read_err)? < text.len() {
        return Err(corrupt("the file ends inside its header"));
    }
    let text = std::str::from_utf8(&text).map_err(|_| corrupt("the header is not UTF-8"))?;
    let metadata: Metadata =
        serde_json::from_str(text).map_err(|_| corrupt("the header is not valid JSON metadata"))?;
    let tensors = metadata.tensors();
    let mut names: Vec<&str> = tensors.keys().map(|s| s.as_str()).collect();
    names.sort_unstable();
    let available = || names.join(", ");
    let name = match tensor {
        Some(name) if tensors.contains_key(name) => name.to_string(),
        Some(name) => {
            return Err(IoError::TensorNotFound {
                path: path.to_path_buf(),
                name: name.to_string(),
                available: if names.is_empty() {
                    "no tensors".into()
                } else {
                    available()
                },
            })
        }
        None if names.len() == 1 => names[0].to_string(),
        None => match default_name {
            Some(d) if tensors.contains_key(d) => d.to_string(),
            _ if names.is_empty() => return Err(corrupt("the file holds no tensors")),
            _ => {
                return Err(IoError::TensorAmbiguous {
                    path: path.to_path_buf(),
                    available: available(),
                })
            }
        },
    };
    let info = tensors[&name];
    let (start, end) = info.data_offsets;
    let data_start = 8 + n;
    if end < start {
        return Err(corrupt("a tensor's data offsets are reversed"));
    }
    let begin = data_start.saturating_add(start as u64);
    // The tensor's declared byte range; `read` compares it with the shape and dtype.
    let declared = (end - start) as u64;
    let in_file = file_len.saturating_sub(begin).min(declared);
    let dtype = file_dtype(info.dtype);
    let elements = info
        .shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d as u64));
    let size_matches = match (&dtype, elements) {
        (FileDtype::Supported(t), Some(e)) => e.checked_mul(t.size() as u64) == Some(declared),
        _ => true,
    };
    if !size_matches {
        return Err(corrupt(&format!(
            "tensor `{name}` declares {declared} bytes, which does not match its shape and dtype"
        )));
    }
    file.seek(SeekFrom::Start(0)).map_err(read_err)?;
    Ok(ArrayFile {
        path: path.to_path_buf(),
        dtype,
        shape: info.shape.clone(),
        fortran_order: false,
        file,
        data_offset: begin,
        available: in_file,
        exclusive: false,
    })
}

/// A tensor's dtype as this crate reads it.
fn file_dtype(d: Dtype) -> FileDtype {
    match d {
        Dtype::F32 => FileDtype::Supported(ElementType::F32),
        Dtype::I32 => FileDtype::Supported(ElementType::I32),
        Dtype::I64 => FileDtype::Supported(ElementType::I64),
        Dtype::F16 => FileDtype::Supported(ElementType::F16),
        Dtype::BF16 => FileDtype::Supported(ElementType::Bf16),
        Dtype::U16 => FileDtype::Supported(ElementType::U16),
        other => FileDtype::Other(dtype_name(other)),
    }
}

fn dtype_name(d: Dtype) -> String {
    match d {
        Dtype::F64 => "float64".into(),
        Dtype::F16 => "float16".into(),
        Dtype::BF16 => "bfloat16".into(),
        Dtype::I8 => "int8".into(),
        Dtype::I16 => "int16".into(),
        Dtype::U8 => "uint8".into(),
        Dtype::U16 => "uint16".into(),
        Dtype::U32 => "uint32".into(),
        Dtype::U64 => "uint64".into(),
        Dtype::BOOL => "bool".into(),
        other => format!("{other:?}"),
    }
}

fn st_dtype(t: ElementType) -> Dtype {
    match t {
        ElementType::F32 => Dtype::F32,
        ElementType::I32 => Dtype::I32,
        ElementType::I64 => Dtype::I64,
        ElementType::F16 => Dtype::F16,
        ElementType::Bf16 => Dtype::BF16,
        ElementType::U16 => Dtype::U16,
    }
}

/// One named tensor to write.
pub struct NamedTensor<'a, T> {
    pub name: &'a str,
    pub shape: &'a [usize],
    pub data: &'a [T],
}

/// Write tensors of one element type to a `.safetensors` file; it appears only when complete.
pub fn write<T: Element>(path: &Path, tensors: &[NamedTensor<'_, T>]) -> Result<()> {
    let bytes: Vec<Vec<u8>> = tensors
        .iter()
        .map(|t| {
            let mut b = Vec::with_capacity(t.data.len() * T::TYPE.size());
            t.data.iter().for_each(|&x| x.extend_le(&mut b));
            b
        })
        .collect();
    let invalid = |reason: String| IoError::Write {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, reason),
    };
    let views = tensors
        .iter()
        .zip(&bytes)
        .map(|(t, b)| {
            TensorView::new(st_dtype(T::TYPE), t.shape.to_vec(), b)
                .map(|v| (t.name, v))
                .map_err(|e| invalid(format!("tensor `{}`: {e}", t.name)))
        })
        .collect::<Result<Vec<_>>>()?;
    let serialized = safetensors::serialize(views, &None).map_err(|e| invalid(e.to_string()))?;
    let mut out = AtomicFile::create(path)?;
    out.write_all(&serialized)?;
    out.commit()
}
