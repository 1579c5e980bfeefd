//! Hashes of the CUBIN of every generated kernel, for proving that a change to the generator left
//! the compiled code as it was: `scripts/cubin-hashes.sh` runs this (ignored) test before and
//! after a change and compares the lists.
//!
//! Each kernel is compiled with the runtime's NVRTC options for `sm_90a`. A line of the list is
//! `label code-hash file-hash`: the file hash covers the whole CUBIN; the code hash covers every
//! ELF section but the debug ones (`-lineinfo` maps instructions to source lines, so moving a
//! line of a fragment changes the line table and the file hash, never the code hash).

use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use topk_runtime::cuda::nvrtc::{compile, nvrtc_available, Arch};

/// Where the list goes.
const OUT_VAR: &str = "TOPK_CUBIN_HASHES";
/// When set, only kernels whose label contains it (for iterating on one family).
const ONLY_VAR: &str = "TOPK_CUBIN_HASHES_ONLY";
/// When set, a folder that gets each kernel's source and CUBIN (for disassembling a difference).
const DUMP_VAR: &str = "TOPK_CUBIN_HASHES_DUMP";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn sha256(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes)[..16])
}

fn u16_at(b: &[u8], at: usize) -> usize {
    u16::from_le_bytes([b[at], b[at + 1]]) as usize
}
fn u32_at(b: &[u8], at: usize) -> usize {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize
}
fn u64_at(b: &[u8], at: usize) -> usize {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize
}

/// Hash of the CUBIN's ELF identification, machine and flags and of every section (name,
/// header, bytes) except those whose name contains `debug` (line tables and their relocations).
/// File offsets are left out: a longer line table moves every section after it.
fn code_hash(cubin: &[u8]) -> String {
    assert!(cubin.starts_with(b"\x7fELF\x02\x01"), "not a 64-bit LE ELF");
    let shoff = u64_at(cubin, 0x28);
    let shentsize = u16_at(cubin, 0x3a);
    let shnum = u16_at(cubin, 0x3c);
    let shstrndx = u16_at(cubin, 0x3e);
    let header = |i: usize| &cubin[shoff + i * shentsize..shoff + (i + 1) * shentsize];
    let strtab_off = u64_at(header(shstrndx), 0x18);
    let name = |h: &[u8]| {
        let start = strtab_off + u32_at(h, 0);
        let end = start + cubin[start..].iter().position(|&c| c == 0).unwrap();
        String::from_utf8_lossy(&cubin[start..end]).into_owned()
    };
    let mut h = Sha256::new();
    h.update(&cubin[..0x18]);
    h.update(&cubin[0x30..0x34]);
    for i in 0..shnum {
        let sh = header(i);
        let section = name(sh);
        if section.contains("debug") {
            continue;
        }
        let (kind, offset, size) = (u32_at(sh, 4), u64_at(sh, 0x18), u64_at(sh, 0x20));
        h.update(section.as_bytes());
        // Type, flags and address; then size, link, info, alignment and entry size.
        h.update(&sh[4..0x18]);
        h.update(&sh[0x20..]);
        // SHT_NOBITS (.nv.shared.*) has a size but no bytes in the file.
        if kind != 8 {
            h.update(&cubin[offset..offset + size]);
        }
    }
    hex(&h.finalize()[..16])
}

/// (label, source, entry) of every kernel the generator emits for the presets, the planner's
/// policies and the helper kernels.
fn kernels() -> Vec<(String, String, String)> {
    let mut jobs = Vec::new();
    let mut push = |label: String, source: String, entry: &str| {
        jobs.push((label, source, entry.to_owned()));
    };
    let mut specs: Vec<topk_dsl::Spec> = topk_dsl::PRESETS.iter().map(|p| p.spec).collect();
    for run in [2u8, 4, 8] {
        for map in ["persistent", "kvsplit(4)"] {
            specs.push(topk_dsl::Spec::parse(&format!("map={map},view=run({run})")).unwrap());
        }
    }
    for text in [
        "map=cluster(16),propose=exact,threads=1024",
        "map=cluster(16),propose=sampled(stride=128,rho=1.75,rescue=2.5),threads=1024",
        "map=cluster(16),propose=sampled(stride=128,rho=2,rescue=2.5),threads=1024,view=run(2)",
        "prefetch=2,view=run(2)",
        "propose=sampled(stride=128,rho=1.75,rescue=2.5),stagger=16,tail=2@264",
    ] {
        specs.push(topk_dsl::Spec::parse(text).unwrap());
    }
    // Every block size, coarse width and view of the sampled mappings (their shared-memory
    // layouts and launch bounds differ).
    for map in ["persistent", "kvsplit(2)", "cluster(8)"] {
        for threads in [128, 256, 384, 512, 1024] {
            for coarse in [8, 12] {
                for view in ["", ",view=run(2)"] {
                    let text = format!(
                        "k=2048,map={map},propose=sampled(stride=128,rho=1.75,rescue=2.5),\
                         coarse={coarse},threads={threads}{view}"
                    );
                    let spec = topk_dsl::Spec::parse(&text).unwrap();
                    if spec.validate().is_ok() {
                        specs.push(spec);
                    }
                }
            }
        }
    }
    for k in [2048u32, 512] {
        for width in [32_768u32, 131_072, 1 << 20] {
            specs.extend(topk_runtime::autotune::candidates(k, width));
        }
    }
    // The call interface on every family (docs/interface.md).
    specs.extend(topk_dsl::call_interface_samples());
    let mut seen = std::collections::HashSet::new();
    for spec in specs {
        if !seen.insert(spec) {
            continue;
        }
        let kernel = topk_codegen::generate(&spec).unwrap();
        push(format!("select:{spec}"), kernel.source, &kernel.entry);
        if let Ok(sharded) = topk_codegen::sharded::generate_sharded(&spec) {
            push(format!("sharded:{spec}"), sharded.source, &sharded.entry);
        }
    }
    for spec in [
        topk_runtime::policy::context_parallel_spec(2048),
        topk_runtime::policy::persistent_spec(2048),
        topk_dsl::Spec::parse("k=512,propose=exact").unwrap(),
    ] {
        let kernel = topk_codegen::probe::generate_probed(&spec).unwrap();
        push(format!("probe:{spec}"), kernel.source, &kernel.entry);
    }
    for bits in 8..=12u8 {
        let source = topk_codegen::endpoint_probe::endpoint_probe_source(bits).unwrap();
        let entry = topk_codegen::endpoint_probe::ENDPOINT_PROBE_ENTRY;
        push(format!("endpoint-probe:coarse={bits}"), source, entry);
    }
    push(
        "verifier".into(),
        topk_codegen::verifier::verifier_source().into(),
        topk_codegen::verifier::VERIFIER_ENTRY,
    );
    push(
        "generator".into(),
        topk_codegen::generator::generator_source(),
        topk_codegen::generator::GENERATOR_ENTRY,
    );
    jobs
}

#[test]
#[ignore = "run by scripts/cubin-hashes.sh (compiles every kernel: minutes)"]
fn cubin_hashes_of_every_generated_kernel() {
    let out = std::env::var(OUT_VAR).unwrap_or_else(|_| panic!("set {OUT_VAR} to the list's path"));
    nvrtc_available().expect("libnvrtc: export LD_LIBRARY_PATH=$(scripts/install-nvrtc.sh)");
    let arch: Arch = "sm_90a".parse().unwrap();
    let only = std::env::var(ONLY_VAR).unwrap_or_default();
    let jobs: Vec<_> = kernels()
        .into_iter()
        .filter(|(label, ..)| label.contains(&only))
        .collect();
    let next = AtomicUsize::new(0);
    let lines = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((label, source, entry)) = jobs.get(i) else {
                    break;
                };
                let cubin = compile(source, entry, &arch)
                    .unwrap_or_else(|e| panic!("{label}: {e}"))
                    .cubin;
                let line = format!("{label} {} {}", code_hash(&cubin), sha256(&cubin));
                if let Some(dir) = std::env::var_os(DUMP_VAR) {
                    let stem: String = label
                        .chars()
                        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                        .collect();
                    let path = std::path::Path::new(&dir).join(stem);
                    std::fs::write(path.with_extension("cu"), source).unwrap();
                    std::fs::write(path.with_extension("cubin"), &cubin).unwrap();
                }
                lines.lock().unwrap().push(line);
            });
        }
    });
    let mut lines = lines.into_inner().unwrap();
    lines.sort();
    let (major, minor) = topk_runtime::cuda::nvrtc::nvrtc_version().unwrap();
    let header = format!("# sm_90a NVRTC {major}.{minor}: label code-hash file-hash\n");
    std::fs::write(&out, header + &lines.join("\n") + "\n").unwrap();
    eprintln!("{} kernels hashed into {out}", lines.len());
}
