//! Reading a call's files: scores of any dtype (float32; float16 from .npy or .safetensors;
//! bfloat16 from .safetensors, or from a .npy of its uint16 bit patterns when the spec says
//! `dtype=bf16`), and the arrays of its interface, each checked against the scores' shape and
//! named by its flag in errors.

use crate::call_args::{OutputArgs, RowArgs};
use crate::progress;
use half::{bf16, f16};
use std::path::Path;
use topk::cli::CliError;
use topk::io::{self, ArrayFile, Element, ElementType, IoError};
use topk_dsl::{Dtype, Spec};
use topk_runtime::call::{CallIo, IndexTransform, PageTable, RowSource};
use topk_runtime::ScoreRows;

/// A score matrix of one of the three dtypes, row-major.
pub enum AnyScores {
    F32(Vec<f32>),
    F16(Vec<f16>),
    Bf16(Vec<bf16>),
}

/// An opened score file: its shape and the dtype its scores will be read as.
pub struct ScoreFile {
    pub file: ArrayFile,
    pub rows: usize,
    pub width: usize,
    pub dtype: Dtype,
}

const SUPPORTED: &str = "float32, float16, or bfloat16 (.safetensors BF16, or a .npy of its \
                         uint16 bit patterns with --spec dtype=bf16)";

/// Open `--scores` and decide its dtype from the file (`named`, the dtype `--spec` names, must
/// agree; a uint16 `.npy` is bfloat16 bits only when `named` says so).
pub fn open_scores(
    path: &Path,
    tensor: Option<&str>,
    named: Option<Dtype>,
) -> Result<ScoreFile, CliError> {
    let file = ArrayFile::open(path, tensor, Some("scores")).map_err(|e| match e {
        IoError::TensorAmbiguous { .. } => CliError::Usage(format!("--scores: {e} with --tensor")),
        e => CliError::input("--scores")(e),
    })?;
    file.expect_rank(2, " of scores, one row per query")
        .map_err(CliError::input("--scores"))?;
    let dtype = match (file.element_type(), named) {
        (Some(ElementType::F32), None | Some(Dtype::F32)) => Dtype::F32,
        (Some(ElementType::F16), None | Some(Dtype::F16)) => Dtype::F16,
        (Some(ElementType::Bf16), None | Some(Dtype::Bf16)) => Dtype::Bf16,
        (Some(ElementType::U16), Some(Dtype::Bf16)) => Dtype::Bf16,
        (Some(ElementType::U16), _) => {
            return Err(CliError::Usage(format!(
                "--scores: `{}` holds uint16 values; if they are bfloat16 bit patterns, say so \
                 with --spec dtype=bf16",
                path.display()
            )))
        }
        (Some(t), Some(named)) => {
            return Err(CliError::Usage(format!(
                "--spec says dtype={named} but `{}` holds {} scores; drop dtype from --spec \
                 (the file decides) or pass scores of that dtype",
                path.display(),
                t.numpy_name()
            )))
        }
        _ => {
            return Err(CliError::input("--scores")(
                file.dtype_error(SUPPORTED, ElementType::F32),
            ))
        }
    };
    let (rows, width) = (file.shape()[0], file.shape()[1]);
    if width > i32::MAX as usize {
        return Err(CliError::Usage(format!(
            "--scores: width {width} is beyond the int32 index range; split the rows into \
             pieces of at most {} columns",
            i32::MAX
        )));
    }
    Ok(ScoreFile {
        file,
        rows,
        width,
        dtype,
    })
}

impl ScoreFile {
    /// Read the scores as their dtype, with a progress bar.
    pub fn read(self) -> Result<AnyScores, CliError> {
        let total = self.file.len().map_err(CliError::input("--scores"))? as u64;
        let bar = progress::bytes(total * self.dtype.size() as u64, "reading");
        let mut tick = |done, _| bar.set_position(done);
        let err = CliError::input("--scores");
        let scores = match (self.dtype, self.file.element_type()) {
            (Dtype::F32, _) => AnyScores::F32(self.file.read(&mut tick).map_err(err)?.data),
            (Dtype::F16, _) => AnyScores::F16(self.file.read(&mut tick).map_err(err)?.data),
            (Dtype::Bf16, Some(ElementType::U16)) => {
                let bits = self.file.read::<u16>(&mut tick).map_err(err)?.data;
                AnyScores::Bf16(bits.into_iter().map(bf16::from_bits).collect())
            }
            (Dtype::Bf16, _) => AnyScores::Bf16(self.file.read(&mut tick).map_err(err)?.data),
        };
        bar.finish_and_clear();
        Ok(scores)
    }
}

/// A row-major matrix of `rows` x `width` scores in `data`.
pub fn score_rows<T>(data: &[T], rows: usize, width: usize) -> ScoreRows<'_, T> {
    ScoreRows {
        data,
        rows,
        width,
        pitch: width,
    }
}

/// Read a values file of `dtype` (the scores' dtype), 2-D [rows, k].
pub fn read_values<T: Element>(
    path: &Path,
    dtype: Dtype,
    rows: usize,
    k: usize,
) -> Result<Vec<T>, CliError> {
    let file = ArrayFile::open(path, None, Some("values")).map_err(CliError::input("--values"))?;
    file.expect_rank(2, " of values, K per row")
        .map_err(CliError::input("--values"))?;
    if file.shape() != [rows, k] {
        return Err(CliError::Usage(format!(
            "--values: `{}` has shape {:?} but the indices are [{rows}, {k}]; pass the values \
             selected with them",
            path.display(),
            file.shape()
        )));
    }
    let err = CliError::input("--values");
    match (file.element_type(), dtype) {
        (Some(ElementType::U16), Dtype::Bf16) if T::TYPE == ElementType::Bf16 => {
            let bits = file.read::<u16>(&mut |_, _| {}).map_err(err)?.data;
            Ok(bits
                .into_iter()
                .map(|b| T::from_le_slice(&b.to_le_bytes()))
                .collect())
        }
        _ => Ok(file.read::<T>(&mut |_, _| {}).map_err(err)?.data),
    }
}

/// The interface arrays of a call, read and checked against the scores' rows and width.
#[derive(Default)]
pub struct CallFiles {
    lengths: Vec<i32>,
    starts: Vec<i32>,
    ends: Vec<i32>,
    seq_lens: Vec<i32>,
    next_n: u32,
    offsets: Vec<i32>,
    table: Vec<i32>,
    columns: usize,
    pitch: usize,
    page_size: u32,
    page_rows: Vec<i32>,
    prior: Vec<f32>,
}

impl CallFiles {
    /// Read every file the flags name, for `rows` rows of `width` scores.
    pub fn read(
        row: &RowArgs,
        out: &OutputArgs,
        rows: usize,
        width: usize,
    ) -> Result<CallFiles, CliError> {
        let vector = |flag, path: &Path, len| int_vector(flag, path, len);
        let mut files = CallFiles {
            lengths: match &row.lengths {
                Some(path) => vector("--lengths", path, rows)?,
                None => vec![width as i32; rows],
            },
            next_n: row.next_n.unwrap_or(1),
            page_size: out.page_size.unwrap_or(1),
            ..CallFiles::default()
        };
        if let (Some(s), Some(e)) = (&row.starts, &row.ends) {
            files.starts = vector("--starts", s, rows)?;
            files.ends = vector("--ends", e, rows)?;
        }
        if let Some(path) = &row.seq_lens {
            let groups = rows.div_ceil(files.next_n.max(1) as usize);
            files.seq_lens = vector("--seq-lens", path, groups)?;
        }
        if let Some(path) = &out.offsets {
            files.offsets = vector("--offsets", path, rows)?;
        }
        if let Some(path) = &out.page_table {
            let table = io::read_i32_matrix(path, None, "page_table", " [rows, pages]")
                .map_err(CliError::input("--page-table"))?;
            if let Some(map) = &out.page_rows {
                files.page_rows = vector("--page-rows", map, rows)?;
            } else if table.rows != rows && table.rows != 1 {
                return Err(CliError::Usage(format!(
                    "--page-table: `{}` has {} rows but the scores have {rows}; give one table \
                     row per score row, or one row for all",
                    path.display(),
                    table.rows
                )));
            }
            files.columns = table.k;
            files.pitch = if table.rows == 1 && out.page_rows.is_none() {
                0
            } else {
                table.k
            };
            files.table = table.data;
        }
        Ok(files)
    }

    /// The `CallIo` of `spec`'s row source and transform over these arrays.
    pub fn io(&self, spec: &Spec) -> CallIo<'_> {
        use topk_dsl::{Rows, Transform};
        CallIo {
            rows: match spec.io.rows {
                Rows::Lengths => RowSource::Lengths(&self.lengths),
                Rows::Window { .. } => RowSource::Window {
                    starts: &self.starts,
                    ends: &self.ends,
                },
                Rows::Decode => RowSource::Decode {
                    seq_lens: &self.seq_lens,
                    next_n: self.next_n,
                },
            },
            transform: match spec.io.transform {
                Transform::None => IndexTransform::None,
                Transform::Offset => IndexTransform::Offset(&self.offsets),
                Transform::Paged => IndexTransform::Paged(self.page_table()),
                Transform::PagedRows => IndexTransform::PagedRows {
                    table: self.page_table(),
                    rows: &self.page_rows,
                },
            },
            prior: (spec.io.prior != topk_dsl::Prior::None).then_some(&self.prior[..]),
        }
    }

    fn page_table(&self) -> PageTable<'_> {
        PageTable {
            data: &self.table,
            columns: self.columns,
            pitch: self.pitch,
            page_size: self.page_size,
        }
    }

    /// Read `--prior`: one float32 per row.
    pub fn read_prior(&mut self, path: &Path, rows: usize) -> Result<(), CliError> {
        self.prior = float_vector("--prior", path, rows)?;
        Ok(())
    }
}

/// Read a boundary file (`topk verify --boundary`): one float32 per row.
pub fn read_boundary(path: &Path, rows: usize) -> Result<Vec<f32>, CliError> {
    float_vector("--boundary", path, rows)
}

/// A 1-D float32 file of `len` entries.
fn float_vector(flag: &'static str, path: &Path, len: usize) -> Result<Vec<f32>, CliError> {
    let err = || CliError::input(flag);
    let file = ArrayFile::open(path, None, Some(&flag[2..])).map_err(err())?;
    file.expect_rank(1, ", one float32 per row")
        .map_err(err())?;
    if file.element_type() != Some(ElementType::F32) {
        return Err(err()(file.dtype_error("float32", ElementType::F32)));
    }
    if file.shape()[0] != len {
        return Err(CliError::Usage(format!(
            "{flag}: `{}` holds {} values but the scores have {len} rows; pass one per row",
            path.display(),
            file.shape()[0]
        )));
    }
    Ok(file.read::<f32>(&mut |_, _| {}).map_err(err())?.data)
}

/// A 1-D int32 or int64 file of `len` entries that fit in int32.
fn int_vector(flag: &'static str, path: &Path, len: usize) -> Result<Vec<i32>, CliError> {
    let raw = io::read_int_vector(path, None, &flag[2..], ", one entry per row")
        .map_err(CliError::input(flag))?;
    if raw.len() != len {
        return Err(CliError::Usage(format!(
            "{flag}: `{}` holds {} values but {len} are needed (one per row{})",
            path.display(),
            raw.len(),
            if flag == "--seq-lens" {
                ", per group of --next-n rows"
            } else {
                ""
            }
        )));
    }
    raw.iter()
        .enumerate()
        .map(|(i, &v)| {
            i32::try_from(v).map_err(|_| {
                CliError::Usage(format!(
                    "{flag}: entry {i} of `{}` is {v}, beyond the int32 range",
                    path.display()
                ))
            })
        })
        .collect()
}
