//! Output files appear whole or not at all: data goes to a hidden temporary file beside the
//! target, which is renamed over the target only once everything has been written.

use super::{IoError, Result};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// A file being written; dropped without [`AtomicFile::commit`], it is removed.
pub struct AtomicFile {
    target: PathBuf,
    temp: PathBuf,
    writer: Option<BufWriter<File>>,
}

impl AtomicFile {
    pub fn create(target: &Path) -> Result<AtomicFile> {
        let name = target
            .file_name()
            .ok_or_else(|| IoError::Write {
                path: target.to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file name"),
            })?
            .to_string_lossy();
        let temp = target.with_file_name(format!(".{name}.{}.partial", std::process::id()));
        let file = File::create(&temp).map_err(|source| IoError::Write {
            path: target.to_path_buf(),
            source,
        })?;
        Ok(AtomicFile {
            target: target.to_path_buf(),
            temp,
            writer: Some(BufWriter::with_capacity(1 << 20, file)),
        })
    }

    pub fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        let writer = self.writer.as_mut().expect("present until commit");
        writer.write_all(bytes).map_err(|source| IoError::Write {
            path: self.target.clone(),
            source,
        })
    }

    /// Flush and move the file into place.
    pub fn commit(mut self) -> Result<()> {
        let writer = self.writer.take().expect("present until commit");
        let target = self.target.clone();
        let fail = |source| IoError::Write {
            path: target.clone(),
            source,
        };
        // Crash durability is not the point here (no fsync); a failed run leaves no file.
        drop(writer.into_inner().map_err(|e| fail(e.into_error()))?);
        std::fs::rename(&self.temp, &self.target).map_err(fail)?;
        self.temp.clear();
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        self.writer.take();
        if !self.temp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}
