//! The disk cache: one verified CUBIN file per key, written under a temporary name and renamed
//! into place, with a header that lets a corrupt or truncated entry be detected and deleted.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use super::{
    nvrtc, CacheKey, CacheOutcome, CacheSettings, CompileRequest, Compiled, CACHE_FORMAT_VERSION,
    ENTRY_MAGIC, HEADER_LEN,
};
use crate::{Error, Result};

/// What the disk holds for one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskEntry {
    /// A verified CUBIN.
    Hit(Vec<u8>),
    /// No entry (or no disk cache).
    Missing,
    /// An entry that failed verification; it has been deleted. The text says why.
    Corrupt(String),
}

/// A CUBIN obtained through the disk cache.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The CUBIN.
    pub cubin: Vec<u8>,
    /// [`CacheOutcome::Disk`] or [`CacheOutcome::Compiled`].
    pub outcome: CacheOutcome,
    /// Milliseconds spent in NVRTC in this call (0 for a disk hit).
    pub compile_ms: f64,
    /// Why a fresh CUBIN could not be stored on disk; the kernel still works, but the next
    /// process compiles it again.
    pub store_error: Option<String>,
}

/// CUBINs on disk, one file per key.
#[derive(Debug, Clone)]
pub struct DiskCache {
    settings: CacheSettings,
}

impl DiskCache {
    /// A disk cache with these settings.
    pub fn new(settings: CacheSettings) -> Self {
        DiskCache { settings }
    }

    /// The settings in use.
    pub fn settings(&self) -> &CacheSettings {
        &self.settings
    }

    /// The file that holds (or would hold) `key`, if a cache directory is configured.
    pub fn entry_path(&self, key: &CacheKey) -> Option<PathBuf> {
        let dir = self.settings.dir.as_ref()?;
        Some(dir.join(format!("{}.cubin", key.hex())))
    }

    /// Reads and verifies the entry for `key`; a corrupt entry is deleted.
    pub fn read(&self, key: &CacheKey) -> DiskEntry {
        let Some(path) = self.entry_path(key) else {
            return DiskEntry::Missing;
        };
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return DiskEntry::Missing,
            Err(e) => return DiskEntry::Corrupt(format!("unreadable: {e}")),
        };
        match decode_entry(key, &bytes) {
            Ok(cubin) => DiskEntry::Hit(cubin),
            Err(why) => {
                // Deleting is best effort: if it fails, the next write replaces the file anyway.
                let _ = fs::remove_file(&path);
                DiskEntry::Corrupt(why)
            }
        }
    }

    /// Deletes the entry for `key`, if any (e.g. after the driver rejected its CUBIN).
    pub fn remove(&self, key: &CacheKey) {
        if let Some(path) = self.entry_path(key) {
            let _ = fs::remove_file(path);
        }
    }

    /// Stores `cubin` under `key`: written to a temporary file in the same directory, then
    /// renamed over the final name, so concurrent readers see the old entry or the new one.
    pub fn write(&self, key: &CacheKey, cubin: &[u8]) -> Result<PathBuf> {
        let path = self.entry_path(key).ok_or_else(|| {
            Error::Cache("no cache directory: set TOPK_CACHE_DIR or HOME".to_string())
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let cache_err =
            |during: &'static str, path: &Path, source: std::io::Error| Error::CacheIo {
                during,
                path: path.to_path_buf(),
                fix: "make the directory writable or point TOPK_CACHE_DIR elsewhere",
                source,
            };
        fs::create_dir_all(dir).map_err(|e| cache_err("create the directory", dir, e))?;
        let temp = dir.join(temp_name(key));
        let written = fs::File::create(&temp)
            .and_then(|mut file| file.write_all(&encode_entry(key, cubin)))
            .and_then(|()| fs::rename(&temp, &path));
        if let Err(e) = written {
            let _ = fs::remove_file(&temp);
            return Err(cache_err("write the entry", &path, e));
        }
        Ok(path)
    }

    /// The CUBIN for `request`: from disk when a verified entry exists (and
    /// `TOPK_ALWAYS_COMPILE` is off), else from `compile`, which is then stored and dumped.
    pub fn fetch_or_compile(
        &self,
        request: &CompileRequest<'_>,
        compile: impl FnOnce(&CompileRequest<'_>) -> Result<Compiled>,
    ) -> Result<Fetched> {
        let key = request.key();
        if !self.settings.always_compile {
            if let DiskEntry::Hit(cubin) = self.read(&key) {
                return Ok(Fetched {
                    cubin,
                    outcome: CacheOutcome::Disk,
                    compile_ms: 0.0,
                    store_error: None,
                });
            }
        }
        let compiled = compile(request);
        if let Some(dump_dir) = &self.settings.dump_dir {
            dump(dump_dir, request, &key, &compiled)?;
        }
        let compiled = compiled?;
        let store_error = match &self.settings.dir {
            Some(_) => self
                .write(&key, &compiled.cubin)
                .err()
                .map(|e| e.to_string()),
            None => None,
        };
        Ok(Fetched {
            cubin: compiled.cubin,
            outcome: CacheOutcome::Compiled,
            compile_ms: compiled.millis,
            store_error,
        })
    }
}

/// A unique temporary file name next to the entry for `key`.
fn temp_name(key: &CacheKey) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(".{}.{}.{n}.tmp", key.hex(), std::process::id())
}

/// Header (magic, format version, key, payload length, payload sha256) followed by the payload.
fn encode_entry(key: &CacheKey, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(ENTRY_MAGIC);
    out.extend_from_slice(&CACHE_FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(key.bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&Sha256::digest(payload));
    out.extend_from_slice(payload);
    out
}

/// The payload of an entry, or why the entry cannot be trusted.
fn decode_entry(key: &CacheKey, bytes: &[u8]) -> std::result::Result<Vec<u8>, String> {
    if bytes.len() < HEADER_LEN {
        return Err(format!("truncated header ({} bytes)", bytes.len()));
    }
    let (header, payload) = bytes.split_at(HEADER_LEN);
    let (magic, rest) = header.split_at(8);
    let (version, rest) = rest.split_at(4);
    let (stored_key, rest) = rest.split_at(32);
    let (length, digest) = rest.split_at(8);
    if magic != ENTRY_MAGIC {
        return Err("not a cache entry (bad magic)".to_string());
    }
    let version = u32::from_le_bytes(version.try_into().map_err(|_| "bad version field")?);
    if version != CACHE_FORMAT_VERSION {
        return Err(format!(
            "format version {version}, expected {CACHE_FORMAT_VERSION}"
        ));
    }
    if stored_key != key.bytes() {
        return Err("entry belongs to another key".to_string());
    }
    let length = u64::from_le_bytes(length.try_into().map_err(|_| "bad length field")?);
    if length != payload.len() as u64 {
        return Err(format!(
            "payload is {} bytes, header says {length}",
            payload.len()
        ));
    }
    if Sha256::digest(payload).as_slice() != digest {
        return Err("payload checksum mismatch".to_string());
    }
    Ok(payload.to_vec())
}

/// Writes source, log, and (on success) PTX and CUBIN of one compilation to `dir`.
fn dump(
    dir: &Path,
    request: &CompileRequest<'_>,
    key: &CacheKey,
    compiled: &Result<Compiled>,
) -> Result<()> {
    let stem = format!(
        "{}-{}-{}",
        nvrtc::file_stem(request.entry),
        request.arch,
        &key.hex()[..16]
    );
    let write = |ext: &str, bytes: &[u8]| {
        let path = dir.join(format!("{stem}.{ext}"));
        fs::write(&path, bytes).map_err(|source| Error::CacheIo {
            during: "write the kernel dump",
            path,
            fix: "fix or unset TOPK_DUMP_DIR",
            source,
        })
    };
    fs::create_dir_all(dir).map_err(|source| Error::CacheIo {
        during: "create TOPK_DUMP_DIR",
        path: dir.to_path_buf(),
        fix: "fix or unset it",
        source,
    })?;
    write("cu", request.source.as_bytes())?;
    write("options", request.options.join("\n").as_bytes())?;
    match compiled {
        Ok(c) => {
            write("log", c.log.as_bytes())?;
            write("cubin", &c.cubin)?;
            if let Some(ptx) = &c.ptx {
                write("ptx", ptx.as_bytes())?;
            }
        }
        Err(Error::Compile { log, .. }) => write("log", log.as_bytes())?,
        Err(other) => write("log", other.to_string().as_bytes())?,
    }
    Ok(())
}
