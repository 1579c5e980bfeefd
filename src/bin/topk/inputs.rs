//! Loading a selection problem from files, with every check that can fail made before the
//! selection starts, and the output path checked before any work is done.

use crate::progress;
use std::path::Path;
use topk::cli::CliError;
use topk::io::{self, ArrayFile, IoError, Scores};
use topk_runtime::data::Profile;
use topk_runtime::ScoreMatrix;

/// Scores and one valid length per row, checked against each other.
pub struct Problem {
    pub scores: Scores,
    pub lengths: Vec<i32>,
}

impl Problem {
    pub fn matrix(&self) -> ScoreMatrix<'_> {
        ScoreMatrix {
            data: &self.scores.data,
            rows: self.scores.rows,
            width: self.scores.width,
            pitch: self.scores.width,
            lengths: &self.lengths,
        }
    }

    /// Bytes of valid scores, the data a selector must read at least once.
    pub fn valid_bytes(&self) -> u64 {
        self.lengths.iter().map(|&l| l as u64).sum::<u64>() * 4
    }
}

/// Read `--scores` (tensor `tensor` of a `.safetensors` file) and `--lengths` (every row full
/// width when absent). The score header is checked and the lengths are read and checked before
/// the score data is read.
pub fn load(
    scores: &Path,
    tensor: Option<&str>,
    lengths: Option<&Path>,
) -> Result<Problem, CliError> {
    let file = ArrayFile::open(scores, tensor, Some("scores")).map_err(|e| match e {
        IoError::TensorAmbiguous { .. } => CliError::Usage(format!("--scores: {e} with --tensor")),
        e => CliError::input("--scores")(e),
    })?;
    file.expect_rank(2, " of scores, one row per query")
        .map_err(CliError::input("--scores"))?;
    if file.element_type() != Some(io::ElementType::F32) {
        return Err(CliError::input("--scores")(
            file.dtype_error("float32", io::ElementType::F32),
        ));
    }
    let (rows, width) = (file.shape()[0], file.shape()[1]);
    if width > i32::MAX as usize {
        return Err(CliError::Usage(format!(
            "--scores: width {width} is beyond the int32 index range; split the rows into \
             pieces of at most {} columns",
            i32::MAX
        )));
    }
    let lengths = match lengths {
        Some(path) => {
            let raw = io::read_lengths(path, None).map_err(CliError::input("--lengths"))?;
            check_lengths(&raw, rows, width, path)?
        }
        None => vec![width as i32; rows],
    };
    let total = file.len().map_err(CliError::input("--scores"))? as u64 * 4;
    let bar = progress::bytes(total, "reading");
    let array = file
        .read::<f32>(&mut |done, _| bar.set_position(done))
        .map_err(CliError::input("--scores"))?;
    bar.finish_and_clear();
    Ok(Problem {
        scores: Scores {
            rows,
            width,
            data: array.data,
        },
        lengths,
    })
}

/// One length per row, each in `[0, width]`.
pub fn check_lengths(
    raw: &[i64],
    rows: usize,
    width: usize,
    path: &Path,
) -> Result<Vec<i32>, CliError> {
    if raw.len() != rows {
        return Err(CliError::Usage(format!(
            "--lengths: `{}` holds {} lengths but the scores have {rows} rows; give exactly one \
             valid length per row",
            path.display(),
            raw.len()
        )));
    }
    raw.iter()
        .enumerate()
        .map(|(row, &len)| {
            if len < 0 || len > width as i64 {
                Err(CliError::Usage(format!(
                    "--lengths: row {row} of `{}` has length {len}, outside [0, {width}]; each \
                     length counts the valid scores at the start of its row, at most the width",
                    path.display()
                )))
            } else {
                Ok(len as i32)
            }
        })
        .collect()
}

/// Fail early, before any work, when `path` cannot be created because its folder is missing.
pub fn check_output_path(flag: &str, path: &Path) -> Result<(), CliError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(CliError::Usage(format!(
            "{flag}: folder `{}` does not exist; create it first or choose another path",
            parent.display()
        )));
    }
    if path.is_dir() {
        return Err(CliError::Usage(format!(
            "{flag}: `{}` is a folder; give a file name such as `{}`",
            path.display(),
            path.join("out.npy").display()
        )));
    }
    Ok(())
}

/// Generate `profile` rows with `lengths` (every row `width` wide, `-inf` past its length),
/// a slice of rows at a time so a progress bar can follow.
pub fn generate(
    profile: Profile,
    seed: u64,
    k: usize,
    lengths: &[i32],
    width: usize,
) -> Result<Vec<f32>, CliError> {
    let rows = lengths.len();
    let len = rows.checked_mul(width).ok_or_else(|| {
        CliError::Usage(format!(
            "{rows} rows x {width} columns do not fit in memory"
        ))
    })?;
    let mut data = Vec::new();
    data.try_reserve_exact(len).map_err(|_| {
        CliError::Usage(format!(
            "{rows} rows x {width} columns need {} of memory, more than is available; generate fewer rows",
            crate::report::size(len as u64 * 4)
        ))
    })?;
    data.resize(len, f32::NEG_INFINITY);
    // About 4M scores per step: fine-grained enough for the bar, coarse enough for rayon.
    let step = (4 << 20) / width.max(1) + 1;
    let bar = progress::rows(rows as u64, "generating");
    for (i, chunk) in lengths.chunks(step).enumerate() {
        let first = i * step;
        let out = &mut data[first * width..(first + chunk.len()) * width];
        topk_runtime::data::generate_into(
            out,
            profile,
            seed,
            k as u32,
            first as u64,
            chunk,
            width,
            width,
        )?;
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    Ok(data)
}

/// Valid lengths of generated rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LengthsKind {
    /// The terminal causal window ending at the width: row r has length width - rows + r + 1
    Causal,
    /// Every row full width
    Full,
}

impl LengthsKind {
    pub fn lengths(self, rows: usize, width: usize) -> Result<Vec<i32>, CliError> {
        if width > i32::MAX as usize {
            return Err(CliError::Usage(format!(
                "--width {width} is beyond the int32 index range; use at most {}",
                i32::MAX
            )));
        }
        Ok(match self {
            LengthsKind::Causal => topk_runtime::data::shapes::causal_window(rows, width),
            LengthsKind::Full => vec![width as i32; rows],
        })
    }
}

/// Name the score file in errors about its contents (a NaN, say), which the selector reports
/// by position only.
pub fn locate_in(path: &Path) -> impl FnOnce(topk_runtime::Error) -> CliError + '_ {
    move |e| match e {
        topk_runtime::Error::NaN { .. } => {
            CliError::Usage(format!("--scores: `{}`: {e}", path.display()))
        }
        e => CliError::Runtime(e),
    }
}
