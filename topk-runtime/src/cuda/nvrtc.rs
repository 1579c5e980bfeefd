//! NVRTC: CUDA C++ source to a CUBIN for one exact GPU architecture.
//!
//! cudarc's safe NVRTC API stops at PTX; loading PTX would make the driver JIT it again on every
//! process start. We take the CUBIN through `nvrtcGetCUBIN` instead, so a cached entry loads with
//! no further compilation. The raw program handle lives in `Program`, which destroys it on
//! every path, including errors.
//!
//! NVRTC docs: <https://docs.nvidia.com/cuda/nvrtc/index.html>

use std::ffi::{c_char, CString};
use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;
use std::time::Instant;

use cudarc::nvrtc::{result, sys};

use crate::{Error, Result};

/// What to do when libnvrtc cannot be loaded.
const NVRTC_MISSING: &str = "libnvrtc not found: install the CUDA toolkit or \
    `pip install nvidia-cuda-nvrtc==13.0.88` and add its nvidia/cu13/lib folder to LD_LIBRARY_PATH";

/// A real GPU architecture to compile for, such as `sm_90a` (compute capability 9.0 with its
/// architecture-specific features).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Arch {
    /// Compute capability major version (9 for Hopper).
    pub major: u32,
    /// Compute capability minor version, one digit.
    pub minor: u32,
    /// The `a` suffix: code uses features of this exact architecture and runs nowhere else.
    pub arch_specific: bool,
}

impl Arch {
    /// The architecture to compile for on a device of compute capability `major.minor`: the
    /// architecture-specific variant (`sm_90a`, `sm_100a`) where one exists for that generation's
    /// flagship, else the plain one (`sm_80`, `sm_89`).
    pub fn from_cc(major: u32, minor: u32) -> Result<Arch> {
        if major == 0 || minor > 9 {
            return Err(Error::Input(format!(
                "compute capability {major}.{minor} is not valid: expected a major version >= 1 \
                 and a one-digit minor version"
            )));
        }
        let arch_specific = matches!((major, minor), (9, 0) | (10, 0));
        Ok(Arch {
            major,
            minor,
            arch_specific,
        })
    }

    /// The number NVRTC lists in its supported architectures (`90` for sm_90 and sm_90a).
    pub fn number(&self) -> u32 {
        self.major * 10 + self.minor
    }

    /// The NVRTC option selecting this architecture, e.g. `--gpu-architecture=sm_90a`.
    pub fn nvrtc_option(&self) -> String {
        format!("--gpu-architecture={self}")
    }

    /// The NVRTC option selecting this architecture's virtual one, e.g.
    /// `--gpu-architecture=compute_90a`: NVRTC then stops at PTX.
    pub fn virtual_nvrtc_option(&self) -> String {
        let suffix = if self.arch_specific { "a" } else { "" };
        format!(
            "--gpu-architecture=compute_{}{}{suffix}",
            self.major, self.minor
        )
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let suffix = if self.arch_specific { "a" } else { "" };
        write!(f, "sm_{}{}{suffix}", self.major, self.minor)
    }
}

impl FromStr for Arch {
    type Err = Error;

    /// Parses `sm_<major><minor>[a]`: the last digit is the minor version (`sm_120a` is 12.0).
    fn from_str(text: &str) -> Result<Arch> {
        let bad = || {
            Error::Input(format!(
                "`{text}` is not a GPU architecture: expected sm_<major><minor>[a], \
                 e.g. sm_90a or sm_80"
            ))
        };
        let digits = text.strip_prefix("sm_").ok_or_else(bad)?;
        let (digits, arch_specific) = match digits.strip_suffix('a') {
            Some(rest) => (rest, true),
            None => (digits, false),
        };
        if digits.len() < 2 || digits.len() > 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let (major, minor) = digits.split_at(digits.len() - 1);
        let major: u32 = major.parse().map_err(|_| bad())?;
        let minor: u32 = minor.parse().map_err(|_| bad())?;
        if major == 0 {
            return Err(bad());
        }
        Ok(Arch {
            major,
            minor,
            arch_specific,
        })
    }
}

/// The result of one NVRTC compilation.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The CUBIN (an ELF image) for the requested architecture.
    pub cubin: Vec<u8>,
    /// The intermediate PTX, when NVRTC kept it.
    pub ptx: Option<String>,
    /// The compiler log (warnings); empty when NVRTC had nothing to say.
    pub log: String,
    /// Wall time of the compilation in milliseconds.
    pub millis: f64,
}

/// Checks that libnvrtc can be loaded, so that no later NVRTC call panics inside cudarc.
pub fn nvrtc_available() -> Result<()> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: `is_culib_present` only tries to dlopen the candidate library names and drops the
    // handles again; no NVRTC symbol is resolved or called.
    let present = *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() });
    if present {
        Ok(())
    } else {
        Err(Error::Cuda(NVRTC_MISSING.to_string()))
    }
}

/// The NVRTC version as `(major, minor)`, e.g. `(13, 0)`.
///
/// Wraps [nvrtcVersion](https://docs.nvidia.com/cuda/nvrtc/index.html) (query functions).
pub fn nvrtc_version() -> Result<(i32, i32)> {
    static VERSION: OnceLock<std::result::Result<(i32, i32), String>> = OnceLock::new();
    nvrtc_available()?;
    VERSION
        .get_or_init(|| {
            let (mut major, mut minor) = (0, 0);
            // SAFETY: libnvrtc is loaded (checked above); both pointers are valid for a write.
            unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
                .result()
                .map(|()| (major, minor))
                .map_err(|e| format!("nvrtcVersion failed: {e}"))
        })
        .clone()
        .map_err(Error::Cuda)
}

/// The architecture numbers this NVRTC can generate code for (e.g. `[75, 80, ..., 121]`).
///
/// Wraps [nvrtcGetSupportedArchs](https://docs.nvidia.com/cuda/nvrtc/index.html) (query functions).
pub fn supported_archs() -> Result<Vec<u32>> {
    static ARCHS: OnceLock<std::result::Result<Vec<u32>, String>> = OnceLock::new();
    nvrtc_available()?;
    ARCHS
        .get_or_init(|| {
            let mut count = 0;
            // SAFETY: libnvrtc is loaded; `count` is valid for a write.
            unsafe { sys::nvrtcGetNumSupportedArchs(&mut count) }
                .result()
                .map_err(|e| format!("nvrtcGetNumSupportedArchs failed: {e}"))?;
            let mut archs = vec![0; count.max(0) as usize];
            // SAFETY: `archs` holds exactly the `count` ints NVRTC writes.
            unsafe { sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }
                .result()
                .map_err(|e| format!("nvrtcGetSupportedArchs failed: {e}"))?;
            Ok(archs.into_iter().map(|a| a.max(0) as u32).collect())
        })
        .clone()
        .map_err(Error::Cuda)
}

/// Fails with a clear message when this NVRTC cannot target `arch`.
pub fn check_arch_supported(arch: &Arch) -> Result<()> {
    let archs = supported_archs()?;
    if archs.contains(&arch.number()) {
        return Ok(());
    }
    let (major, minor) = nvrtc_version()?;
    let listed: Vec<String> = archs.iter().map(|a| format!("sm_{a}")).collect();
    Err(Error::Cuda(format!(
        "NVRTC {major}.{minor} cannot generate code for {arch} (it supports {}): install an NVRTC \
         release that knows this GPU",
        listed.join(", ")
    )))
}

/// The canonical NVRTC options for `arch`; they are part of the cache key, so their order is
/// fixed. `-O3` and `--use_fast_math=false` are deliberately absent: NVRTC 13 rejects them, and
/// device code is optimized by default.
pub fn compile_options(arch: &Arch) -> Vec<String> {
    vec![
        arch.nvrtc_option(),
        "-std=c++17".to_string(),
        "-lineinfo".to_string(),
    ]
}

/// Compiles `source` to a CUBIN for `arch` with [`compile_options`]. `entry_hint` names the
/// program in compiler messages. A compile error returns [`Error::Compile`] with the full log.
pub fn compile(source: &str, entry_hint: &str, arch: &Arch) -> Result<Compiled> {
    compile_with_options(source, entry_hint, arch, &compile_options(arch))
}

/// Compiles `source` with exactly `options` (which must select `arch`).
pub(crate) fn compile_with_options(
    source: &str,
    entry_hint: &str,
    arch: &Arch,
    options: &[String],
) -> Result<Compiled> {
    let started = Instant::now();
    let (program, log) = run_nvrtc(source, entry_hint, arch, options)?;
    let cubin = program.cubin()?;
    let ptx = program.ptx();
    let millis = started.elapsed().as_secs_f64() * 1e3;
    Ok(Compiled {
        cubin,
        ptx,
        log,
        millis,
    })
}

/// What the assembler gave one kernel: registers per thread and local-memory spill traffic
/// (bytes per thread), from ptxas' verbose report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resources {
    /// Registers per thread.
    pub registers: u32,
    /// Bytes of spill stores per thread.
    pub spill_stores: u32,
    /// Bytes of spill loads per thread.
    pub spill_loads: u32,
}

/// Compiles `source` to a CUBIN for `arch` as [`compile`] does, with the assembler's verbose
/// report, and returns the resources of its one entry. For checks that a kernel keeps its
/// registers (a spill on the row stream costs bandwidth-bound kernels their speed).
pub fn resources(source: &str, entry_hint: &str, arch: &Arch) -> Result<Resources> {
    let mut options = compile_options(arch);
    options.push("-Xptxas".to_string());
    options.push("-v".to_string());
    let (_, log) = run_nvrtc(source, entry_hint, arch, &options)?;
    parse_resources(&log).ok_or_else(|| {
        Error::Cuda(format!(
            "no register report for `{entry_hint}` in the assembler's log:\n{log}"
        ))
    })
}

/// The registers and spill bytes of ptxas' verbose log of one entry. A function the entry calls
/// without inlining has its own properties line; the largest spill of any is reported.
fn parse_resources(log: &str) -> Option<Resources> {
    fn number_before(line: &str, unit: &str) -> Option<u32> {
        let at = line.find(unit)?;
        line[..at].split_whitespace().last()?.parse().ok()
    }
    let registers = log
        .lines()
        .find(|l| l.contains("Used ") && l.contains(" registers"))
        .and_then(|l| number_before(l, " registers"))?;
    let mut spills: Option<(u32, u32)> = None;
    for line in log.lines().filter(|l| l.contains(" bytes spill stores")) {
        let stores = number_before(line, " bytes spill stores")?;
        let loads = number_before(line, " bytes spill loads")?;
        let (most_stores, most_loads) = spills.unwrap_or((0, 0));
        spills = Some((most_stores.max(stores), most_loads.max(loads)));
    }
    let (spill_stores, spill_loads) = spills?;
    Some(Resources {
        registers,
        spill_stores,
        spill_loads,
    })
}

/// Compiles `source` for the virtual architecture of `arch` and returns the PTX: NVRTC's
/// front end and code generator without the assembler, several times faster than [`compile`].
/// For checks that a source compiles where the assembler is exercised by other kernels of the
/// same family; a compile error returns [`Error::Compile`] with the full log.
pub fn compile_ptx(source: &str, entry_hint: &str, arch: &Arch) -> Result<String> {
    let mut options = compile_options(arch);
    options[0] = arch.virtual_nvrtc_option();
    let (program, _) = run_nvrtc(source, entry_hint, arch, &options)?;
    program
        .ptx()
        .ok_or_else(|| Error::Cuda(format!("NVRTC produced no PTX for `{entry_hint}`")))
}

/// Creates and compiles one NVRTC program; returns it (for its outputs) and its log.
fn run_nvrtc(
    source: &str,
    entry_hint: &str,
    arch: &Arch,
    options: &[String],
) -> Result<(Program, String)> {
    nvrtc_available()?;
    check_arch_supported(arch)?;
    let source_c = CString::new(source).map_err(|_| {
        Error::Input(format!(
            "kernel source for `{entry_hint}` contains a NUL byte: CUDA source must be plain text"
        ))
    })?;
    let name_c = CString::new(format!("{}.cu", file_stem(entry_hint)))
        .expect("file_stem keeps only ASCII letters, digits and '_'");
    if let Some(bad) = options.iter().find(|o| o.contains('\0')) {
        return Err(Error::Input(format!(
            "NVRTC option {bad:?} contains a NUL byte"
        )));
    }
    // The source and name outlive the compilation and the log; what callers read afterwards
    // (CUBIN, PTX) is the program's output and does not refer to them.
    let program = Program::create(&source_c, &name_c)?;
    let compiled = program.compile(options);
    let log = program.log()?;
    if let Err(code) = compiled {
        let log = if code.0 == sys::nvrtcResult::NVRTC_ERROR_COMPILATION {
            log
        } else {
            format!("{log}\n(nvrtcCompileProgram returned {code:?})")
        };
        return Err(Error::Compile {
            entry: entry_hint.to_string(),
            arch: arch.to_string(),
            log,
        });
    }
    Ok((program, log))
}

/// `entry_hint` reduced to a safe file name stem (letters, digits, `_`).
pub(crate) fn file_stem(entry_hint: &str) -> String {
    let stem: String = entry_hint
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if stem.is_empty() {
        "kernel".to_string()
    } else {
        stem
    }
}

/// An NVRTC program handle, destroyed on drop.
struct Program(sys::nvrtcProgram);

impl Program {
    /// Wraps [nvrtcCreateProgram](https://docs.nvidia.com/cuda/nvrtc/index.html#group__compilation_1g9ae65f68911d1cf0adda2af4ad8cb458).
    fn create(source: &CString, name: &CString) -> Result<Program> {
        result::create_program(source, Some(name))
            .map(Program)
            .map_err(|source| Error::Nvrtc {
                during: "nvrtcCreateProgram",
                source,
            })
    }

    /// Wraps [nvrtcCompileProgram](https://docs.nvidia.com/cuda/nvrtc/index.html#group__compilation_1g1f3136029db1413e362154b567297e8b).
    fn compile(&self, options: &[String]) -> std::result::Result<(), result::NvrtcError> {
        // SAFETY: `self.0` came from `create_program` and is destroyed only in `drop`; the options
        // were checked to contain no NUL byte, so cudarc's CString conversion cannot panic.
        unsafe { result::compile_program(self.0, options) }
    }

    /// The compiler log as text (trailing NUL removed).
    fn log(&self) -> Result<String> {
        // SAFETY: `self.0` is a live program (see `compile`).
        let raw = unsafe { result::get_program_log(self.0) }.map_err(|source| Error::Nvrtc {
            during: "nvrtcGetProgramLog",
            source,
        })?;
        Ok(text_until_nul(&raw).trim_end().to_string())
    }

    /// The CUBIN; wraps `nvrtcGetCUBINSize` and
    /// [nvrtcGetCUBIN](https://docs.nvidia.com/cuda/nvrtc/index.html) (compilation functions).
    fn cubin(&self) -> Result<Vec<u8>> {
        let mut size = 0usize;
        // SAFETY: `self.0` is a live, compiled program; `size` is valid for a write.
        unsafe { sys::nvrtcGetCUBINSize(self.0, &mut size) }
            .result()
            .map_err(|source| Error::Nvrtc {
                during: "nvrtcGetCUBINSize",
                source,
            })?;
        if size == 0 {
            return Err(Error::Cuda(
                "NVRTC produced no CUBIN: the target must be a real architecture (sm_XY), \
                 not a virtual one (compute_XY)"
                    .to_string(),
            ));
        }
        let mut cubin = vec![0u8; size];
        // SAFETY: `cubin` has exactly the `size` bytes NVRTC reported and will write.
        unsafe { sys::nvrtcGetCUBIN(self.0, cubin.as_mut_ptr().cast::<c_char>()) }
            .result()
            .map_err(|source| Error::Nvrtc {
                during: "nvrtcGetCUBIN",
                source,
            })?;
        Ok(cubin)
    }

    /// The PTX, when NVRTC kept it (it is only a debugging aid here).
    fn ptx(&self) -> Option<String> {
        // SAFETY: `self.0` is a live, compiled program.
        let raw = unsafe { result::get_ptx(self.0) }.ok()?;
        let text = text_until_nul(&raw);
        (!text.is_empty()).then_some(text)
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: `self.0` came from `create_program` and this is the only place it is destroyed.
        // A failure here cannot be acted on; the handle is gone either way.
        let _ = unsafe { result::destroy_program(self.0) };
    }
}

/// Text from a NUL-terminated C buffer, lossily decoded.
fn text_until_nul(raw: &[c_char]) -> String {
    let bytes: Vec<u8> = raw
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_assemblers_report_gives_registers_and_the_largest_spill() {
        let log = "ptxas info    : Compiling entry function 'e' for 'sm_90a'\n\
                   ptxas info    : Function properties for helper\n\
                   ptxas         .     16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n\
                   ptxas info    : Function properties for e\n\
                   ptxas         .     88 bytes stack frame, 124 bytes spill stores, 692 bytes spill loads\n\
                   ptxas info    : Used 64 registers, used 1 barriers, 88 bytes cumulative stack size\n";
        assert_eq!(
            parse_resources(log),
            Some(Resources {
                registers: 64,
                spill_stores: 124,
                spill_loads: 692
            })
        );
        assert_eq!(parse_resources("ptxas info    : Used 40 registers\n"), None);
        assert_eq!(parse_resources(""), None);
    }
}
