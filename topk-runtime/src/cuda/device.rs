//! One CUDA device: its context, default stream, properties and loaded kernels.
//!
//! cudarc is built with `dynamic-loading`, so libcuda and libnvrtc are opened on first use and
//! cudarc panics if they are missing. Every entry point here checks for the libraries first
//! and returns an [`Error`] that says what to install instead.
//!
//! Driver API docs: <https://docs.nvidia.com/cuda/cuda-driver-api/index.html>

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::result::{self as driver, DriverError};
use cudarc::driver::sys::{self, CUdevice_attribute, CUfunction_attribute};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::Ptx;

use super::cache::{CacheOutcome, CacheSettings, CompileRequest, KernelCache};
use super::nvrtc::{self, Arch};
use crate::policy::DeviceFacts;
use crate::{Error, Result};

/// Oldest compute capability the kernels are written for (Ampere).
const MIN_CC: (u32, u32) = (8, 0);

/// Dynamic shared memory a kernel may use without opting in.
const DEFAULT_DYNAMIC_SMEM_LIMIT: u32 = 48 * 1024;

/// What the planner needs to know about a device.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeviceProps {
    /// Device ordinal as the driver counts it (after `CUDA_VISIBLE_DEVICES`).
    pub ordinal: usize,
    /// Marketing name, e.g. "NVIDIA H200".
    pub name: String,
    /// Compute capability major version.
    pub cc_major: u32,
    /// Compute capability minor version.
    pub cc_minor: u32,
    /// Streaming multiprocessors.
    pub sms: u32,
    /// Largest block size.
    pub max_threads_per_block: u32,
    /// Largest shared memory per block after opting in (static + dynamic), in bytes.
    pub smem_per_block_optin: u32,
    /// Shared memory per SM, in bytes.
    pub smem_per_sm: u32,
    /// L2 cache size, in bytes.
    pub l2_bytes: u32,
    /// Driver version as CUDA encodes it (13000 for 13.0).
    pub driver_version: i32,
    /// Device memory, in bytes.
    pub total_mem: usize,
}

/// A kernel ready to launch.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The kernel entry point.
    pub func: CudaFunction,
    /// The module that owns it (kept alive by `func` too).
    pub module: Arc<CudaModule>,
    /// Where the CUBIN came from.
    pub outcome: CacheOutcome,
    /// Milliseconds spent in NVRTC for this call (0 unless `outcome` is `Compiled`).
    pub compile_ms: f64,
}

/// A handle to one CUDA device; cheap to clone, shared across threads.
///
/// All of its work runs on one created stream, [`Gpu::stream`], which can be captured into CUDA
/// graphs. cudarc's cross-stream event tracking is turned off for the context (it would join
/// events recorded outside a capture into it); callers who use buffers on other streams order
/// those streams themselves, e.g. with [`Plan::launch_on_stream`](super::Plan::launch_on_stream).
#[derive(Clone)]
pub struct Gpu {
    inner: Arc<GpuInner>,
}

struct GpuInner {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    props: DeviceProps,
    arch: Arch,
    kernels: KernelCache<Arc<LoadedModule>>,
    /// The default map's facts, read on first use ([`Gpu::facts`]).
    facts: OnceLock<DeviceFacts>,
}

/// A module in the memory cache, with the functions fetched from it so far.
struct LoadedModule {
    module: Arc<CudaModule>,
    /// Entry name -> function and the dynamic shared memory limit already set on it. The limit
    /// only ever grows, so a plan never sees it lowered under it by another plan.
    functions: Mutex<HashMap<String, (CudaFunction, u32)>>,
}

impl fmt::Debug for Gpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gpu")
            .field("props", &self.inner.props)
            .field("arch", &self.inner.arch)
            .finish_non_exhaustive()
    }
}

impl Gpu {
    /// Whether [`Gpu::open`]`(0)` can be expected to succeed: driver and NVRTC present, a device
    /// of a supported architecture visible. Cheap after the first call (the answer is kept);
    /// creates no context. Use it to choose between the CUDA and CPU backends.
    pub fn available() -> bool {
        static AVAILABLE: OnceLock<bool> = OnceLock::new();
        *AVAILABLE.get_or_init(|| probe(0).is_ok())
    }

    /// Opens device `ordinal`: checks driver, device, architecture and NVRTC, then retains the
    /// device's primary context. Each failure says what is missing and what to do.
    ///
    /// ```no_run
    /// use topk_runtime::cuda::Gpu;
    ///
    /// if Gpu::available() {
    ///     let gpu = Gpu::open(0).expect("a usable GPU");
    ///     let p = gpu.props();
    ///     println!("{}: {} SMs, compute capability {}.{}", p.name, p.sms, p.cc_major, p.cc_minor);
    /// } else if let Err(why) = Gpu::open(0) {
    ///     eprintln!("no GPU: {why}"); // e.g. the driver is not installed, and what to do
    /// }
    /// ```
    ///
    /// # Errors
    /// [`Error::Cuda`] when the driver, the device or NVRTC is missing or the architecture is
    /// older than compute capability 8.0, saying what to install or choose instead.
    pub fn open(ordinal: usize) -> Result<Gpu> {
        let probed = probe(ordinal)?;
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| driver_error(&format!("creating a context on device {ordinal}"), e))?;
        // All work of this handle runs on one stream, so cudarc's cross-stream event tracking
        // buys nothing and breaks graph capture (its event waits join the capture). Buffers
        // allocated through this handle therefore carry no events.
        // SAFETY: nothing was allocated in this context through cudarc yet, and every buffer the
        // runtime allocates is used on `stream` alone; callers mixing streams order them.
        unsafe { ctx.disable_event_tracking() };
        // A stream of our own, not the legacy NULL stream: graphs can only be captured on it.
        let stream = ctx
            .new_stream()
            .map_err(|e| driver_error("creating a stream", e))?;
        let total_mem = ctx
            .total_mem()
            .map_err(|e| driver_error("cuDeviceTotalMem", e))?;
        let attribute = |attr: CUdevice_attribute| -> Result<u32> {
            let value = ctx
                .attribute(attr)
                .map_err(|e| driver_error(&format!("cuDeviceGetAttribute({attr:?})"), e))?;
            Ok(value.max(0) as u32)
        };
        let props = DeviceProps {
            ordinal,
            name: probed.name,
            cc_major: probed.arch.major,
            cc_minor: probed.arch.minor,
            sms: attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            max_threads_per_block: attribute(
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            )?,
            smem_per_block_optin: attribute(
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )?,
            smem_per_sm: attribute(
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
            )?,
            l2_bytes: attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
            driver_version: probed.driver_version,
            total_mem,
        };
        Ok(Gpu {
            inner: Arc::new(GpuInner {
                ctx,
                stream,
                props,
                arch: probed.arch,
                kernels: KernelCache::new(CacheSettings::from_env()),
                facts: OnceLock::new(),
            }),
        })
    }

    /// The device's properties.
    pub fn props(&self) -> &DeviceProps {
        &self.inner.props
    }

    /// The facts the default map is chosen on ([`crate::policy`]): read from the device on
    /// first use (its attributes, and the resident clusters from the driver's occupancy
    /// calculator, asked of an empty probe kernel), then kept.
    pub fn facts(&self) -> DeviceFacts {
        *self.inner.facts.get_or_init(|| super::facts::read(self))
    }

    /// Modules this handle has loaded (its in-memory kernel cache): a plan adds one where the
    /// device agrees with its facts, reading the facts the probe kernel.
    pub fn loaded_modules(&self) -> usize {
        self.inner.kernels.memory().len()
    }

    /// The architecture kernels are compiled for on this device.
    pub fn arch(&self) -> Arch {
        self.inner.arch
    }

    /// The device ordinal.
    pub fn ordinal(&self) -> usize {
        self.inner.props.ordinal
    }

    /// Lets `loaded` launch clusters larger than the portable 8 CTAs (16 on Hopper).
    pub(crate) fn allow_non_portable_clusters(&self, loaded: &Loaded) -> Result<()> {
        self.inner
            .ctx
            .bind_to_thread()
            .map_err(Error::driver("binding the context"))?;
        loaded
            .func
            .set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                1,
            )
            .map_err(Error::driver(
                "allowing clusters of more than 8 CTAs (this device or driver may not support \
                 them; use map=cluster(8))",
            ))
    }

    /// How many clusters of `ctas` CTAs of `loaded` (compiled with that cluster size) are
    /// resident on the device at once, if the driver can say.
    pub fn resident_clusters(
        &self,
        loaded: &Loaded,
        ctas: u32,
        block: u32,
        smem: u32,
    ) -> Option<u32> {
        self.inner.ctx.bind_to_thread().ok()?;
        let config = cudarc::driver::LaunchConfig {
            grid_dim: (ctas, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: smem,
        };
        loaded
            .func
            .occupancy_max_active_clusters(config, &self.inner.stream)
            .ok()
    }

    /// The primary context of the device.
    pub fn ctx(&self) -> &Arc<CudaContext> {
        &self.inner.ctx
    }

    /// The stream every call of this handle runs on (a created stream, so it can be captured
    /// into a CUDA graph).
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.inner.stream
    }

    /// The kernel `entry` of `source`, compiled for this device through the memory and disk
    /// caches and loaded as a module. When `dynamic_smem_bytes` exceeds 48 KiB, the function's
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` is raised to it here, once, so launches
    /// need not touch it.
    pub fn load(&self, source: &str, entry: &str, dynamic_smem_bytes: u32) -> Result<Loaded> {
        check_entry_name(entry)?;
        let props = &self.inner.props;
        if dynamic_smem_bytes > props.smem_per_block_optin {
            return Err(Error::Cuda(format!(
                "kernel `{entry}` asks for {dynamic_smem_bytes} bytes of dynamic shared memory, \
                 but {} allows at most {} per block: choose a plan with a smaller tile",
                props.name, props.smem_per_block_optin
            )));
        }
        let request = CompileRequest::new(source, entry, self.inner.arch)?;
        let cached = self.inner.kernels.get_or_build(
            self.ordinal(),
            &request,
            |r| r.compile(),
            |cubin| self.load_module(cubin),
        )?;
        let func = cached
            .value
            .function(&self.inner.ctx, entry, dynamic_smem_bytes)?;
        Ok(Loaded {
            func,
            module: cached.value.module.clone(),
            outcome: cached.outcome,
            compile_ms: cached.compile_ms,
        })
    }

    /// Loads a CUBIN image as a module in this device's context.
    fn load_module(&self, cubin: &[u8]) -> Result<Arc<LoadedModule>> {
        let module = self
            .inner
            .ctx
            .load_module(Ptx::from_binary(cubin.to_vec()))
            .map_err(|e| {
                driver_error(
                    &format!("loading a CUBIN for {} as a module", self.inner.arch),
                    e,
                )
            })?;
        Ok(Arc::new(LoadedModule {
            module,
            functions: Mutex::new(HashMap::new()),
        }))
    }
}

impl LoadedModule {
    /// The function `entry`, with its dynamic shared memory limit raised to
    /// `dynamic_smem_bytes` if that is above 48 KiB and above what was set before.
    fn function(
        &self,
        ctx: &Arc<CudaContext>,
        entry: &str,
        dynamic_smem_bytes: u32,
    ) -> Result<CudaFunction> {
        let mut functions = self
            .functions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let (func, limit) = match functions.entry(entry.to_string()) {
            Entry::Occupied(known) => known.into_mut(),
            Entry::Vacant(slot) => {
                let func = self.module.load_function(entry).map_err(|e| {
                    driver_error(
                        &format!("finding kernel `{entry}` in its module (is it `extern \"C\"`?)"),
                        e,
                    )
                })?;
                slot.insert((func, DEFAULT_DYNAMIC_SMEM_LIMIT))
            }
        };
        if dynamic_smem_bytes > *limit {
            ctx.bind_to_thread()
                .map_err(|e| driver_error("binding the context", e))?;
            func.set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                dynamic_smem_bytes as i32,
            )
            .map_err(|e| {
                driver_error(
                    &format!(
                        "allowing {dynamic_smem_bytes} bytes of dynamic shared memory for `{entry}` \
                         (static plus dynamic shared memory must fit the device's opt-in limit)"
                    ),
                    e,
                )
            })?;
            *limit = dynamic_smem_bytes;
        }
        Ok(func.clone())
    }
}

/// Device facts gathered before a context exists.
struct Probe {
    name: String,
    arch: Arch,
    driver_version: i32,
}

/// Checks libraries, device count, compute capability and NVRTC support for `ordinal`.
fn probe(ordinal: usize) -> Result<Probe> {
    driver_available()?;
    driver::init().map_err(|e| match e.0 {
        sys::CUresult::CUDA_ERROR_NO_DEVICE => Error::Cuda(
            "the NVIDIA driver found no CUDA device: check that a GPU is attached and visible \
             (CUDA_VISIBLE_DEVICES), or use the CPU backend"
                .to_string(),
        ),
        sys::CUresult::CUDA_ERROR_STUB_LIBRARY => Error::Cuda(
            "libcuda is the toolkit's stub library, not a driver: install the NVIDIA driver or \
             remove the stubs folder from LD_LIBRARY_PATH"
                .to_string(),
        ),
        _ => driver_error("cuInit", e),
    })?;
    let count = driver::device::get_count().map_err(|e| driver_error("cuDeviceGetCount", e))?;
    let count = count.max(0) as usize;
    if ordinal >= count {
        return Err(Error::Cuda(format!(
            "device ordinal {ordinal} is out of range: {count} CUDA device(s) visible; pick one \
             below {count} or check CUDA_VISIBLE_DEVICES"
        )));
    }
    let device = driver::device::get(ordinal as i32).map_err(|e| driver_error("cuDeviceGet", e))?;
    let name = driver::device::get_name(device).map_err(|e| driver_error("cuDeviceGetName", e))?;
    let attribute = |attr: CUdevice_attribute| -> Result<u32> {
        // SAFETY: `device` was returned by cuDeviceGet for an ordinal below the device count.
        let value = unsafe { driver::device::get_attribute(device, attr) }
            .map_err(|e| driver_error(&format!("cuDeviceGetAttribute({attr:?})"), e))?;
        Ok(value.max(0) as u32)
    };
    let cc = (
        attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
        attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
    );
    if cc < MIN_CC {
        return Err(Error::Cuda(format!(
            "device {ordinal} ({name}) has compute capability {}.{}; the Top-K kernels need {}.{} \
             or newer (Ampere, sm_80+): use a newer GPU or the CPU backend",
            cc.0, cc.1, MIN_CC.0, MIN_CC.1
        )));
    }
    let arch = Arch::from_cc(cc.0, cc.1)?;

    let mut driver_version = 0;
    // SAFETY: libcuda is loaded (checked above); `driver_version` is valid for a write.
    unsafe { sys::cuDriverGetVersion(&mut driver_version) }
        .result()
        .map_err(|e| driver_error("cuDriverGetVersion", e))?;

    nvrtc::nvrtc_available()?;
    let (nvrtc_major, nvrtc_minor) = nvrtc::nvrtc_version()?;
    if driver_version / 1000 < nvrtc_major {
        return Err(Error::Cuda(format!(
            "the driver supports CUDA {}.{} but NVRTC is {nvrtc_major}.{nvrtc_minor}, whose CUBINs \
             it cannot load: update the driver, or use an NVRTC of major version {}",
            driver_version / 1000,
            driver_version % 1000 / 10,
            driver_version / 1000
        )));
    }
    nvrtc::check_arch_supported(&arch)?;
    Ok(Probe {
        name,
        arch,
        driver_version,
    })
}

/// Checks that libcuda can be loaded, so that no driver call panics inside cudarc.
fn driver_available() -> Result<()> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: `is_culib_present` only tries to dlopen the candidate library names and drops the
    // handles again; no driver symbol is resolved or called.
    let present = *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() });
    if present {
        Ok(())
    } else {
        Err(Error::Cuda(
            "libcuda not found: the NVIDIA driver is not installed (or not on the loader path); \
             install the driver or use the CPU backend"
                .to_string(),
        ))
    }
}

/// A kernel entry must be a plain C identifier (it is looked up by name in the module).
fn check_entry_name(entry: &str) -> Result<()> {
    let mut chars = entry.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if valid {
        Ok(())
    } else {
        Err(Error::Input(format!(
            "`{entry}` is not a kernel name: use a C identifier declared `extern \"C\" __global__`"
        )))
    }
}

/// A driver failure with what we were doing.
fn driver_error(what: &str, e: DriverError) -> Error {
    Error::driver(what)(e)
}
