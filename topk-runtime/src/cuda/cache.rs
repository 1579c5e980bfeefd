//! Kernel caches: CUBINs on disk across processes, loaded modules in memory within one.
//!
//! The key is a sha256 over everything that changes the CUBIN: the source, the canonical NVRTC
//! options, the NVRTC version, the architecture and [`CACHE_FORMAT_VERSION`]. A disk entry is
//! written under a temporary name and renamed into place, so readers never see half a file; it
//! carries a header with the key, the payload length and the payload's sha256, so a corrupt or
//! truncated entry is detected, deleted and recompiled, never loaded.
//!
//! Environment (read by [`CacheSettings::from_env`]):
//! - `TOPK_CACHE_DIR`: cache directory (default `$XDG_CACHE_HOME/topk`, else `~/.cache/topk`).
//! - `TOPK_ALWAYS_COMPILE=1`: ignore disk entries (they are still written). The in-memory cache
//!   still applies, so one process compiles each kernel once.
//! - `TOPK_DUMP_DIR=path`: write the source, PTX, CUBIN and log of every compilation there.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use sha2::{Digest, Sha256};

use super::nvrtc::{self, Arch, Compiled};
use crate::{Error, Result};

/// Bumped whenever the entry layout or the meaning of the key changes; old entries then miss.
pub const CACHE_FORMAT_VERSION: u32 = 1;

/// First bytes of every disk entry.
const ENTRY_MAGIC: &[u8; 8] = b"TOPKCUBN";
/// magic + format version + key + payload length + payload sha256.
const HEADER_LEN: usize = 8 + 4 + 32 + 8 + 32;

/// Where a loaded kernel came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CacheOutcome {
    /// Already loaded in this process.
    Memory,
    /// CUBIN read from the disk cache; NVRTC was not run.
    Disk,
    /// NVRTC compiled it in this call.
    Compiled,
}

/// sha256 identity of one CUBIN.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CacheKey([u8; 32]);

impl CacheKey {
    /// The raw digest.
    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Lower-case hex of the digest (the entry's file name).
    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl fmt::Display for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex())
    }
}

impl fmt::Debug for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CacheKey({})", self.hex())
    }
}

/// Everything needed to compile one kernel and to name its cache entry.
#[derive(Debug, Clone)]
pub struct CompileRequest<'a> {
    /// Complete CUDA C++ source.
    pub source: &'a str,
    /// Kernel entry point; names dumps and compiler messages, not part of the key.
    pub entry: &'a str,
    /// Target architecture.
    pub arch: Arch,
    /// NVRTC options, in canonical order.
    pub options: Vec<String>,
    /// Version of the NVRTC that compiles it.
    pub nvrtc_version: (i32, i32),
}

impl<'a> CompileRequest<'a> {
    /// A request with the canonical options for `arch` and the loaded NVRTC's version.
    pub fn new(source: &'a str, entry: &'a str, arch: Arch) -> Result<Self> {
        Ok(CompileRequest {
            source,
            entry,
            arch,
            options: nvrtc::compile_options(&arch),
            nvrtc_version: nvrtc::nvrtc_version()?,
        })
    }

    /// The cache key: sha256 over format version, source, options, NVRTC version and arch, each
    /// length-prefixed so that no two different requests hash the same byte stream.
    pub fn key(&self) -> CacheKey {
        let mut hash = Sha256::new();
        let mut field = |bytes: &[u8]| {
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(bytes);
        };
        field(b"topk-cubin");
        field(&CACHE_FORMAT_VERSION.to_le_bytes());
        field(self.source.as_bytes());
        field(&(self.options.len() as u64).to_le_bytes());
        for option in &self.options {
            field(option.as_bytes());
        }
        field(&self.nvrtc_version.0.to_le_bytes());
        field(&self.nvrtc_version.1.to_le_bytes());
        field(self.arch.to_string().as_bytes());
        CacheKey(hash.finalize().into())
    }

    /// Runs NVRTC on this request.
    pub fn compile(&self) -> Result<Compiled> {
        nvrtc::compile_with_options(self.source, self.entry, &self.arch, &self.options)
    }
}

/// Disk cache configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheSettings {
    /// Cache directory; `None` disables the disk cache.
    pub dir: Option<PathBuf>,
    /// Skip disk reads (`TOPK_ALWAYS_COMPILE`).
    pub always_compile: bool,
    /// Where to dump every compilation (`TOPK_DUMP_DIR`).
    pub dump_dir: Option<PathBuf>,
}

impl CacheSettings {
    /// Settings from the process environment (see the module docs).
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var_os(name))
    }

    /// Settings from any variable lookup; empty values count as unset.
    pub fn from_lookup(get: impl Fn(&str) -> Option<OsString>) -> Self {
        let var = |name: &str| get(name).filter(|v| !v.is_empty());
        let dir = var("TOPK_CACHE_DIR").map(PathBuf::from).or_else(|| {
            var("XDG_CACHE_HOME")
                .map(|d| PathBuf::from(d).join("topk"))
                .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache").join("topk")))
        });
        let always_compile = var("TOPK_ALWAYS_COMPILE").is_some_and(|v| {
            let v = v.to_string_lossy().to_ascii_lowercase();
            matches!(v.trim(), "1" | "true" | "yes" | "on")
        });
        CacheSettings {
            dir,
            always_compile,
            dump_dir: var("TOPK_DUMP_DIR").map(PathBuf::from),
        }
    }
}

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
        let cache_err = |what: &str, e: std::io::Error| {
            Error::Cache(format!(
                "could not {what} in {}: {e}; make it writable or point TOPK_CACHE_DIR elsewhere",
                dir.display()
            ))
        };
        fs::create_dir_all(dir).map_err(|e| cache_err("create the directory", e))?;
        let temp = dir.join(temp_name(key));
        let written = fs::File::create(&temp)
            .and_then(|mut file| file.write_all(&encode_entry(key, cubin)))
            .and_then(|()| fs::rename(&temp, &path));
        if let Err(e) = written {
            let _ = fs::remove_file(&temp);
            return Err(cache_err("write an entry", e));
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
        fs::write(dir.join(format!("{stem}.{ext}")), bytes).map_err(|e| {
            Error::Cache(format!(
                "could not write the kernel dump to {}: {e}; fix or unset TOPK_DUMP_DIR",
                dir.display()
            ))
        })
    };
    fs::create_dir_all(dir).map_err(|e| {
        Error::Cache(format!(
            "could not create TOPK_DUMP_DIR {}: {e}; fix or unset it",
            dir.display()
        ))
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

/// One in-memory slot; its mutex is held while the value is being built, so concurrent callers
/// for the same key wait for that build instead of starting their own.
type Slot<V> = Arc<Mutex<Option<V>>>;

/// In-memory values keyed by (device ordinal, cache key), each built at most once at a time.
#[derive(Debug)]
pub struct MemoryCache<V> {
    slots: Mutex<HashMap<(usize, CacheKey), Slot<V>>>,
}

impl<V> Default for MemoryCache<V> {
    fn default() -> Self {
        MemoryCache {
            slots: Mutex::new(HashMap::new()),
        }
    }
}

impl<V: Clone> MemoryCache<V> {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value for `(ordinal, key)`, built by `init` if absent. Returns `true` when `init` ran
    /// in this call. A failed `init` stores nothing, so the next caller tries again.
    pub fn get_or_try_insert(
        &self,
        ordinal: usize,
        key: CacheKey,
        init: impl FnOnce() -> Result<V>,
    ) -> Result<(V, bool)> {
        let slot = lock(&self.slots).entry((ordinal, key)).or_default().clone();
        let mut value = lock(&slot);
        if let Some(v) = value.as_ref() {
            return Ok((v.clone(), false));
        }
        let built = init()?;
        *value = Some(built.clone());
        Ok((built, true))
    }

    /// Number of values held.
    pub fn len(&self) -> usize {
        let slots: Vec<Slot<V>> = lock(&self.slots).values().cloned().collect();
        slots.iter().filter(|s| lock(s).is_some()).count()
    }

    /// Whether no value is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Locks `m`, recovering from poisoning: a panic while building leaves the slot `None`, which
/// is a consistent state (the next caller builds again).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A value from [`KernelCache::get_or_build`] and where it came from.
#[derive(Debug, Clone)]
pub struct Cached<V> {
    /// The loaded value (e.g. a module).
    pub value: V,
    /// Memory, disk or a fresh compilation.
    pub outcome: CacheOutcome,
    /// Milliseconds spent in NVRTC in this call.
    pub compile_ms: f64,
    /// Why a fresh CUBIN could not be stored on disk, if it could not.
    pub store_error: Option<String>,
}

/// Memory cache in front of the disk cache in front of NVRTC.
#[derive(Debug)]
pub struct KernelCache<V> {
    disk: DiskCache,
    memory: MemoryCache<V>,
}

impl<V: Clone> KernelCache<V> {
    /// An empty memory cache over a disk cache with `settings`.
    pub fn new(settings: CacheSettings) -> Self {
        KernelCache {
            disk: DiskCache::new(settings),
            memory: MemoryCache::new(),
        }
    }

    /// The disk layer.
    pub fn disk(&self) -> &DiskCache {
        &self.disk
    }

    /// The memory layer.
    pub fn memory(&self) -> &MemoryCache<V> {
        &self.memory
    }

    /// The value for `request` on device `ordinal`: from memory, else `load` of a CUBIN from
    /// disk or from `compile`. Concurrent callers with one key share one build. If `load`
    /// rejects a CUBIN that came from disk, the entry is deleted and compiled afresh once.
    pub fn get_or_build(
        &self,
        ordinal: usize,
        request: &CompileRequest<'_>,
        compile: impl Fn(&CompileRequest<'_>) -> Result<Compiled>,
        load: impl Fn(&[u8]) -> Result<V>,
    ) -> Result<Cached<V>> {
        let key = request.key();
        let mut outcome = CacheOutcome::Memory;
        let mut compile_ms = 0.0;
        let mut store_error = None;
        let (value, _) = self.memory.get_or_try_insert(ordinal, key, || {
            let fetched = self.disk.fetch_or_compile(request, &compile)?;
            let loaded = match (load(&fetched.cubin), fetched.outcome) {
                (Ok(v), _) => Ok((v, fetched)),
                (Err(_), CacheOutcome::Disk) => {
                    self.disk.remove(&key);
                    let fresh = self.disk.fetch_or_compile(request, &compile)?;
                    load(&fresh.cubin).map(|v| (v, fresh))
                }
                (Err(e), _) => Err(e),
            };
            let (v, fetched) = loaded?;
            outcome = fetched.outcome;
            compile_ms = fetched.compile_ms;
            store_error = fetched.store_error;
            Ok(v)
        })?;
        Ok(Cached {
            value,
            outcome,
            compile_ms,
            store_error,
        })
    }
}
