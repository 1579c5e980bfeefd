//! The three arrays the selector exchanges: a float32 score matrix, one valid length per row,
//! and an int32 index matrix.

use super::{ArrayFile, ElementType, IoError, Result};
use std::path::Path;

/// A row-major float32 score matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Scores {
    pub rows: usize,
    pub width: usize,
    pub data: Vec<f32>,
}

/// A row-major int32 index matrix, `k` slots per row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Indices {
    pub rows: usize,
    pub k: usize,
    pub data: Vec<i32>,
}

/// Read a 2-D float32 score matrix; `tensor` names it inside a `.safetensors` file.
/// `progress(done, total)` receives byte counts.
pub fn read_scores(
    path: &Path,
    tensor: Option<&str>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Scores> {
    let file = ArrayFile::open(path, tensor, Some("scores"))?;
    file.expect_rank(2, " of scores, one row per query")?;
    let array = file.read::<f32>(progress)?;
    Ok(Scores {
        rows: array.shape[0],
        width: array.shape[1],
        data: array.data,
    })
}

/// Read a 1-D int32 or int64 vector of valid lengths.
pub fn read_lengths(path: &Path, tensor: Option<&str>) -> Result<Vec<i64>> {
    read_int_vector(path, tensor, "lengths", " of lengths, one per score row")
}

/// Read a 1-D int32 or int64 vector; `default_name` is the tensor taken from a `.safetensors`
/// file of several, `hint` ends the error about a wrong rank.
pub fn read_int_vector(
    path: &Path,
    tensor: Option<&str>,
    default_name: &str,
    hint: &'static str,
) -> Result<Vec<i64>> {
    let file = ArrayFile::open(path, tensor, Some(default_name))?;
    file.expect_rank(1, hint)?;
    match file.element_type() {
        Some(ElementType::I32) => Ok(file
            .read::<i32>(&mut |_, _| {})?
            .data
            .into_iter()
            .map(i64::from)
            .collect()),
        Some(ElementType::I64) => Ok(file.read::<i64>(&mut |_, _| {})?.data),
        _ => Err(file.dtype_error("int32 or int64", ElementType::I32)),
    }
}

/// Read a 2-D int32 index matrix (int64 is accepted when every value fits in int32).
pub fn read_indices(path: &Path, tensor: Option<&str>) -> Result<Indices> {
    read_i32_matrix(path, tensor, "indices", " of indices, K slots per row")
}

/// Read a 2-D int32 matrix (int64 is accepted when every value fits in int32) as rows of `k`
/// entries; `default_name` and `hint` as for [`read_int_vector`].
pub fn read_i32_matrix(
    path: &Path,
    tensor: Option<&str>,
    default_name: &str,
    hint: &'static str,
) -> Result<Indices> {
    let file = ArrayFile::open(path, tensor, Some(default_name))?;
    file.expect_rank(2, hint)?;
    let (shape, data) = match file.element_type() {
        Some(ElementType::I32) => {
            let a = file.read::<i32>(&mut |_, _| {})?;
            (a.shape, a.data)
        }
        Some(ElementType::I64) => {
            let path = file.path().to_path_buf();
            let a = file.read::<i64>(&mut |_, _| {})?;
            let data = a
                .data
                .iter()
                .enumerate()
                .map(|(position, &value)| {
                    i32::try_from(value).map_err(|_| IoError::IndexRange {
                        path: path.clone(),
                        position,
                        value,
                    })
                })
                .collect::<Result<Vec<i32>>>()?;
            (a.shape, data)
        }
        _ => return Err(file.dtype_error("int32", ElementType::I32)),
    };
    Ok(Indices {
        rows: shape[0],
        k: shape[1],
        data,
    })
}
