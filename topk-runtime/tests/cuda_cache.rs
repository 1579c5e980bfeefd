//! The CUDA layer without a GPU: architecture names, cache keys, the disk and memory caches
//! (with a stand-in compiler), real NVRTC compilation when libnvrtc is present, and clean
//! errors from device discovery.

use std::ffi::OsString;
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use topk_runtime::cuda::cache::{
    CacheOutcome, CacheSettings, CompileRequest, DiskCache, DiskEntry, KernelCache,
};
use topk_runtime::cuda::nvrtc::{self, Arch, Compiled};
use topk_runtime::cuda::Gpu;
use topk_runtime::Error;

const SOURCE: &str = "extern \"C\" __global__ void scale(float* x, int n) {\n\
    int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
    if (i < n) x[i] *= 2.0f;\n\
}\n";

fn sm90a() -> Arch {
    "sm_90a".parse().unwrap()
}

/// A request that needs no NVRTC: fixed options and version.
fn request(source: &str) -> CompileRequest<'_> {
    CompileRequest {
        source,
        entry: "scale",
        arch: sm90a(),
        options: nvrtc::compile_options(&sm90a()),
        nvrtc_version: (13, 0),
    }
}

fn settings_in(dir: &Path) -> CacheSettings {
    CacheSettings {
        dir: Some(dir.to_path_buf()),
        always_compile: false,
        dump_dir: None,
    }
}

/// A stand-in compiler: the "CUBIN" is derived from the source, and every call is counted.
fn fake_compiler(
    calls: &AtomicUsize,
) -> impl Fn(&CompileRequest<'_>) -> topk_runtime::Result<Compiled> + '_ {
    move |r: &CompileRequest<'_>| {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok(Compiled {
            cubin: fake_cubin(r.source),
            ptx: Some(format!("// ptx of {}", r.entry)),
            log: String::new(),
            millis: 1.5,
        })
    }
}

fn fake_cubin(source: &str) -> Vec<u8> {
    let mut bytes = b"\x7fELF".to_vec();
    bytes.extend(source.bytes().rev());
    bytes
}

fn nvrtc_or_skip(test: &str) -> bool {
    match nvrtc::nvrtc_available() {
        Ok(()) => true,
        Err(e) => {
            println!("skipping {test}: {e}");
            false
        }
    }
}

#[test]
fn arch_names_parse_and_print_back() {
    for (text, major, minor, specific) in [
        ("sm_90a", 9, 0, true),
        ("sm_80", 8, 0, false),
        ("sm_86", 8, 6, false),
        ("sm_100a", 10, 0, true),
        ("sm_120", 12, 0, false),
    ] {
        let arch: Arch = text.parse().unwrap();
        assert_eq!(
            (arch.major, arch.minor, arch.arch_specific),
            (major, minor, specific)
        );
        assert_eq!(arch.to_string(), text);
        assert_eq!(arch.number(), major * 10 + minor);
    }
    for bad in [
        "",
        "sm_",
        "sm_9",
        "90a",
        "sm_9x",
        "sm_09",
        "sm_1000",
        "compute_90",
        "sm_90b",
    ] {
        assert!(
            matches!(bad.parse::<Arch>(), Err(Error::Input(_))),
            "{bad:?} parsed"
        );
    }
}

#[test]
fn arch_from_cc_picks_arch_specific_targets_for_hopper_and_blackwell_only() {
    assert_eq!(Arch::from_cc(9, 0).unwrap().to_string(), "sm_90a");
    assert_eq!(Arch::from_cc(10, 0).unwrap().to_string(), "sm_100a");
    assert_eq!(Arch::from_cc(8, 0).unwrap().to_string(), "sm_80");
    assert_eq!(Arch::from_cc(8, 9).unwrap().to_string(), "sm_89");
    assert_eq!(Arch::from_cc(12, 0).unwrap().to_string(), "sm_120");
    assert_eq!(
        Arch::from_cc(9, 0).unwrap().nvrtc_option(),
        "--gpu-architecture=sm_90a"
    );
    assert!(Arch::from_cc(8, 10).is_err());
    assert!(Arch::from_cc(0, 0).is_err());
}

#[test]
fn canonical_options_never_contain_flags_nvrtc_13_rejects() {
    let options = nvrtc::compile_options(&sm90a());
    assert!(options.contains(&"--gpu-architecture=sm_90a".to_string()));
    assert!(options.contains(&"-std=c++17".to_string()));
    assert!(!options
        .iter()
        .any(|o| o.starts_with("-O") || o.contains("fast_math")));
}

#[test]
fn cache_key_changes_with_every_input_but_not_with_the_entry_name() {
    let base = request(SOURCE);
    let key = base.key();
    assert_eq!(key, request(SOURCE).key());
    assert_eq!(key.hex().len(), 64);

    let renamed = CompileRequest {
        entry: "other",
        ..base.clone()
    };
    assert_eq!(renamed.key(), key);

    let other_source = format!("{SOURCE} ");
    let variants = [
        request(&other_source),
        CompileRequest {
            options: vec!["--gpu-architecture=sm_90a".into(), "-lineinfo".into()],
            ..base.clone()
        },
        CompileRequest {
            nvrtc_version: (13, 1),
            ..base.clone()
        },
        CompileRequest {
            arch: "sm_90".parse().unwrap(),
            ..base.clone()
        },
    ];
    for variant in &variants {
        assert_ne!(variant.key(), key, "{variant:?}");
    }
    // Field boundaries matter: moving text between options must change the key.
    let split = |a: &str, b: &str| {
        CompileRequest {
            options: vec![a.into(), b.into()],
            ..base.clone()
        }
        .key()
    };
    assert_ne!(split("-ab", "c"), split("-a", "bc"));
}

#[test]
fn disk_cache_stores_a_compiled_cubin_and_serves_it_without_compiling() {
    let dir = tempfile::tempdir().unwrap();
    let disk = DiskCache::new(settings_in(dir.path()));
    let calls = AtomicUsize::new(0);
    let req = request(SOURCE);

    let first = disk.fetch_or_compile(&req, fake_compiler(&calls)).unwrap();
    assert_eq!(first.outcome, CacheOutcome::Compiled);
    assert_eq!(first.compile_ms, 1.5);
    assert!(first.store_error.is_none(), "{:?}", first.store_error);
    assert!(disk.entry_path(&req.key()).unwrap().is_file());

    let second = disk.fetch_or_compile(&req, fake_compiler(&calls)).unwrap();
    assert_eq!(second.outcome, CacheOutcome::Disk);
    assert_eq!(second.cubin, first.cubin);
    assert_eq!(second.compile_ms, 0.0);
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // Only the entry remains: the temporary file was renamed into place.
    let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1);
}

#[test]
fn corrupt_or_truncated_entries_are_deleted_and_recompiled_never_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let disk = DiskCache::new(settings_in(dir.path()));
    let calls = AtomicUsize::new(0);
    let req = request(SOURCE);
    let key = req.key();
    let path = disk.entry_path(&key).unwrap();
    let good = disk
        .fetch_or_compile(&req, fake_compiler(&calls))
        .unwrap()
        .cubin;
    let pristine = fs::read(&path).unwrap();

    type Damage = fn(&mut Vec<u8>);
    let damage: [(&str, Damage); 5] = [
        ("flipped payload byte", |b| *b.last_mut().unwrap() ^= 0x40),
        ("truncated payload", |b| b.truncate(b.len() - 3)),
        ("truncated header", |b| b.truncate(20)),
        ("bad magic", |b| b[0] = b'X'),
        ("empty file", |b| b.clear()),
    ];
    for (what, corrupt) in damage {
        let mut bytes = pristine.clone();
        corrupt(&mut bytes);
        fs::write(&path, &bytes).unwrap();
        assert!(
            matches!(disk.read(&key), DiskEntry::Corrupt(_)),
            "{what} was not detected"
        );
        assert!(!path.exists(), "{what}: corrupt entry was kept");

        fs::write(&path, &bytes).unwrap();
        let before = calls.load(Ordering::SeqCst);
        let fetched = disk.fetch_or_compile(&req, fake_compiler(&calls)).unwrap();
        assert_eq!(fetched.outcome, CacheOutcome::Compiled, "{what}");
        assert_eq!(fetched.cubin, good, "{what}");
        assert_eq!(calls.load(Ordering::SeqCst), before + 1, "{what}");
        assert_eq!(disk.read(&key), DiskEntry::Hit(good.clone()), "{what}");
    }
}

#[test]
fn an_entry_copied_under_another_key_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let disk = DiskCache::new(settings_in(dir.path()));
    let a = request(SOURCE);
    let other_source = format!("{SOURCE}// b\n");
    let b = request(&other_source);
    let a_path = disk.write(&a.key(), b"cubin of a").unwrap();
    fs::copy(&a_path, disk.entry_path(&b.key()).unwrap()).unwrap();
    assert!(matches!(disk.read(&b.key()), DiskEntry::Corrupt(_)));
    assert_eq!(disk.read(&a.key()), DiskEntry::Hit(b"cubin of a".to_vec()));
}

#[test]
fn always_compile_ignores_disk_entries_but_still_writes_them() {
    let dir = tempfile::tempdir().unwrap();
    let req = request(SOURCE);
    let calls = AtomicUsize::new(0);
    let stale = DiskCache::new(settings_in(dir.path()));
    stale.write(&req.key(), b"old bytes").unwrap();

    let always = DiskCache::new(CacheSettings {
        always_compile: true,
        ..settings_in(dir.path())
    });
    for round in 1..=2 {
        let fetched = always
            .fetch_or_compile(&req, fake_compiler(&calls))
            .unwrap();
        assert_eq!(fetched.outcome, CacheOutcome::Compiled);
        assert_eq!(calls.load(Ordering::SeqCst), round);
    }
    assert_eq!(stale.read(&req.key()), DiskEntry::Hit(fake_cubin(SOURCE)));
}

#[test]
fn without_a_cache_dir_every_process_compiles_and_nothing_is_stored() {
    let disk = DiskCache::new(CacheSettings::default());
    let calls = AtomicUsize::new(0);
    let req = request(SOURCE);
    for _ in 0..2 {
        let fetched = disk.fetch_or_compile(&req, fake_compiler(&calls)).unwrap();
        assert_eq!(fetched.outcome, CacheOutcome::Compiled);
        assert!(fetched.store_error.is_none());
    }
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(disk.read(&req.key()), DiskEntry::Missing);
}

#[test]
fn an_unwritable_cache_dir_is_reported_but_the_kernel_is_still_returned() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("a-file");
    fs::write(&blocker, b"not a directory").unwrap();
    let disk = DiskCache::new(settings_in(&blocker.join("cache")));
    let calls = AtomicUsize::new(0);
    let fetched = disk
        .fetch_or_compile(&request(SOURCE), fake_compiler(&calls))
        .unwrap();
    assert_eq!(fetched.cubin, fake_cubin(SOURCE));
    assert!(fetched.store_error.unwrap().contains("TOPK_CACHE_DIR"));
}

#[test]
fn concurrent_requests_for_one_kernel_compile_it_once() {
    const THREADS: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    let cache: Arc<KernelCache<Vec<u8>>> = Arc::new(KernelCache::new(settings_in(dir.path())));
    let calls = Arc::new(AtomicUsize::new(0));
    let loads = Arc::new(AtomicUsize::new(0));
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let (cache, calls, loads, barrier) =
                (cache.clone(), calls.clone(), loads.clone(), barrier.clone());
            thread::spawn(move || {
                let req = request(SOURCE);
                barrier.wait();
                cache
                    .get_or_build(
                        0,
                        &req,
                        |r| {
                            // Long enough that every thread arrives while the build runs.
                            thread::sleep(Duration::from_millis(100));
                            fake_compiler(&calls)(r)
                        },
                        |cubin| {
                            loads.fetch_add(1, Ordering::SeqCst);
                            Ok(cubin.to_vec())
                        },
                    )
                    .unwrap()
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(loads.load(Ordering::SeqCst), 1);
    let compiled = results
        .iter()
        .filter(|r| r.outcome == CacheOutcome::Compiled)
        .count();
    assert_eq!(compiled, 1);
    assert!(results.iter().all(|r| r.value == fake_cubin(SOURCE)
        && (r.outcome == CacheOutcome::Compiled || r.outcome == CacheOutcome::Memory)));
    assert_eq!(cache.memory().len(), 1);
}

#[test]
fn memory_cache_is_per_device_and_falls_back_to_disk_for_a_new_device() {
    let dir = tempfile::tempdir().unwrap();
    let cache: KernelCache<Vec<u8>> = KernelCache::new(settings_in(dir.path()));
    let calls = AtomicUsize::new(0);
    let req = request(SOURCE);
    let load = |c: &[u8]| Ok(c.to_vec());
    let outcomes: Vec<_> = [0, 0, 1, 1]
        .into_iter()
        .map(|ordinal| {
            cache
                .get_or_build(ordinal, &req, fake_compiler(&calls), load)
                .unwrap()
                .outcome
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            CacheOutcome::Compiled,
            CacheOutcome::Memory,
            CacheOutcome::Disk,
            CacheOutcome::Memory
        ]
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn a_failed_build_is_not_cached_so_the_next_call_retries() {
    let cache: KernelCache<Vec<u8>> = KernelCache::new(CacheSettings::default());
    let req = request(SOURCE);
    let attempts = AtomicUsize::new(0);
    let flaky = |r: &CompileRequest<'_>| {
        if attempts.fetch_add(1, Ordering::SeqCst) == 0 {
            Err(Error::Compile {
                entry: r.entry.into(),
                arch: r.arch.to_string(),
                log: "error: transient".into(),
            })
        } else {
            Ok(Compiled {
                cubin: fake_cubin(r.source),
                ptx: None,
                log: String::new(),
                millis: 0.1,
            })
        }
    };
    let load = |c: &[u8]| Ok(c.to_vec());
    assert!(cache.get_or_build(0, &req, flaky, load).is_err());
    assert!(cache.memory().is_empty());
    let second = cache.get_or_build(0, &req, flaky, load).unwrap();
    assert_eq!(second.outcome, CacheOutcome::Compiled);
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
}

#[test]
fn a_disk_cubin_the_loader_rejects_is_replaced_by_a_fresh_compile() {
    let dir = tempfile::tempdir().unwrap();
    let cache: KernelCache<Vec<u8>> = KernelCache::new(settings_in(dir.path()));
    let req = request(SOURCE);
    // Checksum-valid, but not loadable (as after a driver change).
    cache.disk().write(&req.key(), b"unloadable").unwrap();
    let calls = AtomicUsize::new(0);
    let picky = |c: &[u8]| {
        if c == b"unloadable" {
            Err(Error::Cuda("CUDA_ERROR_INVALID_IMAGE".into()))
        } else {
            Ok(c.to_vec())
        }
    };
    let got = cache
        .get_or_build(0, &req, fake_compiler(&calls), picky)
        .unwrap();
    assert_eq!(got.outcome, CacheOutcome::Compiled);
    assert_eq!(got.value, fake_cubin(SOURCE));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        cache.disk().read(&req.key()),
        DiskEntry::Hit(fake_cubin(SOURCE))
    );
}

#[test]
fn dump_dir_receives_source_log_ptx_and_cubin_of_each_compile_and_the_log_of_failures() {
    let dir = tempfile::tempdir().unwrap();
    let dump_dir = dir.path().join("dumps");
    let disk = DiskCache::new(CacheSettings {
        dir: None,
        always_compile: false,
        dump_dir: Some(dump_dir.clone()),
    });
    let calls = AtomicUsize::new(0);
    disk.fetch_or_compile(&request(SOURCE), fake_compiler(&calls))
        .unwrap();
    let files = |ext: &str| -> Vec<Vec<u8>> {
        fs::read_dir(&dump_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .map(|p| fs::read(p).unwrap())
            .collect()
    };
    assert_eq!(files("cu"), [SOURCE.as_bytes().to_vec()]);
    assert_eq!(files("cubin"), [fake_cubin(SOURCE)]);
    assert_eq!(files("ptx").len(), 1);
    assert_eq!(files("log").len(), 1);

    let broken = "extern \"C\" __global__ void scale( {";
    let failing = |r: &CompileRequest<'_>| -> topk_runtime::Result<Compiled> {
        Err(Error::Compile {
            entry: r.entry.into(),
            arch: r.arch.to_string(),
            log: "scale.cu(1): error: expected a `)`".into(),
        })
    };
    assert!(disk.fetch_or_compile(&request(broken), failing).is_err());
    assert_eq!(files("cu").len(), 2);
    assert!(files("log")
        .iter()
        .any(|log| String::from_utf8_lossy(log).contains("expected a `)`")));
}

#[test]
fn settings_follow_the_environment_variables() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        CacheSettings::from_lookup(move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        })
    };
    let s = env(&[
        ("TOPK_CACHE_DIR", "/x/cache"),
        ("XDG_CACHE_HOME", "/xdg"),
        ("HOME", "/home/u"),
        ("TOPK_ALWAYS_COMPILE", "1"),
        ("TOPK_DUMP_DIR", "/x/dump"),
    ]);
    assert_eq!(s.dir.as_deref(), Some(Path::new("/x/cache")));
    assert!(s.always_compile);
    assert_eq!(s.dump_dir.as_deref(), Some(Path::new("/x/dump")));

    let s = env(&[("XDG_CACHE_HOME", "/xdg"), ("HOME", "/home/u")]);
    assert_eq!(s.dir.as_deref(), Some(Path::new("/xdg/topk")));
    assert!(!s.always_compile);
    assert_eq!(s.dump_dir, None);

    let s = env(&[
        ("TOPK_CACHE_DIR", ""),
        ("HOME", "/home/u"),
        ("TOPK_ALWAYS_COMPILE", "0"),
    ]);
    assert_eq!(s.dir.as_deref(), Some(Path::new("/home/u/.cache/topk")));
    assert!(!s.always_compile);

    assert_eq!(env(&[]), CacheSettings::default());
}

#[test]
fn nvrtc_absence_is_an_error_that_says_how_to_install_it() {
    match nvrtc::nvrtc_available() {
        Ok(()) => {
            let (major, minor) = nvrtc::nvrtc_version().unwrap();
            assert!(
                major >= 11 && minor >= 0,
                "implausible NVRTC {major}.{minor}"
            );
            assert!(nvrtc::supported_archs().unwrap().contains(&80));
        }
        Err(e) => {
            let text = e.to_string();
            assert!(text.contains("libnvrtc not found") && text.contains("LD_LIBRARY_PATH"));
            assert!(nvrtc::compile(SOURCE, "scale", &sm90a()).is_err());
        }
    }
}

#[test]
fn nvrtc_compiles_a_kernel_to_an_elf_cubin() {
    if !nvrtc_or_skip("nvrtc_compiles_a_kernel_to_an_elf_cubin") {
        return;
    }
    for arch in ["sm_90a", "sm_80"] {
        let arch: Arch = arch.parse().unwrap();
        let compiled = nvrtc::compile(SOURCE, "scale", &arch).unwrap();
        assert_eq!(&compiled.cubin[..4], b"\x7fELF", "{arch}");
        assert!(compiled.millis > 0.0);
        if let Some(ptx) = &compiled.ptx {
            assert!(ptx.contains(".entry scale"), "{ptx}");
        }
    }
}

#[test]
fn nvrtc_syntax_errors_return_the_compiler_log() {
    if !nvrtc_or_skip("nvrtc_syntax_errors_return_the_compiler_log") {
        return;
    }
    let broken = "extern \"C\" __global__ void broken(float* x) { x[0] = ; }";
    match nvrtc::compile(broken, "broken", &sm90a()) {
        Err(e @ Error::Compile { .. }) => {
            let Error::Compile { entry, arch, log } = &e else {
                unreachable!()
            };
            assert_eq!((entry.as_str(), arch.as_str()), ("broken", "sm_90a"));
            assert!(log.contains("broken.cu") && log.contains("error"), "{log}");
            assert!(e.to_string().contains(log.as_str()));
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}

#[test]
fn nvrtc_rejects_a_source_with_a_nul_byte_without_panicking() {
    if !nvrtc_or_skip("nvrtc_rejects_a_source_with_a_nul_byte_without_panicking") {
        return;
    }
    let err = nvrtc::compile("__global__ void k() {}\0", "k", &sm90a()).unwrap_err();
    assert!(matches!(err, Error::Input(_)), "{err}");
}

#[test]
fn nvrtc_refuses_an_architecture_it_cannot_target() {
    if !nvrtc_or_skip("nvrtc_refuses_an_architecture_it_cannot_target") {
        return;
    }
    let ancient: Arch = "sm_35".parse().unwrap();
    let err = nvrtc::compile(SOURCE, "scale", &ancient).unwrap_err();
    assert!(
        err.to_string().contains("cannot generate code for sm_35"),
        "{err}"
    );
}

#[test]
fn real_compiles_go_through_the_disk_cache() {
    if !nvrtc_or_skip("real_compiles_go_through_the_disk_cache") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let disk = DiskCache::new(settings_in(dir.path()));
    let req = CompileRequest::new(SOURCE, "scale", sm90a()).unwrap();
    assert_eq!(req.nvrtc_version, nvrtc::nvrtc_version().unwrap());
    let first = disk.fetch_or_compile(&req, |r| r.compile()).unwrap();
    let second = disk.fetch_or_compile(&req, |r| r.compile()).unwrap();
    assert_eq!(
        (first.outcome, second.outcome),
        (CacheOutcome::Compiled, CacheOutcome::Disk)
    );
    assert_eq!(first.cubin, second.cubin);
    assert_eq!(&second.cubin[..4], b"\x7fELF");
}

#[test]
fn opening_a_device_fails_cleanly_when_none_is_usable() {
    match Gpu::open(0) {
        Ok(gpu) => {
            assert!(Gpu::available());
            assert!(gpu.props().cc_major >= 8);
        }
        Err(e) => {
            assert!(!Gpu::available());
            assert!(matches!(e, Error::Cuda(_)), "{e}");
            println!("Gpu::open(0): {e}");
        }
    }
    let err = Gpu::open(1 << 20).unwrap_err();
    assert!(matches!(err, Error::Cuda(_)), "{err}");
}

#[test]
fn a_cache_directory_that_cannot_be_made_is_an_io_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the cache directory should be: creating the directory fails.
    let blocker = dir.path().join("not-a-directory");
    fs::write(&blocker, b"file").unwrap();
    let disk = DiskCache::new(settings_in(&blocker.join("topk")));
    let err = disk.write(&request(SOURCE).key(), b"cubin").unwrap_err();
    match &err {
        Error::CacheIo { during, path, .. } => {
            assert_eq!(*during, "create the directory");
            assert!(path.starts_with(&blocker), "{}", path.display());
        }
        other => panic!("expected Error::CacheIo, got {other:?}"),
    }
    let source = std::error::Error::source(&err).expect("the io error is the source");
    assert!(source.downcast_ref::<std::io::Error>().is_some());
    let text = err.to_string();
    assert!(text.contains("TOPK_CACHE_DIR"), "{text}");
    assert!(text.contains(&blocker.display().to_string()), "{text}");
}
