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

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

use sha2::{Digest, Sha256};

use super::nvrtc::{self, Arch, Compiled};

mod disk;
mod memory;

use crate::Result;
pub use disk::{DiskCache, DiskEntry, Fetched};
pub use memory::MemoryCache;

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
